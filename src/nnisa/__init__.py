"""nnisa: a toolchain for deep-learning accelerator instruction sets.

Exact binary encoders/decoders and assemblers, readers/writers for the reference tools' files,
simulators that compute real values plus cycles and energy, and ONNX compilers — one CLI, one
report format and one Python API across all targets (see :mod:`nnisa.api`).
"""

from .api import compare_outputs, default_inputs, onnx_reference, read, run_model, target, target_names, write

__version__ = "0.1.0"

__all__ = ["target", "target_names", "read", "write", "run_model", "onnx_reference", "default_inputs",
           "compare_outputs", "__version__"]
