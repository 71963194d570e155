"""nnisa DAIS assembly text (spec §4.1): canonical disassembly and the assembler.

Each op line shows its index, mnemonic, operands, data and dtype ``(k,I,f)``; a trailing
comment gives the dtype's real interval and step (comments are ignored by the assembler, so
the text round-trips).  Fields the structured form cannot express use ``raw``.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

import numpy as np

from ....core.errors import AsmError
from .. import isa
from ..errors import DaisValidationError
from ..program import Program, kif_to_qint

_MNEM = {s.mnemonic for s in isa.OPCODES}


def _fmt_num(v: Fraction) -> str:
    return str(int(v)) if v.denominator == 1 else repr(float(v))


@functools.lru_cache(maxsize=4096)
def _interval(k, i, f) -> str:
    lo, hi, st = kif_to_qint(k, i, f)
    return f"[{_fmt_num(lo)}, {_fmt_num(hi)}] step {_fmt_num(st)}"


def _structured(o: int, a: int, c: int, d: int, lo: int, hi: int) -> str | None:
    """Structured operand text of an op (opcode, id0, id1, data, data lo/hi words) or None if only
    ``raw`` is lossless."""
    spec = isa.BY_OPCODE.get(o)
    if spec is None:
        return None
    if not spec.uses_id1 and c != -1:
        return None
    if not spec.uses_id0 and o != -1 and a != -1:
        return None
    if not spec.data and d != 0:
        return None
    na = ("-" if spec.sign < 0 and abs(o) != 6 else "") + f"%{a}"
    if o == -1:
        return f"input {a}"
    if o in (0, 1):
        if hi != (-1 if lo < 0 else 0):
            return None
        return f"{spec.mnemonic} %{a}, %{c}, {lo}"
    if abs(o) in (2, 3):
        return f"{spec.mnemonic} {na}"
    if o == 4:
        return f"addc %{a}, {d}"
    if o == 5:
        return f"const {d}"
    if abs(o) == 6:
        return f"mux %{lo}, %{a}, {'-' if o < 0 else ''}%{c}, {hi}"
    if o == 7:
        return f"mul %{a}, %{c}"
    if o == 8:
        return f"lut %{a}, table {lo}, pad {hi}"
    if abs(o) == 9:
        if hi != 0 or not 0 <= lo <= 2:
            return None
        return f"{isa.BIT1_OPS[lo]} {na}"
    if o == 10:
        sub = (hi >> 24) & 0xFF
        if hi & 0x00FFFFFC or sub > 2:
            return None
        return f"{isa.BIT2_OPS[sub]} {'-' if hi & 1 else ''}%{a}, {'-' if hi & 2 else ''}%{c}, {lo}"
    return None


def disassemble(p: Program, *, intervals: bool = True) -> str:
    """Canonical assembly text of ``p`` (the readable reference; writers use
    :func:`.fastrender.disassemble_fast`, the same text)."""
    out = header_lines(p)
    qint = p.meta.get("qint")
    addsub = {0: isa.BY_OPCODE[0].mnemonic, 1: isa.BY_OPCODE[1].mnemonic}
    arrays = (p.opcode, p.id0, p.id1, p.data, p.k, p.I, p.f, p.data_lo(), p.data_hi())
    for s in range(0, p.n_ops, _CHUNK):  # chunks: a 10^6-op program's Python ints and lines stay small
        out.append("\n".join(_op_lines(s, [a[s:s + _CHUNK].tolist() for a in arrays], qint, addsub, intervals)))
    return "\n".join(out + output_lines(p)) + "\n"


def header_lines(p: Program) -> list[str]:
    """The directive lines before the ops (version, firmware, inputs, outputs, tables)."""
    version = "legacy" if p.spec_version is None else str(p.spec_version)
    out = [f".dais {version}", f".firmware {p.firmware_version}",
           f".inputs {p.n_in}" + (" shifts " + " ".join(map(str, p.inp_shifts.tolist())) if p.n_in else ""),
           f".outputs {p.n_out}"]
    for t, tab in enumerate(p.tables):
        out.append(f".table {t} [" + " ".join(map(str, tab.tolist())) + "]")
    return out


def output_lines(p: Program) -> list[str]:
    """The ``out j = ...`` lines after the ops."""
    out = []
    for j in range(p.n_out):
        q, s, neg = int(p.out_idxs[j]), int(p.out_shifts[j]), int(p.out_negs[j])
        src = "zero" if q < 0 else f"{'-' if neg else ''}%{q}"
        if q < 0 and neg:
            src = "-zero"
        if neg not in (0, 1):
            src = f"neg{neg} %{q}" if q >= 0 else f"neg{neg} zero"
        out.append(f"out {j} = {src}" + (f" << {s}" if s else ""))
    return out


#: ops rendered per chunk by :func:`disassemble`
_CHUNK = 1 << 16


def _op_lines(start: int, cols: list, qint, addsub: dict, intervals: bool) -> list[str]:
    """Text lines of the ops ``start, start + 1, ...`` given as per-field lists."""
    out = []
    for i, (o, a, c, d, k, I, f, lo, hi) in enumerate(zip(*cols), start):
        if (o == 0 or o == 1) and hi == (-1 if lo < 0 else 0):  # most ops: _structured's adder form, inline
            body = f"{addsub[o]} %{a}, %{c}, {lo}"
        else:
            body = _structured(o, a, c, d, lo, hi)
            if body is None:
                body = f"raw {o} {a} {c} {lo} {hi}"
        out.append(f"%{i} = {body}" + op_suffix(k, I, f, None if qint is None else qint[i], intervals))
    return out


def op_suffix(k: int, I: int, f: int, qint, intervals: bool) -> str:  # noqa: E741
    """The text after an op's operands: dtype, stored qint, interval comment."""
    line = f" : ({k},{I},{f})"
    if qint is not None:
        line += " qint(" + ",".join(repr(float(v)) for v in qint) + ")"
    if intervals and k + I + f >= k:
        line += f" ; {_interval(k, I, f)}"
    return line


