"""The PIMSAB ISA as data (spec §2.3–§2.5): 128-bit words, four formats, one record per instruction.

Formats: R (CRAM compute, RF-operand compute, RF scalar ops), M (DRAM transfers), X (CRAM-to-CRAM,
tile-to-tile, synchronisation) and N (opcode only).  Bits [127:121] hold the 7-bit opcode; every bit
an instruction does not use is reserved and must be 0.  The assembly syntax follows Listing 1 of
the paper (destination first, a precision after each vector operand); options are ``key=value``
keyword operands.  Predication is a mnemonic suffix handled by :mod:`.formats.text`.
"""

from __future__ import annotations

from functools import lru_cache

from ...core.bitfields import Field, Format
from ...core.isa import ISA, InstrSpec, Operand
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

OPCODES = {
    "nop": 0x00, "add": 0x01, "sub": 0x02, "mult": 0x03, "max": 0x04, "min": 0x05, "and": 0x06, "or": 0x07,
    "xor": 0x08, "not": 0x09, "copy": 0x0A, "set": 0x0B, "reset": 0x0C, "shift": 0x0D, "set_mask": 0x0E,
    "reduce_cram": 0x0F, "reduce_tile": 0x10, "cram_local_shf": 0x11, "mac": 0x12,
    "mul_const": 0x18, "add_const": 0x19, "dot_const": 0x1A, "read_rf": 0x1B, "write_rf": 0x1C, "add_rf": 0x1D,
    "sub_rf": 0x1E, "popcount_rf": 0x1F,
    "load": 0x20, "store": 0x21, "load_shf": 0x22, "load_rf": 0x23, "store_rf": 0x24, "cram_tx_rx": 0x25,
    "cram_bcast": 0x26, "tile_tx": 0x27, "tile_rx": 0x28, "signal": 0x30, "wait": 0x31, "reset_sync": 0x32,
    "halt": 0x3F,
}
MNEMONIC = {v: k for k, v in OPCODES.items()}

BINARY = ("add", "sub", "mult", "max", "min", "and", "or", "xor")
UNARY = ("not", "copy")
CONST_OPS = ("mul_const", "add_const", "dot_const")
RF_SCALAR = ("read_rf", "write_rf", "add_rf", "sub_rf", "popcount_rf")
DRAM_OPS = ("load", "store", "load_shf", "load_rf", "store_rf")
NET_OPS = ("tile_tx", "tile_rx")
SYNC_OPS = ("signal", "wait", "reset_sync")
#: instructions that take a predication suffix (.m / .c / .nc)
PREDICATED = BINARY + UNARY + ("set", "reset", "shift", "set_mask", "reduce_cram", "reduce_tile",
                               "cram_local_shf", "mac") + CONST_OPS
PRED_SUFFIX = {0: "", 1: ".m", 2: ".c", 3: ".nc"}

DOC = {
    "nop": "no operation", "add": "d = a + b", "sub": "d = a − b", "mult": "d = a × b",
    "max": "d = max(a, b)", "min": "d = min(a, b)", "and": "d = a & b", "or": "d = a | b", "xor": "d = a ^ b",
    "not": "d = ~a", "copy": "d = a", "set": "all d bits = 1", "reset": "all d bits = 0",
    "shift": "move across bitlines by dist (cross-CRAM ring)", "set_mask": "mask latch ← wordline ra",
    "reduce_cram": "sum bitline groups of 2^levels inside each CRAM",
    "reduce_tile": "sum CRAM groups of 2^levels over the H-tree",
    "cram_local_shf": "bitline b ← bitline b mod 2^shf inside each CRAM",
    "mac": "d = acc(rd at pin) + a × b (bit-level lifetime; scratch rows)",
    "mul_const": "d = a × rf[rb]", "add_const": "d = a + rf[rb]", "dot_const": "d = a·rf[x] + b·rf[y]",
    "read_rf": "move rf[ra] to the controller", "write_rf": "rf[rd] ← imm", "add_rf": "rf[rd] ← rf[ra] + rf[rb]",
    "sub_rf": "rf[rd] ← rf[ra] − rf[rb]", "popcount_rf": "rf[rd] ← Σ over bitlines of the value at (ra, pa)",
    "load": "CRAM rows ← DRAM vector", "store": "DRAM vector ← CRAM rows",
    "load_shf": "CRAM rows ← DRAM vector through broadcast/shuffle", "load_rf": "RF ← DRAM",
    "store_rf": "DRAM ← RF", "cram_tx_rx": "CRAM dst rows ← CRAM src rows", "cram_bcast": "every CRAM ← CRAM 0 rows",
    "tile_tx": "send rows (or the RF image) to a tile", "tile_rx": "receive rows from a tile (blocking)",
    "signal": "increment a mailbox of a destination CRAM", "wait": "block until the mailbox is non-zero",
    "reset_sync": "zero this tile's mailboxes", "halt": "end of stream",
}

