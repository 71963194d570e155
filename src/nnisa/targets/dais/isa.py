"""The DAIS opcode table as data (spec ``dais.md`` §2.2, §4.1, Appendix A).

One :class:`~nnisa.core.isa.Instr` row per opcode, in the house idiom: the slots it uses, its
assembly template, the integer-domain result and its :class:`Facts`.  The validator (operand
use, allowed versions), the assembler and both disassemblers (:mod:`.formats.text`,
:mod:`.formats.fastrender`) and the Markdown reference (:func:`isa_markdown`) are all derived
from :data:`OPCODES`; nothing about an opcode is hard-coded elsewhere except its arithmetic in
the engines.  (DAIS ops are SSA records, not bit-field words: the rows feed no
:class:`~nnisa.core.isa.ISA` codec; the record codec is :mod:`.formats.binary`.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.isa import Instr


@dataclass(frozen=True)
class Facts:
    """What the validator and the engines read about one opcode."""

    #: +1, or -1 for the negated form (``-2``, ``-3``, ``-6``, ``-9``)
    sign: int = 1
    #: the op wraps its result to its dtype (TRN + WRAP)
    quantizing: bool = False
    #: format versions that may contain the opcode (``"legacy"``, ``0``, ``1``)
    versions: tuple = ("legacy", 0, 1)
    #: what the 64-bit ``data`` field holds (``""`` = unused, must be 0)
    data: str = ""


_ALL = ("legacy", 0, 1)
_V0 = (0, 1)
_V1 = (1,)
_SHIFT, _KEY = "shift d (lo)", "lo key slot, hi shift on C"
_BIT1, _BIT2 = "lo: 0 NOT, 1 ANY, 2 ALL", "lo shift; hi bit0/1 negate A/C, bits 24–31 AND/OR/XOR"
_Q, _NQ = Facts(quantizing=True), Facts(sign=-1, quantizing=True)

#: the opcode table: mnemonic, opcode, slots it uses (``id0``/``id1`` buffer references, ``data``),
#: assembly template (:mod:`.formats.text`), category, integer-domain result (Appendix A), facts
OPCODES: tuple[Instr, ...] = (
    Instr("input", -1, "", "input {id0}", "input", "wrap(floor(x[id0]·2^(inp_shift+f)))", _Q),
    Instr("add", 0, "id0 id1 data", "add %{id0}, %{id1}, {lo}", "adder", "A + C·2^d, floor-shifted to f",
          Facts(data=_SHIFT)),
    Instr("sub", 1, "id0 id1 data", "sub %{id0}, %{id1}, {lo}", "adder", "A − C·2^d, floor-shifted to f",
          Facts(sign=-1, data=_SHIFT)),
    Instr("relu", 2, "id0", "relu %{id0}", "quantizer", "A < 0 ? 0 : wrap(A >> (fa − f))", _Q),
    Instr("relu", -2, "id0", "relu -%{id0}", "quantizer", "−A < 0 ? 0 : wrap(−A >> (fa − f))", _NQ),
    Instr("quant", 3, "id0", "quant %{id0}", "quantizer", "wrap(A >> (fa − f))", _Q),
    Instr("quant", -3, "id0", "quant -%{id0}", "quantizer", "wrap(−A >> (fa − f))", _NQ),
    Instr("addc", 4, "id0 data", "addc %{id0}, {data}", "adder", "(A << (f − fa)) + data",
          Facts(data="constant (int64)")),
    Instr("const", 5, "data", "const {data}", "constant", "data", Facts(data="constant (int64)")),
    Instr("mux", 6, "id0 id1 data", "mux %{lo}, %{id0}, %{id1}, {hi}", "mux",
          "MSB(key) ? wrap(A << (f − fa)) : wrap(C << (f − fc + hi))", Facts(quantizing=True, data=_KEY)),
    Instr("mux", -6, "id0 id1 data", "mux %{lo}, %{id0}, -%{id1}, {hi}", "mux",
          "MSB(key) ? wrap(A << (f − fa)) : wrap(−C << (f − fc + hi))", Facts(-1, True, data=_KEY)),
    Instr("mul", 7, "id0 id1", "mul %{id0}, %{id1}", "multiplier", "A · C", Facts()),
    Instr("lut", 8, "id0 data", "lut %{id0}, table {lo}, pad {hi}", "lut",
          "tables[lo][A − lo_a − hi] (range-checked)", Facts(versions=_V0, data="lo table, hi pad_left")),
    Instr("bit1", 9, "id0 data", "{lo:not|any|all} %{id0}", "logic",
          "NOT: k ? ~A : ~A & m; ANY: A ≠ 0; ALL: (A & m) == m", Facts(versions=_V1, data=_BIT1)),
    Instr("bit1", -9, "id0 data", "{lo:not|any|all} -%{id0}", "logic", "as 9 on −A",
          Facts(sign=-1, versions=_V1, data=_BIT1)),
    Instr("bit2", 10, "id0 id1 data", "{sub:and|or|xor} {-na}%{id0}, {-nc}%{id1}, {lo}", "logic",
          "align by lo + fa − fc, then A' op C'", Facts(versions=_V1, data=_BIT2)),
)

BY_OPCODE: dict[int, Instr] = {s.opcode: s for s in OPCODES}
#: opcodes allowed per format version (spec §5.6)
ALLOWED: dict = {v: frozenset(s.opcode for s in OPCODES if v in s.facts.versions) for v in _ALL}
QUANTIZING = frozenset(s.opcode for s in OPCODES if s.facts.quantizing)
USES_ID0 = frozenset(s.opcode for s in OPCODES if "id0" in s.fields.split())
USES_ID1 = frozenset(s.opcode for s in OPCODES if "id1" in s.fields.split())
USES_DATA = frozenset(s.opcode for s in OPCODES if "data" in s.fields.split())


def isa_markdown() -> str:
    """The opcode reference as a Markdown table, generated from :data:`OPCODES`."""
    lines = ["| opcode | mnemonic | id0 | id1 | data | quantizing | versions | result |",
             "|---:|---|---|---|---|---|---|---|"]
    for s in OPCODES:
        f = s.facts
        neg = "-" if f.sign < 0 else ""
        used = s.fields.split()
        id0 = "input j" if s.opcode == -1 else (f"{neg}%a" if "id0" in used else "-1")
        id1 = "%c" if "id1" in used else "-1"
        vers = ", ".join(str(v) for v in f.versions)
        lines.append(f"| {s.opcode} | `{s.mnemonic}` | {id0} | {id1} | {f.data or '0'} | "
                     f"{'yes' if f.quantizing else 'no'} | {vers} | {s.doc} |")
    return "\n".join(lines) + "\n"
