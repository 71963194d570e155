"""Compiled kernels of the batched CRAM state (:mod:`.batch`): packed bit rows ↔ uint64 words.

An operand of p bits at bitlines [start, start+n) is p packed rows; the kernels turn their bytes
into one uint64 word per bitline and back, eight bitlines × eight rows at a time with an 8×8 bit
transpose (byte-aligned starts, the common case), bit by bit otherwise.  The reference is
:func:`.cram.bits_to_patterns` / :func:`.cram.patterns_to_bits` (NumPy), tested against these.
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: ``scatter_words`` without a write enable
NO_ENABLE = np.ones((0, 0), np.bool_)

_M1 = np.uint64(0x00AA00AA00AA00AA)
_M2 = np.uint64(0x0000CCCC0000CCCC)
_M3 = np.uint64(0x00000000F0F0F0F0)


@nb.njit(cache=True, inline="always")
def _transpose8(x):
    """Transpose the 8×8 bit matrix held in a uint64 (byte i = row i, bit j = column j)."""
    t = (x ^ (x >> np.uint64(7))) & _M1
    x = x ^ t ^ (t << np.uint64(7))
    t = (x ^ (x >> np.uint64(14))) & _M2
    x = x ^ t ^ (t << np.uint64(14))
    t = (x ^ (x >> np.uint64(28))) & _M3
    return x ^ t ^ (t << np.uint64(28))


@nb.njit(cache=True)
def _gather(st, off, n, out):
    p, B, _ = st.shape
    full = (n // 8) if off == 0 else 0
    for b in range(B):
        for j0 in range(0, p, 8):
            m = min(8, p - j0)
            for k in range(full):
                x = np.uint64(0)
                for jj in range(m):
                    x |= np.uint64(st[j0 + jj, b, k]) << np.uint64(8 * jj)
                if x == 0:
                    continue
                x = _transpose8(x)
                for t in range(8):
                    out[b, 8 * k + t] |= ((x >> np.uint64(8 * t)) & np.uint64(0xFF)) << np.uint64(j0)
        for j in range(p):   # the unaligned part, bit by bit
            for i in range(8 * full, n):
                g = off + i
                bit = (st[j, b, g >> 3] >> (g & 7)) & 1
                out[b, i] |= np.uint64(bit) << np.uint64(j)


def gather_words(st: np.ndarray, off: int, n: int) -> np.ndarray:
    """(p, B, bytes) packed rows → (B, n) uint64 words of the bitlines [off, off+n) of the bytes."""
    out = np.zeros((st.shape[1], n), np.uint64)
    if st.shape[0]:
        _gather(st, off, n, out)
    return out


@nb.njit(cache=True)
def _scatter(st, off, vals, en, use_en):
    p, B, _ = st.shape
    n = vals.shape[1]
    nv, ne = vals.shape[0], en.shape[0]
    full = (n // 8) if (off == 0 and not use_en) else 0
    for b in range(B):
        bv = min(b, nv - 1)
        for j0 in range(0, p, 8):
            m = min(8, p - j0)
            for k in range(full):
                x = np.uint64(0)
                for t in range(8):
                    x |= ((vals[bv, 8 * k + t] >> np.uint64(j0)) & np.uint64(0xFF)) << np.uint64(8 * t)
                x = _transpose8(x)
                for jj in range(m):
                    st[j0 + jj, b, k] = np.uint8((x >> np.uint64(8 * jj)) & np.uint64(0xFF))
        be = min(b, ne - 1) if use_en else 0
        for i in range(8 * full, n):
            if use_en and not en[be, i]:
                continue
            g = off + i
            byte, sh = g >> 3, g & 7
            v = vals[bv, i]
            for j in range(p):
                bit = np.uint8((v >> np.uint64(j)) & np.uint64(1))
                st[j, b, byte] = (st[j, b, byte] & np.uint8(~(1 << sh) & 0xFF)) | (bit << sh)


def scatter_words(st: np.ndarray, off: int, values: np.ndarray, enable: np.ndarray) -> None:
    """Write the low p bits of (1 | B, n) ``values`` into (p, B, bytes) rows at bitlines
    [off, off+n) of the bytes, in place; ``enable`` (1 | B, n) or :data:`NO_ENABLE`."""
    if st.shape[0]:
        _scatter(st, off, np.ascontiguousarray(values, np.uint64), enable, enable.shape[0] > 0)
