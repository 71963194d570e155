"""nnisa.targets.dais"""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["compiler", "errors", "formats", "isa", "program", "program_nb", "rtl", "sim", "target", "warmup",
           "workloads"]
