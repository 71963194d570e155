"""The ISA table model: one record per instruction, everything else derived from it.

An :class:`ISA` holds :class:`InstrSpec` records (mnemonic, opcode, :class:`Format`, operand
syntax, category, semantics hook).  From them it derives the single-word and bulk (numpy)
encoder/decoder, the operand parsers/printers used by :mod:`nnisa.core.asm`, an overlap check and
a Markdown reference table.

Decoded instructions are rows of a numpy structured array whose columns are the ISA's IR
columns (``ISA.columns``); a column an instruction does not use is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .bitfields import Field, Format
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
    semantics
        Optional hook used by simulators (any callable the target defines).
    """

    mnemonic: str
    opcode: int
    format: Format
    operands: tuple[Operand, ...] = ()
    category: str = ""
    doc: str = ""
    semantics: Callable[..., Any] | None = dc_field(default=None, compare=False)

    @property
    def syntax(self) -> str:
        ops = []
        for o in self.operands:
            ops.append(f"[{o.label}]" if o.optional else o.label)
        return self.mnemonic + (" " + ", ".join(ops) if ops else "")


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
        uint8 matrix) to a structured array of IR rows."""
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
