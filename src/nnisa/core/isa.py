"""The ISA table model: one record per instruction, everything else derived from it.

Every target writes its instruction set the same way (the house idiom, :func:`table_isa`):

* a **field table** per instruction format: name → :class:`Field` (or a group of fields, or
  ``None`` when the field is absent in this configuration), built by a function of the
  architecture configuration when the layout depends on it;
* an **operand table**: name → ``(operand kind, IR columns...)``;
* **one** :class:`Instr` **row per instruction**: mnemonic, opcode, fields, assembly syntax,
  category, one-line doc, and the per-opcode *facts* the simulators and cost models read.

:func:`table_isa` turns the rows into :class:`InstrSpec` records and an :class:`ISA`, which
derives the single-word and bulk (numpy) encoder/decoder, the operand parsers/printers used by
the one assembler of :mod:`nnisa.core.asm`, an overlap check, the Markdown reference table and
per-opcode fact arrays (:meth:`ISA.fact_array`).

Decoded instructions are rows of a numpy structured array whose columns are the ISA's IR
columns (``ISA.columns``); a column an instruction does not use is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .bitfields import Field, Format
from .bulk_decode import decode_words
from .errors import DecodeError, EncodeError, format_offenders
from .operands import OperandKind


@dataclass(frozen=True)
class Operand:
    """One assembly operand: a syntax kind bound to one or more IR columns.

    A ``keyword`` operand is written ``keyword=value`` after the positional operands, in any
    order; when absent it takes the kind's default, and the disassembler omits it when the kind
    formats its value as ``None`` (the default).
    """

    kind: OperandKind
    columns: tuple[str, ...]
    optional: bool = False
    keyword: str | None = None

    @property
    def label(self) -> str:
        text = self.kind.label(self.columns)
        return f"{self.keyword}={text}" if self.keyword else text


@dataclass(frozen=True)
class InstrSpec:
    """One instruction of an ISA.

    Parameters
    ----------
    mnemonic
        Lower-case assembly name.
    opcode
        Value of the ISA's opcode field.
    format
        Bit layout (must contain the opcode as a constant field).
    operands
        Assembly operand syntax in order.
    category
        A grouping used in docs and statistics (``"scalar"``, ``"vector"``, ...).
    doc
        One-line meaning for the reference table.
    facts
        The per-opcode facts simulators and cost models read (see :class:`Instr`).
    spelling
        The mnemonic as written in assembly when several instructions share it (Tensil's
        DataMove kinds: the operands select the instruction); default: ``mnemonic``.
    """

    mnemonic: str
    opcode: int
    format: Format
    operands: tuple[Operand, ...] = ()
    category: str = ""
    doc: str = ""
    facts: Any = dc_field(default=None, compare=False)
    spelling: str = ""

    @property
    def text(self) -> str:
        """The mnemonic as written in assembly."""
        return self.spelling or self.mnemonic

    @property
    def syntax(self) -> str:
        ops = []
        for o in self.operands:
            ops.append(f"[{o.label}]" if o.optional else o.label)
        return self.text + (" " + ", ".join(ops) if ops else "")


@dataclass(frozen=True)
class Instr:
    """One row of an instruction table: everything about one instruction, on one line.

    Parameters
    ----------
    mnemonic, opcode
        Unique name and the value of the ISA's opcode field (the decoder's dispatch key).
    fields
        Space-separated names in the field table of the row's format (``"rd rs1 ofs"``); a name
        stands for one :class:`Field`, a group of fields or nothing (absent in this
        configuration, e.g. the offsets of 32-bit PIM words).
    syntax
        Comma-separated names in the operand table: ``name`` (required), ``[name]`` (optional,
        takes the kind's default), ``key=name`` / ``[key=name]`` (keyword operands written
        ``key=value`` after the positional ones; ``key=`` alone means ``key=key``).
    category, doc
        Grouping used in docs and statistics; one-line meaning.
    facts
        The per-opcode facts the simulators and cost models read (register-file reads,
        execution unit, event kind, ...), any object with attributes or a mapping: read them
        with :meth:`ISA.fact` and :meth:`ISA.fact_array`, never from a side table.
    format
        Name of the field table (format) the fields come from, for ISAs with several formats.
    spelling
        Assembly spelling of the mnemonic when several rows share it (see :class:`InstrSpec`).
    """

    mnemonic: str
    opcode: int
    fields: str = ""
    syntax: str = ""
    category: str = ""
    doc: str = ""
    facts: Any = None
    format: str = ""
    spelling: str = ""


#: a field table: name → field, group of fields, or None (absent in this configuration)
FieldTable = Mapping[str, "Field | tuple[Field, ...] | None"]


def parse_syntax(syntax: str, operands: Mapping[str, Any], where: str = "") -> tuple[Operand, ...]:
    """The :class:`Operand` records of a row's ``syntax`` string (see :class:`Instr`).

    ``operands`` maps a name to ``(kind, column, ...)`` (or to an :class:`Operand`)."""
    out = []
    for item in (t.strip() for t in syntax.split(",")) if syntax.strip() else ():
        optional = item.startswith("[") and item.endswith("]")
        if optional:
            item = item[1:-1].strip()
        key, eq, name = item.partition("=")
        keyword = key.strip() if eq else None
        name = (name.strip() or key.strip()) if eq else key.strip()
        if name not in operands:
            raise ValueError(f"{where}: operand {name!r} is not in the operand table")
        base = operands[name]
        kind, cols = (base.kind, base.columns) if isinstance(base, Operand) else (base[0], tuple(base[1:]))
        out.append(Operand(kind, tuple(cols), optional, keyword))
    return tuple(out)


def _resolve_fields(row: Instr, table: FieldTable) -> tuple[Field, ...]:
    out: list[Field] = []
    for name in row.fields.split():
        if name not in table:
            raise ValueError(f"{row.mnemonic}: field {name!r} is not in the field table")
        f = table[name]
        if f is None:
            continue
        out.extend(f if isinstance(f, tuple) else (f,))
    return tuple(out)


def instr_specs(rows: Iterable[Instr], word_bits: int, opcode_field: Field, fields: Mapping[str, Any],
                operands: Mapping[str, Any] | None = None) -> list[InstrSpec]:
    """The :class:`InstrSpec` records of table rows.

    ``fields`` is the field table, or for rows naming a ``format`` a mapping format name → field
    table; ``operands`` the operand table (see :func:`parse_syntax`)."""
    out = []
    for r in rows:
        table = fields[r.format] if r.format else fields
        fmt = Format(word_bits, ((opcode_field, r.opcode),), _resolve_fields(r, table))
        ops = parse_syntax(r.syntax, operands or {}, r.mnemonic)
        out.append(InstrSpec(r.mnemonic, r.opcode, fmt, ops, r.category, r.doc, r.facts, r.spelling))
    return out


def table_isa(name: str, word_bits: int, opcode_field: Field, columns: Sequence[tuple[str, str]],
              rows: Iterable[Instr], fields: Mapping[str, Any], operands: Mapping[str, Any] | None = None,
              isa_class: "type[ISA] | None" = None, **extra: Any) -> "ISA":
    """Build an :class:`ISA` from its table (the house idiom; see the module docstring).

    Parameters
    ----------
    name, word_bits, opcode_field, columns
        As for :class:`ISA`.
    rows
        One :class:`Instr` per instruction.
    fields
        The field table (name → field, group or None), or format name → field table.
    operands
        The operand table: name → ``(kind, column, ...)``.
    isa_class, extra
        An :class:`ISA` subclass and its extra constructor arguments (e.g. Tensil's layout).
    """
    specs = instr_specs(rows, word_bits, opcode_field, fields, operands)
    return (isa_class or ISA)(name, word_bits, opcode_field, columns, specs, **extra)


def fact_of(facts: Any, name: str, default: Any = None) -> Any:
    """One fact of a row's ``facts`` (attribute or key), ``default`` when absent."""
    if facts is None:
        return default
    if isinstance(facts, Mapping):
        return facts.get(name, default)
    return getattr(facts, name, default)


class ISA:
    """A complete instruction set built from :class:`InstrSpec` records.

    Parameters
    ----------
    name
        Display name.
    word_bits
        Instruction width.
    opcode_field
        Where the opcode lives (used to dispatch decoding).
    columns
        IR column names and numpy dtypes, e.g. ``[("op", "i2"), ("rd", "i4"), ...]``; the first
        column must be the opcode column.
    instrs
        The instruction records.
    """

    def __init__(
        self,
        name: str,
        word_bits: int,
        opcode_field: Field,
        columns: Sequence[tuple[str, str]],
        instrs: Iterable[InstrSpec],
    ) -> None:
        self.name = name
        self.word_bits = word_bits
        self.opcode_field = opcode_field
        self.dtype = np.dtype(list(columns))
        self.columns = tuple(self.dtype.names)
        self.op_column = self.columns[0]
        self.instrs = tuple(instrs)
        self.by_mnemonic = {s.mnemonic: s for s in self.instrs}
        self.by_spelling: dict[str, list[InstrSpec]] = {}
        for s in self.instrs:
            self.by_spelling.setdefault(s.text, []).append(s)
        self.by_opcode = {s.opcode: s for s in self.instrs}
        if len(self.by_mnemonic) != len(self.instrs) or len(self.by_opcode) != len(self.instrs):
            raise ValueError(f"{name}: duplicate mnemonic or opcode")
        self.word_dtype = np.dtype(f"<u{(word_bits + 7) // 8}") if word_bits in (8, 16, 32, 64) else np.dtype("<u8")
        for s in self.instrs:
            if s.format.width != word_bits:
                raise ValueError(f"{s.mnemonic}: format width {s.format.width} != {word_bits}")
            for f in s.format.fields:
                if f.name not in self.columns:
                    raise ValueError(f"{s.mnemonic}: field {f.name} is not an IR column")
            for o in s.operands:
                for c in o.columns:
                    if c not in self.columns:
                        raise ValueError(f"{s.mnemonic}: operand column {c} unknown")
        clash = self.overlaps()
        if clash:
            raise ValueError(f"{name}: encodings overlap: {clash}")
        # Which IR columns each instruction uses; the others must be 0.
        self._used = {s.opcode: {f.name for f in s.format.fields} for s in self.instrs}
        self._col_index = {c: i for i, c in enumerate(self.columns)}

    # ------------------------------------------------------------------ checks
    def overlaps(self) -> list[tuple[str, str]]:
        """Pairs of instructions some word would decode as both (should be empty)."""
        out = []
        specs = self.instrs
        for i, a in enumerate(specs):
            for b in specs[i + 1:]:
                common = a.format.const_mask & b.format.const_mask
                if (a.format.const_value ^ b.format.const_value) & common == 0:
                    out.append((a.mnemonic, b.mnemonic))
        return out

    def spec(self, key: str | int) -> InstrSpec:
        """Look up an instruction by mnemonic or opcode."""
        s = self.by_mnemonic.get(key) if isinstance(key, str) else self.by_opcode.get(int(key))
        if s is None:
            raise KeyError(key)
        return s

    def range_message(self, spec: InstrSpec, field: Field, value: int) -> str | None:
        """A target's own wording of "``value`` does not fit ``field``" (None: the generic one)."""
        return None

    # ------------------------------------------------------------------ facts
    def fact(self, key: str | int, name: str, default: Any = None) -> Any:
        """One per-opcode fact of an instruction (mnemonic or opcode)."""
        return fact_of(self.spec(key).facts, name, default)

    def fact_array(self, name: str, default: Any = 0, dtype: Any = np.int64, size: int | None = None,
                   code: Callable[[Any], Any] | None = None) -> np.ndarray:
        """One fact of every instruction as an array indexed by opcode (vectorised cost models).

        ``code`` maps a fact value to the array's value (e.g. a unit name to its index);
        opcodes without an instruction hold ``default``."""
        n = size if size is not None else max(s.opcode for s in self.instrs) + 1
        out = np.full(n, default if code is None else code(default), dtype=dtype)
        for s in self.instrs:
            v = fact_of(s.facts, name, default)
            out[s.opcode] = v if code is None else code(v)
        return out

    def opcodes_where(self, name: str, value: Any = True) -> tuple[int, ...]:
        """Opcodes whose fact ``name`` equals ``value``, in opcode order."""
        return tuple(sorted(s.opcode for s in self.instrs if fact_of(s.facts, name) == value))

    # ------------------------------------------------------------------ rows
    def empty(self, n: int = 0) -> np.ndarray:
        return np.zeros(n, dtype=self.dtype)

    def row(self, mnemonic: str, **values: int) -> tuple:
        """Build one IR row (a tuple in column order) from keyword values."""
        s = self.spec(mnemonic)
        vals = [0] * len(self.columns)
        vals[0] = s.opcode
        for k, v in values.items():
            if k not in self._col_index:
                raise KeyError(f"{mnemonic}: unknown column {k}")
            vals[self._col_index[k]] = int(v)
        return tuple(vals)

    def rows(self, items: Sequence[tuple]) -> np.ndarray:
        return np.array(list(items), dtype=self.dtype) if len(items) else self.empty()

    # ------------------------------------------------------------------ single words
    def check_row(self, row: dict[str, int] | np.void | tuple, index: Any = None) -> list[tuple]:
        """Return offenders ``(where, field, value)`` for one row (empty when encodable)."""
        r = self._as_dict(row)
        op = int(r[self.op_column])
        where = "instruction" if index is None else f"instruction {index}"
        if op not in self.by_opcode:
            return [(where, self.op_column, op)]
        s = self.by_opcode[op]
        where = f"{where} ({s.mnemonic})"
        bad = []
        for f in s.format.fields:
            v = int(r[f.name])
            if not f.fits(v):
                bad.append((where, f.name, v))
        for c in self.columns[1:]:
            if c not in self._used[op] and int(r[c]) != 0:
                bad.append((where, c, int(r[c])))
        return bad

    def encode_one(self, row: dict[str, int] | np.void | tuple) -> int:
        """Reference encoder: one IR row to an integer word."""
        bad = self.check_row(row)
        if bad:
            raise EncodeError(self._offender_message(bad), offenders=bad)
        r = self._as_dict(row)
        return self.by_opcode[int(r[self.op_column])].format.encode(r)

    def decode_one(self, word: int, *, lenient: bool = False) -> tuple:
        """Reference decoder: one integer word to an IR row tuple."""
        op = self.opcode_field.unpack(word)
        s = self.by_opcode.get(op)
        if s is None:
            raise DecodeError(f"unknown opcode {op} in word 0x{word:0{self.word_bits // 4}x}")
        if not lenient and word & s.format.reserved_mask:
            raise DecodeError(
                f"{s.mnemonic}: reserved bits set in word 0x{word:0{self.word_bits // 4}x} "
                f"(mask 0x{word & s.format.reserved_mask:x})"
            )
        vals = s.format.decode(word)
        vals[self.op_column] = op
        return tuple(vals.get(c, 0) for c in self.columns)

    # ------------------------------------------------------------------ bulk
    @property
    def wide(self) -> bool:
        """Words wider than 64 bits: the bulk codec uses ``(n, nbytes)`` little-endian uint8 matrices."""
        return self.word_bits > 64

    def bad_rows(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask of the rows that cannot be encoded (unknown opcode, a field out of range,
        a column the instruction does not use not 0): the bulk check of the assemblers' fast
        paths, which then re-parse the first bad line for its exact error."""
        lo, hi, mult, known = self._bounds()
        ops = rows[self.op_column].astype(np.int64)
        inside = (ops >= 0) & (ops < len(known))
        op = np.where(inside, ops, 0)
        bad = ~inside | ~known[op]
        for j, c in enumerate(self.columns[1:]):
            v = rows[c].astype(np.int64)
            bad |= (v < lo[op, j]) | (v > hi[op, j])
            if (mult[:, j] != 1).any():
                bad |= v % mult[op, j] != 0
        return bad

    def _bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per (opcode, column): the value range (0..0 for a column the instruction does not use)
        and the required multiple; and which opcodes exist (cached)."""
        cached = getattr(self, "_bounds_cache", None)
        if cached is not None:
            return cached
        n, m = max(s.opcode for s in self.instrs) + 1, len(self.columns) - 1
        lo, hi = np.zeros((n, m), np.int64), np.zeros((n, m), np.int64)
        mult, known = np.ones((n, m), np.int64), np.zeros(n, bool)
        col = {c: j for j, c in enumerate(self.columns[1:])}
        big = np.iinfo(np.int64)
        for s in self.instrs:
            if s.opcode < 0:
                continue
            known[s.opcode] = True
            for f in s.format.fields:
                a, b = f.value_range
                j = col[f.name]
                lo[s.opcode, j], hi[s.opcode, j] = max(a, big.min), min(b, big.max)
                mult[s.opcode, j] = f.multiple_of
        self._bounds_cache = (lo, hi, mult, known)
        return self._bounds_cache

    def _const_words(self, s: InstrSpec, n: int) -> np.ndarray:
        if not self.wide:
            return np.full(n, s.format.const_value, dtype=np.uint64)
        nbytes = (self.word_bits + 7) // 8
        return np.tile(np.frombuffer(s.format.const_value.to_bytes(nbytes, "little"), np.uint8), (n, 1))

    def encode_array(self, rows: np.ndarray, *, where: Callable[[int], str] | None = None) -> np.ndarray:
        """Encode a structured array of IR rows to words; report every offending row.

        Words of up to 64 bits come back as a 1-D unsigned array; wider words (:attr:`wide`) as an
        ``(n, nbytes)`` little-endian uint8 matrix (bit 0 in byte 0).
        """
        n = len(rows)
        words = np.zeros((n, (self.word_bits + 7) // 8), np.uint8) if self.wide else np.zeros(n, dtype=np.uint64)
        ops = rows[self.op_column].astype(np.int64)
        offenders: list[tuple] = []
        label = where or (lambda i: f"instruction {i}")
        present = np.unique(ops)
        for op in present.tolist():
            s = self.by_opcode.get(op)
            idx = np.flatnonzero(ops == op)
            if s is None:
                offenders += [(label(i), self.op_column, op) for i in idx[:1000].tolist()]
                continue
            w = self._const_words(s, len(idx))
            for f in s.format.fields:
                v = rows[f.name][idx].astype(np.int64)
                lo, hi = f.value_range
                bad = (v < lo) | (v > hi)
                if f.multiple_of != 1:
                    bad |= (v % f.multiple_of) != 0
                if bad.any():
                    for i in idx[bad].tolist():
                        offenders.append((f"{label(i)} ({s.mnemonic})", f.name, int(rows[f.name][i])))
                if self.wide:
                    f.pack_bytes(v, w)
                else:
                    w |= f.pack_array(v)
            for c in self.columns[1:]:
                if c in self._used[op]:
                    continue
                col = rows[c][idx]
                nz = col != 0
                if nz.any():
                    for i in idx[nz].tolist():
                        offenders.append((f"{label(i)} ({s.mnemonic})", c, int(rows[c][i])))
            words[idx] = w
        if offenders:
            raise EncodeError(self._offender_message(offenders), offenders=offenders)
        return words if self.wide else words.astype(self.word_dtype)

    def decode_array(self, words: np.ndarray, *, lenient: bool = False,
                     where: Callable[[int], str] | None = None) -> np.ndarray:
        """Decode an array of words (or, for :attr:`wide` ISAs, an ``(n, nbytes)`` little-endian
        uint8 matrix) to a structured array of IR rows.

        Words of up to 64 bits take the table-driven fast path (:mod:`nnisa.core.bulk_decode`);
        a bad word (unknown opcode, reserved bits unless ``lenient``) re-runs the reference,
        :meth:`decode_array_reference`, for its exact error."""
        if not self.wide:
            rows = decode_words(self, words, lenient)
            if rows is not None:
                return rows
        return self.decode_array_reference(words, lenient=lenient, where=where)

    def decode_array_reference(self, words: np.ndarray, *, lenient: bool = False,
                               where: Callable[[int], str] | None = None) -> np.ndarray:
        """The readable bulk decoder: per opcode present, its fields scattered into the rows."""
        w = np.asarray(words).astype(np.uint8 if self.wide else np.uint64)
        unpack = (lambda f, x: f.unpack_bytes(x)) if self.wide else (lambda f, x: f.unpack_array(x))
        out = self.empty(len(w))
        ops = unpack(self.opcode_field, w)
        out[self.op_column] = ops
        label = where or (lambda i: f"word {i}")
        for op in np.unique(ops).tolist():
            idx = np.flatnonzero(ops == op)
            s = self.by_opcode.get(op)
            if s is None:
                i = int(idx[0])
                raise DecodeError(f"{label(i)}: unknown opcode {op} (word 0x{self._word_int(w[i]):0{self.word_bits // 4}x})"
                                  + (f", {len(idx) - 1} more words with this opcode" if len(idx) > 1 else ""))
            sub = w[idx]
            if self.wide:
                res = np.frombuffer(s.format.reserved_mask.to_bytes(w.shape[1], "little"), np.uint8)
                reserved = (sub & res).any(axis=1)
            else:
                reserved = sub & np.uint64(s.format.reserved_mask)
            if not lenient and reserved.any():
                j = int(np.flatnonzero(reserved)[0])
                i = int(idx[j])
                word = self._word_int(w[i])
                raise DecodeError(
                    f"{label(i)} ({s.mnemonic}): reserved bits set (word 0x{word:0{self.word_bits // 4}x}, "
                    f"mask 0x{word & s.format.reserved_mask:x})")
            for f in s.format.fields:
                out[f.name][idx] = unpack(f, sub)
        return out

    def _word_int(self, word: Any) -> int:
        """One word of a bulk array as a Python integer."""
        return int.from_bytes(np.asarray(word, np.uint8).tobytes(), "little") if self.wide else int(word)

    # ------------------------------------------------------------------ docs
    def markdown(self) -> str:
        """The reference table of the ISA as Markdown (generated from the records)."""
        lines = [f"# {self.name} instruction reference ({self.word_bits}-bit words)", "",
                 "| opcode | mnemonic | syntax | category | fields (bits) | meaning |",
                 "| ---: | --- | --- | --- | --- | --- |"]
        for s in sorted(self.instrs, key=lambda s: s.opcode):
            fields = ", ".join(f.describe() for f in sorted(s.format.fields, key=lambda f: f.lo)) or "–"
            lines.append(f"| {s.opcode} | `{s.mnemonic}` | `{s.syntax}` | {s.category} | {fields} | {s.doc} |")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ helpers
    def _as_dict(self, row: Any) -> dict[str, int]:
        if isinstance(row, dict):
            d = {c: 0 for c in self.columns}
            d.update({k: int(v) for k, v in row.items()})
            return d
        return {c: int(v) for c, v in zip(self.columns, tuple(row))}

    def _offender_message(self, offenders: list[tuple]) -> str:
        n = len(offenders)
        return f"{n} field value{'s' if n != 1 else ''} do not fit: {format_offenders(offenders)}"