CATEGORY = {m: "compute" for m in BINARY + UNARY + ("set", "reset", "shift", "set_mask", "mac")}
CATEGORY.update({"reduce_cram": "reduce", "reduce_tile": "reduce", "cram_local_shf": "shuffle"})
CATEGORY.update({m: "rf-compute" for m in CONST_OPS})
CATEGORY.update({m: "rf" for m in RF_SCALAR})
CATEGORY.update({m: "dram" for m in DRAM_OPS})
CATEGORY.update({"cram_tx_rx": "intra-tile", "cram_bcast": "intra-tile", "tile_tx": "network",
                 "tile_rx": "network", "signal": "sync", "wait": "sync", "reset_sync": "sync",
                 "nop": "control", "halt": "control"})


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


def _op(kind, *cols, optional=False):
    return Operand(kind, tuple(cols), optional)


def _kw(key, kind, *cols, optional=True):
    return Operand(kind, tuple(cols), optional, keyword=key)


# ---------------------------------------------------------------------------- formats
OPC = Field("op", 127, 121, doc="opcode")


def _r(*names: str, rf_rd: bool = False, rf_ra: bool = False, rf_rb: bool = False) -> tuple[Field, ...]:
    """Format R fields by name (RF-index uses of rd/ra/rb are limited to 0..31)."""
    lim = {"rd": rf_rd, "ra": rf_ra, "rb": rf_rb}
    table = {
        "pred": Field("pred", 120, 119, doc="0 always, 1 mask, 2 carry, 3 not carry"),
        "size": Field("size", 118, 98, doc="bitlines from 0 (0 = all)"),
        "rd": Field("rd", 97, 88, maximum=31 if lim["rd"] else None),
        "pd": Field("pd", 87, 80, doc="precision byte"),
        "ra": Field("ra", 79, 70, maximum=31 if lim["ra"] else None),
        "pa": Field("pa", 69, 62),
        "rb": Field("rb", 61, 52, maximum=31 if lim["rb"] else None),
        "pb": Field("pb", 51, 44),
        "levels": Field("levels", 43, 39, minimum=1),
        "dir": Field("dir", 43, 43), "dist": Field("dist", 42, 33, doc="distance − 1"),
        "xrf": Field("xrf", 43, 34, maximum=31), "px": Field("px", 33, 26),
        "yrf": Field("yrf", 25, 16, maximum=31), "py": Field("py", 15, 8),
        "shf": Field("shf", 43, 42), "shf_en": Field("shf_en", 41, 41, minimum=1),
        "scratch": Field("scratch", 43, 34), "pin": Field("pin", 33, 26),
        "imm": Field("imm", 43, 12),
    }
    return tuple(table[n] for n in names)


def _m(*names: str, rf: bool = False) -> tuple[Field, ...]:
    table = {
        "tr": Field("tr", 120, 120, doc="1 = transpose in the DRAM-side unit"),
        "bcast": Field("bcast", 119, 119), "shf_en": Field("shf_en", 118, 118), "shf": Field("shf", 117, 116),
        "size": Field("size", 115, 95, doc="elements (0 = all)"),
        "row": Field("row", 94, 85, maximum=31 if rf else None),
        "p": Field("p", 84, 77), "addr": Field("addr", 76, 29, doc="DRAM byte address"),
        "cram": Field("cram", 28, 19, doc="first CRAM"),
    }
    return tuple(table[n] for n in names)


