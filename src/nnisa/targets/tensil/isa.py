"""Tensil instruction tables: the layout derived from an architecture and one record per
(opcode, flags) header byte.

Spec §2 derives every field width from the ``.tarch``; §3 places the fields.  The header byte
(opcode in the high nibble, flags in the low one) is the dispatch key of the table, so every
canonical (opcode, flags) pair is one :class:`~nnisa.core.isa.InstrSpec` and anything outside
the table decodes as a raw word (the decoder is total, §3.5).

IR rows (numpy structured arrays, :data:`COLUMNS`):

``hdr``
    header byte ``opcode << 4 | flags``; :data:`RAW` for a non-canonical word.
``a0``, ``s0``
    operand-0 address and stride field (local; the SIMD write address).
``a1``, ``s1``
    operand-1 address and stride field (acc/DRAM; SIMD read address; LoadWeights count−1;
    LoadLUT table).
``n``
    count − 1 (MatMul, DataMove).
``sop``, ``sl``, ``sr``, ``sd``
    SIMD op, left source, right source, destination.
``reg``, ``val``
    Configure register and value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ...core.bitfields import Field
from ...core.isa import ISA, Instr, table_isa
from ...core.operands import Int, OperandError, OperandKind, parse_int
from .config import TensilArch

COLUMNS = [("hdr", "i4"), ("a0", "i8"), ("s0", "i8"), ("a1", "i8"), ("s1", "i8"), ("n", "i8"),
           ("sop", "i8"), ("sl", "i8"), ("sr", "i8"), ("sd", "i8"), ("reg", "i8"), ("val", "i8")]
RAW = 0x100  # hdr of a non-canonical word (kept verbatim in Program.raw)

NOP, MATMUL, DATAMOVE, LOADWEIGHTS, SIMD, LOADLUT, CONFIGURE = 0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0xF
OPCODE_NAMES = {NOP: "NoOp", MATMUL: "MatMul", DATAMOVE: "DataMove", LOADWEIGHTS: "LoadWeights", SIMD: "SIMD",
                LOADLUT: "LoadLUT", CONFIGURE: "Configure"}

#: DataMove kind → (Tensil statistics name, other memory, direction "in" = into local)
DATAMOVE_KINDS = {
    0x0: ("DRAM0ToLocal", "dram0", "<-"),
    0x1: ("LocalToDRAM0", "dram0", "->"),
    0x2: ("DRAM1ToLocal", "dram1", "<-"),
    0x3: ("LocalToDRAM1", "dram1", "->"),
    0xC: ("AccToLocal", "acc", "<-"),
    0xD: ("LocalToAcc", "acc", "->"),
    0xF: ("LocalToAccAcc", "acc", "+>"),
}

SIMD_OPS = ("NoOp", "Zero", "Move", "Not", "And", "Or", "Increment", "Decrement", "Add", "Subtract",
            "Multiply", "Abs", "GreaterThan", "GreaterThanEqual", "Min", "Max", "Lookup")
SIMD_OP_CODES = {name.lower(): i for i, name in enumerate(SIMD_OPS)}
LOOKUP = 16

CONFIG_REGISTERS = {0x0: "dram0_offset", 0x1: "dram0_cache", 0x4: "dram1_offset", 0x5: "dram1_cache",
                    0x8: "timeout", 0x9: "tracepoint", 0xA: "program_counter", 0xB: "sample_interval"}
CONFIG_REGISTER_CODES = {v: k for k, v in CONFIG_REGISTERS.items()}

VAL_MAX = (1 << 63) - 1  # IR limit of Configure values (wider values stay raw words)


def log2ceil(x: int) -> int:
    """Bits needed to index ``x`` items: bit length of ``x − 1`` (``log2ceil(1) == 0``)."""
    return max(x - 1, 0).bit_length()


def round8(b: int) -> int:
    return (b + 7) // 8 * 8


@dataclass(frozen=True)
class Layout:
    """Every width and bit position of one architecture's instructions (spec §2)."""

    arch: TensilArch
    local_bits: int
    acc_bits: int
    dram0_bits: int
    dram1_bits: int
    stride0_bits: int
    stride1_bits: int
    simd_op_bits: int
    simd_operand_bits: int
    simd_instr_bits: int
    op0_addr_bits: int
    op0_bits: int
    op1_addr_bits: int
    op1_bits: int
    op2_addr_bits: int
    op2_bits: int
    header_bits: int
    instruction_bytes: int

    @classmethod
    def from_arch(cls, arch: TensilArch) -> "Layout":
        return _layout(arch)

    @property
    def instruction_bits(self) -> int:
        return 8 * self.instruction_bytes

    @property
    def op1_lo(self) -> int:
        return self.op0_bits

    @property
    def op2_lo(self) -> int:
        return self.op0_bits + self.op1_bits

    @property
    def flags_lo(self) -> int:
        return self.op2_lo + self.op2_bits

    def table(self) -> str:
        """The layout as a Markdown table in the style of spec §2."""
        def rng(lo, n):
            return f"[{lo},{lo + n})" if n else "–"
        rows = [
            ("local/acc/dram0/dram1 bits", f"{self.local_bits}/{self.acc_bits}/{self.dram0_bits}/{self.dram1_bits}"),
            ("stride bits", f"{self.stride0_bits}/{self.stride1_bits}"),
            ("operand 0 (addr, stride)", f"{rng(0, self.op0_bits)}: {rng(0, self.op0_addr_bits)}, "
                                         f"{rng(self.op0_addr_bits, self.stride0_bits)}"),
            ("operand 1 (addr, stride)", f"{rng(self.op1_lo, self.op1_bits)}: {rng(self.op1_lo, self.op1_addr_bits)}, "
                                         f"{rng(self.op1_lo + self.op1_addr_bits, self.stride1_bits)}"),
            ("operand 2 (size)", f"{rng(self.op2_lo, self.op2_bits)}: {rng(self.op2_lo, self.op2_addr_bits)}"),
            ("SIMD op/operand/instruction bits", f"{self.simd_op_bits}/{self.simd_operand_bits}/{self.simd_instr_bits}"),
            ("flags", rng(self.flags_lo, 4)),
            ("opcode", rng(self.flags_lo + 4, 4)),
            ("instruction bytes", str(self.instruction_bytes)),
        ]
        name = self.arch.name or "architecture"
        return "\n".join([f"| {name} | |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in rows]) + "\n"


@lru_cache(maxsize=64)
def _layout(arch: TensilArch) -> Layout:
    local_bits, acc_bits = log2ceil(arch.local_depth), log2ceil(arch.accumulator_depth)
    dram0_bits, dram1_bits = log2ceil(arch.dram0_depth), log2ceil(arch.dram1_depth)
    stride0_bits, stride1_bits = log2ceil(arch.stride0_depth), log2ceil(arch.stride1_depth)
    simd_op_bits = 5 if arch.lut else 4
    simd_operand_bits = log2ceil(arch.simd_registers_depth + 1)
    simd_instr_bits = 3 * simd_operand_bits + simd_op_bits
    op0_addr_bits = max(local_bits, acc_bits)
    op0_bits = round8(op0_addr_bits + stride0_bits)
    op1_addr_bits = max(local_bits, dram0_bits, dram1_bits, acc_bits)
    op1_bits = round8(op1_addr_bits + stride1_bits)
    op2_addr_bits = max(min(local_bits, acc_bits), min(local_bits, dram0_bits), min(local_bits, dram1_bits),
                        simd_instr_bits)
    op2_bits = round8(op2_addr_bits)
    header_bits = 8
    nbytes = (header_bits + op0_bits + op1_bits + op2_bits) // 8
    return Layout(arch, local_bits, acc_bits, dram0_bits, dram1_bits, stride0_bits, stride1_bits, simd_op_bits,
                  simd_operand_bits, simd_instr_bits, op0_addr_bits, op0_bits, op1_addr_bits, op1_bits,
                  op2_addr_bits, op2_bits, header_bits, nbytes)


# ---------------------------------------------------------------------------- operand kinds
_NUM = r"(0[xX][0-9a-fA-F]+|\d+)"
_MEM = re.compile(r"^\s*(local|acc|dram0|dram1)\s*\[\s*" + _NUM + r"\s*\]\s*(?:@\s*2\s*\^\s*(\d+))?\s*$", re.I)
_MOVE = re.compile(r"^(.*?)(<-|->|\+>)(.*)$")
_SIMD = re.compile(r"^\s*(\w+)\s*=\s*(\w+)\s*(?:\(\s*([^)]*?)\s*\))?\s*$")
#: DataMove kind of each text form (arrow, other memory)
KIND_BY_FORM = {(arrow, mem): kind for kind, (_, mem, arrow) in DATAMOVE_KINDS.items()}


def parse_mem(tok: str, want: tuple[str, ...]) -> tuple[str, int, int]:
    """``local[12]@2^1`` → ("local", 12, 1); the memory must be one of ``want``."""
    m = _MEM.match(tok)
    if not m:
        raise OperandError(f"expected a memory operand like {want[0]}[12] or {want[0]}[12]@2^1, got {tok.strip()!r}")
    name = m.group(1).lower()
    if name not in want:
        raise OperandError(f"expected {' or '.join(want)}, got {name}")
    digits = max(len(m.group(2)), len(m.group(3) or ""))
    if digits > 20:  # no field is wider than 64 bits (and Python refuses > 4,300 digits)
        raise OperandError(f"{name} address or stride out of range ({digits:,} digits)")
    return name, int(m.group(2), 0), int(m.group(3) or 0)


def format_mem(mem: str, addr: int, stride: int) -> str:
    return f"{mem}[{addr}]" + (f"@2^{stride}" if stride else "")


class Mem(OperandKind):
    """An address in one memory with its stride exponent: ``local[3]@2^1`` (columns addr, stride)."""

    ncols = 2

    def __init__(self, mem: str):
        self.mem = mem

    def label(self, columns):
        return f"{self.mem}[{columns[0]}]@2^{columns[1]}"

    def parse(self, token):
        return parse_mem(token, (self.mem,))[1:]

    def format(self, values):
        return format_mem(self.mem, *values)


class Count(OperandKind):
    """A vector count ≥ 1, stored as count − 1."""

    def label(self, columns):
        return "count"

    def parse(self, token):
        c = parse_int(token)
        if c < 1:
            raise OperandError(f"count must be >= 1, got {c}")
        return (c - 1,)

    def format(self, values):
        return str(values[0] + 1)


class Move(OperandKind):
    """One DataMove kind: ``local[a]@2^s <- acc[b]@2^t`` (columns a0, s0, a1, s1; the arrow and the
    other memory select the kind)."""

    ncols = 4

    def __init__(self, kind: int):
        _, self.mem, self.arrow = DATAMOVE_KINDS[kind]

    def label(self, columns):
        return f"local[a0]@2^s0 {self.arrow} {self.mem}[a1]@2^s1"

    def parse(self, token):
        m = _MOVE.match(token)
        if not m:
            raise OperandError("expected 'local[a] <- MEM[b]', 'local[a] -> MEM[b]' or 'local[a] +> acc[b]'")
        _, a0, s0 = parse_mem(m.group(1), ("local",))
        mem, a1, s1 = parse_mem(m.group(3), ("dram0", "dram1", "acc"))
        if (m.group(2), mem) != (self.arrow, self.mem):
            raise OperandError(f"no DataMove kind 'local {m.group(2)} {mem}'")
        return a0, s0, a1, s1

    def format(self, values):
        a0, s0, a1, s1 = values
        return f"{format_mem('local', a0, s0)} {self.arrow} {format_mem(self.mem, a1, s1)}"


class SimdExpr(OperandKind):
    """``DST = OP(SRC, SRC)`` (columns sd, sop, sl, sr): O/I or R1..Rn, the op by name."""

    ncols = 4

    def __init__(self, regs: int, lut: bool):
        self.regs, self.lut = regs, lut

    def label(self, columns):
        return "DST = OP(SRC, SRC)"

    def _reg(self, tok: str, what: str) -> int:
        t = tok.strip().upper()
        if t == ("I" if what == "source" else "O"):
            return 0
        if t.startswith("R") and t[1:].isdigit():
            k = int(t[1:])
            if not 1 <= k <= self.regs:
                raise OperandError(f"register {t} outside R1..R{self.regs} (simd_registers_depth {self.regs})")
            return k
        raise OperandError(f"expected {'I' if what == 'source' else 'O'} or R1..R{self.regs} as {what}, "
                           f"got {tok.strip()!r}")

    def parse(self, token):
        m = _SIMD.match(token)
        if not m:
            raise OperandError("expected 'DST = OP(SRC, SRC)[, w=acc[a]][, r=acc[b]]'")
        op = m.group(2).lower()
        if op not in SIMD_OP_CODES or (op == "lookup" and not self.lut):
            raise OperandError(f"unknown SIMD op {m.group(2)!r}")
        srcs = [t.strip() for t in m.group(3).split(",")] if (m.group(3) or "").strip() else []
        if len(srcs) > 2:
            raise OperandError("a SIMD op takes at most two sources")
        sl = self._reg(srcs[0], "source") if srcs else 0
        sr = self._reg(srcs[1], "source") if len(srcs) == 2 else 0
        return self._reg(m.group(1), "destination"), SIMD_OP_CODES[op], sl, sr

    def format(self, values):
        sd, sop, sl, sr = values
        return f"{f'R{sd}' if sd else 'O'} = {SIMD_OPS[sop]}({f'R{sl}' if sl else 'I'}, {f'R{sr}' if sr else 'I'})"


class AccAddr(OperandKind):
    """``acc[a]`` of a SIMD write/read; printed when its flag is set (``always``) or non-zero."""

    def __init__(self, always: bool):
        self.always = always

    def label(self, columns):
        return "acc[a]"

    def parse(self, token):
        _, addr, stride = parse_mem(token, ("acc",))
        if stride:
            raise OperandError("SIMD accumulator addresses take no stride")
        return (addr,)

    def format(self, values):
        return f"acc[{values[0]}]" if self.always or values[0] else None


class ConfigRegister(OperandKind):
    """A configuration register by name (``timeout``) or number 0..15."""

    def label(self, columns):
        return "register"

    def parse(self, token):
        t = token.strip().lower()
        v = CONFIG_REGISTER_CODES[t] if t in CONFIG_REGISTER_CODES else parse_int(t)
        if not 0 <= v <= 15:
            raise OperandError(f"configure register must be a name or 0..15, got {token.strip()!r}")
        return (v,)

    def format(self, values):
        return CONFIG_REGISTERS.get(values[0], str(values[0]))


def operands(arch: TensilArch) -> dict:
    """The operand table of ``arch`` (SIMD registers and ops depend on it)."""
    out = {"local": (Mem("local"), "a0", "s0"), "acc": (Mem("acc"), "a1", "s1"), "size": (Count(), "n"),
           "count": (Count(), "a1"),
           "expr": (SimdExpr(arch.simd_registers_depth, bool(arch.lut)), "sd", "sop", "sl", "sr"),
           "w": (AccAddr(False), "a0"), "w_set": (AccAddr(True), "a0"), "r": (AccAddr(False), "a1"),
           "r_set": (AccAddr(True), "a1"), "reg": (ConfigRegister(), "reg"), "val": (Int(), "val"),
           "table": (Int(), "a1")}
    out.update({stat: (Move(kind), "a0", "s0", "a1", "s1") for kind, (stat, _, _) in DATAMOVE_KINDS.items()})
    return out


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Limit:
    """What an address/count/register field must stay below, for error messages."""

    label: str  # "local address"
    bound: str  # "local_depth"
    value: int  # exclusive upper bound


class TensilISA(ISA):
    """The :class:`~nnisa.core.isa.ISA` of one layout, plus the limit names for messages."""

    def __init__(self, name, word_bits, opcode_field, columns, instrs, *, layout: Layout,
                 limits: dict[tuple[int, str], Limit]):
        super().__init__(name, word_bits, opcode_field, columns, instrs)
        self.layout = layout
        self.limits = limits

    def range_message(self, spec, field: Field, value: int) -> str | None:
        lim = self.limits.get((spec.opcode, field.name))
        if lim is None or value < 0:
            return None
        return f"{spec.text}: {lim.label} {value} ≥ {lim.bound} {lim.value}"


def _f(name: str, lo: int, width: int, limit: int | None = None) -> Field | None:
    if width <= 0:
        return None
    return Field(name, lo + width - 1, lo, maximum=None if limit is None else limit - 1)


def _dn(mem: str) -> str:
    return "accumulator_depth" if mem == "acc" else f"{mem}_depth"


def fields(arch: TensilArch) -> tuple[dict[str, Field | None], dict[str, Limit]]:
    """The field table of ``arch``'s layout (spec §2, §3) and the limit of each entry (messages)."""
    L = Layout.from_arch(arch)
    depth = {"local": arch.local_depth, "acc": arch.accumulator_depth, "dram0": arch.dram0_depth,
             "dram1": arch.dram1_depth}
    regs = arch.simd_registers_depth + 1
    nops = 17 if arch.lut else 16
    ob = L.simd_operand_bits
    table: dict[str, Field | None] = {}
    limits: dict[str, Limit] = {}

    def add(key, col, lo, width, label, bound, value):
        table[key] = _f(col, lo, width, value)
        limits[key] = Limit(label, bound, value)

    add("local", "a0", 0, L.op0_addr_bits, "local address", "local_depth", depth["local"])
    add("s0", "s0", L.op0_addr_bits, L.stride0_bits, "stride field", "stride0_depth", arch.stride0_depth)
    add("s1", "s1", L.op1_lo + L.op1_addr_bits, L.stride1_bits, "stride field", "stride1_depth", arch.stride1_depth)
    for mem in ("acc", "dram0", "dram1"):
        add(mem, "a1", L.op1_lo, L.op1_addr_bits, f"{mem} address", _dn(mem), depth[mem])
        add("n_" + mem, "n", L.op2_lo, L.op2_addr_bits, "size (count − 1)", _dn(mem), min(depth["local"], depth[mem]))
    add("count", "a1", L.op1_lo, L.op1_addr_bits, "size (count − 1)", "local_depth", depth["local"])
    add("acc_w", "a0", 0, L.op0_addr_bits, "acc write address", "accumulator_depth", depth["acc"])
    add("acc_r", "a1", L.op1_lo, L.op1_addr_bits, "acc read address", "accumulator_depth", depth["acc"])
    for k, col in enumerate(("sd", "sr", "sl")):
        add(col, col, L.op2_lo + k * ob, ob, "SIMD register", "simd_registers_depth + 1", regs)
    add("sop", "sop", L.op2_lo + 3 * ob, L.simd_op_bits, "SIMD op", "op count", nops)
    if arch.lut:
        add("lut", "a1", L.op1_lo, L.op1_addr_bits, "LUT table", "tables + 1", arch.lut[0] + 1)
    table["reg"] = Field("reg", 3, 0)
    table["val"] = Field("val", L.instruction_bits - 9, 4, maximum=VAL_MAX)
    return table, limits


def _simd(flags: int) -> Instr:
    tag = "".join(c for b, c in ((1, "r"), (2, "w"), (4, "a")) if flags & b)
    w, r = ("w=w_set" if flags & 2 else "w=w"), ("r=r_set" if flags & 1 else "r=r")
    return Instr("simd" + ("." + tag if tag else ""), SIMD << 4 | flags, "acc_w acc_r sd sr sl sop",
                 f"expr, [{w}], [{r}]", "simd", "ALU op on accumulator vectors and registers")


def _matmul(flags: int) -> Instr:
    names = [n for b, n in ((1, "acc"), (2, "zeroes")) if flags & b]
    return Instr(".".join(["matmul"] + names), MATMUL << 4 | flags, "local s0 acc s1 n_acc", "local, acc, size",
                 "array", "multiply local vectors by the weights into the accumulators"
                 + (" (accumulate)" if flags & 1 else "") + (" (zero input)" if flags & 2 else ""))


def _datamove(kind: int) -> Instr:
    stat, mem, arrow = DATAMOVE_KINDS[kind]
    return Instr(f"datamove.{stat.lower()}", DATAMOVE << 4 | kind, f"local s0 {mem} s1 n_{mem}", f"{stat}, size",
                 "move", f"copy vectors local {arrow} {mem}", spelling="datamove")


#: the instruction table: one row per canonical header byte (opcode << 4 | flags)
ROWS = (
    Instr("nop", NOP << 4, "", "", "control", "no operation"),
    *(_matmul(f) for f in range(4)),
    *(_datamove(k) for k in DATAMOVE_KINDS),
    Instr("loadweights", LOADWEIGHTS << 4, "local s0 count", "local, count", "array",
          "push vectors into the array weights"),
    Instr("loadweights.zeroes", LOADWEIGHTS << 4 | 1, "local s0 count", "local, count", "array",
          "push vectors into the array weights (zero vectors)"),
    *(_simd(f) for f in range(8)),
    Instr("loadlut", LOADLUT << 4, "local s0 lut", "local, table=", "simd",
          "load a lookup table from local memory (nnisa extension)"),
    Instr("configure", CONFIGURE << 4, "reg val", "reg, val", "control", "set a configuration register"),
)


@lru_cache(maxsize=64)
def build_isa(arch: TensilArch) -> TensilISA:
    """The instruction table of ``arch`` (cached per architecture)."""
    L = Layout.from_arch(arch)
    W = L.instruction_bits
    table, limits = fields(arch)
    rows = [r for r in ROWS if arch.lut or r.mnemonic != "loadlut"]
    by_row = {(r.opcode, f.name): limits[key] for r in rows for key in r.fields.split()
              if key in limits and (f := table[key]) is not None}
    return table_isa(f"Tensil ({arch.name or 'custom'})", W, Field("hdr", W - 1, W - 8), COLUMNS, rows, table,
                     operands(arch), TensilISA, layout=L, limits=by_row)
