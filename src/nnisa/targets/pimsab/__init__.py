"""PIMSAB: the bit-serial processing-in-SRAM accelerator (Ma et al.): ISA, simulator, workloads."""
