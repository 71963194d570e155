"""DAIS diagnostics (spec Appendix B), as :class:`~nnisa.core.errors.NnisaError` subclasses.

They also derive from the builtin classes the spec names (``ValueError`` / ``RuntimeError``) so
code written against the spec's contract catches them.
"""

from __future__ import annotations

from ...core.errors import ConfigError, DecodeError, FormatError, SimError


class DaisFormatError(FormatError, ValueError):
    """Bad byte length, too short, length mismatch, negative counts, unrepresentable form."""


class UnsupportedSpecVersion(DaisFormatError):
    """spec_version ≥ 2 (alkaid ALIR; future work, D6)."""


class DaisValidationError(DecodeError, ValueError):
    """A §5.6 static error (unknown opcode, causality, operand range, widths, table index)."""


class DaisInputError(SimError, ValueError):
    """Simulation inputs that do not fit the program (size, type, non-finite values)."""


class DaisLookupError(SimError, RuntimeError):
    """Opcode 8 index out of the table (run time, §5.7)."""


class DaisPrecisionError(ConfigError, ValueError):
    """A constant matrix whose values need more fractional bits than a program holds (weights or
    scales that were not quantized, or calibration ranges far from 1)."""


class DaisRangeError(SimError, RuntimeError):
    """Checked mode: a non-quantizing op left its dtype (§7.7)."""


class DaisAmbiguousFormatWarning(UserWarning):
    """Both the v1 and the legacy layout fit a binary (§3.7)."""


class DaisWidthWarning(UserWarning):
    """A width over 64, or a quantizing width ≥ 63."""


class DaisRangeWarning(UserWarning):
    """A constant outside its own declared dtype (legal, but checked mode fails on it)."""


class DaisUndefinedWarning(UserWarning):
    """A pattern that is undefined behaviour in the reference interpreter (§5.8)."""


class DaisLintWarning(UserWarning):
    """Non-canonical but well-defined fields (only with ``lint=True``)."""
