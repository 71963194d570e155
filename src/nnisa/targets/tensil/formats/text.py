"""Canonical nnisa text for Tensil (spec §4.1): lossless, one instruction per line.

::

    matmul.acc local[3]@2^1, acc[0], 4
    loadweights.zeroes local[0], 1
    datamove local[7] <- acc[4], 4
    simd.rw O = Max(I, R1), w=acc[4], r=acc[0]
    configure timeout, 100
    .word 0x12345678          ; any non-canonical word
"""

from __future__ import annotations

import re

import numpy as np

from ....core.asm import iter_lines, strip_comment
from ....core.errors import AsmError
from ....core.operands import OperandError, parse_int
from ..config import TensilArch
from ..isa import (CONFIG_REGISTER_CODES, CONFIG_REGISTERS, CONFIGURE, DATAMOVE, DATAMOVE_KINDS, LOADLUT,
                   LOADWEIGHTS, MATMUL, NOP, RAW, SIMD, SIMD_OP_CODES, SIMD_OPS, TensilISA, build_isa)
from ..program import DTYPE, TensilProgram
from .binary import decode_word, first_offender, row_offenders

_NUM = r"(0[xX][0-9a-fA-F]+|\d+)"
_MEM = re.compile(r"^\s*(local|acc|dram0|dram1)\s*\[\s*" + _NUM + r"\s*\]\s*(?:@\s*2\s*\^\s*(\d+))?\s*$", re.I)
_DM = re.compile(r"^(.*?)(<-|->|\+>)(.*)$")
_SIMD = re.compile(r"^\s*(\w+)\s*=\s*(\w+)\s*(?:\(\s*([^)]*?)\s*\))?\s*(.*)$")
_KIND_BY_FORM = {(arrow, mem): kind for kind, (_, mem, arrow) in DATAMOVE_KINDS.items()}


def _mem(tok: str, want: tuple[str, ...]) -> tuple[str, int, int]:
    m = _MEM.match(tok)
    if not m:
        raise OperandError(f"expected a memory operand like {want[0]}[12] or {want[0]}[12]@2^1, got {tok.strip()!r}")
    name = m.group(1).lower()
    if name not in want:
        raise OperandError(f"expected {' or '.join(want)}, got {name}")
    if len(m.group(2)) > 20 or len(m.group(3) or "") > 20:  # no field is wider than 64 bits
        raise OperandError(f"{name} address or stride out of range ({max(len(m.group(2)), len(m.group(3) or ''))} digits)")
    return name, int(m.group(2), 0), int(m.group(3) or 0)


def _count(tok: str) -> int:
    c = parse_int(tok)
    if c < 1:
        raise OperandError(f"count must be >= 1, got {c}")
    return c


def _src(tok: str, regs: int, what: str) -> int:
    t = tok.strip().upper()
    if t == "I" and what == "source":
        return 0
    if t == "O" and what == "destination":
        return 0
    if t.startswith("R") and t[1:].isdigit():
        k = int(t[1:])
        if not 1 <= k <= regs:
            raise OperandError(f"register {t} outside R1..R{regs} (simd_registers_depth {regs})")
        return k
    raise OperandError(f"expected {'I' if what == 'source' else 'O'} or R1..R{regs} as {what}, got {tok.strip()!r}")


def _split(tail: str) -> list[str]:
    return [t.strip() for t in tail.split(",")] if tail.strip() else []


