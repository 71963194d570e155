"""Tensil's ``.tasm`` listing dialect (spec §4.2), read and write.

Lines are ``[<index>] <tid> <Mnemonic> <operands>`` with CRLF endings, e.g.
``[5] 0 SIMD(RW) O=Max(I,R1) WAcc(4) RAcc(0)``.  The dialect is lossy; the writer refuses what
it cannot spell unless ``extended`` is set, which adds ``SIMD(RA)``/``SIMD(A)``, every SIMD op as
``D=Op(L,R)``, ``NoOp``, ``Zeroes(a)`` for a zero input with a non-zero local address and
``Configure <reg> <value>``.  The reader accepts both.
"""

from __future__ import annotations

import re

import numpy as np

from ....core.errors import AsmError, EncodeError
from ..config import TensilArch
from ..isa import (CONFIG_REGISTER_CODES, CONFIG_REGISTERS, CONFIGURE, DATAMOVE, LOADWEIGHTS, MATMUL, NOP, RAW, SIMD, SIMD_OP_CODES,
                   SIMD_OPS, build_isa)
from ..program import DTYPE, TensilProgram
from .binary import row_offenders

_DM_NAMES = {0x0: "DataMove(<-)", 0x2: "DataMove(<-)", 0xC: "DataMove(<-)", 0x1: "DataMove(->)",
             0x3: "DataMove(->)", 0xD: "DataMove(->)", 0xF: "DataMove(->, Acc)"}
_MEM_NAMES = {"dram0": 0, "vars": 0, "dram1": 1, "consts": 1, "acc": 2}
_SIMD_TAGS = {0: "SIMD", 1: "SIMD(R)", 2: "SIMD(W)", 3: "SIMD(RW)", 6: "SIMD(WA)", 7: "SIMD(RWA)"}
_SIMD_TAGS_EXT = {4: "SIMD(A)", 5: "SIMD(RA)"}
_SHORT_OPS = {"Zero", "Move", "Max", "Add", "Subtract", "Multiply"}


class Unrepresentable(EncodeError):
    """An instruction Tensil's dialect cannot spell (use ``extended``)."""


def _addr(name: str, a: int, k: int) -> str:
    return f"{name}({a})" + (f"@2^{k}" if k else "")


def _size(count: int) -> str:
    return f" {count - 1}(+1)" if count > 1 else ""


def format_tasm_row(row: dict, arch: TensilArch, extended: bool = False) -> str:
    h = row["hdr"]
    op, fl = h >> 4, h & 0xF

    def lossy(why):
        raise Unrepresentable(f"{why} has no spelling in Tensil's .tasm dialect (use -O extended=true)")

    if h == RAW:
        lossy("a raw word")
    if op == NOP:
        return "NoOp" if extended else "Wait 0"
    if op == CONFIGURE:
        if not extended:
            lossy("Configure")
        return f"Configure {CONFIG_REGISTERS.get(row['reg'], row['reg'])} {row['val']}"
    if op in (MATMUL, LOADWEIGHTS):
        zero = bool(fl & 2) if op == MATMUL else bool(fl & 1)
        if zero:
            if row["a0"] or row["s0"]:
                if not extended:
                    lossy("a Zeroes operand with a local address")
                src = f"Zeroes({row['a0']})" + (f"@2^{row['s0']}" if row["s0"] else "")
            else:
                src = "Zeroes"
        else:
            src = _addr("Local", row["a0"], row["s0"])
        if op == LOADWEIGHTS:
            return f"LoadWeights {src}{_size(row['a1'] + 1)}"
        return f"{'MatMul(Acc)' if fl & 1 else 'MatMul'} {src} {_addr('Acc', row['a1'], row['s1'])}{_size(row['n'] + 1)}"
    if op == DATAMOVE:
        mem = {0: "DRAM0", 1: "DRAM0", 2: "DRAM1", 3: "DRAM1"}.get(fl, "Acc")
        return (f"{_DM_NAMES[fl]} {_addr('Local', row['a0'], row['s0'])} {_addr(mem, row['a1'], row['s1'])}"
                f"{_size(row['n'] + 1)}")
    if op == SIMD:
        tag = _SIMD_TAGS.get(fl)
        if tag is None:
            if not extended:
                lossy(f"SIMD flags {fl}")
            tag = _SIMD_TAGS_EXT[fl]
        name = SIMD_OPS[row["sop"]]
        d = f"R{row['sd']}" if row["sd"] else "O"
        L = f"R{row['sl']}" if row["sl"] else "I"
        R = f"R{row['sr']}" if row["sr"] else "I"
        if name == "Zero" and not row["sl"] and not row["sr"]:
            body = f"{d}=0"
        elif name == "Move" and not row["sr"]:
            body = f"{d}={L}"
        elif name in _SHORT_OPS or extended:
            if name not in _SHORT_OPS and not extended:
                lossy(f"SIMD op {name}")
            body = f"{d}={name}({L},{R})"
        else:
            lossy(f"SIMD op {name}")
        if (not fl & 2 and row["a0"]) or (not fl & 1 and row["a1"]):
            if not extended:
                lossy("an accumulator address with its flag clear")
        parts = [tag, body]
        if fl & 2 or row["a0"]:
            parts.append(f"WAcc({row['a0']})")
        if fl & 1 or row["a1"]:
            parts.append(f"RAcc({row['a1']})")
        return " ".join(parts)
    lossy(f"opcode 0x{op:x}")


