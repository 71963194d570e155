"""The PIM ISA as data (spec ``pim_isa.md`` §2–§4).

One record per instruction; :func:`build_isa` computes the layout for the chosen word size
(64/32) and encoding mode (``strict`` = the published 4-bit mvmul group, ``extended`` = nnisa's
10-bit group, D5).  Opcode numbers follow pimsim-nn's enum order (D1); bit 0 is the LSB (D2).
"""

from __future__ import annotations

from functools import lru_cache

from ...core.bitfields import Field, Format
from ...core.isa import ISA, InstrSpec, Operand
from ...core.operands import Byte, Int, OperandError, OperandKind, Reg, parse_int

#: IR columns of a decoded PIM instruction (unused columns are 0).  ``len`` holds the vector
#: length in elements or the transfer size in bytes; ``ofs_val`` is offset_value/offset_byte.
COLUMNS = [("op", "i2"), ("rd", "i4"), ("rs1", "i4"), ("rs2", "i4"), ("len", "i4"), ("imm", "i8"),
           ("mbiw", "i4"), ("relu", "i4"), ("group", "i4"), ("core", "i4"), ("ev", "i4"), ("val", "i4"),
           ("ibiw", "i4"), ("obiw", "i4"), ("ofs_sel", "i4"), ("ofs_val", "i4")]

OPCODES = ["nop", "sldi", "sld", "sadd", "ssub", "smul", "saddi", "smuli", "setbw", "mvmul",
           "vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vavg", "vrelu", "vtanh",
           "vsigm", "vmv", "vrsu", "vrsl", "ld", "st", "lldi", "lmv", "send", "recv", "wait", "sync"]
OPCODE = {m: i for i, m in enumerate(OPCODES)}

#: pimsim-nn's instruction class (decides the executing unit)
CATEGORY = {"nop": "nop", "setbw": "matrix", "mvmul": "matrix"}
CATEGORY.update({m: "scalar" for m in OPCODES[1:8]})
CATEGORY.update({m: "vector" for m in OPCODES[10:24]})
CATEGORY.update({m: "transfer" for m in OPCODES[24:]})

DOC = {
    "nop": "no operation (nnisa; not in the ISA text)",
    "sldi": "rd ← imm",
    "sld": "rd ← 4-byte word at GMem[gaddr(rs1) + offset_byte]",
    "sadd": "rd ← rs1 + rs2", "ssub": "rd ← rs1 − rs2", "smul": "rd ← rs1 × rs2",
    "saddi": "rd ← rs1 + imm", "smuli": "rd ← rs1 × imm",
    "setbw": "set input/output element bit-widths",
    "mvmul": "LMem[rd] ← LMem[rs1] × weights of array group (wrap to obiw, optional ReLU)",
    "vvadd": "d = a + b", "vvsub": "d = a − b", "vvmul": "d = a · b", "vvdmul": "d = Σ a·b",
    "vvmax": "d = max(a, b)", "vvsll": "d = a << b", "vvsra": "d = a >> b (arithmetic)",
    "vavg": "d = mean of len elements, stride reg[rs2]", "vrelu": "d = max(a, 0)",
    "vtanh": "d = tanh(a) (fixed point)", "vsigm": "d = sigmoid(a) (fixed point)",
    "vmv": "gather: d[i] = a[i · reg[rs2]]", "vrsu": "d = sat(min(a, reg[rs2]))",
    "vrsl": "d = sat(max(a, reg[rs2]))",
    "ld": "LMem[rd] ← GMem[gaddr(rs1)], size bytes", "st": "GMem[gaddr(rd)] ← LMem[rs1], size bytes",
    "lldi": "LMem[rd] ← imm byte repeated size times", "lmv": "LMem[rd] ← LMem[rs1], size bytes",
    "send": "send LMem[rs1] (size bytes) to core", "recv": "receive size bytes from core into LMem[rd]",
    "wait": "block until ev == val, then reset ev", "sync": "ev of core += 1",
}

OFS_NAMES = ("rd", "rs1", "rs2")


