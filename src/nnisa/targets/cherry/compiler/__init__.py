"""Cherry compiler: tile kernels as looped programs, a plan builder and the ONNX lowering;
:func:`compile_model` is the target's compile entry (its modules load on first use)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.options import split_options
from ....core.target import CompileResult
from ..config import CherryCompileOptions

__all__ = ["CherryCompileOptions", "compile_model"]


def compile_model(model: Any, *, config: Any = None, out_dir: str | Path | None = None,
                  **options: Any) -> CompileResult:
    """ONNX model (path or prepared model) → a compiled Cherry model (a bundle folder in
    ``out_dir``) for ``config`` with :class:`CherryCompileOptions` applied (other keys ignored)."""
    from .graph import compile_network
    overrides, _ = split_options(CherryCompileOptions, options)
    return compile_network(model, overrides.apply(config), out_dir=out_dir, fit_sz=overrides.fit_sz,
                           split_k=overrides.split_k)