def _x(*names: str) -> tuple[Field, ...]:
    table = {
        "bcast": Field("bcast", 120, 120), "shf_en": Field("shf_en", 119, 119), "shf": Field("shf", 118, 117),
        "size": Field("size", 116, 96), "src_tile": Field("src_tile", 95, 84), "dst_tile": Field("dst_tile", 83, 72),
        "src_cram": Field("src_cram", 71, 62), "dst_cram": Field("dst_cram", 61, 52),
        "src_row": Field("src_row", 51, 42), "dst_row": Field("dst_row", 41, 32), "p": Field("p", 31, 24),
        "rf": Field("rf", 23, 23, doc="RF image"), "tag": Field("tag", 22, 0),
    }
    return tuple(table[n] for n in names)


def _spec(mn: str, fields: tuple[Field, ...], operands: tuple[Operand, ...]) -> InstrSpec:
    fmt = Format(WORD_BITS, ((OPC, OPCODES[mn]),), fields)
    return InstrSpec(mn, OPCODES[mn], fmt, operands, CATEGORY[mn], DOC[mn])


_DST = (_op(WL, "rd"), _op(PREC, "pd"))
_SRC_A = (_op(WL, "ra"), _op(PREC, "pa"))
_SRC_B = (_op(WL, "rb"), _op(PREC, "pb"))
_SIZE = _kw("size", SIZE_KW, "size")


