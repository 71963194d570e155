"""The Cherry (cisa) target: 16-bit tile instructions with looped address formulas (spec ``cherry.md``)."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["compiler", "config", "formats", "isa", "layout", "program", "sim", "target", "workloads"]