def parse_line(head: str, tail: str, isa: TensilISA) -> tuple:
    """One instruction → IR row tuple (raises OperandError/AsmError on bad syntax)."""
    arch = isa.layout.arch
    parts = head.lower().split(".")
    mn, flags = parts[0], parts[1:]
    toks = _split(tail)
    row = dict.fromkeys(isa.columns, 0)

    def need(k):
        if len(toks) != k:
            raise OperandError(f"{head} takes {k} operand(s), got {len(toks)}")

    if mn in ("nop", "noop", "wait"):
        if flags or toks:
            raise OperandError("nop takes no flags or operands")
        row["hdr"] = NOP << 4
    elif mn == "matmul":
        bits = {"acc": 1, "zeroes": 2}
        f = _flags(flags, bits, "matmul")
        need(3)
        _, row["a0"], row["s0"] = _mem(toks[0], ("local",))
        _, row["a1"], row["s1"] = _mem(toks[1], ("acc",))
        row["n"] = _count(toks[2]) - 1
        row["hdr"] = MATMUL << 4 | f
    elif mn == "loadweights":
        f = _flags(flags, {"zeroes": 1}, "loadweights")
        need(2)
        _, row["a0"], row["s0"] = _mem(toks[0], ("local",))
        row["a1"] = _count(toks[1]) - 1
        row["hdr"] = LOADWEIGHTS << 4 | f
    elif mn == "datamove":
        if flags:
            raise OperandError("datamove takes no flags (the arrow selects the kind)")
        need(2)
        m = _DM.match(toks[0])
        if not m:
            raise OperandError("expected 'local[a] <- MEM[b]', 'local[a] -> MEM[b]' or 'local[a] +> acc[b]'")
        _, row["a0"], row["s0"] = _mem(m.group(1), ("local",))
        mem, row["a1"], row["s1"] = _mem(m.group(3), ("dram0", "dram1", "acc"))
        kind = _KIND_BY_FORM.get((m.group(2), mem))
        if kind is None:
            raise OperandError(f"no DataMove kind 'local {m.group(2)} {mem}'")
        row["n"] = _count(toks[1]) - 1
        row["hdr"] = DATAMOVE << 4 | kind
    elif mn == "simd":
        f = 0
        if flags:
            if len(flags) != 1 or not flags[0] or any(c not in "rwa" for c in flags[0]) \
                    or list(flags[0]) != sorted(set(flags[0]), key="rwa".index):
                raise OperandError(f"SIMD flags must be a subset of r, w, a in that order, got {'.'.join(flags)!r}")
            f = sum({"r": 1, "w": 2, "a": 4}[c] for c in flags[0])
        _parse_simd(tail, row, arch.simd_registers_depth, bool(arch.lut))
        row["hdr"] = SIMD << 4 | f
    elif mn == "configure":
        need(2)
        reg = toks[0].strip().lower()
        row["reg"] = CONFIG_REGISTER_CODES[reg] if reg in CONFIG_REGISTER_CODES else parse_int(reg)
        if not 0 <= row["reg"] <= 15:
            raise OperandError(f"configure register must be a name or 0..15, got {toks[0]!r}")
        row["val"] = parse_int(toks[1])
        row["hdr"] = CONFIGURE << 4
    elif mn == "loadlut" and arch.lut:
        need(2)
        _, row["a0"], row["s0"] = _mem(toks[0], ("local",))
        m = re.match(r"^table\s*=\s*(\S+)$", toks[1].strip(), re.I)
        if not m:
            raise OperandError("expected table=T")
        row["a1"] = parse_int(m.group(1))
        row["hdr"] = LOADLUT << 4
    else:
        extra = " (enable it with the x_nnisa_lut architecture key)" if mn == "loadlut" else ""
        raise OperandError(f"unknown instruction {head!r}{extra}")
    return tuple(row[c] for c in isa.columns)


def _flags(flags: list[str], bits: dict[str, int], mn: str) -> int:
    f = 0
    for x in flags:
        if x not in bits:
            raise OperandError(f"unknown {mn} flag {x!r} (flags: {', '.join(bits)})")
        f |= bits[x]
    return f


def _parse_simd(tail: str, row: dict, regs: int, lut: bool) -> None:
    m = _SIMD.match(tail)
    if not m:
        raise OperandError("expected 'DST = OP(SRC, SRC)[, w=acc[a]][, r=acc[b]]'")
    row["sd"] = _src(m.group(1), regs, "destination")
    op = m.group(2).lower()
    if op not in SIMD_OP_CODES or (op == "lookup" and not lut):
        raise OperandError(f"unknown SIMD op {m.group(2)!r}")
    row["sop"] = SIMD_OP_CODES[op]
    srcs = _split(m.group(3) or "")
    if len(srcs) > 2:
        raise OperandError("a SIMD op takes at most two sources")
    if srcs:
        row["sl"] = _src(srcs[0], regs, "source")
    if len(srcs) == 2:
        row["sr"] = _src(srcs[1], regs, "source")
    rest = m.group(4).strip()
    for tok in _split(rest.lstrip(",")) if rest else []:
        km = re.match(r"^([wr])\s*=\s*(.*)$", tok, re.I)
        if not km:
            raise OperandError(f"expected w=acc[a] or r=acc[b], got {tok!r}")
        _, addr, stride = _mem(km.group(2), ("acc",))
        if stride:
            raise OperandError("SIMD accumulator addresses take no stride")
        row["a0" if km.group(1).lower() == "w" else "a1"] = addr


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
        kind = _KIND_BY_FORM.get((g[2], g[3]))
        if kind is None:
            return None
        return (DATAMOVE << 4 | kind, int(g[0]), int(g[1] or 0), int(g[4]), int(g[5] or 0), int(g[6]) - 1,
                z, z, z, z, z, z)
    return (LOADWEIGHTS << 4 | (1 if g[0] else 0), int(g[1]), int(g[2] or 0), int(g[3]) - 1, z, z, z, z, z, z, z, z)


def assemble(text: str, arch: TensilArch, *, file: str | None = None) -> TensilProgram:
    """Assemble canonical text for ``arch``; errors name file:line:column.

    Lines in the disassembler's exact spelling take a one-regex fast path whose fields are checked
    in bulk at the end; anything else goes through the general parser line by line."""
    isa = build_isa(arch)
    rows: list[tuple] = []
    raw: dict[int, int] = {}
    width = isa.word_bits
    regs, lut = arch.simd_registers_depth, bool(arch.lut)
    fast_lines: dict[int, int] = {}  # row index → line number (rows checked in bulk)
    for lineno, src in enumerate(text.splitlines(), start=1):
        body = strip_comment(src).strip()
        if not body:
            continue
        row = _fast_row(body, regs, lut)
        if row is not None:
            fast_lines[len(rows)] = lineno
            rows.append(row)
            continue
        for line in iter_lines(src):
            line.lineno = lineno
            rows.extend(_general_line(line, isa, arch, raw, len(rows), width, file))
    arr = np.array(rows, dtype=DTYPE) if rows else np.zeros(0, dtype=DTYPE)
    if fast_lines:
        bad = first_offender(arr, isa)
        if bad is not None:
            i, msgs = bad
            raise AsmError("; ".join(msgs), file=file, line=fast_lines.get(i))
    return TensilProgram(arch, arr, raw)


