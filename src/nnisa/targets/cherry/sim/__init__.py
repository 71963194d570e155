"""Cherry simulator: functional values (element formats, registers, cache, device memory) and the
superscalar instruction-queue cycle model (spec ``cherry.md`` §3-§4)."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["element", "machine", "run", "runtime", "semantics", "simulate", "timing"]
