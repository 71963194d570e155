"""Generic text assembler / disassembler driven by an :class:`~nnisa.core.isa.ISA` table.

The engine knows lines, comments (``#`` and ``;``), labels (``name:``), directives (``.name
args``) and instructions (``mnemonic op, op, ...``).  Operands are parsed by the
:class:`~nnisa.core.operands.OperandKind` of each :class:`~nnisa.core.isa.Operand`.  Targets
supply directive handlers and decide what to do with each parsed row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

from .errors import AsmError
from .isa import ISA, InstrSpec
from .operands import OperandError


@dataclass
class Line:
    """One meaningful source line after comment stripping."""

    lineno: int
    col: int  # 1-based column of the first token
    label: str | None
    head: str  # mnemonic or directive (with its dot)
    tail: str  # operand text
    tail_col: int  # 1-based column where ``tail`` starts


def strip_comment(text: str) -> str:
    """Remove a ``#`` or ``;`` comment."""
    i = text.find("#")
    j = text.find(";")
    if j != -1 and (i == -1 or j < i):
        i = j
    return text if i == -1 else text[:i]


def split_operands(tail: str, base_col: int) -> list[tuple[int, str]]:
    """Split operand text at top-level commas; returns ``(column, token)`` pairs."""
    out: list[tuple[int, str]] = []
    if not tail.strip():
        return out
    depth = 0
    start = 0
    for i, ch in enumerate(tail):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append((start, tail[start:i]))
            start = i + 1
    out.append((start, tail[start:]))
    res = []
    for s, tok in out:
        lead = len(tok) - len(tok.lstrip())
        res.append((base_col + s + lead, tok.strip()))
    return res


def iter_lines(text: str) -> Iterator[Line]:
    """Yield the non-empty lines of a source text with their labels split off."""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        body = strip_comment(raw)
        if not body.strip():
            continue
        label = None
        stripped = body.lstrip()
        col = len(body) - len(stripped) + 1
        head_end = len(stripped.split(None, 1)[0])
        head = stripped[:head_end]
        if head.endswith(":") and not head.startswith("."):
            label = head[:-1]
            rest = stripped[head_end:]
            if not rest.strip():
                yield Line(lineno, col, label, "", "", col + head_end)
                continue
            lead = len(rest) - len(rest.lstrip())
            col = col + head_end + lead
            stripped = rest.lstrip()
            head_end = len(stripped.split(None, 1)[0])
            head = stripped[:head_end]
        tail = stripped[head_end:]
        yield Line(lineno, col, label, head, tail, col + head_end)


def parse_instruction(isa: ISA, line: Line, file: str | None = None) -> tuple:
    """Parse an instruction line into an IR row tuple (column order of ``isa``)."""
    spec = isa.by_mnemonic.get(line.head.lower())
    if spec is None:
        raise AsmError(f"unknown instruction {line.head!r}", file=file, line=line.lineno, column=line.col)
    tokens = split_operands(line.tail, line.tail_col)
    return parse_operands(isa, spec, tokens, line, file)


_KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)\s*=(.*)", re.S)


def _split_keywords(spec: InstrSpec, tokens: list[tuple[int, str]], line: Line,
                    file: str | None) -> tuple[list[tuple[int, str]], dict[str, tuple[int, str]]]:
    """Separate ``key=value`` tokens (for specs with keyword operands) from positional ones."""
    keys = {o.keyword for o in spec.operands if o.keyword}
    if not keys:
        return tokens, {}
    positional: list[tuple[int, str]] = []
    named: dict[str, tuple[int, str]] = {}
    for col, tok in tokens:
        m = _KEYWORD.fullmatch(tok)
        if m is None:
            if named:
                raise AsmError(f"{spec.mnemonic}: positional operand {tok!r} after an option", file=file,
                               line=line.lineno, column=col)
            positional.append((col, tok))
            continue
        key = m.group(1).lower()
        if key not in keys:
            raise AsmError(f"{spec.mnemonic} has no option {key!r} (options: {', '.join(sorted(keys))})",
                           file=file, line=line.lineno, column=col)
        if key in named:
            raise AsmError(f"{spec.mnemonic}: option {key!r} given twice", file=file, line=line.lineno, column=col)
        named[key] = (col, m.group(2).strip())
    return positional, named


