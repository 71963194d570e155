"""Canonical nnisa text for Tensil (spec §4.1): lossless, one instruction per line.

::

    matmul.acc local[3]@2^1, acc[0], 4
    loadweights.zeroes local[0], 1
    datamove local[7] <- acc[4], 4
    simd.rw O = Max(I, R1), w=acc[4], r=acc[0]
    configure timeout, 100
    .word 0x12345678          ; any non-canonical word

The syntax of every instruction is in the table (:mod:`nnisa.targets.tensil.isa`); this module
adds what the text has beyond it: the DataMove arrows choosing the row, the ``.word`` and
``.arch`` directives, and a one-regex fast path for the disassembler's exact spelling.
"""

from __future__ import annotations

import re

import numpy as np

from ....core.asm import Assembler, Directives, Line, lookup, make_formatter
from ....core.errors import AsmError
from ....core.isa import InstrSpec
from ....core.operands import OperandError, parse_int
from ..config import TensilArch
from ..isa import DATAMOVE, KIND_BY_FORM, LOADWEIGHTS, MATMUL, RAW, SIMD, SIMD_OP_CODES, TensilISA, build_isa
from ..program import DTYPE, TensilProgram
from .binary import decode_word, row_offenders

# Exact spellings the disassembler prints: parsed by one regex each, checked in bulk afterwards
# (numbers of at most 18 digits fit the int64 rows; longer ones take the general path's range check).
_FAST = {
    "simd": re.compile(r"simd(?:\.(r|w|a|rw|ra|wa|rwa))? (O|R\d+) = (\w+)\((I|R\d+), (I|R\d+)\)"
                       r"(?:, w=acc\[(\d{1,18})\])?(?:, r=acc\[(\d{1,18})\])?$"),
    "matmul": re.compile(r"matmul(\.acc)?(\.zeroes)? local\[(\d{1,18})\](?:@2\^(\d{1,18}))?, acc\[(\d{1,18})\](?:@2\^(\d{1,18}))?, "
                         r"([1-9]\d{0,17})$"),
    "datamove": re.compile(r"datamove local\[(\d{1,18})\](?:@2\^(\d{1,18}))? (<-|->|\+>) (dram0|dram1|acc)\[(\d{1,18})\]"
                           r"(?:@2\^(\d{1,18}))?, ([1-9]\d{0,17})$"),
    "loadweights": re.compile(r"loadweights(\.zeroes)? local\[(\d{1,18})\](?:@2\^(\d{1,18}))?, ([1-9]\d{0,17})$"),
}
_FLAGS = {None: 0, "r": 1, "w": 2, "a": 4, "rw": 3, "ra": 5, "wa": 6, "rwa": 7}
_FLAG_NAMES = {"matmul": ("acc", "zeroes"), "loadweights": ("zeroes",), "simd": ()}
_DATAMOVE_HEAD = re.compile(r"^\s*local\s*\[[^\]]*\]\s*(?:@[^<>+-]*)?\s*(<-|->|\+>)\s*(\w+)", re.I)


def _reg(tok: str, regs: int) -> int | None:
    if tok in ("I", "O"):
        return 0
    k = int(tok[1:])
    return k if 1 <= k <= regs else None


def _fast_row(body: str, regs: int, lut: bool) -> tuple | None:
    """The IR row of a line in exactly the disassembler's spelling, or ``None``."""
    key = body[:body.find(" ")].split(".")[0] if " " in body else ""
    pat = _FAST.get(key)
    m = pat.match(body) if pat is not None else None
    if m is None:
        return None
    g = m.groups()
    z = 0
    if key == "simd":
        op = SIMD_OP_CODES.get(g[2].lower())
        d, l, r = _reg(g[1], regs), _reg(g[3], regs), _reg(g[4], regs)
        if op is None or (op == 16 and not lut) or d is None or l is None or r is None:
            return None
        return (SIMD << 4 | _FLAGS[g[0]], int(g[5] or 0), z, int(g[6] or 0), z, z, op, l, r, d, z, z)
    if key == "matmul":
        flags = (1 if g[0] else 0) | (2 if g[1] else 0)
        return (MATMUL << 4 | flags, int(g[2]), int(g[3] or 0), int(g[4]), int(g[5] or 0), int(g[6]) - 1,
                z, z, z, z, z, z)
    if key == "datamove":
        kind = KIND_BY_FORM.get((g[2], g[3]))
        if kind is None:
            return None
        return (DATAMOVE << 4 | kind, int(g[0]), int(g[1] or 0), int(g[4]), int(g[5] or 0), int(g[6]) - 1,
                z, z, z, z, z, z)
    return (LOADWEIGHTS << 4 | (1 if g[0] else 0), int(g[1]), int(g[2] or 0), int(g[3]) - 1, z, z, z, z, z, z, z, z)


#: the directives of Tensil's canonical text
DIRECTIVES = Directives("Tensil")


