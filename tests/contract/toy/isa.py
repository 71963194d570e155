"""The toy ISA in the house idiom (``core.isa``): a field table, an operand table and one
:class:`~nnisa.core.isa.Instr` row per instruction (opcode, fields, syntax, category, doc and the
per-opcode facts the cost model reads: cycles and energy per execution)."""

from __future__ import annotations

from nnisa.core.bitfields import Field
from nnisa.core.isa import Instr, table_isa
from nnisa.core.operands import Int, Reg

OP = Field("op", 3, 0)
FIELDS = {"rd": Field("rd", 5, 4), "ra": Field("ra", 7, 6), "rb": Field("rb", 9, 8),
          "imm": Field("imm", 15, 8, signed=True)}
OPERANDS = {"rd": (Reg("r", 4), "rd"), "ra": (Reg("r", 4), "ra"), "rb": (Reg("r", 4), "rb"), "imm": (Int(), "imm")}
COLUMNS = [("op", "i2"), ("rd", "i2"), ("ra", "i2"), ("rb", "i2"), ("imm", "i2")]

ROWS = (
    Instr("li", 1, "rd imm", "rd, imm", "move", "rd = imm (signed 8-bit)", {"cycles": 1, "energy_pj": 0.5}),
    Instr("add", 2, "rd ra rb", "rd, ra, rb", "alu", "rd = ra + rb (16-bit wrap)", {"cycles": 1, "energy_pj": 1.0}),
    Instr("mul", 3, "rd ra rb", "rd, ra, rb", "alu", "rd = ra * rb (16-bit wrap)", {"cycles": 3, "energy_pj": 4.0}),
    Instr("out", 4, "ra", "ra", "io", "append ra to the output", {"cycles": 1, "energy_pj": 2.0}),
)
ISA_TABLE = table_isa("toy", 16, OP, COLUMNS, ROWS, FIELDS, OPERANDS)
