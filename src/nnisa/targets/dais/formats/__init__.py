"""DAIS file formats: binaries (v1/v0/legacy), da4ml JSON, assembly text; the table in :mod:`.files`."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["binary", "fastrender", "files", "jsonio", "rows_nb", "text"]
