"""The Cherry instruction table: the canonical 16-bit encoding (spec ``cherry.md`` §2.2).

Bit positions in the spec count from the most significant bit (``[0:4]`` = the opcode); the
:class:`~nnisa.core.bitfields.Field` records here count from the least significant bit, so spec
bits ``[a:b]`` become ``Field(hi=15-a, lo=15-b)``.  The assembly syntax of the length and count
operands depends on the tile size, so the table is built per SZ (:func:`cherry_isa`).
"""

from __future__ import annotations

from functools import lru_cache

from ...core.bitfields import Field
from ...core.isa import ISA, Instr, table_isa
from ...core.operands import Enum, Int, OperandError, OperandKind, parse_int

WORD_BITS = 16
#: register codes (§1.2)
REGS = {"INPUT": 0, "WEIGHTS": 1, "OUTPUT": 2, "ACC": 3}
REG_NAMES = {v: k for k, v in REGS.items()}
#: loop variable of each loop address (§2.4)
LOOP_VARS = "ijklmnop"
MAX_LOOPS = 8
MAX_FORMULAS = 8

COLUMNS = [("op", "i1"), ("apu", "i1"), ("reg", "i1"), ("h", "i1"), ("w", "i1"), ("zero", "i1"), ("skip", "i1"),
           ("acc", "i1"), ("axis", "i1"), ("count", "i1"), ("tgt", "i1"), ("src", "i1"), ("tr", "i1"),
           ("loop", "i1"), ("capu", "i1"), ("mapu", "i1"), ("slot", "i1")]

OPCODE = Field("op", 15, 11)


def spec_field(name: str, a: int, b: int, **kw) -> Field:
    """A field given in the spec's MSB-first bit numbering ``[a:b]`` of a 16-bit word."""
    return Field(name, WORD_BITS - 1 - a, WORD_BITS - 1 - b, **kw)


def length_code(length: int, sz: int) -> int:
    """Length code of a row/column count (§2.2: code 0 = SZ, code c = c·SZ/4)."""
    if length == sz:
        return 0
    step = sz // 4
    if length <= 0 or length % step or length > sz:
        allowed = ", ".join(str(step * c) for c in (1, 2, 3, 4))
        raise OperandError(f"length {length} is not representable at SZ={sz} (allowed: {allowed})")
    return length // step


def code_length(code: int, sz: int) -> int:
    """Rows/columns selected by a length code."""
    return sz if code == 0 else code * sz // 4


class Length(OperandKind):
    """A row/column count in elements, stored as its 2-bit code (tile-size dependent)."""

    def __init__(self, sz: int):
        self.sz = sz

    def parse(self, token):
        return (length_code(parse_int(token), self.sz),)

    def format(self, values):
        return str(code_length(values[0], self.sz))


class Flag(OperandKind):
    """A 0/1 flag; ``letter`` (``T``) is also accepted and printed for 1."""

    def __init__(self, letter: str | None = None):
        self.letter = letter

    def parse(self, token):
        t = token.strip()
        if self.letter and t.upper() == self.letter:
            return (1,)
        v = parse_int(t)
        if v not in (0, 1):
            raise OperandError(f"expected 0 or 1, got {t!r}")
        return (v,)

    def format(self, values):
        return self.letter if (self.letter and values[0]) else str(values[0])


class Slot(Int):
    """The cache slot of load/store (``slot=k``, 0..3; only the cherrycore encoding holds it)."""

    def __init__(self):
        super().__init__(omit_default=True)

    def parse(self, token):
        v = parse_int(token)
        if not 0 <= v <= 3:
            raise OperandError(f"slot={v} outside 0..3")
        return (v,)


f = spec_field
#: the field table (spec §2.2, MSB-first bit numbers as in the spec)
FIELDS = {
    "acc": f("acc", 5, 5), "axis": f("axis", 6, 7, maximum=2), "count": f("count", 8, 9),
    "tgt": f("tgt", 5, 6), "src": f("src", 7, 8), "tr": f("tr", 9, 9),
    "apu": f("apu", 5, 7), "reg": f("reg", 8, 9), "h": f("h", 10, 11), "w": f("w", 12, 13),
    "zero": f("zero", 14, 14), "skip": f("skip", 15, 15), "loop": f("loop", 5, 7),
    "capu": f("capu", 5, 7), "mapu": f("mapu", 8, 10), "slot": f("slot", 11, 12),
}
del f


def operands(sz: int) -> dict:
    """The operand table: the text of lengths and counts depends on the tile size."""
    reg, num, length, flag = Enum(REGS), Int(), Length(sz), Flag()
    return {"acc": (flag, "acc"), "axis": (num, "axis"), "count": (length, "count"), "tgt": (reg, "tgt"),
            "src": (reg, "src"), "T": (Flag("T"), "tr"), "apu": (num, "apu"), "reg": (reg, "reg"),
            "h": (length, "h"), "w": (length, "w"), "zero": (flag, "zero"), "skip": (flag, "skip"),
            "loop": (num, "loop"), "capu": (num, "capu"), "mapu": (num, "mapu"), "slot": (num, "slot"),
            "slot_kw": (Slot(), "slot")}


