"""The one text assembler / disassembler, driven by an :class:`~nnisa.core.isa.ISA` table.

The engine knows lines, comments (``#`` and ``;``), labels (``name:``), directives (``.name
args``) and instructions (``mnemonic op, op, ...``).  Operands are parsed and printed by the
:class:`~nnisa.core.operands.OperandKind` of each :class:`~nnisa.core.isa.Operand` of the table.

Every target's assembler is an :class:`Assembler` (the driver: lines, labels, aliases, the
directive registry, table-driven instructions, the bulk range check of fast paths) with its
directives registered in a :class:`Directives` table; a target overrides only what its text has
beyond the table (Tensil's DataMove arrows, PIMSAB's predication suffixes, ...).  Every error is
one :class:`~nnisa.core.errors.AsmError` line with file:line:column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator

import numpy as np

from .errors import AsmError
from .isa import ISA, InstrSpec
from .operands import OperandError, parse_int


@dataclass(slots=True)
class Line:
    """One meaningful source line after comment stripping."""

    lineno: int
    col: int  # 1-based column of the first token
    label: str | None
    head: str  # mnemonic or directive (with its dot)
    tail: str  # operand text
    tail_col: int  # 1-based column where ``tail`` starts
    label_col: int = 0  # 1-based column of the label (0: no label)


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
        body = strip_comment(raw) if ("#" in raw or ";" in raw) else raw
        stripped = body.lstrip()
        if not stripped:
            continue
        col = len(body) - len(stripped) + 1
        parts = stripped.split(None, 1)
        head = parts[0]
        label, label_col = None, 0
        if head[-1] == ":" and head[0] != ".":
            label, label_col = head[:-1], col
            if len(parts) == 1:
                yield Line(lineno, col, label, "", "", col + len(head), label_col)
                continue
            rest = stripped[len(head):]
            stripped = rest.lstrip()
            col += len(head) + len(rest) - len(stripped)
            head = stripped.split(None, 1)[0]
        yield Line(lineno, col, label, head, stripped[len(head):], col + len(head), label_col)


def lookup(isa: ISA, line: Line, file: str | None = None) -> InstrSpec:
    """The instruction a line's mnemonic names (its spelling, any case)."""
    specs = isa.by_spelling.get(line.head.lower()) or isa.by_spelling.get(line.head)
    if not specs:
        raise AsmError(f"unknown instruction {line.head!r}", file=file, line=line.lineno, column=line.col)
    return specs[0]


def parse_instruction(isa: ISA, line: Line, file: str | None = None) -> tuple:
    """Parse an instruction line into an IR row tuple (column order of ``isa``).

    When several instructions share the spelling (their operands tell them apart, e.g. Tensil's
    DataMove kinds), the first whose operands parse is taken; else the first one's error."""
    lookup(isa, line, file)
    tokens = split_operands(line.tail, line.tail_col)
    specs = isa.by_spelling.get(line.head.lower()) or isa.by_spelling[line.head]
    first = None
    for spec in specs:
        try:
            return parse_operands(isa, spec, tokens, line, file)
        except AsmError as exc:
            first = first or exc
    raise first


_KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)\s*=(.*)", re.S)


def _split_keywords(spec: InstrSpec, tokens: list[tuple[int, str]], line: Line,
                    file: str | None) -> tuple[list[tuple[int, str]], dict[str, tuple[int, str]]]:
    """Separate ``key=value`` tokens (for specs with keyword operands) from positional ones."""
    keys = {o.keyword for o in spec.operands if o.keyword}
    if not keys:
        return tokens, {}
    positional: list[tuple[int, str]] = []
    named: dict[str, tuple[int, str]] = {}
    n_pos = sum(1 for o in spec.operands if not o.keyword)
    for col, tok in tokens:
        m = _KEYWORD.fullmatch(tok)
        # a positional operand may contain '=' (Tensil's ``O = Max(I, R1)``): a token is an
        # option when its key is one, or when no more positional operands are expected
        if m is None or (m.group(1).lower() not in keys and not named and len(positional) < n_pos):
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
                msg = (isa.range_message(spec, f, v)
                       or f"{spec.mnemonic} {c}={v} out of range {lo}..{hi} ({f.width}-bit field)")
                raise AsmError(msg, file=file, line=line.lineno, column=col)
            vals[index[c]] = v
    return tuple(vals)


