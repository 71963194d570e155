"""The DAIS interpreter (numba and exact reference engines), the RTL engine, and the ``simulate()`` entry
point (:mod:`.simulate`)."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["interp", "kernel", "rtl_engine", "simulate"]