def _general_line(line, isa, arch, raw, index, width, file) -> list[tuple]:
    """One line through the general parser: the rows it adds (none for directives)."""
    if line.label is not None:
        raise AsmError("labels are not supported in Tensil programs", file=file, line=line.lineno, column=line.col)
    head = line.head
    try:
        if head.lower() == ".word":
            w = parse_int(line.tail)
            if not 0 <= w < 1 << width:
                raise OperandError(f".word value does not fit {width} bits")
            row, why = decode_word(w, isa)
            if why is not None:
                raw[index] = w
            return [row]
        if head.lower() == ".arch":
            _check_arch_directive(line.tail.strip(), arch)
            return []
        row = parse_line(head, line.tail, isa)
    except (OperandError, ValueError) as exc:
        raise AsmError(str(exc), file=file, line=line.lineno, column=line.col) from None
    except AsmError as exc:
        raise exc.with_context(file=file, line=line.lineno) from None
    bad = row_offenders(row, isa)
    if bad:
        raise AsmError("; ".join(bad), file=file, line=line.lineno, column=line.tail_col)
    return [row]


def _check_arch_directive(value: str, arch: TensilArch) -> None:
    from ..config import load_arch
    other = load_arch(value.strip('"'))
    if other != arch:
        raise AsmError(f".arch {value} differs from the architecture given (--arch {arch.name or '...'})")


def format_row(row, isa: TensilISA, raw_word: int | None = None) -> str:
    """One IR row → canonical text."""
    h = int(row[0])
    r = dict(zip(isa.columns, (int(v) for v in row)))
    op, flags = h >> 4, h & 0xF
    if h == RAW:
        digits = 2 * isa.layout.instruction_bytes
        _, why = decode_word(raw_word, isa)
        return f".word 0x{raw_word:0{digits}x} ; {why}"
    if op == NOP:
        return "nop"
    if op == MATMUL:
        tag = "".join(s for b, s in ((1, ".acc"), (2, ".zeroes")) if flags & b)
        return f"matmul{tag} {_m('local', r['a0'], r['s0'])}, {_m('acc', r['a1'], r['s1'])}, {r['n'] + 1}"
    if op == LOADWEIGHTS:
        return f"loadweights{'.zeroes' if flags else ''} {_m('local', r['a0'], r['s0'])}, {r['a1'] + 1}"
    if op == DATAMOVE:
        _, mem, arrow = DATAMOVE_KINDS[flags]
        return f"datamove {_m('local', r['a0'], r['s0'])} {arrow} {_m(mem, r['a1'], r['s1'])}, {r['n'] + 1}"
    if op == SIMD:
        tag = "".join(c for b, c in ((1, "r"), (2, "w"), (4, "a")) if flags & b)
        dst = f"R{r['sd']}" if r["sd"] else "O"
        sl = f"R{r['sl']}" if r["sl"] else "I"
        sr = f"R{r['sr']}" if r["sr"] else "I"
        text = f"simd{'.' + tag if tag else ''} {dst} = {SIMD_OPS[r['sop']]}({sl}, {sr})"
        if flags & 2 or r["a0"]:
            text += f", w=acc[{r['a0']}]"
        if flags & 1 or r["a1"]:
            text += f", r=acc[{r['a1']}]"
        return text
    if op == CONFIGURE:
        name = CONFIG_REGISTERS.get(r["reg"], str(r["reg"]))
        return f"configure {name}, {r['val']}"
    if op == LOADLUT:
        return f"loadlut {_m('local', r['a0'], r['s0'])}, table={r['a1']}"
    raise AssertionError(h)


def _m(mem: str, addr: int, stride: int) -> str:
    return f"{mem}[{addr}]" + (f"@2^{stride}" if stride else "")


def disassemble(prog: TensilProgram, *, comments: bool = False) -> str:
    """Canonical text of ``prog``; ``comments`` adds ``; [index] bytes`` to each line."""
    isa = prog.isa
    lines = []
    B = isa.layout.instruction_bytes
    data = None
    if comments:
        from .binary import encode_program
        data = encode_program(prog)
    for i, row in enumerate(prog.rows.tolist()):
        text = format_row(row, isa, prog.raw.get(i))
        if comments:
            hexb = " ".join(f"{b:02x}" for b in data[i * B:(i + 1) * B])
            text = f"{text:<48} ; [{i}] {hexb}" if not text.startswith(".word") else f"{text} [{i}] {hexb}"
        lines.append(text)
    return "\n".join(lines) + ("\n" if lines else "")
