"""Cherry file formats: binary images (canonical and cherrycore encodings), assembly text, files."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["binary", "bundle", "files", "text"]
