"""Declarative bit fields and instruction formats.

A :class:`Field` names an IR column and the bit range it occupies in an instruction word; a
:class:`Format` is the list of fields of one instruction plus its constant (opcode) bits.  Both
work on single Python integers (the readable reference path) and on numpy arrays (the bulk path
used for millions of words); tests check one against the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

import numpy as np


@dataclass(frozen=True)
class Field:
    """One field of an instruction word.

    Parameters
    ----------
    name
        The IR column the field encodes (``"rd"``, ``"imm"``, ...).
    hi, lo
        Inclusive bit range, bit 0 = least-significant bit.
    signed
        Two's-complement field; the decoder sign-extends.
    wrap_unsigned
        For signed fields: also accept the unsigned range ``[2**(w-1), 2**w)`` and store it
        modulo ``2**w`` (e.g. ``sldi $r0, 0xFFFFFFFF``); the decoder returns the signed value.
    minimum, maximum
        Optional narrower valid range than the bit width allows (checked by the encoder).
    multiple_of
        Values must be multiples of this (e.g. 2 for even register pairs).
    enum
        Optional ``(name, value)`` pairs for fields whose values have names.
    doc
        Short description used in generated reference tables.
    """

    name: str
    hi: int
    lo: int
    signed: bool = False
    wrap_unsigned: bool = False
    minimum: int | None = None
    maximum: int | None = None
    enum: tuple[tuple[str, int], ...] | None = None
    multiple_of: int = 1
    doc: str = ""

    def __post_init__(self) -> None:
        if not (0 <= self.lo <= self.hi):
            raise ValueError(f"field {self.name}: bad bit range [{self.hi}:{self.lo}]")

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    @property
    def mask(self) -> int:
        """Mask of the field's bits in place (already shifted)."""
        return ((1 << self.width) - 1) << self.lo

    @property
    def value_range(self) -> tuple[int, int]:
        """Inclusive range of values the encoder accepts."""
        w = self.width
        if self.signed:
            lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
            if self.wrap_unsigned:
                hi = (1 << w) - 1
        else:
            lo, hi = 0, (1 << w) - 1
        if self.minimum is not None:
            lo = max(lo, self.minimum)
        if self.maximum is not None:
            hi = min(hi, self.maximum)
        return lo, hi

    def fits(self, value: int) -> bool:
        lo, hi = self.value_range
        return lo <= value <= hi and value % self.multiple_of == 0

    def pack(self, value: int) -> int:
        """Place ``value`` (assumed to fit) into its bits."""
        return (value & ((1 << self.width) - 1)) << self.lo

    def unpack(self, word: int) -> int:
        raw = (word >> self.lo) & ((1 << self.width) - 1)
        if self.signed and raw >> (self.width - 1):
            raw -= 1 << self.width
        return raw

    def unpack_array(self, words: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`unpack` on an unsigned integer array; returns int64."""
        w = self.width
        raw = ((words >> np.uint64(self.lo)) & np.uint64((1 << w) - 1)).astype(np.int64)
        if self.signed:
            raw = np.where(raw >= (1 << (w - 1)), raw - (1 << w), raw)
        return raw

    def pack_array(self, values: np.ndarray) -> np.ndarray:
        v = values.astype(np.int64) & np.int64((1 << self.width) - 1)
        return v.astype(np.uint64) << np.uint64(self.lo)

    # Wide words (wider than 64 bits, e.g. Tensil's 72-bit instructions) are handled in bulk as
    # (n, nbytes) little-endian uint8 matrices; a field spans at most 8 bytes there.
    def _byte_span(self) -> tuple[int, int]:
        b0, b1 = self.lo // 8, self.hi // 8 + 1
        if b1 - b0 > 8 or self.width > 57:
            raise ValueError(f"field {self.name} too wide for the byte-matrix path")
        return b0, b1

    def unpack_bytes(self, words: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`unpack` on a ``(n, nbytes)`` little-endian uint8 matrix; int64."""
        b0, b1 = self._byte_span()
        acc = np.zeros(len(words), dtype=np.uint64)
        for j in range(b0, b1):
            acc |= words[:, j].astype(np.uint64) << np.uint64(8 * (j - b0))
        return Field(self.name, self.hi - 8 * b0, self.lo - 8 * b0, self.signed).unpack_array(acc)

    def pack_bytes(self, values: np.ndarray, out: np.ndarray) -> None:
        """OR ``values`` (assumed to fit) into a ``(n, nbytes)`` uint8 matrix in place."""
        b0, b1 = self._byte_span()
        v = Field(self.name, self.hi - 8 * b0, self.lo - 8 * b0).pack_array(np.asarray(values))
        for j in range(b0, b1):
            out[:, j] |= ((v >> np.uint64(8 * (j - b0))) & np.uint64(0xFF)).astype(np.uint8)

    def describe(self) -> str:
        sign = "s" if self.signed else "u"
        rng = f"[{self.hi}:{self.lo}]" if self.hi != self.lo else f"[{self.lo}]"
        return f"{self.name} {rng} {sign}{self.width}"


@dataclass(frozen=True)
class Format:
    """The layout of one instruction: constant bits plus named fields.

    Parameters
    ----------
    width
        Word width in bits (32, 64, or an architecture-dependent width).
    const_fields
        ``(field, value)`` pairs whose value is fixed for this instruction (the opcode).
    fields
        The operand fields, in no particular order.
    """

    width: int
    const_fields: tuple[tuple[Field, int], ...]
    fields: tuple[Field, ...] = dc_field(default=())

    def __post_init__(self) -> None:
        seen = 0
        for f in [f for f, _ in self.const_fields] + list(self.fields):
            if f.hi >= self.width:
                raise ValueError(f"field {f.name} bit {f.hi} outside a {self.width}-bit word")
            if seen & f.mask:
                raise ValueError(f"field {f.name} overlaps another field")
            seen |= f.mask
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate field names in format: {names}")

    @property
    def const_mask(self) -> int:
        m = 0
        for f, _ in self.const_fields:
            m |= f.mask
        return m

    @property
    def const_value(self) -> int:
        v = 0
        for f, val in self.const_fields:
            v |= f.pack(val)
        return v

    @property
    def used_mask(self) -> int:
        m = self.const_mask
        for f in self.fields:
            m |= f.mask
        return m

    @property
    def reserved_mask(self) -> int:
        """Bits that must be zero."""
        return ((1 << self.width) - 1) & ~self.used_mask

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def encode(self, values: dict[str, int]) -> int:
        """Reference encoder for one instruction (values assumed checked)."""
        word = self.const_value
        for f in self.fields:
            word |= f.pack(int(values.get(f.name, 0)))
        return word

    def decode(self, word: int) -> dict[str, int]:
        """Reference decoder for one instruction (opcode assumed matched)."""
        return {f.name: f.unpack(word) for f in self.fields}
