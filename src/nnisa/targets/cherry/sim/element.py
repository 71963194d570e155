"""Element formats (spec ``cherry.md`` §1.4, §5.2): cherry18 (top 18 bits of float32) and fp32.

Storage keeps decoded float32 values; :func:`quantize` is ``decode(encode(x))``, applied once
whenever a result is written to a register (§3.1).
"""

from __future__ import annotations

import numpy as np

from ....core.errors import FormatError

_QNAN = np.uint32(0x7FC00000)
_MASK18 = np.uint32(0xFFFFC000)


def encode18(x: np.ndarray) -> np.ndarray:
    """float32 → 18-bit codes (uint32): truncation toward zero; NaN → 0x1FF00."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    b = np.where(np.isnan(np.asarray(x, dtype=np.float32)), _QNAN, b)
    return (b >> np.uint32(14)) & np.uint32(0x3FFFF)


def decode18(c: np.ndarray) -> np.ndarray:
    """18-bit codes → float32."""
    return (np.asarray(c, dtype=np.uint32) << np.uint32(14)).view(np.float32)


def quantize(x: np.ndarray, fmt: str) -> np.ndarray:
    """Round float32 values to the element format (a float32 array, possibly ``x`` itself)."""
    x = np.asarray(x, dtype=np.float32)
    if fmt == "fp32":
        return x
    b = x.view(np.uint32)
    nan = np.isnan(x)
    out = b & _MASK18
    if nan.any():
        out = np.where(nan, _QNAN, out)
    return out.view(np.float32)


def quantize_inplace(x: np.ndarray, fmt: str) -> None:
    """:func:`quantize` for a contiguous float32 array, in place."""
    if fmt == "fp32":
        return
    nan = np.isnan(x)
    b = x.view(np.uint32)
    b &= _MASK18
    if nan.any():
        b[nan] = _QNAN


def tile_bytes(sz: int, fmt: str) -> int:
    """Bytes of one tile on the wire (§5.2)."""
    return sz * sz * 18 // 8 if fmt == "cherry18" else 4 * sz * sz


def pack_tile(tile: np.ndarray, fmt: str) -> bytes:
    """One SZ x SZ tile → wire bytes (cherry18: 18-bit codes MSB first; fp32: big-endian)."""
    t = np.asarray(tile, dtype=np.float32).reshape(-1)
    if fmt == "fp32":
        return t.astype(">f4").tobytes()
    acc = 0
    for c in encode18(t).tolist():
        acc = (acc << 18) | int(c)
    return acc.to_bytes(len(t) * 18 // 8, "big")


def unpack_tile(data: bytes, sz: int, fmt: str) -> np.ndarray:
    """Wire bytes → one SZ x SZ float32 tile."""
    if len(data) != tile_bytes(sz, fmt):
        raise FormatError(f"a {fmt} tile of {sz}x{sz} has {tile_bytes(sz, fmt)} bytes, got {len(data)}")
    if fmt == "fp32":
        return np.frombuffer(data, dtype=">f4").astype(np.float32).reshape(sz, sz)
    acc = int.from_bytes(data, "big")
    n = sz * sz
    codes = [(acc >> (18 * (n - 1 - k))) & 0x3FFFF for k in range(n)]
    return decode18(np.array(codes, dtype=np.uint32)).reshape(sz, sz)
