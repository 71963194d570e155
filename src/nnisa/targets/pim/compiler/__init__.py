"""The PIM compiler: ONNX → multi-core PIM program (spec ``pim_isa.md`` §11, ``docs/pim_compiler.md``).

:func:`compile_model` is the target's compile entry (a :class:`~nnisa.core.target.CompileResult`
with the bundle written); :func:`compile_program` the in-memory pipeline it runs.  The pipeline's
modules load on first use (``nnisa targets`` imports this package without compiling anything).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.options import split_options
from ....core.target import CompileResult
from .options import ChipShape, PimCompileOptions

__all__ = ["ChipShape", "Compiled", "PimCompileOptions", "compile_model", "compile_program", "quantize_model"]


def compile_model(model: Any, *, config: Any = None, out_dir: str | Path | None = None,
                  **options: Any) -> CompileResult:
    """ONNX model (path or prepared model) → program, weights and global-memory image, written as a
    bundle into ``out_dir``; ``options`` are :class:`PimCompileOptions` fields (``mode`` is another
    name of ``schedule``; other keys are ignored)."""
    from .output import compile_result
    if "mode" in options:
        options.setdefault("schedule", options.pop("mode"))
    opts, _ = split_options(PimCompileOptions, options)
    return compile_result(model, config=config, out_dir=out_dir, options=opts)


def __getattr__(name: str) -> Any:
    if name in ("Compiled", "compile_program", "quantize_model"):
        from . import driver
        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
