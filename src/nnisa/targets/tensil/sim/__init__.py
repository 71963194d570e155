"""The Tensil simulator: the emulator (values), the estimator, detailed and SCALE-Sim cycle models, and the
``simulate()`` entry point (:mod:`.simulate`)."""

#: the public parts of this package are its modules (imported on use, so importing the package is cheap)
__all__ = ["detailed", "emulator", "estimator", "fast", "machine", "scalesim", "simulate"]
