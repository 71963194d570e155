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


@nb.njit(cache=True, inline="always")
def _ext(v, bits, signed):
    """Low ``bits`` of a uint64 pattern, sign-extended to 64 bits when ``signed``."""
    if bits < 64:
        v &= (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
        if signed and (v >> np.uint64(bits - 1)) & np.uint64(1):
            v |= ~((np.uint64(1) << np.uint64(bits)) - np.uint64(1))
    return v


@nb.njit(cache=True)
def _mac(a, b, acc, pa, sa, pb, sb, pin, sin, pd, out):
    B, n = out.shape
    m = np.uint64(0xFFFFFFFFFFFFFFFF) if pd >= 64 else (np.uint64(1) << np.uint64(pd)) - np.uint64(1)
    for s in range(B):
        ia, ib, ic = min(s, a.shape[0] - 1), min(s, b.shape[0] - 1), min(s, acc.shape[0] - 1)
        for i in range(n):
            r = _ext(acc[ic, i], pin, sin) + _ext(a[ia, i], pa, sa) * _ext(b[ib, i], pb, sb)
            out[s, i] = r & m


def mac_words(a, b, acc, pa, pb, pin, pd: int) -> np.ndarray:
    """Integer ``mac`` on word arrays ((1 | B, n) uint64 raw patterns; ``pa``/``pb``/``pin`` are
    :class:`..precision.Precision`): ``(acc + a × b) mod 2^pd``, the kernel of
    :func:`.compute.mac` (whose NumPy code is the reference)."""
    out = np.empty((max(a.shape[0], b.shape[0], acc.shape[0]), a.shape[1]), np.uint64)
    _mac(a, b, acc, pa.bits, pa.signed, pb.bits, pb.signed, pin.bits, pin.signed, pd, out)
    return out


@nb.njit(cache=True)
def _group_sum(v, groups, g, inner, pa, sa, pd, out):
    B = v.shape[0]
    m = np.uint64(0xFFFFFFFFFFFFFFFF) if pd >= 64 else (np.uint64(1) << np.uint64(pd)) - np.uint64(1)
    out[:] = 0
    for s in range(B):
        for q in range(groups):
            base = q * g * inner
            for i in range(inner):
                acc = np.uint64(0)
                for k in range(g):
                    acc += _ext(v[s, base + k * inner + i], pa, sa)
                out[s, base + i] = acc & m


def group_sum_words(v, g: int, inner: int, pa, pd: int) -> np.ndarray:
    """Integer reductions on (1 | B, groups·g·inner) words: position ``q·g·inner + i`` gets the sum
    of the g elements ``q·g·inner + k·inner + i`` (k < g), mod 2^pd; every other position 0
    (``reduce_tile``: inner = CRAM columns; ``reduce_cram``: inner = 1)."""
    out = np.empty(v.shape, np.uint64)
    _group_sum(np.ascontiguousarray(v), v.shape[1] // (g * inner), g, inner, pa.bits, pa.signed, pd, out)
    return out
