"""Compiled kernels of the batched CRAM state (:mod:`.batch`): bitline columns ↔ uint64 words.

The batched state keeps a tile's CRAM as *columns* with the samples innermost: ``cols[g, k, b]``
is word k of bitline g of sample b, bit ``r & 63`` of word ``r >> 6`` being wordline r.  An
operand of p ≤ 64 bits at row r of bitline g is one shifted word (two when it straddles a word
boundary), and the same shift serves every sample, so the loops over the samples are branch-free
and vectorise.

An operand is described once per instruction by :func:`operand` (word, next word, shifts, masks,
sign bit); :func:`load` and :func:`store` read and write one element with it (``store`` takes a
write enable as an all-ones/zero mask).  :func:`gather_words` / :func:`scatter_words` serve the
state's element reads and writes (:class:`.batch.ColumnTileState`); the program interpreter
(:mod:`.interp_nb`) uses the helpers directly.  The reference is the single-sample packed-row
state (:mod:`.cram`), tested against these.
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: ``scatter_words`` without a write enable
NO_ENABLE = np.ones((0, 0), np.bool_)

ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
ZERO = np.uint64(0)


@nb.njit(cache=True, inline="always")
def low(p):
    """The low-``p``-bits mask (all ones for 64)."""
    if p >= 64:
        return ALL
    return (np.uint64(1) << np.uint64(p)) - np.uint64(1)


@nb.njit(cache=True, inline="always")
def operand(row, p, signed):
    """Descriptor of the p-bit operand at wordline ``row``: (word, word of the high part, shift,
    back shift, value mask, high-part mask, sign bit (0: no sign extension))."""
    k, sh = row >> 6, row & 63
    strad = sh + p > 64
    k2 = k + 1 if strad else k
    sgn = (np.uint64(1) << np.uint64(p - 1)) if (signed and p < 64) else ZERO
    return (k, k2, np.uint64(sh), np.uint64((64 - sh) & 63), low(p), ALL if strad else ZERO, sgn)


@nb.njit(cache=True, inline="always")
def load(cols, g, b, od):
    """The operand's value at bitline g, sample b: raw bits, sign-extended when signed."""
    k, k2, sh, r, m, hm, sgn = od
    x = ((cols[g, k, b] >> sh) | ((cols[g, k2, b] << r) & hm)) & m
    return (x ^ sgn) - sgn


@nb.njit(cache=True, inline="always")
def store(cols, g, b, od, v, en):
    """Store the low p bits of ``v`` where ``en`` (all ones) allows."""
    k, k2, sh, r, m, hm, sgn = od
    v &= m
    old = cols[g, k, b]
    cols[g, k, b] = old ^ ((old ^ (v << sh)) & (m << sh) & en)
    if hm:   # straddling (loop-invariant: the compiler keeps a vectorised loop without this store)
        old = cols[g, k2, b]
        cols[g, k2, b] = old ^ ((old ^ (v >> r)) & (m >> r) & en)


@nb.njit(cache=True)
def _gather(cols, row, p, start, n, out):
    od = operand(row, p, False)
    stop = min(n, cols.shape[0] - start)
    for i in range(max(stop, 0)):
        for b in range(cols.shape[2]):
            out[b, i] = load(cols, start + i, b, od)


def gather_words(cols: np.ndarray, row: int, p: int, start: int, n: int) -> np.ndarray:
    """(B, n) uint64 patterns of the p-bit elements at (row, bitlines [start, start+n)) of
    ``cols`` (E, words, B); bitlines ≥ E (never read by the program) read as zeros."""
    out = np.zeros((cols.shape[2], n), np.uint64)
    if p:
        _gather(cols, row, p, start, n, out)
    return out


@nb.njit(cache=True)
def _scatter(cols, row, p, start, vals, en, use_en):
    od = operand(row, p, False)
    n = vals.shape[1]
    nv, ne = vals.shape[0], en.shape[0]
    stop = min(n, cols.shape[0] - start)
    for i in range(max(stop, 0)):
        for b in range(cols.shape[2]):
            e = ALL
            if use_en and not en[min(b, ne - 1), i]:
                e = ZERO
            store(cols, start + i, b, od, vals[min(b, nv - 1), i], e)


def scatter_words(cols: np.ndarray, row: int, p: int, start: int, values: np.ndarray, enable: np.ndarray) -> None:
    """Write the low p bits of (1 | B, n) ``values`` at (row, bitlines [start, start+n)) of
    ``cols`` (E, words, B) in place; ``enable`` (1 | B, n) or :data:`NO_ENABLE`.  Bitlines ≥ E
    are dropped (no instruction of the program reads them)."""
    if p:
        _scatter(cols, row, p, start, np.ascontiguousarray(values, np.uint64), enable, enable.shape[0] > 0)
