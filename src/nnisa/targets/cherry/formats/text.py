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

from ....core.asm import Line, iter_lines, parse_operands, split_operands
from ....core.errors import AsmError, EncodeError
from ....core.operands import OperandError, parse_int
from ..isa import ALIASES, LOOP_VARS, MAX_FORMULAS, MAX_LOOPS, OP, cherry_isa
from ..program import (MAX_ITERATIONS, MAX_JUMP, MAX_PROGRAM, VALUE_MAX, VALUE_MIN, Header, Program,
                       format_instruction, loop_structure)
from .binary import ENCODINGS, encode_alt

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(.))")
_SLOT_KW = re.compile(r"^slot\s*=\s*(\S+)$", re.I)


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
def _kv(tokens: list[str], where, allowed: set[str]) -> dict[str, int]:
    out = {}
    for tok in tokens:
        key, eq, val = tok.partition("=")
        if not eq or key.strip().lower() not in allowed:
            raise AsmError(f"expected {' or '.join(sorted(k + '=N' for k in allowed))}, got {tok!r}", **where)
        try:
            out[key.strip().lower()] = parse_int(val)
        except OperandError as exc:
            raise AsmError(str(exc), **where) from None
    return out


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
    state = {"sz": sz, "org": 0, "encoding": encoding or "canonical"}
    loops: dict[int, dict[str, int]] = {}
    loop_lines: dict[int, int] = {}
    formulas: dict[int, list[int]] = {}
    rows: list[tuple] = []
    lines: list[Line] = []
    isa = None
    for line in iter_lines(text):
        where = {"file": file, "line": line.lineno, "column": line.col}
        if line.label is not None:
            raise AsmError("labels are not used in Cherry assembly (loops are blocks)", **where)
        head = line.head.lower()
        if head.startswith("."):
            _directive(head, line, where, state, loops, loop_lines, formulas, isa is not None)
            continue
        if isa is None:
            state["sz"] = state["sz"] or 4
            isa = cherry_isa(state["sz"])
        rows.append(_instruction(isa, line, file))
        lines.append(line)
    if isa is None:
        isa = cherry_isa(state["sz"] or 4)
    if len(rows) > MAX_PROGRAM:
        raise AsmError(f"program has {len(rows)} instructions; at most {MAX_PROGRAM} fit", file=file,
                       line=lines[MAX_PROGRAM].lineno)
    arr = isa.rows(rows)
    try:
        pairs = loop_structure(arr)
    except ValueError as exc:
        pc = int(str(exc).split(":")[0].split()[-1]) if str(exc).startswith("pc ") else len(lines) - 1
        ln = lines[pc] if lines else None
        raise AsmError(str(exc).split(": ", 1)[-1] if str(exc).startswith("pc ") else str(exc), file=file,
                       line=ln.lineno if ln else None) from None
    header = Header()
    for a, spec in loops.items():
        header.iterations[a] = spec["iterations"]
        header.jumps[a] = spec.get("jump", 0)
    for a, (start, end) in pairs.items():
        ln = lines[start]
        if a not in loops or loops[a]["iterations"] == 0:
            raise AsmError(f"loop {a} has no iteration count (add `.loop {a} iterations=N`)", file=file,
                           line=ln.lineno, column=ln.col)
        jump = end - start
        if jump > MAX_JUMP:
            raise AsmError(f"loop {a} body has {jump - 1} instructions; at most {MAX_JUMP - 1} fit (jump <= "
                           f"{MAX_JUMP})", file=file, line=ln.lineno, column=ln.col)
        if "jump" in loops[a] and loops[a]["jump"] != jump:
            raise AsmError(f"loop {a}: jump={loops[a]['jump']} but its body needs jump={jump}", file=file,
                           line=loop_lines[a])
        header.jumps[a] = jump
    for f, vals in formulas.items():
        header.formulas[f] = vals
    prog = Program(arr, header, sz=state["sz"] or 4, org=state["org"], encoding=state["encoding"])
    if prog.encoding == "cherrycore":
        for pc, r in enumerate(prog.instructions()):
            try:
                encode_alt(r)
            except EncodeError as exc:
                raise AsmError(exc.message, file=file, line=lines[pc].lineno, column=lines[pc].col) from None
    return prog


