"""nnisa DAIS assembly text (spec §4.1): canonical disassembly and the assembler.

Each op line shows its index, mnemonic, operands, data and dtype ``(k,I,f)``; a trailing
comment gives the dtype's real interval and step (comments are ignored by the assembler, so
the text round-trips).  The operand text of every opcode is its table row's template
(:class:`Template`), which both parses and prints it; fields no template can express use ``raw``.
The assembler is the core one (:class:`~nnisa.core.asm.Assembler`) with DAIS's directives.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

import numpy as np

from ....core.asm import Assembler, Directives, Line
from ....core.errors import AsmError
from .. import isa
from ..program import Program, kif_to_qint


def _fmt_num(v: Fraction) -> str:
    return str(int(v)) if v.denominator == 1 else repr(float(v))


@functools.lru_cache(maxsize=4096)
def _interval(k, i, f) -> str:
    lo, hi, st = kif_to_qint(k, i, f)
    return f"[{_fmt_num(lo)}, {_fmt_num(hi)}] step {_fmt_num(st)}"


# ---------------------------------------------------------------------------- op templates
_PLACE = re.compile(r"%\{(\w+)\}|\{(-?)(\w+)(?::([\w|]+))?\}")
_M32 = 0xFFFFFFFF


class Template:
    """The assembly form of one opcode, from its table row's syntax (:mod:`..isa`):
    ``%{col}`` a slot reference, ``{col}`` an integer, ``{col:a|b}`` a word (its index),
    ``{-col}`` an optional minus sign (1 when present).  Columns are ``id0``, ``id1`` and views
    of the 64-bit data: ``data``, its words ``lo``/``hi``, and bit2's ``sub``/``na``/``nc``
    (``hi = sub << 24 | na | nc << 1``).  One template both parses and prints its opcode."""

    def __init__(self, row):
        self.row, self.opcode = row, row.opcode
        self.used = set(row.fields.split())
        parts: list[tuple] = []
        pos = 0
        for m in _PLACE.finditer(row.syntax):
            if m.start() > pos:
                parts.append(("lit", row.syntax[pos:m.start()]))
            if m.group(1):
                parts += [("lit", "%"), ("ref", m.group(1))]
            elif m.group(2):
                parts.append(("flag", m.group(3)))
            elif m.group(4):
                parts.append(("enum", m.group(3), tuple(m.group(4).split("|"))))
            else:
                parts.append(("int", m.group(3)))
            pos = m.end()
        if pos < len(row.syntax):
            parts.append(("lit", row.syntax[pos:]))
        self.parts = parts
        self.cols = {p[1] for p in parts if p[0] != "lit"}
        first = parts[0]
        self.words = first[2] if first[0] == "enum" else (first[1].split()[0],)
        rx = []
        for p in parts:
            if p[0] == "lit":
                rx.append("".join(r"\s*,\s*" if ch == "," else r"\s+" if ch == " " else re.escape(ch)
                                  for ch in p[1].replace(", ", ",")))
            else:
                rx.append({"ref": r"([^\s,]*)", "int": r"([^\s,]+)", "flag": "(-?)"}.get(p[0])
                          or "(" + "|".join(p[2]) + ")")
        self.regex = re.compile("".join(rx), re.ASCII)

    @property
    def label(self) -> str:
        """The form for messages: ``mux %lo, %id0, -%id1, hi``."""
        return "".join(p[1] if p[0] in ("lit", "ref", "int") else "[-]" if p[0] == "flag" else "|".join(p[2])
                       for p in self.parts)

    # ---------------------------------------------------------------- data views
    def pack(self, v: dict[str, int]) -> int:
        """The 64-bit data of the parsed columns."""
        if "data" in v:
            return v["data"]
        if "sub" in v:
            return ((v["sub"] << 24 | v["na"] | v["nc"] << 1) << 32) | (v["lo"] & _M32)
        if "hi" in v:
            return (int(v["hi"]) << 32) | (int(v["lo"]) & _M32)
        return v.get("lo", 0)

    def views(self, d: int, lo: int, hi: int) -> dict[str, int]:
        return {"data": d, "lo": lo, "hi": hi, "sub": (hi >> 24) & 0xFF, "na": hi & 1, "nc": (hi >> 1) & 1}

    # ---------------------------------------------------------------- parse and print
    def parse(self, body: str) -> tuple[int, int, int, int] | None:
        """``(opcode, id0, id1, data)`` of an op body in this form, or None when it is another form;
        ValueError for a bad value in this form."""
        m = self.regex.fullmatch(body)
        if m is None:
            return None
        v: dict[str, int] = {}
        for p, tok in zip((p for p in self.parts if p[0] != "lit"), m.groups()):
            if p[0] == "ref":
                if not (tok.isascii() and tok.isdigit()):
                    raise ValueError(f"expected a slot reference like %3, got {('%' + tok)[:40]!r}")
                v[p[1]] = int(tok)
            elif p[0] == "int":
                v[p[1]] = _i64(tok)
            elif p[0] == "enum":
                v[p[1]] = p[2].index(tok)
            else:
                v[p[1]] = 1 if tok else 0
        return self.opcode, v.get("id0", -1), v.get("id1", -1), self.pack(v)

    def fits(self, a: int, c: int, d: int, lo: int, hi: int) -> bool:
        """Whether this form prints the op losslessly."""
        if ("id1" not in self.used and c != -1) or ("id0" not in self.used and self.opcode != -1 and a != -1):
            return False
        v = self.views(d, lo, hi) | {"id0": a, "id1": c}
        if any(p[0] == "ref" and v[p[1]] < 0 for p in self.parts):  # "%-1" would not parse: raw
            return False
        if "data" not in self.used:
            return d == 0
        for p in self.parts:
            if p[0] == "enum" and not 0 <= v[p[1]] < len(p[2]):
                return False
        return self.pack({k: v[k] for k in self.cols if k in v}) == d

    def render(self, a: int, c: int, d: int, lo: int, hi: int) -> str:
        v = self.views(d, lo, hi) | {"id0": a, "id1": c}
        out = []
        for p in self.parts:
            if p[0] == "lit":
                out.append(p[1])
            elif p[0] == "enum":
                out.append(p[2][v[p[1]]])
            elif p[0] == "flag":
                out.append("-" if v[p[1]] else "")
            else:
                out.append(str(v[p[1]]))
        return "".join(out)


TEMPLATES = {row.opcode: Template(row) for row in isa.OPCODES}
_BY_WORD: dict[str, list[Template]] = {}
for _t in TEMPLATES.values():
    for _w in _t.words:
        _BY_WORD.setdefault(_w, []).append(_t)


def op_text(o: int, a: int, c: int, d: int, lo: int, hi: int) -> str | None:
    """Structured operand text of an op (opcode, id0, id1, data, data lo/hi words) or None if only
    ``raw`` is lossless."""
    t = TEMPLATES.get(o)
    return t.render(a, c, d, lo, hi) if t is not None and t.fits(a, c, d, lo, hi) else None


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
        if (o == 0 or o == 1) and hi == (-1 if lo < 0 else 0):  # most ops: the adder template, inline
            body = f"{addsub[o]} %{a}, %{c}, {lo}"
        else:
            body = op_text(o, a, c, d, lo, hi)
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
    """Operand text → (opcode, id0, id1, data), by the table's templates (or ``raw``)."""
    mn, _, rest = body.partition(" ")
    if mn == "raw":
        v = [_i64(x) for x in rest.split()]
        if len(v) != 5:
            raise ValueError("raw takes OPC ID0 ID1 LO HI")
        return v[0], v[1], v[2], (int(v[4]) << 32) | (int(v[3]) & _M32)
    forms = _BY_WORD.get(mn)
    if not forms:
        raise ValueError(f"unknown mnemonic {mn!r}")
    for t in forms:
        op = t.parse(body)
        if op is not None:
            return op
    raise ValueError(f"{mn} syntax: " + " or ".join(t.label for t in forms))