_OP_RE = re.compile(r"^%(\d+)\s*=\s*(.*?)\s*:\s*\(\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\)\s*(.*)$", re.ASCII)
_OUT_RE = re.compile(r"^out\s+(\d+)\s*=\s*(neg(\d+)\s+)?(-?)\s*(%(\d+)|zero)\s*(<<\s*(-?\d+))?$", re.ASCII)
_REF = r"(-?)%(\d+)"


def _ref(tok: str) -> tuple[int, int]:
    m = re.fullmatch(_REF, tok.strip(), re.ASCII)
    if not m:
        raise ValueError(f"expected a slot reference like %3, got {tok.strip()!r}")
    return (-1 if m.group(1) else 1), int(m.group(2))


def _i64(tok: str) -> int:
    """A decimal int64 (ASCII digits only)."""
    t = tok.strip()
    body = t[1:] if t[:1] in "+-" else t
    if not (body.isascii() and body.isdigit()):
        raise ValueError(f"expected an integer, got {t[:40]!r}")
    v = int(t)
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError(f"{t[:40]} does not fit int64")
    return v


def _parse_op(body: str) -> tuple[int, int, int, int]:
    """Operand text → (opcode, id0, id1, data)."""
    mn, _, rest = body.partition(" ")
    args = [a.strip() for a in rest.split(",")] if rest.strip() else []
    pack = lambda lo, hi: (int(hi) << 32) | (int(lo) & 0xFFFFFFFF)  # noqa: E731
    if mn == "raw":
        v = [_i64(x) for x in rest.split()]
        if len(v) != 5:
            raise ValueError("raw takes OPC ID0 ID1 LO HI")
        return v[0], v[1], v[2], pack(v[3], v[4])
    if mn == "input":
        return -1, _i64(args[0]), -1, 0
    if mn in ("add", "sub"):
        (_, a), (_, c) = _ref(args[0]), _ref(args[1])
        return (0 if mn == "add" else 1), a, c, _i64(args[2])
    if mn in ("relu", "quant"):
        s, a = _ref(args[0])
        base = 2 if mn == "relu" else 3
        return base * s, a, -1, 0
    if mn == "addc":
        return 4, _ref(args[0])[1], -1, _i64(args[1])
    if mn == "const":
        return 5, -1, -1, _i64(args[0])
    if mn == "mux":
        _, key = _ref(args[0])
        _, a = _ref(args[1])
        s, c = _ref(args[2])
        return 6 * s, a, c, pack(key, _i64(args[3]))
    if mn == "mul":
        return 7, _ref(args[0])[1], _ref(args[1])[1], 0
    if mn == "lut":
        a = _ref(args[0])[1]
        t = re.fullmatch(r"table\s+(-?\d+)", args[1])
        pd = re.fullmatch(r"pad\s+(-?\d+)", args[2])
        if not t or not pd:
            raise ValueError("lut syntax: lut %a, table T, pad P")
        return 8, a, -1, pack(t.group(1), pd.group(1))
    if mn in isa.BIT1_OPS:
        s, a = _ref(args[0])
        return 9 * s, a, -1, isa.BIT1_OPS.index(mn)
    if mn in isa.BIT2_OPS:
        sa, a = _ref(args[0])
        sc, c = _ref(args[1])
        hi = (isa.BIT2_OPS.index(mn) << 24) | (1 if sa < 0 else 0) | (2 if sc < 0 else 0)
        return 10, a, c, pack(_i64(args[2]), hi)
    raise ValueError(f"unknown mnemonic {mn!r}")