def format_row(isa: ISA, row: tuple | list) -> str:
    """Disassemble one IR row tuple to canonical text.

    An operand whose kind prints ``None`` is omitted, and so are trailing optional positional
    operands at their default (the assembler fills them back in)."""
    return make_formatter(isa)(tuple(row))


def _plan(isa: ISA, spec: InstrSpec) -> tuple:
    index = isa._col_index
    ops = []
    for o in spec.operands:
        default = o.kind.default() if o.optional and not o.keyword else None
        ops.append((o.kind.format, [index[c] for c in o.columns], f"{o.keyword}=" if o.keyword else "", default,
                    o.kind.explicit))
    return spec.text, ops


def make_formatter(isa: ISA) -> Callable[[tuple], str]:
    """A fast :func:`format_row` with per-opcode pre-bound column indices (for bulk output)."""
    cache = getattr(isa, "_formatter", None)
    if cache is not None:
        return cache
    plans = {spec.opcode: _plan(isa, spec) for spec in isa.instrs}

    def fmt(row):
        mnem, plan = plans[row[0]]
        parts = []
        keys = []
        omitted = []  # positional operands the kind omits: written out if a later one is printed
        trim = 0  # trailing positional operands at their default (the assembler fills them in)
        for f, cols, key, default, explicit in plan:
            vals = tuple(row[c] for c in cols)
            tok = f(vals)
            if tok is None:
                if not key:
                    omitted.append((explicit, vals))
                continue
            if key:
                keys.append(key + tok)
                continue
            if omitted:
                parts += [e(v) for e, v in omitted]
                omitted.clear()
                trim = 0
            parts.append(tok)
            trim = trim + 1 if default is not None and vals == default else 0
        if trim:
            del parts[len(parts) - trim:]
        parts += keys
        return mnem + " " + ", ".join(parts) if parts else mnem

    isa._formatter = fmt
    return fmt


# --------------------------------------------------------------------------- the driver
@dataclass(frozen=True)
class Directive:
    """One registered directive of an assembly dialect.

    ``handler(assembler, line)`` (block directives: ``handler(assembler, line, body)`` with the
    body's lines up to ``block_end``, or ``body=None`` when the end is missing: the handler checks
    its arguments, then the assembler reports the missing end); ``args`` and ``doc`` document
    it; ``before_code`` refuses it after the first instruction."""

    name: str
    handler: Callable[..., Any]
    args: str = ""
    doc: str = ""
    before_code: bool = False
    block_end: str | None = None


class Directives:
    """The directive registry of one assembly dialect (name → :class:`Directive`).

    >>> DIRECTIVES = Directives("PIM")
    >>> @DIRECTIVES.register(".mode", "32|64", "instruction word size", before_code=True)
    ... def _mode(asm, line): ...
    """

    def __init__(self, dialect: str, *parents: "Directives") -> None:
        self.dialect = dialect
        self._table: dict[str, Directive] = {}
        for p in parents:
            self._table.update(p._table)

    def register(self, name: str, args: str = "", doc: str = "", *, before_code: bool = False,
                 block_end: str | None = None) -> Callable:
        """Decorator registering ``handler`` for the directive ``name`` (with its dot)."""
        def deco(handler):
            self._table[name.lower()] = Directive(name.lower(), handler, args, doc, before_code, block_end)
            return handler
        return deco

    def get(self, name: str) -> Directive | None:
        return self._table.get(name.lower())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._table)

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._table

    def markdown(self) -> str:
        """The directives as a Markdown table (for the docs)."""
        lines = ["| directive | arguments | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{d.name}` | {d.args or '–'} | {d.doc} |" for d in self._table.values()]
        return "\n".join(lines) + "\n"


