"""The toy ISA as a table: one row per instruction (opcode, fields, syntax, category, doc) plus
the per-opcode facts the cost model needs (cycles, energy per execution)."""

from __future__ import annotations

from nnisa.core.bitfields import Field, Format
from nnisa.core.isa import ISA, InstrSpec, Operand
from nnisa.core.operands import Int, Reg

OP = Field("op", 3, 0)
RD, RA, RB = Field("rd", 5, 4), Field("ra", 7, 6), Field("rb", 9, 8)
IMM = Field("imm", 15, 8, signed=True)
REG = Reg("r", 4)
COLUMNS = [("op", "i2"), ("rd", "i2"), ("ra", "i2"), ("rb", "i2"), ("imm", "i2")]


def _spec(mnemonic: str, opcode: int, fields: tuple[Field, ...], category: str, doc: str) -> InstrSpec:
    operands = tuple(Operand(Int(), ("imm",)) if f is IMM else Operand(REG, (f.name,)) for f in fields)
    return InstrSpec(mnemonic, opcode, Format(16, ((OP, opcode),), fields), operands, category, doc)


#: mnemonic, opcode, fields, category, doc, cycles, energy (pJ) per execution
TABLE = (
    ("li", 1, (RD, IMM), "move", "rd = imm (signed 8-bit)", 1, 0.5),
    ("add", 2, (RD, RA, RB), "alu", "rd = ra + rb (16-bit wrap)", 1, 1.0),
    ("mul", 3, (RD, RA, RB), "alu", "rd = ra * rb (16-bit wrap)", 3, 4.0),
    ("out", 4, (RA,), "io", "append ra to the output", 1, 2.0),
)
ISA_TABLE = ISA("toy", 16, OP, COLUMNS, [_spec(m, o, f, c, d) for m, o, f, c, d, _, _ in TABLE])
CYCLES = {o: cyc for _, o, _, _, _, cyc, _ in TABLE}
ENERGY_PJ = {o: e for _, o, _, _, _, _, e in TABLE}