class TensilAssembler(Assembler):
    """Canonical Tensil text → :class:`TensilProgram` (the core assembler, Tensil's table)."""

    directives = DIRECTIVES
    aliases = {"noop": ("nop", ()), "wait": ("nop", ())}
    labels = "labels are not supported in Tensil programs"

    def __init__(self, arch: TensilArch, file: str | None):
        super().__init__(build_isa(arch), file=file)
        self.arch = arch
        self.raw: dict[int, int] = {}
        self.regs, self.lut = arch.simd_registers_depth, bool(arch.lut)

    def fast_line(self, head: str, tail: str, lineno: int) -> bool:
        row = _fast_row(f"{head} {tail.strip()}", self.regs, self.lut)
        if row is None:
            return False
        self.emit(row, lineno)
        return True

    def lookup(self, line: Line) -> InstrSpec:
        """DataMove rows share the spelling ``datamove``: the arrow and the memory choose one."""
        head = line.head.lower()
        if head == "datamove":
            m = _DATAMOVE_HEAD.match(line.tail)
            kind = KIND_BY_FORM.get((m.group(1), m.group(2).lower())) if m else None
            if kind is None:
                return self.isa.by_opcode[DATAMOVE << 4]  # its operand parser names the problem
            return self.isa.by_opcode[DATAMOVE << 4 | kind]
        if head == "loadlut" and "loadlut" not in self.isa.by_mnemonic:
            raise self.error("unknown instruction 'loadlut' (enable it with the x_nnisa_lut architecture key)", line)
        base, _, flags = head.partition(".")
        if flags and base in _FLAG_NAMES:  # flags in any order for matmul/loadweights; r, w, a in order for simd
            given = flags.split(".")
            if base == "simd":
                if len(given) != 1 or any(c not in "rwa" for c in flags) or \
                        list(flags) != sorted(set(flags), key="rwa".index):
                    raise self.error(f"SIMD flags must be a subset of r, w, a in that order, got {flags!r}", line)
            else:
                bad = [f for f in given if f not in _FLAG_NAMES[base]]
                if bad:
                    raise self.error(f"unknown {base} flag {bad[0]!r} (flags: {', '.join(_FLAG_NAMES[base])})", line)
                head = ".".join([base] + [f for f in _FLAG_NAMES[base] if f in given])
            return self.isa.by_mnemonic[head]
        return lookup(self.isa, line, self.file)

    @DIRECTIVES.register(".word", "0x...", "one instruction word, kept verbatim when it is not canonical")
    def _word(self, line: Line) -> None:
        width = self.isa.word_bits
        try:
            w = parse_int(line.tail)
        except OperandError as exc:
            raise self.error(str(exc), line) from None
        if not 0 <= w < 1 << width:
            raise self.error(f".word value does not fit {width} bits", line)
        row, why = decode_word(w, self.isa)
        if why is not None:
            self.raw[len(self.rows)] = w
        self.emit(row, line)

    @DIRECTIVES.register(".arch", "PRESET|FILE", "the architecture the program is for (checked)")
    def _arch(self, line: Line) -> None:
        from ..config import load_arch
        value = line.tail.strip()
        try:
            other = load_arch(value.strip('"'))
        except AsmError:
            raise
        if other != self.arch:
            raise self.error(f".arch {value} differs from the architecture given (--arch {self.arch.name or '...'})",
                             line)

    def bulk_error(self, row: tuple, line: Line) -> AsmError:
        return self.error("; ".join(row_offenders(row, self.isa)), line, line.tail_col)

    def finish(self) -> TensilProgram:
        arr = np.array(self.rows, dtype=DTYPE) if self.rows else np.zeros(0, dtype=DTYPE)
        keep = arr["hdr"] != RAW  # rows of the fast path and columns without a field (strides of 0 bits)
        self.check_bulk(arr[keep], np.asarray(self.linenos, np.int64)[keep])
        return TensilProgram(self.arch, arr, self.raw)


def assemble(text: str, arch: TensilArch, *, file: str | None = None) -> TensilProgram:
    """Assemble canonical text for ``arch``; errors name file:line:column.

    Lines in the disassembler's exact spelling take a one-regex fast path whose fields are checked
    in bulk at the end; anything else goes through the table line by line."""
    return TensilAssembler(arch, file).assemble(text)


def format_row(row, isa: TensilISA, raw_word: int | None = None) -> str:
    """One IR row → canonical text (the table's formatter; non-canonical words as ``.word``)."""
    if int(row[0]) == RAW:
        _, why = decode_word(raw_word, isa)
        return f".word 0x{raw_word:0{2 * isa.layout.instruction_bytes}x} ; {why}"
    return make_formatter(isa)(tuple(int(v) for v in row))


def disassemble(prog: TensilProgram, *, comments: bool = False) -> str:
    """Canonical text of ``prog``; ``comments`` adds ``; [index] bytes`` to each line."""
    isa = prog.isa
    lines = []
    B = isa.layout.instruction_bytes
    data = None
    if comments:
        from .binary import encode_program
        data = encode_program(prog)
    fmt = make_formatter(isa)
    for i, row in enumerate(prog.rows.tolist()):
        text = fmt(row) if row[0] != RAW else format_row(row, isa, prog.raw.get(i))
        if comments:
            hexb = " ".join(f"{b:02x}" for b in data[i * B:(i + 1) * B])
            text = f"{text:<48} ; [{i}] {hexb}" if not text.startswith(".word") else f"{text} [{i}] {hexb}"
        lines.append(text)
    return "\n".join(lines) + ("\n" if lines else "")