_RED, _RED_S = "acc axis count", "acc, axis, [count]"
_LS, _LS_S = "apu reg h w", "apu, reg, [h], [w]"
_MEM, _MEM_S = "capu mapu slot", "capu, mapu, [slot]"
_LD = "REG = cache[APU] (h x w; zero: clear first; skip: one row down)"
#: the instruction table; the category is the execution unit (§2.2 / §4.2): ar (arithmetic),
#: ls (load/store), loop, ram (device memory)
ROWS = (
    Instr("matmul", 0, "", "", "ar", "ACC += INPUT @ WEIGHTS"),
    Instr("mulacc", 1, "", "", "ar", "ACC += INPUT * WEIGHTS (elementwise)"),
    Instr("add", 2, "", "", "ar", "OUTPUT = INPUT + WEIGHTS"),
    Instr("sub", 3, "", "", "ar", "OUTPUT = INPUT - WEIGHTS"),
    Instr("mul", 4, "", "", "ar", "OUTPUT = INPUT * WEIGHTS"),
    Instr("div", 5, "", "", "ar", "OUTPUT = INPUT / WEIGHTS"),
    Instr("pow", 6, "", "", "ar", "OUTPUT = INPUT ** WEIGHTS"),
    Instr("max", 7, _RED, _RED_S, "ar",
          "ACC row 0 / col 0 = max over OUTPUT rows/cols (axis 0, 1; 2 = both) [and ACC]"),
    Instr("sum", 8, _RED, _RED_S, "ar",
          "ACC row 0 / col 0 = sum over OUTPUT rows/cols (axis 0, 1; 2 = both) [+ ACC]"),
    Instr("relu", 9, "", "", "ar", "OUTPUT = max(INPUT, 0)"),
    Instr("exp", 10, "", "", "ar", "OUTPUT = e ** INPUT"),
    Instr("log", 11, "", "", "ar", "OUTPUT = log2(INPUT)"),
    Instr("gtz", 12, "", "", "ar", "OUTPUT = 1 where INPUT > 0 else 0"),
    Instr("copy", 13, "tgt src tr", "tgt, src, [T]", "ar", "REG[tgt] = REG[src] (T: transposed)"),
    Instr("zero", 14, "tgt", "tgt", "ar", "REG[tgt] = 0"),
    Instr("load", 15, _LS + " zero skip", _LS_S + ", [zero], [skip], [slot=slot_kw]", "ls", _LD),
    Instr("store", 16, _LS, _LS_S + ", [slot=slot_kw]", "ls", "cache[APU][:h, :w] = REG[:h, :w]"),
    Instr("start_independent_loop", 17, "loop", "loop", "loop",
          "start loop (iterations may run in any order, superscalar)"),
    Instr("start_loop", 18, "loop", "loop", "loop", "start an in-order loop"),
    Instr("end_loop", 19, "loop", "loop", "loop", "next iteration of the innermost loop, or leave it"),
    Instr("mem_read", 20, _MEM, _MEM_S, "ram", "cache[slot window + APU_c] = DRAM[APU_m] (nnisa extension opcode)"),
    Instr("mem_write", 21, _MEM, _MEM_S, "ram", "DRAM[APU_m] = cache[slot window + APU_c] (nnisa extension opcode)"),
)
#: opcode numbers by mnemonic, and the execution unit of each opcode (derived from the table)
OP = {r.mnemonic: r.opcode for r in ROWS}
UNIT = {r.opcode: r.category for r in ROWS}
LOOP_OPS = frozenset(r.opcode for r in ROWS if r.category == "loop")


@lru_cache(maxsize=None)
def cherry_isa(sz: int = 4) -> ISA:
    """The canonical Cherry ISA for tile size ``sz`` (only the text of lengths depends on it)."""
    if sz not in (4, 16, 32):
        raise ValueError(f"SZ must be 4, 16 or 32, not {sz}")
    return table_isa(f"Cherry cisa (SZ={sz})", WORD_BITS, OPCODE, COLUMNS, ROWS, FIELDS, operands(sz))


#: seed spellings accepted by the assembler → (mnemonic, fixed leading operands)
ALIASES = {"copy_acc_to_output": ("copy", ("OUTPUT", "ACC")), "zero_acc": ("zero", ("ACC",)),
           "end_loop_or_jump_if_needed": ("end_loop", ()), "cisa_load": ("load", ()), "cisa_store": ("store", ()),
           "cisa_mem_read": ("mem_read", ()), "cisa_mem_write": ("mem_write", ())}