def _specs() -> list[InstrSpec]:
    cr = ("pred", "size")
    s = [_spec("nop", (), ())]
    for mn in BINARY:
        s.append(_spec(mn, _r(*cr, "rd", "pd", "ra", "pa", "rb", "pb"), _DST + _SRC_A + _SRC_B + (_SIZE,)))
    for mn in UNARY:
        s.append(_spec(mn, _r(*cr, "rd", "pd", "ra", "pa"), _DST + _SRC_A + (_SIZE,)))
    for mn in ("set", "reset"):
        s.append(_spec(mn, _r(*cr, "rd", "pd"), _DST + (_SIZE,)))
    s.append(_spec("shift", _r(*cr, "rd", "pd", "ra", "pa", "dir", "dist"),
                   _DST + _SRC_A + (_kw("dir", Direction(), "dir"), _kw("dist", Distance(), "dist"), _SIZE)))
    s.append(_spec("set_mask", _r(*cr, "ra"), (_op(WL, "ra"), _SIZE)))
    for mn in ("reduce_cram", "reduce_tile"):
        s.append(_spec(mn, _r(*cr, "rd", "pd", "ra", "pa", "levels"),
                       _DST + _SRC_A + (_kw("levels", Int(), "levels", optional=False), _SIZE)))
    s.append(_spec("cram_local_shf", _r(*cr, "rd", "pd", "ra", "pa", "shf", "shf_en"),
                   _DST + _SRC_A + (_kw("shf", SHF, "shf_en", "shf", optional=False), _SIZE)))
    s.append(_spec("mac", _r(*cr, "rd", "pd", "ra", "pa", "rb", "pb", "scratch", "pin"),
                   _DST + _SRC_A + _SRC_B + (_kw("acc", PREC, "pin", optional=False),
                                             _kw("scratch", WL, "scratch", optional=False), _SIZE)))
    for mn in ("mul_const", "add_const"):
        s.append(_spec(mn, _r(*cr, "rd", "pd", "ra", "pa", "rb", "pb", rf_rb=True),
                       _DST + _SRC_A + (_op(RFR, "rb"), _op(PREC, "pb"), _SIZE)))
    s.append(_spec("dot_const", _r(*cr, "rd", "pd", "ra", "pa", "rb", "pb", "xrf", "px", "yrf", "py"),
                   _DST + _SRC_A + _SRC_B + (_op(RFR, "xrf"), _op(PREC, "px"), _op(RFR, "yrf"), _op(PREC, "py"),
                                             _SIZE)))
    s.append(_spec("read_rf", _r("ra", rf_ra=True), (_op(RFR, "ra"),)))
    s.append(_spec("write_rf", _r("rd", "imm", rf_rd=True), (_op(RFR, "rd"), _op(Imm32(), "imm"))))
    for mn in ("add_rf", "sub_rf"):
        s.append(_spec(mn, _r("rd", "ra", "rb", rf_rd=True, rf_ra=True, rf_rb=True),
                       (_op(RFR, "rd"), _op(RFR, "ra"), _op(RFR, "rb"))))
    s.append(_spec("popcount_rf", _r("size", "rd", "ra", "pa", rf_rd=True),
                   (_op(RFR, "rd"), _op(WL, "ra"), _op(PREC, "pa"), _SIZE)))
    m_opts = (_kw("tr", TR, "tr"), _kw("cram", INT_KW, "cram"))
    s.append(_spec("load", _m("tr", "size", "row", "p", "addr", "cram"),
                   (_op(WL, "row"), _op(ADDR, "addr"), _op(SIZE, "size"), _op(PREC, "p")) + m_opts))
    s.append(_spec("store", _m("tr", "size", "row", "p", "addr", "cram"),
                   (_op(ADDR, "addr"), _op(WL, "row"), _op(SIZE, "size"), _op(PREC, "p")) + m_opts))
    s.append(_spec("load_shf", _m("tr", "bcast", "shf_en", "shf", "size", "row", "p", "addr", "cram"),
                   (_op(WL, "row"), _op(ADDR, "addr"), _op(SIZE, "size"), _op(PREC, "p"),
                    _kw("bcast", BIT, "bcast"), _kw("shf", SHF, "shf_en", "shf")) + m_opts))
    s.append(_spec("load_rf", _m("size", "row", "p", "addr", rf=True),
                   (_op(RFR, "row"), _op(ADDR, "addr"), _op(SIZE_OPT, "size", optional=True),
                    _op(PREC_OPT, "p", optional=True))))
    s.append(_spec("store_rf", _m("size", "row", "p", "addr", rf=True),
                   (_op(ADDR, "addr"), _op(RFR, "row"), _op(SIZE_OPT, "size", optional=True),
                    _op(PREC_OPT, "p", optional=True))))
    s.append(_spec("cram_tx_rx", _x("src_tile", "dst_tile", "src_cram", "dst_cram", "src_row", "dst_row", "p"),
                   (_op(CRAM_ROW, "dst_cram", "dst_row"), _op(CRAM_ROW, "src_cram", "src_row"), _op(PREC, "p"))))
    s.append(_spec("cram_bcast", _x("src_tile", "dst_tile", "src_row", "dst_row", "p"),
                   (_op(WL, "dst_row"), _op(WL, "src_row"), _op(PREC, "p"))))
    net = (_op(TILE_ROW, "dst_tile", "dst_row"), _op(TILE_ROW, "src_tile", "src_row"), _op(SIZE, "size"),
           _op(PREC, "p"))
    s.append(_spec("tile_tx", _x("shf_en", "shf", "size", "src_tile", "dst_tile", "src_row", "dst_row", "p", "rf"),
                   net + (_kw("shf", SHF, "shf_en", "shf"), _kw("rf", BIT, "rf"))))
    s.append(_spec("tile_rx", _x("bcast", "shf_en", "shf", "size", "src_tile", "dst_tile", "src_row", "dst_row",
                                 "p", "rf"),
                   net + (_kw("bcast", BIT, "bcast"), _kw("shf", SHF, "shf_en", "shf"), _kw("rf", BIT, "rf"))))
    tag = _kw("tag", INT_KW, "tag")
    s.append(_spec("signal", _x("src_tile", "dst_tile", "src_cram", "dst_cram", "tag"),
                   (_op(TILE_CRAM, "dst_tile", "dst_cram"), _op(TILE_CRAM, "src_tile", "src_cram"), tag)))
    s.append(_spec("wait", _x("src_tile", "dst_tile", "src_cram", "dst_cram", "tag"),
                   (_op(TILE_CRAM, "src_tile", "src_cram"), tag, _kw("cram", INT_KW, "dst_cram"))))
    s.append(_spec("reset_sync", (), ()))
    s.append(_spec("halt", (), ()))
    return s


@lru_cache(maxsize=1)
def build_isa() -> ISA:
    """The PIMSAB ISA table (one instance; the encoding does not depend on the configuration)."""
    return ISA("PIMSAB", WORD_BITS, OPC, COLUMNS, _specs())


def op(mnemonic: str) -> int:
    """Opcode of a mnemonic."""
    return OPCODES[mnemonic]
