"""Cherry simulator: functional values (element formats, registers, cache, device memory) and the
superscalar instruction-queue cycle model (spec ``cherry.md`` §3-§4)."""
