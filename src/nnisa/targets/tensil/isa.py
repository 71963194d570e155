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

from dataclasses import dataclass
from functools import lru_cache

from ...core.bitfields import Field, Format
from ...core.isa import ISA, InstrSpec
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


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Limit:
    """What an address/count/register field must stay below, for error messages."""

    label: str  # "local address"
    bound: str  # "local_depth"
    value: int  # exclusive upper bound


class TensilISA(ISA):
    """The :class:`~nnisa.core.isa.ISA` of one layout, plus the limit names for messages."""

    def __init__(self, layout: Layout, instrs: list[InstrSpec], limits: dict[tuple[int, str], Limit]):
        super().__init__(f"Tensil ({layout.arch.name or 'custom'})", layout.instruction_bits,
                         Field("hdr", layout.instruction_bits - 1, layout.instruction_bits - 8), COLUMNS, instrs)
        self.layout = layout
        self.limits = limits


def _f(name: str, lo: int, width: int, limit: int | None = None) -> Field | None:
    if width <= 0:
        return None
    return Field(name, lo + width - 1, lo, maximum=None if limit is None else limit - 1)


@lru_cache(maxsize=64)
def build_isa(arch: TensilArch) -> TensilISA:
    """The instruction table of ``arch`` (cached per architecture)."""
    L = Layout.from_arch(arch)
    W = L.instruction_bits
    hdr_field = Field("hdr", W - 1, W - 8)
    depth = {"local": arch.local_depth, "acc": arch.accumulator_depth, "dram0": arch.dram0_depth,
             "dram1": arch.dram1_depth}
    instrs: list[InstrSpec] = []
    limits: dict[tuple[int, str], Limit] = {}

    def add(mnemonic, opcode, flags, fields, category, doc, lims=()):
        hdr = opcode << 4 | flags
        fmt = Format(W, ((hdr_field, hdr),), tuple(f for f in fields if f is not None))
        instrs.append(InstrSpec(mnemonic, hdr, fmt, (), category, doc))
        for col, label, bound, value in lims:
            limits[(hdr, col)] = Limit(label, bound, value)

    def addr0(mem, col="a0", scol="s0"):
        return [_f(col, 0, L.op0_addr_bits, depth[mem]), _f(scol, L.op0_addr_bits, L.stride0_bits, arch.stride0_depth)]

    def addr1(mem, col="a1", scol="s1"):
        return [_f(col, L.op1_lo, L.op1_addr_bits, depth[mem]),
                _f(scol, L.op1_lo + L.op1_addr_bits, L.stride1_bits, arch.stride1_depth)]

    def lims_addr(mem0, mem1, size_mem=None):
        out = [("a0", f"{mem0} address", f"{_dn(mem0)}", depth[mem0]),
               ("s0", "stride field", "stride0_depth", arch.stride0_depth)]
        if mem1:
            out += [("a1", f"{mem1} address", _dn(mem1), depth[mem1]),
                    ("s1", "stride field", "stride1_depth", arch.stride1_depth)]
        if size_mem:
            out.append(("n", "size (count − 1)", f"{_dn(size_mem)}", min(depth["local"], depth[size_mem])))
        return out

    add("nop", NOP, 0, [], "control", "no operation")
    for flags in range(4):
        names = [n for b, n in ((1, "acc"), (2, "zeroes")) if flags & b]
        size = _f("n", L.op2_lo, L.op2_addr_bits, min(depth["local"], depth["acc"]))
        add(".".join(["matmul"] + names), MATMUL, flags, addr0("local") + addr1("acc") + [size], "array",
            "multiply local vectors by the weights into the accumulators"
            + (" (accumulate)" if flags & 1 else "") + (" (zero input)" if flags & 2 else ""),
            lims_addr("local", "acc", "acc"))
    for kind, (stat, mem, arrow) in DATAMOVE_KINDS.items():
        size = _f("n", L.op2_lo, L.op2_addr_bits, min(depth["local"], depth[mem]))
        add(f"datamove.{stat.lower()}", DATAMOVE, kind, addr0("local") + addr1(mem) + [size], "move",
            f"copy vectors local {arrow} {mem}", lims_addr("local", mem, mem))
    for flags in range(2):
        count = _f("a1", L.op1_lo, L.op1_addr_bits, depth["local"])
        add("loadweights" + (".zeroes" if flags else ""), LOADWEIGHTS, flags, addr0("local") + [count], "array",
            "push vectors into the array weights" + (" (zero vectors)" if flags else ""),
            lims_addr("local", None) + [("a1", "size (count − 1)", "local_depth", depth["local"])])
    ob = L.simd_operand_bits
    regs = arch.simd_registers_depth + 1
    nops = 17 if arch.lut else 16
    for flags in range(8):
        tag = "".join(c for b, c in ((1, "r"), (2, "w"), (4, "a")) if flags & b)
        fields = [_f("a0", 0, L.op0_addr_bits, depth["acc"]), _f("a1", L.op1_lo, L.op1_addr_bits, depth["acc"]),
                  _f("sd", L.op2_lo, ob, regs), _f("sr", L.op2_lo + ob, ob, regs), _f("sl", L.op2_lo + 2 * ob, ob, regs),
                  _f("sop", L.op2_lo + 3 * ob, L.simd_op_bits, nops)]
        add("simd" + ("." + tag if tag else ""), SIMD, flags, fields, "simd",
            "ALU op on accumulator vectors and registers",
            [("a0", "acc write address", "accumulator_depth", depth["acc"]),
             ("a1", "acc read address", "accumulator_depth", depth["acc"]),
             ("sd", "SIMD register", "simd_registers_depth + 1", regs),
             ("sr", "SIMD register", "simd_registers_depth + 1", regs),
             ("sl", "SIMD register", "simd_registers_depth + 1", regs),
             ("sop", "SIMD op", "op count", nops)])
    if arch.lut:
        tables = arch.lut[0]
        add("loadlut", LOADLUT, 0, addr0("local") + [_f("a1", L.op1_lo, L.op1_addr_bits, tables + 1)], "simd",
            "load a lookup table from local memory (nnisa extension)",
            lims_addr("local", None) + [("a1", "LUT table", "tables + 1", tables + 1)])
    add("configure", CONFIGURE, 0, [Field("reg", 3, 0), Field("val", W - 9, 4, maximum=VAL_MAX)], "control",
        "set a configuration register")
    return TensilISA(L, instrs, limits)


def _dn(mem: str) -> str:
    return "accumulator_depth" if mem == "acc" else f"{mem}_depth"
