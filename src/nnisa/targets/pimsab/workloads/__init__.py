"""The paper's workloads as instruction-stream generators (spec §5.2–§5.4) and ``nnisa bench``."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["builder", "conv", "matmul", "paper", "registry", "vector"]