def _directive(head, line, where, state, loops, loop_lines, formulas, started) -> None:
    args = line.tail.strip()
    if head == ".sz":
        try:
            n = parse_int(args)
        except OperandError as exc:
            raise AsmError(f".sz: {exc}", **where) from None
        if n not in (4, 16, 32):
            raise AsmError(f".sz {n}: the tile size is 4, 16 or 32", **where)
        if state["sz"] is not None and state["sz"] != n:
            raise AsmError(f".sz {n} does not match the configuration's SZ={state['sz']} (use --arch sz{n})",
                           **where)
        if started:
            raise AsmError(".sz must come before the first instruction", **where)
        state["sz"] = n
    elif head == ".org":
        try:
            state["org"] = parse_int(args)
        except OperandError as exc:
            raise AsmError(f".org: {exc}", **where) from None
        if state["org"] < 0:
            raise AsmError(".org must be >= 0", **where)
    elif head == ".encoding":
        if args.lower() not in ENCODINGS:
            raise AsmError(f".encoding {args!r}: expected one of {', '.join(ENCODINGS)}", **where)
        state["encoding"] = args.lower()
    elif head == ".loop":
        parts = args.split()
        if not parts:
            raise AsmError(".loop needs a loop address and iterations=N", **where)
        a = _index(parts[0], MAX_LOOPS, "loop address", where)
        if a in loops:
            raise AsmError(f"loop {a} is defined twice", **where)
        kv = _kv(parts[1:], where, {"iterations", "jump"})
        if "iterations" not in kv:
            raise AsmError(f".loop {a}: iterations=N is required", **where)
        if not 1 <= kv["iterations"] <= MAX_ITERATIONS:
            raise AsmError(f".loop {a}: iterations={kv['iterations']} outside 1..{MAX_ITERATIONS}", **where)
        if "jump" in kv and not 0 <= kv["jump"] <= MAX_JUMP:
            raise AsmError(f".loop {a}: jump={kv['jump']} outside 0..{MAX_JUMP}", **where)
        loops[a] = kv
        loop_lines[a] = line.lineno
    elif head == ".apu":
        idx, eq, expr = args.partition("=")
        if not eq:
            raise AsmError(".apu needs `.apu N = <formula>`", **where)
        f = _index(idx.strip(), MAX_FORMULAS, "formula", where)
        if f in formulas:
            raise AsmError(f"formula {f} is defined twice", **where)
        try:
            vals = parse_formula(expr)
        except OperandError as exc:
            raise AsmError(f".apu {f}: {exc}", **where) from None
        for c, v in enumerate(vals):
            if not VALUE_MIN <= v <= VALUE_MAX:
                what = "constant" if c == 8 else f"coefficient of {LOOP_VARS[c]}"
                raise AsmError(f".apu {f}: {what} {v} outside signed 18 bits ({VALUE_MIN}..{VALUE_MAX})", **where)
        formulas[f] = vals
    else:
        raise AsmError(f"unknown directive {line.head!r} (directives: .sz .org .encoding .loop .apu)", **where)


def _index(tok: str, limit: int, what: str, where) -> int:
    try:
        v = parse_int(tok)
    except OperandError as exc:
        raise AsmError(f"{what}: {exc}", **where) from None
    if not 0 <= v < limit:
        raise AsmError(f"{what} {v} outside 0..{limit - 1}", **where)
    return v


def _instruction(isa, line: Line, file) -> tuple:
    head = line.head.lower()
    tokens = split_operands(line.tail, line.tail_col)
    if head in ALIASES:
        head, fixed = ALIASES[head]
        tokens = [(line.col, t) for t in fixed] + tokens
    spec = isa.by_mnemonic.get(head)
    if spec is None:
        raise AsmError(f"unknown instruction {line.head!r}", file=file, line=line.lineno, column=line.col)
    slot = None
    if head in ("load", "store") and tokens and _SLOT_KW.match(tokens[-1][1]):
        col, tok = tokens.pop()
        try:
            slot = parse_int(_SLOT_KW.match(tok).group(1))
        except OperandError as exc:
            raise AsmError(f"{head} slot: {exc}", file=file, line=line.lineno, column=col) from None
        if not 0 <= slot <= 3:
            raise AsmError(f"{head} slot={slot} outside 0..3", file=file, line=line.lineno, column=col)
    row = list(parse_operands(isa, spec, tokens, line, file))
    if slot is not None:
        row[isa._col_index["slot"]] = slot
    return tuple(row)


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
    for row in prog.rows:
        op = int(row["op"])
        if op == OP["end_loop"]:
            depth = max(depth - 1, 0)
        out.append("    " * depth + format_instruction(prog, row))
        if op in starts:
            depth += 1
    return "\n".join(out) + "\n"
