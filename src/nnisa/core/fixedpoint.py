"""Fixed-point helpers shared by targets: wrap, saturate and rounding on int64 numpy arrays.

All functions accept Python ints or numpy integer arrays and return int64 arrays (or numpy
scalars).  Widths are in bits and include the sign bit for signed values.
"""

from __future__ import annotations

import numpy as np

ROUNDING_MODES = ("floor", "half_up", "half_even", "half_away", "trunc")


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap(x, bits: int, signed: bool = True) -> np.ndarray:
    """Two's-complement wrap of ``x`` to ``bits`` bits (the value congruent mod ``2**bits``)."""
    x = _arr(x)
    if bits >= 64:
        return x
    m = np.int64((1 << bits) - 1)
    v = x & m
    if signed:
        half = np.int64(1 << (bits - 1))
        v = np.where(v >= half, v - np.int64(1 << bits), v)
    return v


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
