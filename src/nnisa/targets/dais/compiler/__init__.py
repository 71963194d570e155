"""The DAIS compiler: constant matrix-vector multiplications as adder graphs (CSE), whole
quantized networks as one DAIS program; :func:`compile_model` is the target's compile entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.options import split_options
from ....core.target import CompileResult
from .options import DaisCompileOptions

__all__ = ["DaisCompileOptions", "compile_model"]


def compile_model(model: Any, *, config: Any = None, out_dir: str | Path | None = None,
                  **options: Any) -> CompileResult:
    """ONNX model (path or prepared model) → one DAIS program and its bundle folder; ``options``
    are :class:`DaisCompileOptions` fields (others are ignored).  DAIS has no architecture
    configuration: ``config`` is the energy table of the per-layer figures (``layer_table``)."""
    from ..layers import program_layer_rows
    from .netcompile import compile_network
    opts, _ = split_options(DaisCompileOptions, options)
    res = compile_network(model, opts, out_dir=out_dir)
    res.layer_table = program_layer_rows(res.program, config)
    return res
