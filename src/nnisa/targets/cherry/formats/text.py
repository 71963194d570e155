"""Cherry assembly text (spec ``cherry.md`` §2.5): loops as blocks, symbolic address formulas.

```
.sz 4
.loop 0 iterations=128
.apu 0 = 2*i + 3*j + 16
start_independent_loop 0
    mem_read 0, 1
end_loop 0
```

The assembler computes loop jumps from the matching start/end pair, checks the limits of §2.6 and
reports ``file:line:col``; the disassembler prints the same form (indented loop bodies), so
``assemble(disassemble(p)) == p``.
"""

from __future__ import annotations

import re

import numpy as np

from ....core.asm import Assembler, Directives, Line, iter_lines, make_formatter
from ....core.errors import AsmError, EncodeError
from ....core.operands import OperandError, parse_int
from ..isa import ALIASES, LOOP_VARS, MAX_FORMULAS, MAX_LOOPS, OP, cherry_isa
from ..program import (MAX_ITERATIONS, MAX_JUMP, MAX_PROGRAM, VALUE_MAX, VALUE_MIN, Header, Program,
                       loop_structure)
from .binary import ENCODINGS, encode_alt

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(.))")


# ------------------------------------------------------------------ formulas
#: deepest nesting of parentheses and signs in an address formula
MAX_FORMULA_DEPTH = 64


def parse_formula(text: str) -> list[int]:
    """A linear expression in the loop variables ``i``..``p`` → 9 values (8 coefficients, constant).

    Accepts ``+ - * ( )``, integers and variable names, e.g. ``2*i + 3*(j - 1) + 16``.
    Raises ``OperandError`` for anything non-linear or malformed.
    """
    toks: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        num, name, sym = m.groups()
        if num is not None:
            toks.append(("n", num))
        elif name is not None:
            if name.lower() not in LOOP_VARS:
                raise OperandError(f"unknown loop variable {name!r} (variables: {', '.join(LOOP_VARS)})")
            toks.append(("v", name.lower()))
        elif sym is not None and not sym.isspace():
            if sym not in "+-*()":
                raise OperandError(f"unexpected {sym!r} in formula")
            toks.append(("s", sym))
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else ("", "")

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1] if pos <= len(toks) else ("", "")

    def const(v):
        return v[:8] == [0] * 8

    def expr():
        v = term()
        while peek() in (("s", "+"), ("s", "-")):
            sign = 1 if take()[1] == "+" else -1
            w = term()
            v = [a + sign * b for a, b in zip(v, w)]
        return v

    def term():
        v = unary()
        while peek() == ("s", "*"):
            take()
            w = unary()
            if const(v):
                v = [v[8] * b for b in w]
            elif const(w):
                v = [a * w[8] for a in v]
            else:
                raise OperandError("formula is not linear (product of loop variables)")
        return v

    depth = [0]  # nested parentheses and signs: bounded, so no input reaches Python's recursion limit

    def unary():
        depth[0] += 1
        if depth[0] > MAX_FORMULA_DEPTH:
            raise OperandError(f"formula nested more than {MAX_FORMULA_DEPTH} deep")
        try:
            return _unary()
        finally:
            depth[0] -= 1

    def _unary():
        if peek() in (("s", "-"), ("s", "+")):
            sign = -1 if take()[1] == "-" else 1
            return [sign * a for a in unary()]
        kind, val = peek()
        if kind == "n":
            take()
            if len(val) > 40:
                raise OperandError(f"number {val[:20]}... ({len(val):,} digits) out of range")
            return [0] * 8 + [int(val)]
        if kind == "v":
            take()
            v = [0] * 9
            v[LOOP_VARS.index(val)] = 1
            return v
        if (kind, val) == ("s", "("):
            take()
            v = expr()
            if take() != ("s", ")"):
                raise OperandError("missing ')' in formula")
            return v
        raise OperandError(f"expected a number or a loop variable, got {val or 'end of formula'!r}")

    if not toks:
        raise OperandError("empty formula")
    vals = expr()
    if pos != len(toks):
        raise OperandError(f"unexpected {toks[pos][1]!r} in formula")
    return vals