class Offset(OperandKind):
    """``ofs(mask, value)``: mask 0–7 or ``rd|rs1|rs2``; omitted (printed) when both are 0."""

    ncols = 2

    def label(self, columns):
        return "ofs(select, value)"

    def parse(self, token):
        t = token.strip()
        if not (t.lower().startswith("ofs(") and t.endswith(")")):
            raise OperandError(f"expected ofs(mask, value), got {t!r}")
        inner = t[4:-1].split(",")
        if len(inner) != 2:
            raise OperandError(f"ofs() takes a mask and a value, got {t!r}")
        mask_txt, val_txt = inner[0].strip(), inner[1]
        try:
            mask = parse_int(mask_txt)
        except OperandError:
            mask = 0
            for name in mask_txt.split("|"):
                name = name.strip().lower().lstrip("$")
                if name not in OFS_NAMES:
                    raise OperandError(f"offset mask must be 0-7 or rd|rs1|rs2, got {mask_txt!r}") from None
                mask |= 1 << OFS_NAMES.index(name)
        if not 0 <= mask <= 7:
            raise OperandError(f"offset mask {mask} outside 0-7")
        return (mask, parse_int(val_txt))

    def format(self, values):
        sel, val = values
        if sel == 0 and val == 0:
            return None
        names = "|".join(n for i, n in enumerate(OFS_NAMES) if sel >> i & 1) or "0"
        return f"ofs({names}, {val})"


REG = Reg("$r", 32, alt_prefixes=("$",))
INT = Int()
OPT_INT = Int(omit_default=True)
OFS = Offset()
BYTE = Byte()


def _op(kind, *cols, optional=False):
    return Operand(kind, tuple(cols), optional)


#: assembly syntax per instruction (spec §2 "assembly form")
SYNTAX = {
    "nop": (),
    "sldi": (_op(REG, "rd"), _op(INT, "imm")),
    "sld": (_op(REG, "rd"), _op(REG, "rs1"), _op(OPT_INT, "ofs_val", optional=True)),
    "sadd": (_op(REG, "rd"), _op(REG, "rs1"), _op(REG, "rs2")),
    "saddi": (_op(REG, "rd"), _op(REG, "rs1"), _op(INT, "imm")),
    "setbw": (_op(INT, "ibiw"), _op(INT, "obiw")),
    "mvmul": (_op(REG, "rd"), _op(REG, "rs1"), _op(INT, "mbiw"), _op(INT, "relu"), _op(INT, "group")),
    "vv": (_op(REG, "rd"), _op(REG, "rs1"), _op(REG, "rs2"), _op(INT, "len"), _op(OFS, "ofs_sel", "ofs_val", optional=True)),
    "vavg": (_op(REG, "rd"), _op(REG, "rs1"), _op(REG, "rs2"), _op(INT, "len"), _op(OPT_INT, "ofs_val", optional=True)),
    "v1": (_op(REG, "rd"), _op(REG, "rs1"), _op(INT, "len"), _op(OFS, "ofs_sel", "ofs_val", optional=True)),
    "vmv": (_op(REG, "rd"), _op(REG, "rs1"), _op(REG, "rs2"), _op(INT, "len")),
    "xfer": (_op(REG, "rd"), _op(REG, "rs1"), _op(INT, "len"), _op(OFS, "ofs_sel", "ofs_val", optional=True)),
    "lldi": (_op(REG, "rd"), _op(BYTE, "imm"), _op(INT, "len"), _op(OPT_INT, "ofs_val", optional=True)),
    "send": (_op(REG, "rs1"), _op(INT, "core"), _op(INT, "len"), _op(OPT_INT, "ofs_val", optional=True)),
    "recv": (_op(REG, "rd"), _op(INT, "core"), _op(INT, "len"), _op(OPT_INT, "ofs_val", optional=True)),
    "wait": (_op(INT, "ev"), _op(INT, "val")),
    "sync": (_op(INT, "ev"), _op(INT, "core")),
}
for _m in ("ssub", "smul"):
    SYNTAX[_m] = SYNTAX["sadd"]
SYNTAX["smuli"] = SYNTAX["saddi"]
for _m in ("vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vrsu", "vrsl"):
    SYNTAX[_m] = SYNTAX["vv"]
for _m in ("vrelu", "vtanh", "vsigm"):
    SYNTAX[_m] = SYNTAX["v1"]
for _m in ("ld", "st", "lmv"):
    SYNTAX[_m] = SYNTAX["xfer"]


