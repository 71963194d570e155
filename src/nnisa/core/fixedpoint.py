"""Fixed-point helpers shared by the frontend and the targets: wrap, saturate and rounding.

The array functions accept Python ints or numpy integer arrays and return int64 arrays.  The
``*_int`` twins work on single Python ints (exact, arbitrary precision) for the interpreters'
per-instruction hot paths, where a numpy call per value would dominate.  Widths are in bits and
include the sign bit for signed values.
"""

from __future__ import annotations

import math

import numpy as np

ROUNDING_MODES = ("floor", "half_up", "half_even", "half_away", "trunc")


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap(x, bits: int, signed: bool = True) -> np.ndarray:
    """Two's-complement wrap of ``x`` to ``bits`` bits (the value congruent mod ``2**bits``).

    Modular, so it is also right after int64 overflow of ``x``.
    """
    x = _arr(x)
    if bits >= 64:
        return x
    m = np.int64((1 << bits) - 1)
    if not signed:
        return x & m
    half = np.int64(1 << (bits - 1))
    return ((x + half) & m) - half


def saturate(x, bits: int, signed: bool = True) -> np.ndarray:
    """Clamp ``x`` to the range of a ``bits``-bit integer."""
    lo, hi = int_range(bits, signed)
    return np.clip(_arr(x), lo, hi)


def int_range(bits: int, signed: bool = True) -> tuple[int, int]:
    """Inclusive range of a ``bits``-bit integer."""
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def shift_right_round(x, shift, mode: str = "floor") -> np.ndarray:
    """Divide ``x`` by ``2**shift`` (shift ≥ 0, scalar or array) with the given rounding.

    Modes: ``floor`` (arithmetic shift), ``half_up`` (add half, then floor), ``half_even``
    (banker's rounding), ``half_away`` (ties away from zero), ``trunc`` (toward zero).
    """
    x = _arr(x)
    s = _arr(shift)
    if np.any(s < 0):
        raise ValueError("shift must be non-negative")
    if mode == "floor":
        return x >> s
    if mode == "trunc":
        q = np.abs(x) >> s
        return np.where(x < 0, -q, q)
    half = np.where(s > 0, np.int64(1) << np.maximum(s - 1, 0), 0)
    if mode == "half_up":
        return (x + half) >> s
    if mode == "half_away":
        q = (np.abs(x) + half) >> s
        return np.where(x < 0, -q, q)
    if mode == "half_even":
        q = x >> s
        r = x - (q << s)
        up = (r > half) | ((r == half) & (s > 0) & ((q & 1) == 1))
        return q + up.astype(np.int64)
    raise ValueError(f"unknown rounding mode {mode!r}; choose from {ROUNDING_MODES}")


def div_round_away(a, n) -> np.ndarray:
    """Integer ``a / n`` (``n > 0``) rounded to nearest, ties away from zero."""
    a = _arr(a)
    n = _arr(n)
    q = (np.abs(a) + n // 2) // n  # n // 2 rounds ties up only for even n; odd n has no ties
    return np.where(a < 0, -q, q)


def round_half_away(x) -> np.ndarray:
    """Round floats to the nearest integer, ties away from zero (``floor(|x| + 0.5)`` with sign)."""
    x = np.asarray(x, dtype=np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def requantize(acc, multiplier, shift, bits: int = 8, mode: str = "half_up", saturating: bool = True) -> np.ndarray:
    """Integer requantization ``round(acc * multiplier / 2**shift)`` narrowed to ``bits``.

    This is the multiply-shift scheme of integer-only inference (no floats involved).
    """
    prod = _arr(acc) * _arr(multiplier)
    q = shift_right_round(prod, shift, mode)
    return saturate(q, bits) if saturating else wrap(q, bits)


# ---------------------------------------------------------------- single Python ints (hot paths)
def wrap_int(v: int, bits: int) -> int:
    """:func:`wrap` (signed) of one Python int."""
    half = 1 << (bits - 1)
    return ((v + half) & ((1 << bits) - 1)) - half


def sat_int(v: int, bits: int) -> int:
    """:func:`saturate` (signed) of one Python int."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return lo if v < lo else hi if v > hi else v


def div_round_away_int(num: int, den: int) -> int:
    """:func:`div_round_away` of Python ints (``den > 0``)."""
    q = (2 * abs(num) + den) // (2 * den)
    return -q if num < 0 else q


def round_half_away_int(v: float) -> int:
    """:func:`round_half_away` of one float: ``floor(|v| + 0.5)`` with the sign of ``v``."""
    r = math.floor(abs(v) + 0.5)
    return -r if v < 0 else r


def pow2(e: int) -> float:
    """``2^e`` as a double: exact in [-1074, 1023], 0 below, +inf above (DAIS spec §5.2, §5.4)."""
    if e > 1023:
        return math.inf
    return math.ldexp(1.0, max(e, -1100))
