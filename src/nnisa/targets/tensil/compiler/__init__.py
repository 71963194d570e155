"""The Tensil compiler: ONNX → ``.tmodel``/``.tprog``/``.tdata``; :func:`compile_model` is the
target's compile entry (its modules load on first use)."""

from __future__ import annotations

from typing import Any

from .options import TensilCompileOptions

__all__ = ["TensilCompileOptions", "compile_model"]


def compile_model(model: Any, **options: Any):
    """ONNX model → a Tensil bundle (:func:`nnisa.targets.tensil.compiler.output.compile_model`)."""
    from .output import compile_model as compile_bundle
    return compile_bundle(model, **options)
