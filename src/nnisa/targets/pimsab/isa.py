"""The PIMSAB ISA as data (spec §2.3–§2.5): 128-bit words, four formats, one record per instruction.

Formats: R (CRAM compute, RF-operand compute, RF scalar ops), M (DRAM transfers), X (CRAM-to-CRAM,
tile-to-tile, synchronisation) and N (opcode only).  Bits [127:121] hold the 7-bit opcode; every bit
an instruction does not use is reserved and must be 0.  The assembly syntax follows Listing 1 of
the paper (destination first, a precision after each vector operand); options are ``key=value``
keyword operands.  Predication is a mnemonic suffix handled by :mod:`.formats.text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...core.bitfields import Field
from ...core.isa import ISA, Instr, table_isa
from ...core.operands import Int, OperandError, OperandKind, Reg, parse_int
from . import precision as P

WORD_BITS = 128

#: IR columns (a column an instruction does not use is 0)
COLUMNS = [("op", "i2"), ("pred", "i1"), ("size", "i4"), ("rd", "i4"), ("pd", "i2"), ("ra", "i4"), ("pa", "i2"),
           ("rb", "i4"), ("pb", "i2"), ("levels", "i2"), ("dir", "i1"), ("dist", "i2"), ("xrf", "i2"),
           ("px", "i2"), ("yrf", "i2"), ("py", "i2"), ("shf", "i1"), ("shf_en", "i1"), ("scratch", "i4"),
           ("pin", "i2"), ("imm", "i8"), ("tr", "i1"), ("bcast", "i1"), ("row", "i4"), ("p", "i2"),
           ("addr", "i8"), ("cram", "i4"), ("src_tile", "i4"), ("dst_tile", "i4"), ("src_cram", "i4"),
           ("dst_cram", "i4"), ("src_row", "i4"), ("dst_row", "i4"), ("rf", "i1"), ("tag", "i4")]

#: the predication suffix of each ``pred`` value
PRED_SUFFIX = {0: "", 1: ".m", 2: ".c", 3: ".nc"}


# ---------------------------------------------------------------------------- operand kinds
class Prec(OperandKind):
    """A precision token (``i8``, ``u1``, ``f32``, ...) stored as a precision byte."""

    def __init__(self, omit_zero: bool = False):
        self.omit_zero = omit_zero

    def label(self, columns):
        return columns[0]

    def parse(self, token):
        return (P.parse_token(token),)

    def format(self, values):
        if self.omit_zero and values[0] == 0:
            return None
        return P.token(values[0])

    def explicit(self, values):
        return P.token(values[0])


class Size(OperandKind):
    """A bitline count or ``all`` (0); as a keyword it is omitted when ``all``."""

    def __init__(self, omit_all: bool = False):
        self.omit_all = omit_all

    def label(self, columns):
        return "size|all"

    def parse(self, token):
        t = token.strip().lower()
        return (0,) if t == "all" else (parse_int(t),)

    def format(self, values):
        if values[0] == 0:
            return None if self.omit_all else "all"
        return str(values[0])

    def explicit(self, values):
        return "all" if values[0] == 0 else str(values[0])


class Addr(Int):
    """A DRAM byte address, printed in hex."""

    def __init__(self):
        super().__init__(hex_digits=6)

    def label(self, columns):
        return "addr"


class Pair(OperandKind):
    """``tN:rM``, ``cN:rM`` or ``tN:cM``: two numbered items joined by a colon."""

    ncols = 2

    def __init__(self, first: str, second: str):
        self.first, self.second = first, second

    def label(self, columns):
        return f"{self.first}N:{self.second}M"

    def parse(self, token):
        t = token.strip().lower()
        a, sep, b = t.partition(":")
        if not sep or not a.startswith(self.first) or not b.startswith(self.second) \
                or not a[len(self.first):].isdigit() or not b[len(self.second):].isdigit():
            raise OperandError(f"expected {self.first}N:{self.second}M, got {token.strip()!r}")
        return int(a[len(self.first):]), int(b[len(self.second):])

    def format(self, values):
        return f"{self.first}{values[0]}:{self.second}{values[1]}"


class Shuffle(OperandKind):
    """``shf=k``: sets the shuffle-enable column to 1 and the pattern to k (omitted when disabled)."""

    ncols = 2

    def label(self, columns):
        return "k"

    def parse(self, token):
        k = parse_int(token)
        if not 0 <= k <= 3:
            raise OperandError(f"shuffle pattern {k} outside 0..3")
        return 1, k

    def format(self, values):
        en, k = values
        return None if en == 0 and k == 0 else str(k)


class Flag(Int):
    """A 0/1 option (``tr=``, ``bcast=``, ``rf=``) with a default, omitted when at the default."""

    def __init__(self, default: int = 0):
        super().__init__(omit_default=True, default=default)

    def parse(self, token):
        v = parse_int(token)
        if v not in (0, 1):
            raise OperandError(f"expected 0 or 1, got {token.strip()!r}")
        return (v,)


class Direction(OperandKind):
    """``dir=left`` (0, toward lower bitline indices; the default) or ``dir=right`` (1)."""

    def label(self, columns):
        return "left|right"

    def parse(self, token):
        t = token.strip().lower()
        if t in ("left", "0"):
            return (0,)
        if t in ("right", "1"):
            return (1,)
        raise OperandError(f"expected left or right, got {token.strip()!r}")

    def format(self, values):
        return None if values[0] == 0 else "right"


class Distance(OperandKind):
    """``dist=d`` (1..1024, stored as d − 1 so that field value 0 means 1; omitted when 1)."""

    def label(self, columns):
        return "d"

    def parse(self, token):
        d = parse_int(token)
        if not 1 <= d <= 1024:
            raise OperandError(f"shift distance {d} outside 1..1024")
        return (d - 1,)

    def format(self, values):
        return None if values[0] == 0 else str(values[0] + 1)


class Imm32(Int):
    """A 32-bit immediate: −2³¹..2³²−1, stored as its unsigned 32-bit pattern, printed signed."""

    def parse(self, token):
        v = parse_int(token)
        if not -(1 << 31) <= v < (1 << 32):
            raise OperandError(f"immediate {v} does not fit 32 bits")
        return (v & 0xFFFFFFFF,)

    def format(self, values):
        v = values[0]
        return str(v - (1 << 32) if v >= 1 << 31 else v)


WL = Reg("r", 1024)
RFR = Reg("rf", 32)
PREC, PREC_OPT = Prec(), Prec(omit_zero=True)
SIZE, SIZE_KW, SIZE_OPT = Size(), Size(omit_all=True), Size(omit_all=True)
ADDR = Addr()
TILE_ROW, CRAM_ROW, TILE_CRAM = Pair("t", "r"), Pair("c", "r"), Pair("t", "c")
SHF = Shuffle()
TR, BIT = Flag(1), Flag(0)
INT_KW = Int(omit_default=True)

#: the operand table (Listing 1 of the paper: destination first, a precision after each vector operand)
OPERANDS = {
    "rd": (WL, "rd"), "pd": (PREC, "pd"), "ra": (WL, "ra"), "pa": (PREC, "pa"), "rb": (WL, "rb"), "pb": (PREC, "pb"),
    "rd_rf": (RFR, "rd"), "ra_rf": (RFR, "ra"), "rb_rf": (RFR, "rb"), "xrf": (RFR, "xrf"), "px": (PREC, "px"),
    "yrf": (RFR, "yrf"), "py": (PREC, "py"), "imm": (Imm32(), "imm"), "size": (SIZE_KW, "size"),
    "dir": (Direction(), "dir"), "dist": (Distance(), "dist"), "levels": (Int(), "levels"),
    "shf": (SHF, "shf_en", "shf"), "acc": (PREC, "pin"), "scratch": (WL, "scratch"),
    "row": (WL, "row"), "row_rf": (RFR, "row"), "addr": (ADDR, "addr"), "len": (SIZE, "size"), "p": (PREC, "p"),
    "len_opt": (SIZE_OPT, "size"), "p_opt": (PREC_OPT, "p"), "tr": (TR, "tr"), "cram": (INT_KW, "cram"),
    "bcast": (BIT, "bcast"), "rf": (BIT, "rf"), "tag": (INT_KW, "tag"), "dst_cram": (INT_KW, "dst_cram"),
    "dst": (CRAM_ROW, "dst_cram", "dst_row"), "src": (CRAM_ROW, "src_cram", "src_row"),
    "dst_row": (WL, "dst_row"), "src_row": (WL, "src_row"),
    "to": (TILE_ROW, "dst_tile", "dst_row"), "from": (TILE_ROW, "src_tile", "src_row"),
    "to_cram": (TILE_CRAM, "dst_tile", "dst_cram"), "from_cram": (TILE_CRAM, "src_tile", "src_cram"),
}

# ---------------------------------------------------------------------------- formats
OPC = Field("op", 127, 121, doc="opcode")
#: the field tables of the four formats (R: compute, M: DRAM, X: CRAM/tile transfers and sync;
#: N has the opcode only); ``*_rf`` fields index the 32-entry register file
FIELDS = {
    "R": {
        "pred": Field("pred", 120, 119, doc="0 always, 1 mask, 2 carry, 3 not carry"),
        "size": Field("size", 118, 98, doc="bitlines from 0 (0 = all)"),
        "rd": Field("rd", 97, 88), "rd_rf": Field("rd", 97, 88, maximum=31),
        "pd": Field("pd", 87, 80, doc="precision byte"),
        "ra": Field("ra", 79, 70), "ra_rf": Field("ra", 79, 70, maximum=31), "pa": Field("pa", 69, 62),
        "rb": Field("rb", 61, 52), "rb_rf": Field("rb", 61, 52, maximum=31), "pb": Field("pb", 51, 44),
        "levels": Field("levels", 43, 39, minimum=1),
        "dir": Field("dir", 43, 43), "dist": Field("dist", 42, 33, doc="distance − 1"),
        "xrf": Field("xrf", 43, 34, maximum=31), "px": Field("px", 33, 26),
        "yrf": Field("yrf", 25, 16, maximum=31), "py": Field("py", 15, 8),
        "shf": Field("shf", 43, 42), "shf_en": Field("shf_en", 41, 41, minimum=1),
        "scratch": Field("scratch", 43, 34), "pin": Field("pin", 33, 26),
        "imm": Field("imm", 43, 12),
    },
    "M": {
        "tr": Field("tr", 120, 120, doc="1 = transpose in the DRAM-side unit"),
        "bcast": Field("bcast", 119, 119), "shf_en": Field("shf_en", 118, 118), "shf": Field("shf", 117, 116),
        "size": Field("size", 115, 95, doc="elements (0 = all)"),
        "row": Field("row", 94, 85), "row_rf": Field("row", 94, 85, maximum=31),
        "p": Field("p", 84, 77), "addr": Field("addr", 76, 29, doc="DRAM byte address"),
        "cram": Field("cram", 28, 19, doc="first CRAM"),
    },
    "X": {
        "bcast": Field("bcast", 120, 120), "shf_en": Field("shf_en", 119, 119), "shf": Field("shf", 118, 117),
        "size": Field("size", 116, 96), "src_tile": Field("src_tile", 95, 84), "dst_tile": Field("dst_tile", 83, 72),
        "src_cram": Field("src_cram", 71, 62), "dst_cram": Field("dst_cram", 61, 52),
        "src_row": Field("src_row", 51, 42), "dst_row": Field("dst_row", 41, 32), "p": Field("p", 31, 24),
        "rf": Field("rf", 23, 23, doc="RF image"), "tag": Field("tag", 22, 0),
    },
    "N": {},
}


@dataclass(frozen=True)
class Facts:
    """What the assembler and the timing model read about one opcode (spec §2.5, §3.3)."""

    #: kind of timing operation (:mod:`.sim.ops`): compute, load, store, send, receive, signal, wait
    timing: str = "compute"
    #: takes a predication suffix (.m / .c / .nc)
    predicated: bool = False
    #: the column naming the tile whose stream executes it (tile_tx: its sender)
    stream: str = ""
    #: columns the assembler fills with the executing tile
    own: tuple[str, ...] = ()


C = Facts(predicated=True)
_BIN, _BIN_S = "pred size rd pd ra pa rb pb", "rd, pd, ra, pa, rb, pb, [size=]"
_UN, _UN_S = "pred size rd pd ra pa", "rd, pd, ra, pa, [size=]"
_RF = "rd_rf ra_rf rb_rf"
_LOAD = Facts("load")
_M_OPT = "[tr=], [cram=]"
_NET = "to, from, len, p"
_SYNC = "src_tile dst_tile src_cram dst_cram tag"

#: the instruction table: mnemonic, opcode, fields, syntax, category, meaning, facts, format
ROWS = (
    Instr("nop", 0x00, "", "", "control", "no operation", Facts(), "N"),
    Instr("add", 0x01, _BIN, _BIN_S, "compute", "d = a + b", C, "R"),
    Instr("sub", 0x02, _BIN, _BIN_S, "compute", "d = a − b", C, "R"),
    Instr("mult", 0x03, _BIN, _BIN_S, "compute", "d = a × b", C, "R"),
    Instr("max", 0x04, _BIN, _BIN_S, "compute", "d = max(a, b)", C, "R"),
    Instr("min", 0x05, _BIN, _BIN_S, "compute", "d = min(a, b)", C, "R"),
    Instr("and", 0x06, _BIN, _BIN_S, "compute", "d = a & b", C, "R"),
    Instr("or", 0x07, _BIN, _BIN_S, "compute", "d = a | b", C, "R"),
    Instr("xor", 0x08, _BIN, _BIN_S, "compute", "d = a ^ b", C, "R"),
    Instr("not", 0x09, _UN, _UN_S, "compute", "d = ~a", C, "R"),
    Instr("copy", 0x0A, _UN, _UN_S, "compute", "d = a", C, "R"),
    Instr("set", 0x0B, "pred size rd pd", "rd, pd, [size=]", "compute", "all d bits = 1", C, "R"),
    Instr("reset", 0x0C, "pred size rd pd", "rd, pd, [size=]", "compute", "all d bits = 0", C, "R"),
    Instr("shift", 0x0D, _UN + " dir dist", "rd, pd, ra, pa, [dir=], [dist=], [size=]", "compute",
          "move across bitlines by dist (cross-CRAM ring)", C, "R"),
    Instr("set_mask", 0x0E, "pred size ra", "ra, [size=]", "compute", "mask latch ← wordline ra", C, "R"),
    Instr("reduce_cram", 0x0F, _UN + " levels", "rd, pd, ra, pa, levels=, [size=]", "reduce",
          "sum bitline groups of 2^levels inside each CRAM", C, "R"),
    Instr("reduce_tile", 0x10, _UN + " levels", "rd, pd, ra, pa, levels=, [size=]", "reduce",
          "sum CRAM groups of 2^levels over the H-tree", C, "R"),
    Instr("cram_local_shf", 0x11, _UN + " shf shf_en", "rd, pd, ra, pa, shf=, [size=]", "shuffle",
          "bitline b ← bitline b mod 2^shf inside each CRAM", C, "R"),
    Instr("mac", 0x12, _BIN + " scratch pin", "rd, pd, ra, pa, rb, pb, acc=, scratch=, [size=]", "compute",
          "d = acc(rd at pin) + a × b (bit-level lifetime; scratch rows)", C, "R"),
    Instr("mul_const", 0x18, "pred size rd pd ra pa rb_rf pb", "rd, pd, ra, pa, rb_rf, pb, [size=]", "rf-compute",
          "d = a × rf[rb]", C, "R"),
    Instr("add_const", 0x19, "pred size rd pd ra pa rb_rf pb", "rd, pd, ra, pa, rb_rf, pb, [size=]", "rf-compute",
          "d = a + rf[rb]", C, "R"),
    Instr("dot_const", 0x1A, _BIN + " xrf px yrf py", "rd, pd, ra, pa, rb, pb, xrf, px, yrf, py, [size=]",
          "rf-compute", "d = a·rf[x] + b·rf[y]", C, "R"),
    Instr("read_rf", 0x1B, "ra_rf", "ra_rf", "rf", "move rf[ra] to the controller", Facts(), "R"),
    Instr("write_rf", 0x1C, "rd_rf imm", "rd_rf, imm", "rf", "rf[rd] ← imm", Facts(), "R"),
    Instr("add_rf", 0x1D, _RF, "rd_rf, ra_rf, rb_rf", "rf", "rf[rd] ← rf[ra] + rf[rb]", Facts(), "R"),
    Instr("sub_rf", 0x1E, _RF, "rd_rf, ra_rf, rb_rf", "rf", "rf[rd] ← rf[ra] − rf[rb]", Facts(), "R"),
    Instr("popcount_rf", 0x1F, "size rd_rf ra pa", "rd_rf, ra, pa, [size=]", "rf",
          "rf[rd] ← Σ over bitlines of the value at (ra, pa)", Facts(), "R"),
    Instr("load", 0x20, "tr size row p addr cram", "row, addr, len, p, " + _M_OPT, "dram",
          "CRAM rows ← DRAM vector", _LOAD, "M"),
    Instr("store", 0x21, "tr size row p addr cram", "addr, row, len, p, " + _M_OPT, "dram",
          "DRAM vector ← CRAM rows", Facts("store"), "M"),
    Instr("load_shf", 0x22, "tr bcast shf_en shf size row p addr cram",
          "row, addr, len, p, [bcast=], [shf=], " + _M_OPT, "dram",
          "CRAM rows ← DRAM vector through broadcast/shuffle", _LOAD, "M"),
    Instr("load_rf", 0x23, "size row_rf p addr", "row_rf, addr, [len_opt], [p_opt]", "dram", "RF ← DRAM", _LOAD, "M"),
    Instr("store_rf", 0x24, "size row_rf p addr", "addr, row_rf, [len_opt], [p_opt]", "dram", "DRAM ← RF",
          Facts("store"), "M"),
    Instr("cram_tx_rx", 0x25, "src_tile dst_tile src_cram dst_cram src_row dst_row p", "dst, src, p", "intra-tile",
          "CRAM dst rows ← CRAM src rows", Facts(own=("src_tile", "dst_tile")), "X"),
    Instr("cram_bcast", 0x26, "src_tile dst_tile src_row dst_row p", "dst_row, src_row, p", "intra-tile",
          "every CRAM ← CRAM 0 rows", Facts(own=("src_tile", "dst_tile")), "X"),
    Instr("tile_tx", 0x27, "shf_en shf size src_tile dst_tile src_row dst_row p rf", _NET + ", [shf=], [rf=]",
          "network", "send rows (or the RF image) to a tile", Facts("send", stream="src_tile"), "X"),
    Instr("tile_rx", 0x28, "bcast shf_en shf size src_tile dst_tile src_row dst_row p rf",
          _NET + ", [bcast=], [shf=], [rf=]", "network", "receive rows from a tile (blocking)",
          Facts("receive", stream="dst_tile"), "X"),
    Instr("signal", 0x30, _SYNC, "to_cram, from_cram, [tag=]", "sync", "increment a mailbox of a destination CRAM",
          Facts("signal", stream="src_tile"), "X"),
    Instr("wait", 0x31, _SYNC, "from_cram, [tag=], [cram=dst_cram]", "sync", "block until the mailbox is non-zero",
          Facts("wait", own=("dst_tile",)), "X"),
    Instr("reset_sync", 0x32, "", "", "sync", "zero this tile's mailboxes", Facts(), "N"),
    Instr("halt", 0x3F, "", "", "control", "end of stream", Facts(), "N"),
)

#: opcode by mnemonic, mnemonic by opcode, category by mnemonic (derived from the table)
OPCODES = {r.mnemonic: r.opcode for r in ROWS}
MNEMONIC = {r.opcode: r.mnemonic for r in ROWS}
CATEGORY = {r.mnemonic: r.category for r in ROWS}
#: instructions that take a predication suffix (.m / .c / .nc)
PREDICATED = tuple(r.mnemonic for r in ROWS if r.facts.predicated)
BINARY = tuple(r.mnemonic for r in ROWS if r.fields == _BIN)


@lru_cache(maxsize=1)
def build_isa() -> ISA:
    """The PIMSAB ISA table (one instance; the encoding does not depend on the configuration)."""
    return table_isa("PIMSAB", WORD_BITS, OPC, COLUMNS, ROWS, FIELDS, OPERANDS)


def op(mnemonic: str) -> int:
    """Opcode of a mnemonic."""
    return OPCODES[mnemonic]
