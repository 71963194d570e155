"""The DAIS opcode table as data (spec ``dais.md`` §2.2, §4.1, Appendix A).

One :class:`OpSpec` per opcode.  The validator (operand use, allowed versions), the assembler
and disassembler (mnemonics) and the Markdown reference (:func:`isa_markdown`) are all derived
from :data:`OPCODES`; nothing about an opcode is hard-coded elsewhere except its arithmetic in
the engines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpSpec:
    """One DAIS opcode.

    Attributes
    ----------
    opcode
        The int32 opcode.
    mnemonic
        Assembly mnemonic (negated forms share it and print ``-%a``/``-%c``).
    uses_id0, uses_id1
        Whether the operand slot is a buffer reference (``-1`` input reads an input index).
    data
        What the 64-bit ``data`` field holds (``""`` = unused, must be 0).
    quantizing
        Whether the op wraps its result to its dtype (TRN + WRAP).
    sign
        +1, or -1 for the negated form (``-2``, ``-3``, ``-6``, ``-9``).
    versions
        Format versions that may contain the opcode (``"legacy"``, ``0``, ``1``).
    semantics
        Integer-domain result (Appendix A).
    """

    opcode: int
    mnemonic: str
    uses_id0: bool
    uses_id1: bool
    data: str
    quantizing: bool
    sign: int
    versions: tuple
    semantics: str


_ALL = ("legacy", 0, 1)
_V0 = (0, 1)
_V1 = (1,)

OPCODES: tuple[OpSpec, ...] = (
    OpSpec(-1, "input", False, False, "", True, 1, _ALL, "wrap(floor(x[id0]·2^(inp_shift+f)))"),
    OpSpec(0, "add", True, True, "shift d (lo)", False, 1, _ALL, "A + C·2^d, floor-shifted to f"),
    OpSpec(1, "sub", True, True, "shift d (lo)", False, -1, _ALL, "A − C·2^d, floor-shifted to f"),
    OpSpec(2, "relu", True, False, "", True, 1, _ALL, "A < 0 ? 0 : wrap(A >> (fa − f))"),
    OpSpec(-2, "relu", True, False, "", True, -1, _ALL, "−A < 0 ? 0 : wrap(−A >> (fa − f))"),
    OpSpec(3, "quant", True, False, "", True, 1, _ALL, "wrap(A >> (fa − f))"),
    OpSpec(-3, "quant", True, False, "", True, -1, _ALL, "wrap(−A >> (fa − f))"),
    OpSpec(4, "addc", True, False, "constant (int64)", False, 1, _ALL, "(A << (f − fa)) + data"),
    OpSpec(5, "const", False, False, "constant (int64)", False, 1, _ALL, "data"),
    OpSpec(6, "mux", True, True, "lo key slot, hi shift on C", True, 1, _ALL,
           "MSB(key) ? wrap(A << (f − fa)) : wrap(C << (f − fc + hi))"),
    OpSpec(-6, "mux", True, True, "lo key slot, hi shift on C", True, -1, _ALL,
           "MSB(key) ? wrap(A << (f − fa)) : wrap(−C << (f − fc + hi))"),
    OpSpec(7, "mul", True, True, "", False, 1, _ALL, "A · C"),
    OpSpec(8, "lut", True, False, "lo table, hi pad_left", False, 1, _V0,
           "tables[lo][A − lo_a − hi] (range-checked)"),
    OpSpec(9, "bit1", True, False, "lo: 0 NOT, 1 ANY, 2 ALL", False, 1, _V1,
           "NOT: k ? ~A : ~A & m; ANY: A ≠ 0; ALL: (A & m) == m"),
    OpSpec(-9, "bit1", True, False, "lo: 0 NOT, 1 ANY, 2 ALL", False, -1, _V1, "as 9 on −A"),
    OpSpec(10, "bit2", True, True, "lo shift; hi bit0/1 negate A/C, bits 24–31 AND/OR/XOR", False, 1, _V1,
           "align by lo + fa − fc, then A' op C'"),
)

BY_OPCODE: dict[int, OpSpec] = {s.opcode: s for s in OPCODES}
#: opcodes allowed per format version (spec §5.6)
ALLOWED: dict = {v: frozenset(s.opcode for s in OPCODES if v in s.versions) for v in _ALL}
QUANTIZING = frozenset(s.opcode for s in OPCODES if s.quantizing)
USES_ID0 = frozenset(s.opcode for s in OPCODES if s.uses_id0)
USES_ID1 = frozenset(s.opcode for s in OPCODES if s.uses_id1)
USES_DATA = frozenset(s.opcode for s in OPCODES if s.data)
#: sub-operation names of opcodes ±9 and 10
BIT1_OPS = ("not", "any", "all")
BIT2_OPS = ("and", "or", "xor")


def isa_markdown() -> str:
    """The opcode reference as a Markdown table, generated from :data:`OPCODES`."""
    lines = ["| opcode | mnemonic | id0 | id1 | data | quantizing | versions | result |",
             "|---:|---|---|---|---|---|---|---|"]
    for s in OPCODES:
        neg = "-" if s.sign < 0 else ""
        id0 = "input j" if s.opcode == -1 else (f"{neg}%a" if s.uses_id0 else "-1")
        id1 = "%c" if s.uses_id1 else "-1"
        vers = ", ".join(str(v) for v in s.versions)
        lines.append(f"| {s.opcode} | `{s.mnemonic}` | {id0} | {id1} | {s.data or '0'} | "
                     f"{'yes' if s.quantizing else 'no'} | {vers} | {s.semantics} |")
    return "\n".join(lines) + "\n"
