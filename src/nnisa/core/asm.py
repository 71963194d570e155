"""Generic text assembler / disassembler driven by an :class:`~nnisa.core.isa.ISA` table.

The engine knows lines, comments (``#`` and ``;``), labels (``name:``), directives (``.name
args``) and instructions (``mnemonic op, op, ...``).  Operands are parsed by the
:class:`~nnisa.core.operands.OperandKind` of each :class:`~nnisa.core.isa.Operand`.  Targets
supply directive handlers and decide what to do with each parsed row.
"""

from __future__ import annotations

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


def parse_operands(isa: ISA, spec: InstrSpec, tokens: list[tuple[int, str]], line: Line,
                   file: str | None = None) -> tuple:
    """Bind operand tokens to IR columns and check them against the field ranges."""
    ops = spec.operands
    required = sum(1 for o in ops if not o.optional)
    if not required <= len(tokens) <= len(ops):
        want = str(required) if required == len(ops) else f"{required}-{len(ops)}"
        raise AsmError(f"{spec.mnemonic} takes {want} operand(s), got {len(tokens)} (syntax: {spec.syntax})",
                       file=file, line=line.lineno, column=line.col)
    vals = [0] * len(isa.columns)
    index = isa._col_index
    vals[0] = spec.opcode
    fields = {f.name: f for f in spec.format.fields}
    for i, operand in enumerate(ops):
        if i < len(tokens):
            col, tok = tokens[i]
            try:
                values = operand.kind.parse(tok)
            except OperandError as exc:
                raise AsmError(f"{spec.mnemonic} operand {i + 1} ({operand.label}): {exc}",
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
        parts.append(tok)
    return spec.mnemonic + (" " + ", ".join(parts) if parts else "")


def make_formatter(isa: ISA) -> Callable[[tuple], str]:
    """A faster :func:`format_row` with per-opcode pre-bound column indices (for bulk output)."""
    index = isa._col_index
    plans = {}
    for spec in isa.instrs:
        plans[spec.opcode] = (spec.mnemonic, [(o.kind.format, [index[c] for c in o.columns]) for o in spec.operands])

    def fmt(row):
        mnem, plan = plans[row[0]]
        parts = []
        for f, cols in plan:
            tok = f(tuple(row[c] for c in cols))
            if tok is not None:
                parts.append(tok)
        return mnem + " " + ", ".join(parts) if parts else mnem

    return fmt
