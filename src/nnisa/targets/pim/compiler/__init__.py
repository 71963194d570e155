"""The PIM compiler: ONNX → multi-core PIM program (spec ``pim_isa.md`` §11, ``docs/pim_compiler.md``)."""

from .driver import Compiled, compile_model, quantize_model

__all__ = ["Compiled", "compile_model", "quantize_model"]
