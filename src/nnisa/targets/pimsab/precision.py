"""PIMSAB precision bytes (spec §2.2): integer and float element types of the bit-serial layout.

A precision byte is ``kind << 6 | payload``: kind 0 = unsigned (payload = width − 1), 1 = signed
two's complement (payload = width − 1), 2 = float (payload = format id: 0 fp32, 1 fp16, 2 bf16),
3 = reserved.  Every operand of an instruction carries its own precision byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...core.operands import OperandError

UNSIGNED, SIGNED, FLOAT = 0, 1, 2

#: float format id → (name, mantissa bits m, exponent bits e)
FLOAT_FORMATS = {0: ("f32", 23, 8), 1: ("f16", 10, 5), 2: ("bf16", 7, 8)}
_FLOAT_BY_NAME = {v[0]: k for k, v in FLOAT_FORMATS.items()}


@dataclass(frozen=True)
class Precision:
    """A decoded precision byte.

    Attributes
    ----------
    kind
        ``UNSIGNED``, ``SIGNED`` or ``FLOAT``.
    bits
        Storage bits (= wordlines): the width for integers, 1 + m + e for floats.
    fmt
        Float format id (floats only).
    """

    kind: int
    bits: int
    fmt: int = -1

    @property
    def is_float(self) -> bool:
        return self.kind == FLOAT

    @property
    def signed(self) -> bool:
        return self.kind == SIGNED

    @property
    def mantissa(self) -> int:
        return FLOAT_FORMATS[self.fmt][1] if self.is_float else 0

    @property
    def exponent(self) -> int:
        return FLOAT_FORMATS[self.fmt][2] if self.is_float else 0

    @property
    def token(self) -> str:
        if self.is_float:
            return FLOAT_FORMATS[self.fmt][0]
        return ("i" if self.signed else "u") + str(self.bits)

    @property
    def byte(self) -> int:
        if self.is_float:
            return FLOAT << 6 | self.fmt
        return self.kind << 6 | (self.bits - 1)

    @property
    def dram_bits(self) -> int:
        """Width of one element in DRAM (spec §2.2): p for 1, 2, 4, 8; else the next multiple of 8."""
        if self.is_float:
            return 32 if self.fmt == 0 else 16
        p = self.bits
        return p if p in (1, 2, 4, 8) else 8 * -(-p // 8)


def valid_byte(byte: int) -> bool:
    """Whether ``byte`` is a defined precision byte."""
    kind = byte >> 6
    return 0 <= byte <= 255 and (kind in (UNSIGNED, SIGNED) or (kind == FLOAT and (byte & 63) in FLOAT_FORMATS))


@lru_cache(maxsize=None)
def decode(byte: int) -> Precision:
    """Precision of a byte; raises ``ValueError`` for reserved values."""
    if not valid_byte(byte):
        raise ValueError(f"invalid precision byte 0x{byte:02X}")
    kind = byte >> 6
    if kind == FLOAT:
        _, m, e = FLOAT_FORMATS[byte & 63]
        return Precision(FLOAT, 1 + m + e, byte & 63)
    return Precision(kind, (byte & 63) + 1)


def bits(byte: int) -> int:
    """Storage bits of a precision byte (wordlines it occupies)."""
    return decode(byte).bits


def parse_token(token: str) -> int:
    """``u8``/``i16``/``uint6``/``int6``/``f32``/``f16``/``bf16`` → precision byte."""
    t = token.strip().lower()
    if t in _FLOAT_BY_NAME:
        return FLOAT << 6 | _FLOAT_BY_NAME[t]
    for prefix, kind in (("uint", UNSIGNED), ("int", SIGNED), ("u", UNSIGNED), ("i", SIGNED)):
        if t.startswith(prefix) and t[len(prefix):].isdigit():
            w = int(t[len(prefix):])
            if not 1 <= w <= 64:
                raise OperandError(f"precision {token.strip()!r}: width must be 1..64")
            return kind << 6 | (w - 1)
    raise OperandError(f"expected a precision (u1..u64, i1..i64, f32, f16, bf16), got {token.strip()!r}")


def token(byte: int) -> str:
    """Assembly token of a precision byte (``0xNN`` for reserved values)."""
    return decode(byte).token if valid_byte(byte) else f"0x{byte:02X}"


@lru_cache(maxsize=None)
def make(kind: str, width: int = 0) -> int:
    """Build a precision byte: ``make("i", 8)``, ``make("u", 4)``, ``make("f32")``."""
    return parse_token(kind if kind.lower() in _FLOAT_BY_NAME else f"{kind}{width}")


I8, I16, I32, U1 = make("i", 8), make("i", 16), make("i", 32), make("u", 1)
