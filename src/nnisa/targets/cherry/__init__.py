"""The Cherry (cisa) target: 16-bit tile instructions with looped address formulas (spec ``cherry.md``)."""
