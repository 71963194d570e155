"""nnisa.core"""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["asm", "bitfields", "bundle", "configkeys", "configs", "errors", "fileio", "fixedpoint", "formats", "isa",
           "jsonsafe", "operands", "options", "target"]