def write_tasm(prog: TensilProgram, *, extended: bool = False) -> str:
    """The listing of ``prog`` (CRLF lines ``[i] 0 ...``)."""
    out = []
    cols = prog.rows.dtype.names
    for i, t in enumerate(prog.rows.tolist()):
        try:
            out.append(f"[{i}] 0 {format_tasm_row(dict(zip(cols, t)), prog.arch, extended)}\r\n")
        except Unrepresentable as exc:
            raise Unrepresentable(f"instruction {i}: {exc.message}") from None
    return "".join(out)


_PREFIX = re.compile(r"\s*\[\s*\d+\s*\]\s*\d+\s+")
_MNEMONIC = re.compile(r"(\w+)(\(\s*[^)]*\))?")
_TOKEN = re.compile(r"\S+")
_OPND = re.compile(r"([A-Za-z]\w*)(?:\((\d+)\))?(?:@2\^(\d+))?")
_SIZE = re.compile(r"(\d+)\(\+1\)")
_SUB = re.compile(r"^(O|R\d+)=(?:0|(\w+)\((I|R\d+)(?:,(I|R\d+))?\)|(I|R\d+))$", re.I)
_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|\d+)")
#: digits of a number the reader converts (every field is at most 64 bits)
_MAX_DIGITS = 20