def parse_operands(isa: ISA, spec: InstrSpec, tokens: list[tuple[int, str]], line: Line,
                   file: str | None = None) -> tuple:
    """Bind operand tokens to IR columns and check them against the field ranges.

    Positional operands bind in order; ``key=value`` tokens bind to keyword operands.
    """
    tokens, named = _split_keywords(spec, tokens, line, file)
    ops = [o for o in spec.operands if not o.keyword]
    required = sum(1 for o in ops if not o.optional)
    if not required <= len(tokens) <= len(ops):
        want = str(required) if required == len(ops) else f"{required}-{len(ops)}"
        raise AsmError(f"{spec.mnemonic} takes {want} operand(s), got {len(tokens)} (syntax: {spec.syntax})",
                       file=file, line=line.lineno, column=line.col)
    vals = [0] * len(isa.columns)
    index = isa._col_index
    vals[0] = spec.opcode
    fields = {f.name: f for f in spec.format.fields}
    i = -1
    for operand in spec.operands:
        if operand.keyword:
            given = named.get(operand.keyword)
            if given is None and not operand.optional:
                raise AsmError(f"{spec.mnemonic} needs option {operand.label} (syntax: {spec.syntax})",
                               file=file, line=line.lineno, column=line.col)
        else:
            i += 1
            given = tokens[i] if i < len(tokens) else None
        if given is not None:
            col, tok = given
            try:
                values = operand.kind.parse(tok)
            except OperandError as exc:
                what = f"option {operand.keyword}" if operand.keyword else f"operand {i + 1}"
                raise AsmError(f"{spec.mnemonic} {what} ({operand.label}): {exc}",
                               file=file, line=line.lineno, column=col) from None
        else:
            col, values = line.col, operand.kind.default()
        for c, v in zip(operand.columns, values):
            f = fields.get(c)
            if f is not None and not f.fits(v) and f.multiple_of != 1 and v % f.multiple_of:
                raise AsmError(f"{spec.mnemonic} {c}={v} must be a multiple of {f.multiple_of}"
                               + (f" ({f.doc})" if f.doc else ""), file=file, line=line.lineno, column=col)
            if f is not None and not f.fits(v):
                lo, hi = f.value_range
                raise AsmError(f"{spec.mnemonic} {c}={v} out of range {lo}..{hi} ({f.width}-bit field)",
                               file=file, line=line.lineno, column=col)
            vals[index[c]] = v
    return tuple(vals)


def format_row(isa: ISA, row: tuple | list) -> str:
    """Disassemble one IR row tuple to canonical text."""
    spec = isa.by_opcode[row[0]]
    index = isa._col_index
    parts = []
    for operand in spec.operands:
        tok = operand.kind.format(tuple(row[index[c]] for c in operand.columns))
        if tok is None:
            continue
        parts.append(f"{operand.keyword}={tok}" if operand.keyword else tok)
    return spec.mnemonic + (" " + ", ".join(parts) if parts else "")


def make_formatter(isa: ISA) -> Callable[[tuple], str]:
    """A faster :func:`format_row` with per-opcode pre-bound column indices (for bulk output)."""
    index = isa._col_index
    plans = {}
    for spec in isa.instrs:
        plans[spec.opcode] = (spec.mnemonic, [(o.kind.format, [index[c] for c in o.columns],
                                               f"{o.keyword}=" if o.keyword else "") for o in spec.operands])

    def fmt(row):
        mnem, plan = plans[row[0]]
        parts = []
        for f, cols, key in plan:
            tok = f(tuple(row[c] for c in cols))
            if tok is not None:
                parts.append(key + tok)
        return mnem + " " + ", ".join(parts) if parts else mnem

    return fmt
