"""nnisa.targets.pim"""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["compiler", "config", "formats", "isa", "lint", "lint_lmem", "program", "sim", "stats", "target",
           "warmup", "workloads"]