class _Bad(Exception):
    """A parse error at a column of the line."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.message, self.column = message, column


def _reg(tok: str) -> int:
    t = tok.upper()
    return 0 if t in ("I", "O") else int(t[1:])


def parse_tasm(text: str, arch: TensilArch, *, file: str | None = None) -> TensilProgram:
    """Read a ``.tasm`` listing (Tensil's or the extended spelling), strictly: every operand and
    size is checked; errors name ``file:line:column``."""
    isa = build_isa(arch)
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith(("#", ";", "//")):
            continue
        try:
            rows.append(_parse_tasm_line(line, isa))
        except _Bad as exc:
            raise AsmError(exc.message, file=file, line=lineno, column=exc.column) from None
        bad = row_offenders(tuple(rows[-1][c] for c in isa.columns), isa)
        if bad:
            raise AsmError("; ".join(bad), file=file, line=lineno)
    arr = np.array([tuple(r[c] for c in isa.columns) for r in rows], dtype=DTYPE) if rows else np.zeros(0, DTYPE)
    return TensilProgram(arch, arr)


def _number(text: str, column: int, what: str, limit: int = (1 << 63) - 1) -> int:
    if not _INT.fullmatch(text):
        raise _Bad(f"{what}: expected an integer, got {text[:40]!r}", column)
    if len(text) > _MAX_DIGITS + 3:
        raise _Bad(f"{what} {text[:24]}... ({len(text)} digits) out of range 0..{limit}", column)
    v = int(text, 0) if text.lstrip("+-")[:2].lower() == "0x" else int(text)
    if not 0 <= v <= limit:
        raise _Bad(f"{what} {v} out of range 0..{limit}", column)
    return v


class _Operands:
    """The operand tokens of one line with their columns, taken in order."""

    def __init__(self, line: str, start: int, end_col: int) -> None:
        self.toks = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(line, start)]
        self.i = 0
        self.end_col = end_col

    def take(self, what: str) -> tuple[str, int]:
        if self.i >= len(self.toks):
            raise _Bad(f"missing {what}", self.end_col)
        self.i += 1
        return self.toks[self.i - 1]

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def address(self, names: tuple[str, ...], what: str) -> tuple[str, int, int]:
        """``Name(n)[@2^k]`` (``Zeroes`` may go without ``(n)``) → (lower-case name, n, k)."""
        tok, col = self.take(what)
        m = _OPND.fullmatch(tok)
        if not m or m.group(1).lower() not in names:
            spelled = " or ".join(f"{n.capitalize()}(n)" for n in names)
            raise _Bad(f"{what}: expected {spelled}, got {tok[:40]!r}", col)
        name = m.group(1).lower()
        if m.group(2) is None and name != "zeroes":
            raise _Bad(f"{what}: {m.group(1)} needs an address in parentheses", col)
        return name, _number(m.group(2) or "0", col, f"{what} address"), _number(m.group(3) or "0", col, "stride")

    def size(self) -> int:
        """An optional last ``N(+1)`` (absent: a count of 1, size 0)."""
        if self.peek() is None:
            return 0
        tok, col = self.take("size")
        m = _SIZE.fullmatch(tok)
        if not m:
            raise _Bad(f"expected a size written N(+1), got {tok[:40]!r}", col)
        return _number(m.group(1), col, "size")

    def end(self) -> None:
        if self.i < len(self.toks):
            tok, col = self.toks[self.i]
            raise _Bad(f"unexpected {tok[:40]!r} after the operands", col)


def _parse_tasm_line(line: str, isa) -> dict:
    pre = _PREFIX.match(line)
    start = pre.end() if pre else len(line) - len(line.lstrip())
    m = _MNEMONIC.match(line, start)
    if not m:
        raise _Bad(f"expected a mnemonic, got {line[start:start + 40]!r}", start + 1)
    mnem = re.sub(r"\s+", "", m.group(0))
    ops = _Operands(line, m.end(), len(line.rstrip()) + 1)
    row = dict.fromkeys(isa.columns, 0)
    if mnem == "Wait":
        if ops.peek() is not None:
            _number(*ops.take("wait id"), "wait id")
        row["hdr"] = NOP << 4
    elif mnem == "NoOp":
        row["hdr"] = NOP << 4
    elif mnem == "Configure":
        tok, col = ops.take("register")
        reg = CONFIG_REGISTER_CODES.get(tok.lower())
        row.update(hdr=CONFIGURE << 4, reg=_number(tok, col, "register", 0xF) if reg is None else reg,
                   val=_number(*ops.take("value"), "value"))
    elif mnem in ("MatMul", "MatMul(Acc)", "LoadWeights"):
        name, a, k = ops.address(("local", "zeroes"), "source")
        zero = name == "zeroes"
        row["a0"], row["s0"] = a, k
        if mnem == "LoadWeights":
            row.update(hdr=LOADWEIGHTS << 4 | int(zero), a1=ops.size())
        else:
            _, b, k1 = ops.address(("acc",), "accumulator")
            row.update(hdr=MATMUL << 4 | (1 if mnem == "MatMul(Acc)" else 0) | (2 if zero else 0), a1=b, s1=k1,
                       n=ops.size())
    elif mnem in ("DataMove(<-)", "DataMove(->)", "DataMove(->,Acc)"):
        _, a, k = ops.address(("local",), "local operand")
        mem, b, k1 = ops.address(tuple(_MEM_NAMES), "memory operand")
        mi = _MEM_NAMES[mem]
        if mnem == "DataMove(<-)":
            kind = (0x0, 0x2, 0xC)[mi]
        elif mnem == "DataMove(->)":
            kind = (0x1, 0x3, 0xD)[mi]
        else:
            kind = 0xF
        row.update(hdr=DATAMOVE << 4 | kind, a0=a, s0=k, a1=b, s1=k1, n=ops.size())
    elif mnem in [t for t in _SIMD_TAGS.values()] + list(_SIMD_TAGS_EXT.values()):
        tag = mnem[4:].strip("()").upper()
        fl = sum({"R": 1, "W": 2, "A": 4}[c] for c in tag)
        tok, col = ops.take("SIMD sub-instruction")
        sm = _SUB.match(tok)
        if not sm or (sm.group(2) and sm.group(2).lower() not in SIMD_OP_CODES):
            raise _Bad(f"cannot parse SIMD sub-instruction {tok[:40]!r}", col)
        regs = [g for g in (sm.group(1), sm.group(3), sm.group(4), sm.group(5)) if g]
        if any(len(g) > 4 for g in regs):
            raise _Bad(f"register number out of range in {tok[:40]!r}", col)
        row["sd"] = _reg(sm.group(1))
        if sm.group(2):
            row["sop"] = SIMD_OP_CODES[sm.group(2).lower()]
            row["sl"] = _reg(sm.group(3))
            row["sr"] = _reg(sm.group(4)) if sm.group(4) else 0
        elif sm.group(5):
            row["sop"], row["sl"] = SIMD_OP_CODES["move"], _reg(sm.group(5))
        else:
            row["sop"] = SIMD_OP_CODES["zero"]
        seen = set()
        while ops.peek() is not None:
            name, a, k = ops.address(("wacc", "racc"), "accumulator operand")
            if name in seen or k:
                raise _Bad(f"{name.upper()} given twice" if name in seen else "accumulator operands take no stride",
                           ops.toks[ops.i - 1][1])
            seen.add(name)
            row["a0" if name == "wacc" else "a1"] = a
        row["hdr"] = SIMD << 4 | fl
    else:
        raise _Bad(f"unknown mnemonic {mnem[:40]!r}", start + 1)
    ops.end()
    return row
