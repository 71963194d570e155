"""Assembly operand kinds: how one operand is parsed from and printed to text.

An operand kind turns one comma-separated token into values for one or more IR columns and back.
Targets combine the generic kinds here with their own (subclass :class:`OperandKind`).
"""

from __future__ import annotations

import re

_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|[0-9]+)", re.ASCII)


class OperandError(ValueError):
    """Raised by ``parse``; the assembler turns it into an :class:`~nnisa.core.errors.AsmError`."""


def parse_int(token: str) -> int:
    """Parse a decimal, ``0x`` hex, ``0b`` binary or ``0o`` octal integer with optional sign.

    ASCII digits only (Python's ``int`` would also take other scripts' digits and ``_``)."""
    t = token.strip()
    if not _INT.fullmatch(t):
        raise OperandError(f"expected an integer, got {t[:40]!r}")
    body = t.lstrip("+-")
    if len(body) > 80:  # more than any field holds (and Python refuses 4,300+ decimal digits)
        raise OperandError(f"integer {t[:20]}... out of range ({len(body):,} digits)")
    if len(body) > 1 and body[1] in "xXbBoO":
        return int(t, 0)
    return int(t, 10)  # base 10 accepts decimal with leading zeros, which base 0 rejects


class OperandKind:
    """Base class: a syntax for one operand.

    Subclasses implement :meth:`parse` (token → tuple of column values) and :meth:`format`
    (values → token, or ``None`` to omit an optional operand that has its default value).
    """

    ncols = 1

    def label(self, columns: tuple[str, ...]) -> str:
        return columns[0]

    def parse(self, token: str) -> tuple[int, ...]:
        raise NotImplementedError

    def format(self, values: tuple[int, ...]) -> str | None:
        raise NotImplementedError

    def explicit(self, values: tuple[int, ...]) -> str:
        """The text of ``values`` even where :meth:`format` omits it (an optional positional
        operand followed by others must be written, or the next would take its place)."""
        tok = self.format(values)
        if tok is None:
            raise ValueError(f"{type(self).__name__} has no explicit form of {values}")
        return tok

    def default(self) -> tuple[int, ...]:
        return (0,) * self.ncols


class Reg(OperandKind):
    """A register ``<prefix>N`` (``$r5``); ``alt_prefixes`` are also accepted (``$5``)."""

    def __init__(self, prefix: str = "$r", count: int = 32, alt_prefixes: tuple[str, ...] = ()):
        self.prefix = prefix
        self.count = count
        self.alt = alt_prefixes

    def label(self, columns):
        return f"${columns[0]}"

    def parse(self, token):
        t = token.strip()
        for p in (self.prefix,) + self.alt:
            if t.lower().startswith(p.lower()) and t[len(p):].isascii() and t[len(p):].isdigit():
                n = int(t[len(p):])
                if n >= self.count:
                    raise OperandError(f"register {t} out of range (0-{self.count - 1})")
                return (n,)
        raise OperandError(f"expected a register like {self.prefix}0, got {t!r}")

    def format(self, values):
        return f"{self.prefix}{values[0]}"


class Int(OperandKind):
    """A plain integer; with ``optional_default`` it is omitted when equal to the default."""

    def __init__(self, hex_digits: int = 0, omit_default: bool = False, default: int = 0):
        self.hex_digits = hex_digits
        self.omit_default = omit_default
        self._default = default

    def parse(self, token):
        return (parse_int(token),)

    def format(self, values):
        if self.omit_default and values[0] == self._default:
            return None
        return self.explicit(values)

    def explicit(self, values):
        v = values[0]
        if self.hex_digits:
            return f"0x{v:0{self.hex_digits}X}" if v >= 0 else str(v)
        return str(v)

    def default(self):
        return (self._default,)


class Byte(Int):
    """One byte: accepts -128..255 and stores the byte value 0..255; printed as ``0xHH``."""

    def __init__(self):
        super().__init__(hex_digits=2)

    def parse(self, token):
        v = parse_int(token)
        if not -128 <= v <= 255:
            raise OperandError(f"byte value {v} outside -128..255")
        return (v & 0xFF,)


class Enum(OperandKind):
    """A named value (``dram0``) or its integer."""

    def __init__(self, names: dict[str, int]):
        self.names = {k.lower(): v for k, v in names.items()}
        self.by_value = {v: k for k, v in names.items()}

    def parse(self, token):
        t = token.strip().lower()
        if t in self.names:
            return (self.names[t],)
        return (parse_int(t),)

    def format(self, values):
        return self.by_value.get(values[0], str(values[0]))