def _fields(mnem: str, word_bits: int, extended: bool, pimsim_compat: bool,
            odd_pairs: bool = False) -> tuple[Field, ...]:
    """The operand fields of one instruction for the chosen mode (spec §3.2, §3.5, §3.6)."""
    # even-register rule for global addresses: strict mode, unless relaxed for programs from
    # PIMCOMP-NN's JSON, which address global memory with one (odd) register (§1.6)
    even = 1 if (extended or odd_pairs) else 2
    bw_min = 0 if pimsim_compat else 1
    rd, rs1, rs2 = Field("rd", 10, 6), Field("rs1", 15, 11), Field("rs2", 20, 16)
    ln = Field("len", 31, 21, doc="len (elements) or size (bytes)")
    wide64 = word_bits == 64
    ofs = (Field("ofs_sel", 34, 32), Field("ofs_val", 63, 35, signed=True)) if wide64 else ()
    ofs_byte = (Field("ofs_val", 63, 35, signed=True),) if wide64 else ()
    if mnem == "nop":
        return ()
    if mnem == "sldi":
        imm = Field("imm", 63, 32, signed=True, wrap_unsigned=True) if wide64 else Field("imm", 31, 11, signed=True)
        return (rd, imm)
    if mnem == "sld":
        return (rd, rs1 if even == 1 else _even(rs1)) + ofs_byte
    if mnem in ("sadd", "ssub", "smul"):
        return (rd, rs1, rs2)
    if mnem in ("saddi", "smuli"):
        imm = Field("imm", 63, 32, signed=True, wrap_unsigned=True) if wide64 else Field("imm", 31, 16, signed=True)
        return (rd, rs1, imm)
    if mnem == "setbw":
        return (Field("ibiw", 10, 6, minimum=bw_min), Field("obiw", 15, 11, minimum=bw_min))
    if mnem == "mvmul":
        group = Field("group", 30, 21) if extended else Field("group", 24, 21)
        return (rd, rs1, Field("mbiw", 20, 16, minimum=bw_min), group, Field("relu", 31, 31))
    if mnem in ("vvadd", "vvsub", "vvmul", "vvdmul", "vvmax", "vvsll", "vvsra", "vrsu", "vrsl"):
        return (rd, rs1, rs2, ln) + ofs
    if mnem == "vavg":
        return (rd, rs1, rs2, ln) + ofs_byte
    if mnem in ("vrelu", "vtanh", "vsigm"):
        return (rd, rs1, ln) + ofs
    if mnem == "vmv":
        return (rd, rs1, rs2, ln)
    if mnem == "ld":
        return (rd, rs1 if even == 1 else _even(rs1), ln) + ofs
    if mnem == "st":
        return (rd if even == 1 else _even(rd), rs1, ln) + ofs
    if mnem == "lmv":
        return (rd, rs1, ln) + ofs
    if mnem == "lldi":
        return (rd, Field("imm", 18, 11), ln) + ofs_byte
    if mnem == "send":
        return (Field("rs1", 10, 6), Field("core", 20, 11), ln) + ofs_byte
    if mnem == "recv":
        return (rd, Field("core", 20, 11), ln) + ofs_byte
    if mnem == "wait":
        return (Field("ev", 10, 6), Field("val", 20, 11))
    if mnem == "sync":
        return (Field("ev", 10, 6), Field("core", 20, 11))
    raise KeyError(mnem)


def _even(f: Field) -> Field:
    return Field(f.name, f.hi, f.lo, multiple_of=2, doc="even register (global address pair)")


@lru_cache(maxsize=None)
def build_isa(word_bits: int = 64, extended: bool = False, pimsim_compat: bool = False,
              odd_pairs: bool = False) -> ISA:
    """Build the PIM ISA table for a word size and encoding mode.

    Parameters
    ----------
    word_bits
        64 (with offsets and 32-bit immediates) or 32 (no offsets, short immediates).
    extended
        nnisa's extended encoding: 10-bit mvmul group (W[30:21]) and odd global-address
        registers accepted (PIMCOMP-NN output needs both).
    pimsim_compat
        Accept bit-width 0 in setbw/mvmul, as pimsim-nn does.
    odd_pairs
        Accept odd global-address registers in strict mode too (programs imported from
        pimsim-nn JSON, where the importer has already warned, §1.6).
    """
    if word_bits not in (32, 64):
        raise ValueError("PIM words are 32 or 64 bits")
    opfield = Field("op", 5, 0)
    specs = []
    for mnem, code in OPCODE.items():
        fmt = Format(word_bits, ((opfield, code),), _fields(mnem, word_bits, extended, pimsim_compat, odd_pairs))
        specs.append(InstrSpec(mnem, code, fmt, SYNTAX[mnem], CATEGORY[mnem], DOC[mnem]))
    mode = ("extended" if extended else "strict") + (", odd address registers" if odd_pairs and not extended else "")
    return ISA(f"PIM ISA ({mode})", word_bits, opfield, COLUMNS, specs)
