"""Element values of the bit-serial layout: integer extension, wrapping, IEEE float conversion.

Integer operands are handled as uint64 two's-complement patterns extended to 64 bits (sign
extension for signed precisions); sums, differences and products modulo 2^64 are exact modulo
2^pD for every destination width pD ≤ 64 (spec §2.7).  Floats are computed in float32 and rounded
to the destination format with round-to-nearest-even (fp16 through NumPy, bf16 on the bit pattern).
"""

from __future__ import annotations

import numpy as np

from ..precision import Precision

U64 = np.uint64


def low_mask(bits: int) -> np.uint64:
    """``2**bits - 1`` as uint64 (all ones for 64)."""
    return U64(0xFFFFFFFFFFFFFFFF) if bits >= 64 else U64((1 << bits) - 1)


def extend(pattern: np.ndarray, prec: Precision) -> np.ndarray:
    """Raw p-bit patterns → 64-bit patterns (sign-extended for signed precisions)."""
    pattern = np.bitwise_and(pattern, low_mask(prec.bits), dtype=U64, casting="unsafe")  # a new array

    if prec.signed and prec.bits < 64:
        sign = U64(1 << (prec.bits - 1))
        pattern ^= sign
        pattern -= sign  # wraps modulo 2^64: the two's-complement extension
    return pattern


def wrap(values: np.ndarray, bits: int) -> np.ndarray:
    """Reduce 64-bit patterns modulo 2^bits."""
    return np.bitwise_and(values, low_mask(bits), dtype=U64, casting="unsafe")


def as_int(pattern64: np.ndarray, prec: Precision) -> np.ndarray:
    """Exact values for comparisons: int64 when they fit, else Python integers (object array)."""
    if prec.signed or prec.bits < 64:
        return pattern64.view(np.int64) if prec.signed else pattern64.astype(np.int64)
    return np.array([int(v) for v in pattern64.tolist()], dtype=object)


def to_float32(pattern: np.ndarray, prec: Precision) -> np.ndarray:
    """Float patterns → float32 values (exact for fp32, fp16 and bf16)."""
    pattern = pattern.astype(U64)
    if prec.fmt == 0:
        return (pattern & U64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    if prec.fmt == 1:
        return (pattern & U64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32)
    return ((pattern & U64(0xFFFF)).astype(np.uint32) << np.uint32(16)).view(np.float32)


def from_float32(x: np.ndarray, prec: Precision) -> np.ndarray:
    """float32 values → patterns of the float format (round to nearest even)."""
    x = np.asarray(x, np.float32)
    if prec.fmt == 0:
        return x.view(np.uint32).astype(U64)
    if prec.fmt == 1:
        with np.errstate(over="ignore"):
            return x.astype(np.float16).view(np.uint16).astype(U64)
    return bf16_bits(x).astype(U64)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even; NaN stays a quiet NaN) → uint16 patterns."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (b + U64(0x7FFF) + ((b >> U64(16)) & U64(1))) >> U64(16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, (b >> U64(16)) | U64(0x40), rounded).astype(np.uint16)


def float_op(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE float32 arithmetic of one compute mnemonic (results are rounded to the destination
    format afterwards)."""
    with np.errstate(all="ignore"):
        if op in ("add", "add_const"):
            return a + b
        if op == "sub":
            return a - b
        if op in ("mult", "mul_const"):
            return a * b
        if op in ("max", "min"):
            return float_max(a, b) if op == "max" else float_min(a, b)
    raise ValueError(op)


def float_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 ``maximum``: NaN propagates, −0 < +0 (NumPy's ``maximum`` with the sign of
    zero made deterministic; NumPy's own choice on ±0 depends on the dtype's SIMD path)."""
    r = np.maximum(a, b)
    zero = (a == 0) & (b == 0)
    return np.where(zero, np.where(np.signbit(a) & np.signbit(b), a, np.abs(a)), r).astype(r.dtype)


def float_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 ``minimum``: NaN propagates, −0 < +0."""
    r = np.minimum(a, b)
    zero = (a == 0) & (b == 0)
    return np.where(zero, np.where(np.signbit(a) | np.signbit(b), -np.abs(a), a), r).astype(r.dtype)