#: the directives of DAIS assembly (spec §4.1)
DIRECTIVES = Directives("DAIS")


class DaisAssembler(Assembler):
    """DAIS text → :class:`Program`: the core assembler with DAIS's directives; an op line
    ``%i = BODY : (k,I,f)`` takes its body from the table's templates, ``out j = ...`` names an
    output."""

    directives = DIRECTIVES
    labels = "labels are not used in DAIS assembly"

    def __init__(self, text: str, file: str | None):
        super().__init__(None, file=file)
        self._line: Line | None = None
        self.version, self.fw, self.n_in, self.shifts, self.n_out = 1, 0, None, None, None
        self.ops: list[tuple] = []
        self.qints: list = []
        self.tables: dict[int, list[int]] = {}
        self.outs: dict[int, tuple[int, int, int]] = {}
        # every input/output needs a line of its own (an op or an ``out`` line) or a shift value: a
        # count above this is a corrupt header, refused before anything is allocated for it
        self.max_count = text.count("\n") + len(text.split()) + 1

    def feed(self, lines) -> None:
        try:
            super().feed(lines)
        except (ValueError, IndexError) as exc:  # one line, at the line being assembled
            raise self.error(str(exc), self._line) from None

    def directive(self, line: Line, rest=None) -> None:
        self._line = line
        super().directive(line, rest)

    @DIRECTIVES.register(".dais", "legacy|VERSION", "format version (spec_version)")
    def _dais(self, line: Line) -> None:
        v = line.tail.split()[0]
        self.version = None if v == "legacy" else _i64(v)

    @DIRECTIVES.register(".firmware", "N", "firmware version stored in v1 binaries")
    def _firmware(self, line: Line) -> None:
        self.fw = _i64(line.tail.split()[0])

    @DIRECTIVES.register(".inputs", "N [shifts s0 s1 ...]", "input count and input shifts")
    def _inputs(self, line: Line) -> None:
        parts = line.tail.split()
        self.n_in = _i64(parts[0])
        if not 0 <= self.n_in <= self.max_count:
            raise ValueError(f".inputs {self.n_in}: the text defines at most {self.max_count} inputs")
        self.shifts = [_i64(x) for x in parts[2:]] if len(parts) > 1 and parts[1] == "shifts" else [0] * self.n_in
        if len(self.shifts) != self.n_in:
            raise ValueError(f"{self.n_in} inputs but {len(self.shifts)} shifts")

    @DIRECTIVES.register(".outputs", "N", "output count")
    def _outputs(self, line: Line) -> None:
        self.n_out = _i64(line.tail.split()[0])
        if not 0 <= self.n_out <= self.max_count:
            raise ValueError(f".outputs {self.n_out}: the text defines at most {self.max_count} outputs")

    @DIRECTIVES.register(".table", "T [e0 e1 ...]", "lookup table T")
    def _table(self, line: Line) -> None:
        m = re.fullmatch(r"\s*(\d+)\s*\[(.*)\]\s*", line.tail, re.ASCII)
        if not m:
            raise ValueError("table syntax: .table T [e0 e1 ...]")
        self.tables[int(m.group(1))] = [_i64(x) for x in m.group(2).split()]

    def instruction(self, line: Line) -> None:
        self._line = line
        text = (line.head + line.tail).strip()
        if text.startswith("%"):
            m = _OP_RE.match(text)
            if not m:
                raise ValueError("op syntax: %i = OP ARGS : (k,I,f)")
            if int(m.group(1)) != len(self.ops):
                raise ValueError(f"op index %{m.group(1)} out of sequence (expected %{len(self.ops)})")
            opc, a, c, d = _parse_op(m.group(2).strip())
            self.ops.append((opc, a, c, ((d + 2**63) % 2**64) - 2**63, int(m.group(3)), int(m.group(4)),
                             int(m.group(5))))
            q = re.search(r"qint\(([^)]*)\)", m.group(6))
            self.qints.append(tuple(float(x) for x in q.group(1).split(",")) if q else None)
        elif line.head == "out":
            m = _OUT_RE.match(text)
            if not m:
                raise ValueError("output syntax: out j = [-]%i [<< s]")
            neg = int(m.group(3)) if m.group(2) else (1 if m.group(4) else 0)
            idx = -1 if m.group(5) == "zero" else int(m.group(6))
            self.outs[int(m.group(1))] = (idx, int(m.group(8) or 0), neg)
        else:
            raise ValueError(f"unrecognised line {line.head!r}")

    def finish(self) -> Program:
        file = self.file
        if self.n_in is None:
            raise AsmError("missing .inputs directive", file=file)
        outs, tables = self.outs, self.tables
        n_out = len(outs) if self.n_out is None else self.n_out
        if sorted(outs) != list(range(n_out)):
            raise AsmError(f".outputs {n_out} but outputs {sorted(outs)} are defined", file=file)
        if sorted(tables) != list(range(len(tables))):
            raise AsmError("tables must be numbered 0..T-1", file=file)
        o = [outs[j] for j in range(n_out)]
        meta = {"qint": self.qints} if any(q is not None for q in self.qints) else {}
        return Program.from_arrays(spec_version=self.version, firmware_version=self.fw, inp_shifts=self.shifts,
                                   out_idxs=[x[0] for x in o], out_shifts=[x[1] for x in o],
                                   out_negs=[x[2] for x in o], ops=np.array(self.ops, np.int64).reshape(-1, 7),
                                   tables=[tables[t] for t in range(len(tables))], meta=meta, file=file)


def assemble(text: str, *, file: str | None = None) -> Program:
    """Parse assembly text; errors are :class:`AsmError` with file and line."""
    return DaisAssembler(text, file).assemble(text)