def assemble(text: str, *, file: str | None = None) -> Program:
    """Parse assembly text; errors are :class:`AsmError` with file and line."""
    version, fw, n_in, shifts, n_out = 1, 0, None, None, None
    ops, qints, tables, outs = [], [], {}, {}
    # every input/output needs a line of its own (an op or an ``out`` line) or a shift value: a
    # count above this is a corrupt header, refused before anything is allocated for it
    max_count = text.count("\n") + len(text.split()) + 1
    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        try:
            if line.startswith(".dais"):
                v = line.split()[1]
                version = None if v == "legacy" else _i64(v)
            elif line.startswith(".firmware"):
                fw = _i64(line.split()[1])
            elif line.startswith(".inputs"):
                parts = line.split()
                n_in = _i64(parts[1])
                if not 0 <= n_in <= max_count:
                    raise ValueError(f".inputs {n_in}: the text defines at most {max_count} inputs")
                shifts = [_i64(x) for x in parts[3:]] if len(parts) > 2 and parts[2] == "shifts" else [0] * n_in
                if len(shifts) != n_in:
                    raise ValueError(f"{n_in} inputs but {len(shifts)} shifts")
            elif line.startswith(".outputs"):
                n_out = _i64(line.split()[1])
                if not 0 <= n_out <= max_count:
                    raise ValueError(f".outputs {n_out}: the text defines at most {max_count} outputs")
            elif line.startswith(".table"):
                m = re.fullmatch(r"\.table\s+(\d+)\s*\[(.*)\]", line, re.ASCII)
                if not m:
                    raise ValueError("table syntax: .table T [e0 e1 ...]")
                tables[int(m.group(1))] = [_i64(x) for x in m.group(2).split()]
            elif line.startswith("%"):
                m = _OP_RE.match(line)
                if not m:
                    raise ValueError("op syntax: %i = OP ARGS : (k,I,f)")
                if int(m.group(1)) != len(ops):
                    raise ValueError(f"op index %{m.group(1)} out of sequence (expected %{len(ops)})")
                opc, a, c, d = _parse_op(m.group(2).strip())
                ops.append((opc, a, c, ((d + 2**63) % 2**64) - 2**63, int(m.group(3)), int(m.group(4)),
                            int(m.group(5))))
                q = re.search(r"qint\(([^)]*)\)", m.group(6))
                qints.append(tuple(float(x) for x in q.group(1).split(",")) if q else None)
            elif line.startswith("out"):
                m = _OUT_RE.match(line)
                if not m:
                    raise ValueError("output syntax: out j = [-]%i [<< s]")
                neg = int(m.group(3)) if m.group(2) else (1 if m.group(4) else 0)
                idx = -1 if m.group(5) == "zero" else int(m.group(6))
                outs[int(m.group(1))] = (idx, int(m.group(8) or 0), neg)
            else:
                raise ValueError(f"unrecognised line {line.split()[0]!r}")
        except (ValueError, IndexError) as exc:
            raise AsmError(str(exc), file=file, line=ln) from None
    if n_in is None:
        raise AsmError("missing .inputs directive", file=file)
    n_out = len(outs) if n_out is None else n_out
    if sorted(outs) != list(range(n_out)):
        raise AsmError(f".outputs {n_out} but outputs {sorted(outs)} are defined", file=file)
    if sorted(tables) != list(range(len(tables))):
        raise AsmError("tables must be numbered 0..T-1", file=file)
    o = [outs[j] for j in range(n_out)]
    meta = {"qint": qints} if any(q is not None for q in qints) else {}
    try:
        return Program.from_arrays(spec_version=version, firmware_version=fw, inp_shifts=shifts,
                                   out_idxs=[x[0] for x in o], out_shifts=[x[1] for x in o],
                                   out_negs=[x[2] for x in o], ops=np.array(ops, np.int64).reshape(-1, 7),
                                   tables=[tables[t] for t in range(len(tables))], meta=meta, file=file)
    except DaisValidationError:
        raise
