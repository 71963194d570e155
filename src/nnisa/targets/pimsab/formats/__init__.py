"""PIMSAB file formats: program images (``.psab``), assembly text, the ``tile_bcast`` expansion."""
