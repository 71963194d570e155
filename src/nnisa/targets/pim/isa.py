"""The PIM ISA as data (spec ``pim_isa.md`` §2–§4): one row per instruction.

The field table is a function of the word size (64/32) and the encoding mode (``strict`` = the
published 4-bit mvmul group, ``extended`` = nnisa's 10-bit group, D5); :func:`build_isa` builds
the table for one mode.  Opcode numbers follow pimsim-nn's enum order (D1); bit 0 is the LSB (D2).
Each row carries the facts the timing and energy models read (:class:`Facts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...core.bitfields import Field
from ...core.isa import ISA, Instr, table_isa
from ...core.operands import Byte, Int, OperandError, OperandKind, Reg, parse_int

#: IR columns of a decoded PIM instruction (unused columns are 0).  ``len`` holds the vector
#: length in elements or the transfer size in bytes; ``ofs_val`` is offset_value/offset_byte.
COLUMNS = [("op", "i2"), ("rd", "i4"), ("rs1", "i4"), ("rs2", "i4"), ("len", "i4"), ("imm", "i8"),
           ("mbiw", "i4"), ("relu", "i4"), ("group", "i4"), ("core", "i4"), ("ev", "i4"), ("val", "i4"),
           ("ibiw", "i4"), ("obiw", "i4"), ("ofs_sel", "i4"), ("ofs_val", "i4")]

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

#: the operand table (spec §2 "assembly form")
OPERANDS = {
    "rd": (REG, "rd"), "rs1": (REG, "rs1"), "rs2": (REG, "rs2"), "len": (INT, "len"), "imm": (INT, "imm"),
    "byte": (BYTE, "imm"), "ofs": (OFS, "ofs_sel", "ofs_val"), "ofs_byte": (OPT_INT, "ofs_val"),
    "ibiw": (INT, "ibiw"), "obiw": (INT, "obiw"), "mbiw": (INT, "mbiw"), "relu": (INT, "relu"),
    "group": (INT, "group"), "core": (INT, "core"), "ev": (INT, "ev"), "val": (INT, "val"),
}


def fields(word_bits: int = 64, extended: bool = False, pimsim_compat: bool = False,
           odd_pairs: bool = False) -> dict[str, Field | tuple[Field, ...] | None]:
    """The field table of one mode (spec §3.2, §3.5, §3.6).

    ``g*`` fields are global-address registers: even in strict mode, unless relaxed for programs
    from PIMCOMP-NN's JSON, which address global memory with one (odd) register (§1.6)."""
    even = not (extended or odd_pairs)
    bw_min = 0 if pimsim_compat else 1
    w64 = word_bits == 64
    rd, rs1 = Field("rd", 10, 6), Field("rs1", 15, 11)

    def pair(f: Field) -> Field:
        return Field(f.name, f.hi, f.lo, multiple_of=2, doc="even register (global address pair)") if even else f

    imm64 = Field("imm", 63, 32, signed=True, wrap_unsigned=True)
    return {
        "rd": rd, "rs1": rs1, "rs2": Field("rs2", 20, 16), "grd": pair(rd), "grs1": pair(rs1),
        "len": Field("len", 31, 21, doc="len (elements) or size (bytes)"),
        "ofs": (Field("ofs_sel", 34, 32), Field("ofs_val", 63, 35, signed=True)) if w64 else None,
        "ofs_byte": Field("ofs_val", 63, 35, signed=True) if w64 else None,
        "imm_sldi": imm64 if w64 else Field("imm", 31, 11, signed=True),
        "imm_saddi": imm64 if w64 else Field("imm", 31, 16, signed=True),
        "ibiw": Field("ibiw", 10, 6, minimum=bw_min), "obiw": Field("obiw", 15, 11, minimum=bw_min),
        "mbiw": Field("mbiw", 20, 16, minimum=bw_min), "relu": Field("relu", 31, 31),
        "group": Field("group", 30, 21) if extended else Field("group", 24, 21),
        "byte": Field("imm", 18, 11), "src_core": Field("rs1", 10, 6), "core": Field("core", 20, 11),
        "ev": Field("ev", 10, 6), "val": Field("val", 20, 11),
    }


@dataclass(frozen=True)
class Facts:
    """What the timing and energy models read about one opcode (spec §8, §9)."""

    #: unit charged with the busy time: scalar (also nop, setbw), matrix, vector or transfer
    unit: str = "scalar"
    #: register-file reads (source and address registers) and writes (scalar results)
    reads: int = 0
    writes: int = 0
    #: event kind of the discrete-event loop (ld, st, send, recv, sync, wait); "" = local
    event: str = ""
    #: vector ops: operands read from local memory; write-back of len·obyw bytes (pimsim-nn);
    #: one result element (native mode writes one obyw element)
    srcs: int = 1
    obyw_wb: bool = False
    one_elem: bool = False


S1, S2 = Facts(reads=1, writes=1), Facts(reads=2, writes=1)
V3, V2 = Facts("vector", reads=3), Facts("vector", reads=2)
VV, VVO = Facts("vector", reads=3, srcs=2), Facts("vector", reads=3, srcs=2, obyw_wb=True)
VO = Facts("vector", reads=2, obyw_wb=True)
_VV, _V1 = "rd rs1 rs2 len ofs", "rd rs1 len ofs"
_VV_S, _V1_S = "rd, rs1, rs2, len, [ofs]", "rd, rs1, len, [ofs]"
_X = "rd, rs1, len, [ofs]"

