"""PIMSAB simulator: values (CRAM bit planes, DRAM, register files), the timing engines (numba and
the Python reference), energy, and the ``simulate()`` entry point (:mod:`.simulate`)."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["compute", "costs", "cram", "dram", "energy", "engine_nb", "engine_ref", "machine", "microops", "ops",
           "simulate", "timeline", "timing", "values"]
