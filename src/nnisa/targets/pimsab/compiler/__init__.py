"""The PIMSAB compiler: tensor-expression DSL, distribution search, CRAM allocation, code generation;
:func:`compile_model` is the target's compile entry (ONNX networks, :mod:`.netcompile`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....core.options import split_options
from ....core.target import CompileResult

__all__ = ["PimsabCompileOptions", "compile_model"]


@dataclass
class PimsabCompileOptions:
    """How a network is quantized for PIMSAB (spec Decision 13: pow2 scales, per-tensor weights).
    No ``-O`` options: ``calib`` comes from ``--calibration``."""

    #: calibration inputs (default: the frontend's calibration set, :func:`.netcompile.quantized_graph`)
    calib: Any = None
    #: element bits of weights and activations
    bits: int = 8


def compile_model(model: Any, *, config: Any = None, out_dir: str | Path | None = None,
                  **options: Any) -> CompileResult:
    """ONNX model (path or prepared model) → quantized graph → per-layer DSL programs, written as a
    bundle into ``out_dir`` (:func:`nnisa.targets.pimsab.compiler.netcompile.compile_network`)."""
    from .netcompile import compile_network
    opts, _ = split_options(PimsabCompileOptions, options)
    return compile_network(model, config=config, out_dir=out_dir, calib=opts.calib, bits=opts.bits)
