"""PIMSAB: the bit-serial processing-in-SRAM accelerator (Ma et al.): ISA, simulator, workloads."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["compiler", "config", "formats", "isa", "precision", "program", "sim", "stats", "target", "workloads"]
