"""PIM file formats: pimsim-nn JSON, NNPI binary, assembly text, bundles; the table in :mod:`.files`."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["bundle", "files", "jsonio", "jsonscan", "jsonslots", "nnpi", "program_files", "render", "text",
           "textplans", "textscan"]