def format_formula(values) -> str:
    """9 values → ``2*i + 3*j + 16`` (``0`` for an all-zero formula)."""
    parts: list[tuple[int, str]] = []
    for a, c in enumerate(list(values)[:8]):
        if c:
            parts.append((int(c), LOOP_VARS[a] if abs(c) == 1 else f"{abs(int(c))}*{LOOP_VARS[a]}"))
    k = int(values[8])
    if k or not parts:
        parts.append((k, str(abs(k))))
    out = ""
    for n, (c, txt) in enumerate(parts):
        if n == 0:
            out = ("-" if c < 0 else "") + txt
        else:
            out += (" - " if c < 0 else " + ") + txt
    return out


# ------------------------------------------------------------------ assembler
#: the directives of Cherry assembly (§2.5)
DIRECTIVES = Directives("Cherry")


#: instruction line → row, per tile size (``(sz, mnemonic, operands)``; parsing depends on nothing
#: else): lines seen before skip the operand parser (:meth:`CherryAssembler.fast_line`)
_ROWS: dict[tuple[int, str, str], tuple] = {}
_ROWS_MAX = 1 << 16


class CherryAssembler(Assembler):
    """Cherry text → :class:`Program`: the core assembler with Cherry's directives, the seed
    spellings as aliases, loop jumps computed from the matching start/end pair (§2.6)."""

    directives = DIRECTIVES
    aliases = ALIASES
    labels = "labels are not used in Cherry assembly (loops are blocks)"

    def __init__(self, file: str | None, sz: int | None, encoding: str | None):
        super().__init__(None, file=file)
        self.sz, self.org, self.encoding = sz, 0, encoding or "canonical"
        self.loops: dict[int, dict[str, int]] = {}
        self.loop_lines: dict[int, int] = {}
        self.formulas: dict[int, list[int]] = {}
        self.source_lines: list[Line | int] = []  # int: the line number of a line fast_line took

    def _index(self, tok: str, limit: int, what: str, line: Line) -> int:
        try:
            v = parse_int(tok)
        except OperandError as exc:
            raise self.error(f"{what}: {exc}", line) from None
        if not 0 <= v < limit:
            raise self.error(f"{what} {v} outside 0..{limit - 1}", line)
        return v

    @DIRECTIVES.register(".sz", "4|16|32", "tile size (must match the configuration's)")
    def _sz(self, line: Line) -> None:
        try:
            n = parse_int(line.tail.strip())
        except OperandError as exc:
            raise self.error(f".sz: {exc}", line) from None
        if n not in (4, 16, 32):
            raise self.error(f".sz {n}: the tile size is 4, 16 or 32", line)
        if self.sz is not None and self.sz != n:
            raise self.error(f".sz {n} does not match the configuration's SZ={self.sz} (use --arch sz{n})", line)
        if self.isa is not None:
            raise self.error(".sz must come before the first instruction", line)
        self.sz = n

    @DIRECTIVES.register(".org", "ADDR", "load address of the program (pc offset)")
    def _org(self, line: Line) -> None:
        try:
            self.org = parse_int(line.tail.strip())
        except OperandError as exc:
            raise self.error(f".org: {exc}", line) from None
        if self.org < 0:
            raise self.error(".org must be >= 0", line)

    @DIRECTIVES.register(".encoding", "|".join(ENCODINGS), "binary encoding of the program image")
    def _encoding(self, line: Line) -> None:
        args = line.tail.strip()
        if args.lower() not in ENCODINGS:
            raise self.error(f".encoding {args!r}: expected one of {', '.join(ENCODINGS)}", line)
        self.encoding = args.lower()

    @DIRECTIVES.register(".loop", "A iterations=N [jump=J]", "iteration count (and jump) of loop address A")
    def _loop(self, line: Line) -> None:
        parts = line.tail.split()
        if not parts:
            raise self.error(".loop needs a loop address and iterations=N", line)
        a = self._index(parts[0], MAX_LOOPS, "loop address", line)
        if a in self.loops:
            raise self.error(f"loop {a} is defined twice", line)
        kv = {}
        for tok in parts[1:]:
            key, eq, val = tok.partition("=")
            if not eq or key.strip().lower() not in ("iterations", "jump"):
                raise self.error(f"expected iterations=N or jump=N, got {tok!r}", line)
            try:
                kv[key.strip().lower()] = parse_int(val)
            except OperandError as exc:
                raise self.error(str(exc), line) from None
        if "iterations" not in kv:
            raise self.error(f".loop {a}: iterations=N is required", line)
        self.define_loop(a, kv, line)

    def define_loop(self, a: int, kv: dict[str, int], line: Line | int) -> None:
        """Loop ``a`` with ``iterations`` (and ``jump``), checked (``.loop``; the compiler's kernels
        define their loops here directly)."""
        if not 1 <= kv["iterations"] <= MAX_ITERATIONS:
            raise self.error(f".loop {a}: iterations={kv['iterations']} outside 1..{MAX_ITERATIONS}", line)
        if "jump" in kv and not 0 <= kv["jump"] <= MAX_JUMP:
            raise self.error(f".loop {a}: jump={kv['jump']} outside 0..{MAX_JUMP}", line)
        self.loops[a] = kv
        self.loop_lines[a] = line if isinstance(line, int) else line.lineno

    @DIRECTIVES.register(".apu", "F = FORMULA", "address formula F, linear in the loop variables i..p")
    def _apu(self, line: Line) -> None:
        idx, eq, expr = line.tail.strip().partition("=")
        if not eq:
            raise self.error(".apu needs `.apu N = <formula>`", line)
        f = self._index(idx.strip(), MAX_FORMULAS, "formula", line)
        if f in self.formulas:
            raise self.error(f"formula {f} is defined twice", line)
        try:
            vals = parse_formula(expr)
        except OperandError as exc:
            raise self.error(f".apu {f}: {exc}", line) from None
        self.define_formula(f, vals, line)

    def define_formula(self, f: int, vals: list[int], line: Line | int) -> None:
        """Formula ``f`` = 8 coefficients and a constant, checked (``.apu``; the compiler's kernels
        define their formulas here directly)."""
        for c, v in enumerate(vals):
            if not VALUE_MIN <= v <= VALUE_MAX:
                what = "constant" if c == 8 else f"coefficient of {LOOP_VARS[c]}"
                raise self.error(f".apu {f}: {what} {v} outside signed 18 bits ({VALUE_MIN}..{VALUE_MAX})", line)
        self.formulas[f] = list(vals)

    def instruction(self, line: Line) -> None:
        if self.isa is None:
            self.sz = self.sz or 4
            self.isa = cherry_isa(self.sz)
        row = self.parse(line)
        self.emit(row, line)
        self.source_lines.append(line)
        if len(_ROWS) < _ROWS_MAX:
            _ROWS[(self.sz, line.head, line.tail.strip())] = row

    def fast_line(self, head: str, tail: str, lineno: int) -> bool:
        """An instruction line assembled before (same tile size, same text): its row again.  The
        compiler's kernels repeat a few hundred distinct lines thousands of times."""
        row = _ROWS.get((self.sz or 4, head, tail.strip()))
        if row is None:
            return False
        if self.isa is None:
            self.sz = self.sz or 4
            self.isa = cherry_isa(self.sz)
        self.emit(row, lineno)
        self.source_lines.append(lineno)  # its Line is rebuilt from the text if an error needs it
        return True

    def _line(self, pc: int) -> Line:
        """The source line of instruction ``pc`` (for a message with its column)."""
        got = self.source_lines[pc]
        if isinstance(got, Line):
            return got
        return next(ln for ln in iter_lines(self.text) if ln.lineno == got)

    def finish(self) -> Program:
        isa = self.isa or cherry_isa(self.sz or 4)
        lines, file = _Lines(self), self.file
        if len(self.rows) > MAX_PROGRAM:
            raise self.error(f"program has {len(self.rows)} instructions; at most {MAX_PROGRAM} fit",
                             lines[MAX_PROGRAM].lineno)
        arr = isa.rows(self.rows)
        try:
            pairs = loop_structure(arr)
        except ValueError as exc:
            pc = int(str(exc).split(":")[0].split()[-1]) if str(exc).startswith("pc ") else len(lines) - 1
            ln = lines[pc] if lines else None
            raise AsmError(str(exc).split(": ", 1)[-1] if str(exc).startswith("pc ") else str(exc), file=file,
                           line=getattr(ln, "lineno", ln)) from None
        header = Header()
        for a, spec in self.loops.items():
            header.iterations[a] = spec["iterations"]
            header.jumps[a] = spec.get("jump", 0)
        for a, (start, end) in pairs.items():
            if a not in self.loops or self.loops[a]["iterations"] == 0:
                raise self.error(f"loop {a} has no iteration count (add `.loop {a} iterations=N`)", lines[start])
            jump = end - start
            if jump > MAX_JUMP:
                raise self.error(f"loop {a} body has {jump - 1} instructions; at most {MAX_JUMP - 1} fit (jump <= "
                                 f"{MAX_JUMP})", lines[start])
            if "jump" in self.loops[a] and self.loops[a]["jump"] != jump:
                raise self.error(f"loop {a}: jump={self.loops[a]['jump']} but its body needs jump={jump}",
                                 self.loop_lines[a])
            header.jumps[a] = jump
        for f, vals in self.formulas.items():
            header.formulas[f] = vals
        prog = Program(arr, header, sz=self.sz or 4, org=self.org, encoding=self.encoding)
        if prog.encoding == "cherrycore":
            for pc, r in enumerate(prog.instructions()):
                try:
                    encode_alt(r)
                except EncodeError as exc:
                    raise self.error(exc.message, lines[pc]) from None
        return prog


