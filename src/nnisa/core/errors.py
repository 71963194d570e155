"""The error types of nnisa.

Every error a user can cause (bad file, bad field, bad model, deadlocked program) is an
:class:`NnisaError`.  The CLI prints ``str(err)`` as one line on stderr and exits with
``err.exit_code``; library users catch the class they care about.  Internal bugs stay plain
Python exceptions so they keep their traceback.
"""

from __future__ import annotations

from typing import Any


#: longest error message printed (characters)
MAX_MESSAGE = 1000


class NnisaError(Exception):
    """Base class of all user-facing errors.

    Parameters
    ----------
    message
        What went wrong, in one sentence.
    file, line, column
        Where in a user file the problem is (any may be ``None``).
    where
        A free-form location such as ``"core 7, pc 1234"`` or ``"node conv1 (Conv)"``.
    hint
        Optional advice appended after the message.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        where: str | None = None,
        hint: str | None = None,
        **details: Any,
    ) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.line = line
        self.column = column
        self.where = where
        self.hint = hint
        self.details = details
        super().__init__(self.__str__())

    def location(self) -> str:
        """Return ``file:line:col`` (only the parts that are known)."""
        parts = []
        if self.file:
            parts.append(self.file)
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        loc = self.location()
        text = self.message
        if self.where:
            text = f"{self.where}: {text}"
        if loc:
            text = f"{loc}: {text}"
        if self.hint:
            text = f"{text} (hint: {self.hint})"
        text = " ".join(text.split("\n"))
        if len(text) > MAX_MESSAGE:  # echoed input (a 10 MB name) must not flood the terminal
            text = text[:MAX_MESSAGE - 60] + f" ... [{len(text) - MAX_MESSAGE + 60:,} characters cut]"
        return text

    def with_context(self, **kw: Any) -> "NnisaError":
        """Fill in location fields that are still unknown and return ``self``."""
        for key in ("file", "line", "column", "where", "hint"):
            if key in kw and getattr(self, key) is None and kw[key] is not None:
                setattr(self, key, str(kw[key]) if key == "file" else kw[key])
        self.args = (self.__str__(),)
        return self


class EncodeError(NnisaError):
    """A field value does not fit its instruction format.

    ``offenders`` lists ``(index, field, value)`` for every bad instruction found, so that
    bulk encoders can report all of them and not just the first.
    """

    def __init__(self, message: str, *, offenders: list[tuple] | None = None, **kw: Any):
        self.offenders = list(offenders or [])
        super().__init__(message, **kw)


class DecodeError(NnisaError):
    """A binary word or file cannot be decoded (unknown opcode, reserved bits, truncation)."""


class AsmError(NnisaError):
    """Bad assembly text: reported with file, line and column."""


class FormatError(NnisaError):
    """A malformed file in one of the supported formats (JSON, containers, configs)."""


class OutputError(NnisaError):
    """An output file or folder cannot be written (a folder in the way, no permission, ...)."""


class ConfigError(NnisaError):
    """An invalid architecture or simulator configuration."""


class OptionError(NnisaError):
    """An unknown ``-O`` option for a target/command, or a value of the wrong type or range."""


class UnsupportedError(NnisaError):
    """A feature, operator or file type that nnisa does not support (yet)."""


class SimError(NnisaError):
    """A run-time error of a simulated program (out-of-bounds access, bad operands)."""


class DeadlockError(SimError):
    """No core can make progress; ``report`` holds the multi-line deadlock report."""

    exit_code = 3

    def __init__(self, message: str, *, report: str = "", **kw: Any):
        self.report = report
        super().__init__(message, **kw)


class SimTimeExceeded(SimError):
    """The simulated time limit was reached before every core finished."""

    exit_code = 4

    def __init__(self, message: str, *, report: str = "", **kw: Any):
        self.report = report
        super().__init__(message, **kw)


def format_offenders(offenders: list[tuple], limit: int = 5) -> str:
    """Summarise a list of offending ``(where, field, value)`` tuples for a one-line message."""
    shown = ", ".join(f"{w} {f}={v}" for w, f, v in offenders[:limit])
    more = len(offenders) - limit
    return shown + (f", and {more} more" if more > 0 else "")
