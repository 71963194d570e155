"""nnisa.report"""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["plots", "tables", "timeline"]