class _Lines:
    """``source_lines`` as Line objects, rebuilt on demand (only error messages need them)."""

    def __init__(self, asm: CherryAssembler):
        self.asm = asm

    def __len__(self) -> int:
        return len(self.asm.source_lines)

    def __getitem__(self, pc: int) -> Line:
        return self.asm._line(pc)


def assemble(text: str, *, file: str | None = None, sz: int | None = None, encoding: str | None = None) -> Program:
    """Assemble Cherry text into a :class:`Program`.

    Parameters
    ----------
    text
        Assembly source (§2.5).
    file
        Name used in error messages.
    sz
        Tile size from the configuration; ``.sz`` must agree with it.  ``None``: ``.sz`` or 4.
    encoding
        Encoding from the configuration; ``.encoding`` overrides it.
    """
    return CherryAssembler(file, sz, encoding).assemble(text)


# ------------------------------------------------------------------ disassembler
def disassemble(prog: Program) -> str:
    """Canonical text of ``prog`` (lossless: assembling it gives ``prog`` back)."""
    out = [f".sz {prog.sz}"]
    if prog.org:
        out.append(f".org {prog.org}")
    if prog.encoding != "canonical":
        out.append(f".encoding {prog.encoding}")
    try:
        pairs = loop_structure(prog.rows)
    except ValueError:
        pairs = {}
    h = prog.header
    for a in range(MAX_LOOPS):
        if h.iterations[a] or h.jumps[a]:
            body = pairs.get(a)
            jump = "" if body and body[1] - body[0] == h.jumps[a] else f" jump={h.jumps[a]}"
            out.append(f".loop {a} iterations={h.iterations[a]}{jump}")
    for f in range(MAX_FORMULAS):
        if np.any(h.formulas[f]):
            out.append(f".apu {f} = {format_formula(h.formulas[f].tolist())}")
    depth = 0
    starts = (OP["start_loop"], OP["start_independent_loop"])
    fmt = make_formatter(prog.isa)
    for row in prog.rows.tolist():
        op = row[0]
        if op == OP["end_loop"]:
            depth = max(depth - 1, 0)
        out.append("    " * depth + fmt(row))
        if op in starts:
            depth += 1
    return "\n".join(out) + "\n"
