"""The Cherry instruction table: the canonical 16-bit encoding (spec ``cherry.md`` §2.2).

Bit positions in the spec count from the most significant bit (``[0:4]`` = the opcode); the
:class:`~nnisa.core.bitfields.Field` records here count from the least significant bit, so spec
bits ``[a:b]`` become ``Field(hi=15-a, lo=15-b)``.  The assembly syntax of the length and count
operands depends on the tile size, so the table is built per SZ (:func:`cherry_isa`).
"""

from __future__ import annotations

from functools import lru_cache

from ...core.bitfields import Field, Format
from ...core.isa import ISA, InstrSpec, Operand
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

#: opcode numbers by mnemonic
OP = {"matmul": 0, "mulacc": 1, "add": 2, "sub": 3, "mul": 4, "div": 5, "pow": 6, "max": 7, "sum": 8, "relu": 9,
      "exp": 10, "log": 11, "gtz": 12, "copy": 13, "zero": 14, "load": 15, "store": 16,
      "start_independent_loop": 17, "start_loop": 18, "end_loop": 19, "mem_read": 20, "mem_write": 21}
#: execution unit of each opcode (§2.2 / §4.2)
UNIT = {op: ("ls" if m in ("load", "store") else "loop" if "loop" in m else "ram" if m.startswith("mem_")
             else "ar") for m, op in OP.items()}
LOOP_OPS = frozenset(OP[m] for m in ("start_independent_loop", "start_loop", "end_loop"))


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


def _instrs(sz: int) -> list[InstrSpec]:
    reg = Enum(REGS)
    num = Int()
    length = Length(sz)
    f = spec_field
    out = []

    def add(mnem: str, fields=(), operands=(), doc: str = ""):
        op = OP[mnem]
        fmt = Format(WORD_BITS, ((OPCODE, op),), tuple(fields))
        out.append(InstrSpec(mnem, op, fmt, tuple(operands), UNIT[op], doc))

    for m, doc in (("matmul", "ACC += INPUT @ WEIGHTS"), ("mulacc", "ACC += INPUT * WEIGHTS (elementwise)"),
                   ("add", "OUTPUT = INPUT + WEIGHTS"), ("sub", "OUTPUT = INPUT - WEIGHTS"),
                   ("mul", "OUTPUT = INPUT * WEIGHTS"), ("div", "OUTPUT = INPUT / WEIGHTS"),
                   ("pow", "OUTPUT = INPUT ** WEIGHTS")):
        add(m, doc=doc)
    red = (f("acc", 5, 5), f("axis", 6, 7, maximum=2), f("count", 8, 9))
    red_ops = (Operand(Flag(), ("acc",)), Operand(num, ("axis",)), Operand(length, ("count",), optional=True))
    add("max", red, red_ops, "ACC row 0 / col 0 = max over OUTPUT rows/cols (axis 0, 1; 2 = both) [and ACC]")
    add("sum", red, red_ops, "ACC row 0 / col 0 = sum over OUTPUT rows/cols (axis 0, 1; 2 = both) [+ ACC]")
    add("relu", doc="OUTPUT = max(INPUT, 0)")
    add("exp", doc="OUTPUT = e ** INPUT")
    add("log", doc="OUTPUT = log2(INPUT)")
    add("gtz", doc="OUTPUT = 1 where INPUT > 0 else 0")
    add("copy", (f("tgt", 5, 6), f("src", 7, 8), f("tr", 9, 9)),
        (Operand(reg, ("tgt",)), Operand(reg, ("src",)), Operand(Flag("T"), ("tr",), optional=True)),
        "REG[tgt] = REG[src] (T: transposed)")
    add("zero", (f("tgt", 5, 6),), (Operand(reg, ("tgt",)),), "REG[tgt] = 0")
    ls = (f("apu", 5, 7), f("reg", 8, 9), f("h", 10, 11), f("w", 12, 13))
    ls_ops = (Operand(num, ("apu",)), Operand(reg, ("reg",)), Operand(length, ("h",), optional=True),
              Operand(length, ("w",), optional=True))
    add("load", ls + (f("zero", 14, 14), f("skip", 15, 15)),
        ls_ops + (Operand(Flag(), ("zero",), optional=True), Operand(Flag(), ("skip",), optional=True)),
        "REG = cache[APU] (h x w; zero: clear first; skip: one row down)")
    add("store", ls, ls_ops, "cache[APU][:h, :w] = REG[:h, :w]")
    loop = (f("loop", 5, 7),)
    loop_ops = (Operand(num, ("loop",)),)
    add("start_independent_loop", loop, loop_ops, "start loop (iterations may run in any order, superscalar)")
    add("start_loop", loop, loop_ops, "start an in-order loop")
    add("end_loop", loop, loop_ops, "next iteration of the innermost loop, or leave it")
    mem = (f("capu", 5, 7), f("mapu", 8, 10), f("slot", 11, 12))
    mem_ops = (Operand(num, ("capu",)), Operand(num, ("mapu",)), Operand(num, ("slot",), optional=True))
    add("mem_read", mem, mem_ops, "cache[slot window + APU_c] = DRAM[APU_m] (nnisa extension opcode)")
    add("mem_write", mem, mem_ops, "DRAM[APU_m] = cache[slot window + APU_c] (nnisa extension opcode)")
    return out


@lru_cache(maxsize=None)
def cherry_isa(sz: int = 4) -> ISA:
    """The canonical Cherry ISA for tile size ``sz`` (only the text of lengths depends on it)."""
    if sz not in (4, 16, 32):
        raise ValueError(f"SZ must be 4, 16 or 32, not {sz}")
    return ISA(f"Cherry cisa (SZ={sz})", WORD_BITS, OPCODE, COLUMNS, _instrs(sz))


#: seed spellings accepted by the assembler → (mnemonic, fixed leading operands)
ALIASES = {"copy_acc_to_output": ("copy", ("OUTPUT", "ACC")), "zero_acc": ("zero", ("ACC",)),
           "end_loop_or_jump_if_needed": ("end_loop", ()), "cisa_load": ("load", ()), "cisa_store": ("store", ()),
           "cisa_mem_read": ("mem_read", ()), "cisa_mem_write": ("mem_write", ())}
