"""Tensil file formats: binary programs, canonical text, ``.tasm``, ``.tmodel``/``.tdata``; the table in
:mod:`.files`."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["binary", "files", "model", "tasm", "text"]
