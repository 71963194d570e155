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
from ..isa import (CONFIG_REGISTERS, CONFIGURE, DATAMOVE, LOADWEIGHTS, MATMUL, NOP, RAW, SIMD, SIMD_OP_CODES,
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


_LINE = re.compile(r"^\s*(?:\[\s*\d+\s*\]\s*\d+\s+)?(\w+(?:\([^)]*\))?)\s*(.*?)\s*$")
_OPND = re.compile(r"(\w+)(?:\(([^)]*)\))?(?:@2\^(\d+))?")
_SUB = re.compile(r"^(O|R\d+)=(?:0|(\w+)\((I|R\d+)(?:,(I|R\d+))?\)|(I|R\d+))$", re.I)


def _reg(tok: str) -> int:
    t = tok.upper()
    return 0 if t in ("I", "O") else int(t[1:])


def parse_tasm(text: str, arch: TensilArch, *, file: str | None = None) -> TensilProgram:
    """Read a ``.tasm`` listing (Tensil's or the extended spelling)."""
    isa = build_isa(arch)
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith(("#", ";", "//")):
            continue
        try:
            rows.append(_parse_tasm_line(line, isa))
        except (ValueError, KeyError, IndexError) as exc:
            msg = exc.args[0] if isinstance(exc, ValueError) and exc.args else f"cannot parse {line.strip()!r}"
            raise AsmError(str(msg), file=file, line=lineno) from None
        bad = row_offenders(tuple(rows[-1][c] for c in isa.columns), isa)
        if bad:
            raise AsmError("; ".join(bad), file=file, line=lineno)
    arr = np.array([tuple(r[c] for c in isa.columns) for r in rows], dtype=DTYPE) if rows else np.zeros(0, DTYPE)
    return TensilProgram(arch, arr)


def _parse_tasm_line(line: str, isa) -> dict:
    m = _LINE.match(line)
    mnem = re.sub(r"\s+", "", m.group(1))
    rest = m.group(2)
    row = dict.fromkeys(isa.columns, 0)
    toks = rest.split()
    size = 0
    if toks and re.fullmatch(r"\d+\(\+1\)", toks[-1]):
        size = int(toks[-1].split("(")[0])
        toks = toks[:-1]
    ops = []
    for t in toks:
        om = _OPND.fullmatch(t)
        ops.append((om.group(1).lower(), om.group(2), int(om.group(3) or 0)) if om else (t, None, 0))
    if mnem in ("Wait", "NoOp"):
        row["hdr"] = NOP << 4
    elif mnem == "Configure":
        reg = toks[0].lower()
        codes = {v: k for k, v in CONFIG_REGISTERS.items()}
        row.update(hdr=CONFIGURE << 4, reg=codes[reg] if reg in codes else int(reg, 0), val=int(toks[1], 0))
    elif mnem in ("MatMul", "MatMul(Acc)", "LoadWeights"):
        name, a, k = ops[0]
        zero = name == "zeroes"
        row["a0"], row["s0"] = (int(a) if a else 0), k
        if mnem == "LoadWeights":
            row.update(hdr=LOADWEIGHTS << 4 | int(zero), a1=size)
        else:
            _, b, k1 = ops[1]
            row.update(hdr=MATMUL << 4 | (1 if mnem == "MatMul(Acc)" else 0) | (2 if zero else 0), a1=int(b), s1=k1,
                       n=size)
    elif mnem.startswith("DataMove"):
        (_, a, k), (mem, b, k1) = ops
        mi = _MEM_NAMES[mem]
        if mnem == "DataMove(<-)":
            kind = (0x0, 0x2, 0xC)[mi]
        elif mnem == "DataMove(->)":
            kind = (0x1, 0x3, 0xD)[mi]
        elif mnem == "DataMove(->,Acc)":
            kind = 0xF
        else:
            raise ValueError(f"unknown mnemonic {mnem!r}")
        row.update(hdr=DATAMOVE << 4 | kind, a0=int(a), s0=k, a1=int(b), s1=k1, n=size)
    elif mnem.startswith("SIMD"):
        tag = mnem[4:].strip("()").upper()
        fl = sum({"R": 1, "W": 2, "A": 4}[c] for c in tag)
        sm = _SUB.match(toks[0])
        if not sm:
            raise ValueError(f"cannot parse SIMD sub-instruction {toks[0]!r}")
        row["sd"] = _reg(sm.group(1))
        if sm.group(2):
            row["sop"] = SIMD_OP_CODES[sm.group(2).lower()]
            row["sl"] = _reg(sm.group(3))
            row["sr"] = _reg(sm.group(4)) if sm.group(4) else 0
        elif sm.group(5):
            row["sop"], row["sl"] = SIMD_OP_CODES["move"], _reg(sm.group(5))
        else:
            row["sop"] = SIMD_OP_CODES["zero"]
        for name, a, _ in ops[1:]:
            row["a0" if name == "wacc" else "a1"] = int(a)
        row["hdr"] = SIMD << 4 | fl
    else:
        raise ValueError(f"unknown mnemonic {mnem!r}")
    return row
