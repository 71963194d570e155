"""Operand plans of the PIM assembly syntax, shared by the Python assembler (:mod:`.text`) and
the numba scanner (:mod:`.textscan`): one source of truth for both paths."""

from __future__ import annotations

from ....core.operands import Byte, Int, Reg
from ..isa import Offset, build_isa

_PLANS: dict[str, tuple[int, tuple[str, ...], tuple[str, ...], int]] = {}


def kind_code(kind) -> str:
    if isinstance(kind, Reg):
        return "r"
    if isinstance(kind, Offset):
        return "o"
    if isinstance(kind, Byte):
        return "b"
    if isinstance(kind, Int):
        return "i"
    raise TypeError(kind)


def operand_plans() -> dict:
    """mnemonic → (opcode, operand kind codes, value columns, required operand count)."""
    if not _PLANS:
        isa = build_isa(64, True)
        for s in isa.instrs:
            kinds = tuple(kind_code(o.kind) for o in s.operands)
            cols = tuple(c for o in s.operands for c in o.columns)
            required = sum(1 for o in s.operands if not o.optional)
            _PLANS[s.mnemonic] = (s.opcode, kinds, cols, required)
    return _PLANS
