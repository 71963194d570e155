"""The paper's workloads as instruction-stream generators (spec §5.2–§5.4) and ``nnisa bench``."""