class Assembler:
    """The text assembler of every target: lines → labels, directives, instructions → rows.

    A dialect subclasses it and sets :attr:`directives` (its :class:`Directives` registry),
    :attr:`aliases` (other spellings of an instruction, with fixed leading operands) and
    :attr:`labels`; it overrides :meth:`instruction` or :meth:`finish` only for what its text
    has beyond the ISA table.  :meth:`assemble` runs it; every error is one
    :class:`AsmError` line with file:line:column.

    Rows are tuples in the ISA's column order (:attr:`rows`, their line numbers in
    :attr:`linenos`).  A fast path may append rows without range checks and call
    :meth:`check_bulk` at the end, which re-parses the first bad line through the table for its
    exact error.
    """

    #: the dialect's directives (a subclass sets its own registry)
    directives: ClassVar[Directives] = Directives("assembly")
    #: spelling → (mnemonic, fixed leading operand tokens)
    aliases: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {}
    #: whether ``name:`` labels are allowed; else the refusal message
    labels: ClassVar[bool | str] = "labels are not used in this assembly"

    def __init__(self, isa: ISA | None = None, *, file: str | None = None) -> None:
        self.isa = isa
        self.file = file
        self.text = ""
        self.rows: list[tuple] = []
        self.linenos: list[int] = []
        self.label_lines: dict[str, int] = {}

    # ---------------------------------------------------------------- driver
    def assemble(self, text: str) -> Any:
        """Assemble ``text``: every line, then :meth:`finish`."""
        self.text = text
        self.feed(self.source(text))
        return self.finish()

    #: optional fast path of a dialect: ``fast_line(head, tail, lineno) -> bool`` assembles an
    #: instruction line in its canonical form without building a :class:`Line` (True: done;
    #: False: the line goes the normal way, which is the authority for errors)
    fast_line: Callable[[str, str, int], bool] | None = None

    def source(self, text: str) -> Iterable[Line]:
        """The lines to assemble (a dialect may pre-process them); instruction lines its
        :attr:`fast_line` takes never become :class:`Line` objects."""
        fast = self.fast_line
        if fast is None:
            return iter_lines(text)
        return self._fast_source(text, fast)

    @staticmethod
    def _fast_source(text: str, fast: Callable[[str, str, int], bool]) -> Iterator[Line]:
        for lineno, raw in enumerate(text.splitlines(), start=1):
            body = strip_comment(raw) if ("#" in raw or ";" in raw) else raw
            parts = body.split(None, 1)
            if not parts:
                continue
            head = parts[0]
            if head[0] != "." and head[-1] != ":" and fast(head, parts[1] if len(parts) > 1 else "", lineno):
                continue
            for line in iter_lines(body):
                line.lineno = lineno
                yield line

    def feed(self, lines: Iterable[Line]) -> None:
        """Assemble lines (block directives feed their expanded bodies back through here)."""
        it = iter(lines)
        instruction, directive = self.instruction, self.directive
        for line in it:
            if line.label is not None:
                self.label(line)
                if not line.head:
                    continue
            if line.head[0] == ".":
                directive(line, it)
            else:
                instruction(line)

    def label(self, line: Line) -> None:
        col = line.label_col or line.col
        if self.labels is not True:
            raise self.error(self.labels, line, col)
        name = line.label
        if not name or not (name[0].isalpha() or name[0] == "_") or \
                not name.replace("_", "a").replace(".", "a").isalnum():
            raise self.error(f"bad label {name!r}", line, col)
        if name in self.label_lines:
            raise self.error(f"duplicate label {name!r} (first defined on line {self.label_lines[name]})", line, col)
        self.label_lines[name] = line.lineno

    def directive(self, line: Line, rest: Iterator[Line] | None = None) -> None:
        """Run a registered directive (a block directive takes its body from ``rest``)."""
        d = self.directives.get(line.head)
        if d is None:
            known = " ".join(self.directives.names)
            raise self.error(f"unknown directive {line.head!r} (directives: {known or 'none'})", line)
        if d.before_code and self.started:
            raise self.error(f"{d.name} must come before the first instruction", line)
        if d.block_end is None:
            d.handler(self, line)
            return
        body, depth = [], 1
        for inner in rest if rest is not None else ():
            h = inner.head.lower()
            depth += (h == d.name) - (h == d.block_end)
            if depth == 0:
                break
            body.append(inner)
        if depth:  # the handler checks its own arguments first (body None), then this error
            d.handler(self, line, None)
            raise self.error(f"{d.name} without {d.block_end}", line)
        d.handler(self, line, body)

    @property
    def started(self) -> bool:
        """Whether an instruction has been assembled."""
        return bool(self.rows)

    def instruction(self, line: Line) -> None:
        """Parse an instruction through the table and :meth:`emit` its row."""
        self.emit(self.parse(line), line)

    def parse(self, line: Line, tokens: list[tuple[int, str]] | None = None) -> tuple:
        """The IR row of an instruction line (aliases resolved; ``tokens`` default to the
        comma-separated operands)."""
        if tokens is None:
            tokens = self.tokens(line)
        alias = self.aliases.get(line.head.lower())
        if alias is not None:
            mnem, fixed = alias
            tokens = [(line.col, t) for t in fixed] + tokens
            line = Line(line.lineno, line.col, line.label, mnem, line.tail, line.tail_col)
        return parse_operands(self.isa, self.lookup(line), tokens, line, self.file)

    def lookup(self, line: Line) -> InstrSpec:
        """The table row a line names (a dialect may choose among rows sharing a spelling)."""
        return lookup(self.isa, line, self.file)

    def tokens(self, line: Line) -> list[tuple[int, str]]:
        """The operand tokens of a line: ``(column, text)`` split at top-level commas."""
        return split_operands(line.tail, line.tail_col)

    def emit(self, row: tuple, line: Line | int) -> None:
        self.rows.append(row)
        self.linenos.append(line if isinstance(line, int) else line.lineno)

    def finish(self) -> Any:
        """The assembled program (default: the rows as the ISA's structured array)."""
        return self.isa.rows(self.rows)

    # ---------------------------------------------------------------- checks and errors
    def error(self, msg: str, line: Line | int | None = None, col: int | None = None) -> AsmError:
        """One-line :class:`AsmError` at ``line`` (a :class:`Line` or a line number)."""
        if isinstance(line, Line):
            return AsmError(msg, file=self.file, line=line.lineno, column=line.col if col is None else col)
        return AsmError(msg, file=self.file, line=line, column=col)

    def check_bulk(self, rows: np.ndarray, linenos: Iterable[int]) -> None:
        """Range-check rows appended without checks: the first bad one is re-parsed from its
        source line through the table, which raises its exact error."""
        bad = self.isa.bad_rows(rows)
        if not bad.any():
            return
        lineno = list(linenos)[int(np.argmax(bad))]
        line = self.line_at(lineno)
        row = self.parse(line)  # raises the table's error for the offending operand
        raise self.bulk_error(row, line)

    def bulk_error(self, row: tuple, line: Line) -> AsmError:
        """The error of a row the bulk check refused but the table's parser accepts."""
        return self.error("; ".join(f"{c}={v}" for _, c, v in self.isa.check_row(row)) or "bad instruction", line)

    def line_at(self, lineno: int) -> Line:
        """The parsed source line ``lineno`` (for messages)."""
        raw = self.text.splitlines()[lineno - 1]
        line = next(iter_lines(raw))
        line.lineno = lineno
        return line

    # ---------------------------------------------------------------- directive arguments
    def ints(self, line: Line, n: int, what: str | None = None) -> list[int]:
        """``n`` comma-separated integer arguments of a directive."""
        what = what or line.head
        args = line.tail
        toks = [t.strip() for t in args.split(",")] if args.strip() else []
        if len(toks) != n:
            raise self.error(f"{what} takes {n} integer argument(s), got {len(toks)}", line)
        try:
            return [parse_int(t) for t in toks]
        except OperandError as exc:
            raise self.error(f"{what}: {exc}", line) from None

    def choice(self, line: Line, choices: Iterable[str], what: str | None = None) -> str:
        """A directive argument that must be one of ``choices`` (case-insensitive)."""
        what = what or line.head
        a = line.tail.strip().lower()
        choices = tuple(choices)
        if a not in choices:
            raise self.error(f"{what} must be {' or '.join(choices)}, got {line.tail.strip()!r}", line)
        return a
