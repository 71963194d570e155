"""nnisa: a toolchain for deep-learning accelerator instruction sets.

Exact binary encoders/decoders and assemblers, readers/writers for the reference tools' files,
simulators that compute real values plus cycles and energy, and ONNX compilers — one CLI, one
report format and one Python API across all targets (see :mod:`nnisa.api`).

The API's names (``nnisa.read``, ``nnisa.run_model``, ...) and the subpackages load on first use
(PEP 562), so ``import nnisa`` — and ``nnisa sim`` on a program file — imports neither the ONNX
frontend nor onnx/onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = ["target", "target_names", "read", "write", "run_model", "onnx_reference", "default_inputs",
           "compare_outputs", "__version__"]

#: the subpackages and modules reachable as attributes of the package (``nnisa.core``, ...)
_SUBMODULES = ("api", "cli", "cli_common", "core", "demo", "frontend", "report", "sweep", "targets",
               "warmup")


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module(".api", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *_SUBMODULES, *(n for n in globals() if n.startswith("__"))})
