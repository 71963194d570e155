"""PIMSAB file formats: program images (``.psab``), assembly text, the ``tile_bcast`` expansion."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["broadcast", "files", "image", "text"]
