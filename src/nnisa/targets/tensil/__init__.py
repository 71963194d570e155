"""The Tensil target: Tensil's systolic-array TCU (v1.0.15); the face is :mod:`.target`."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["compiler", "config", "formats", "isa", "layout", "numerics", "program", "sim", "stats", "target",
           "workloads"]