#: the instruction table: mnemonic, opcode, fields, syntax, pimsim-nn's instruction class, meaning, facts
ROWS = (
    Instr("nop", 0, "", "", "nop", "no operation (nnisa; not in the ISA text)", Facts()),
    Instr("sldi", 1, "rd imm_sldi", "rd, imm", "scalar", "rd ← imm", Facts(writes=1)),
    Instr("sld", 2, "rd grs1 ofs_byte", "rd, rs1, [ofs_byte]", "scalar",
          "rd ← 4-byte word at GMem[gaddr(rs1) + offset_byte]", S1),
    Instr("sadd", 3, "rd rs1 rs2", "rd, rs1, rs2", "scalar", "rd ← rs1 + rs2", S2),
    Instr("ssub", 4, "rd rs1 rs2", "rd, rs1, rs2", "scalar", "rd ← rs1 − rs2", S2),
    Instr("smul", 5, "rd rs1 rs2", "rd, rs1, rs2", "scalar", "rd ← rs1 × rs2", S2),
    Instr("saddi", 6, "rd rs1 imm_saddi", "rd, rs1, imm", "scalar", "rd ← rs1 + imm", S1),
    Instr("smuli", 7, "rd rs1 imm_saddi", "rd, rs1, imm", "scalar", "rd ← rs1 × imm", S1),
    Instr("setbw", 8, "ibiw obiw", "ibiw, obiw", "matrix", "set input/output element bit-widths", Facts()),
    Instr("mvmul", 9, "rd rs1 mbiw group relu", "rd, rs1, mbiw, relu, group", "matrix",
          "LMem[rd] ← LMem[rs1] × weights of array group (wrap to obiw, optional ReLU)", Facts("matrix", reads=2)),
    Instr("vvadd", 10, _VV, _VV_S, "vector", "d = a + b", VV),
    Instr("vvsub", 11, _VV, _VV_S, "vector", "d = a − b", VV),
    Instr("vvmul", 12, _VV, _VV_S, "vector", "d = a · b", VVO),
    Instr("vvdmul", 13, _VV, _VV_S, "vector", "d = Σ a·b", Facts("vector", reads=3, srcs=2, one_elem=True)),
    Instr("vvmax", 14, _VV, _VV_S, "vector", "d = max(a, b)", VV),
    Instr("vvsll", 15, _VV, _VV_S, "vector", "d = a << b", VVO),
    Instr("vvsra", 16, _VV, _VV_S, "vector", "d = a >> b (arithmetic)", VVO),
    Instr("vavg", 17, "rd rs1 rs2 len ofs_byte", "rd, rs1, rs2, len, [ofs_byte]", "vector",
          "d = mean of len elements, stride reg[rs2]", Facts("vector", reads=3, one_elem=True)),
    Instr("vrelu", 18, _V1, _V1_S, "vector", "d = max(a, 0)", V2),
    Instr("vtanh", 19, _V1, _V1_S, "vector", "d = tanh(a) (fixed point)", VO),
    Instr("vsigm", 20, _V1, _V1_S, "vector", "d = sigmoid(a) (fixed point)", VO),
    Instr("vmv", 21, "rd rs1 rs2 len", "rd, rs1, rs2, len", "vector", "gather: d[i] = a[i · reg[rs2]]", V3),
    Instr("vrsu", 22, _VV, _VV_S, "vector", "d = sat(min(a, reg[rs2]))", Facts("vector", reads=3, obyw_wb=True)),
    Instr("vrsl", 23, _VV, _VV_S, "vector", "d = sat(max(a, reg[rs2]))", Facts("vector", reads=3, obyw_wb=True)),
    Instr("ld", 24, "rd grs1 len ofs", _X, "transfer", "LMem[rd] ← GMem[gaddr(rs1)], size bytes",
          Facts("transfer", reads=2, event="ld")),
    Instr("st", 25, "grd rs1 len ofs", _X, "transfer", "GMem[gaddr(rd)] ← LMem[rs1], size bytes",
          Facts("transfer", reads=2, event="st")),
    Instr("lldi", 26, "rd byte len ofs_byte", "rd, byte, len, [ofs_byte]", "transfer",
          "LMem[rd] ← imm byte repeated size times", Facts("transfer", reads=1)),
    Instr("lmv", 27, "rd rs1 len ofs", _X, "transfer", "LMem[rd] ← LMem[rs1], size bytes",
          Facts("transfer", reads=2)),
    Instr("send", 28, "src_core core len ofs_byte", "rs1, core, len, [ofs_byte]", "transfer",
          "send LMem[rs1] (size bytes) to core", Facts("transfer", reads=1, event="send")),
    Instr("recv", 29, "rd core len ofs_byte", "rd, core, len, [ofs_byte]", "transfer",
          "receive size bytes from core into LMem[rd]", Facts("transfer", reads=1, event="recv")),
    Instr("wait", 30, "ev val", "ev, val", "transfer", "block until ev == val, then reset ev",
          Facts("transfer", event="wait")),
    Instr("sync", 31, "ev core", "ev, core", "transfer", "ev of core += 1", Facts("transfer", event="sync")),
)

#: mnemonics in opcode order, and opcode by mnemonic (derived from the table)
OPCODES = [r.mnemonic for r in sorted(ROWS, key=lambda r: r.opcode)]
OPCODE = {r.mnemonic: r.opcode for r in ROWS}
assert OPCODES == [OPCODES[i] for i in range(len(ROWS))] and sorted(OPCODE.values()) == list(range(len(ROWS)))


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
    mode = ("extended" if extended else "strict") + (", odd address registers" if odd_pairs and not extended else "")
    return table_isa(f"PIM ISA ({mode})", word_bits, Field("op", 5, 0), COLUMNS, ROWS,
                     fields(word_bits, extended, pimsim_compat, odd_pairs), OPERANDS)
