"""Sliding windows along the bitlines with a per-CRAM halo (convolutions with pixels on bitlines).

An input access such as ``I[c, z + 9·r + s]`` (``z`` on the bitlines, ``c`` on the CRAMs, ``r`` and
``s`` serial reduction loops) reads, for each (r, s), the resident vector moved by ``9·r + s``
bitlines.  Instead of reloading it, the code generator loads it once with a halo (every bitline of
each CRAM, not only the bitline loop's extent) and moves it with a left ``shift`` across the tile
vector when (r, s) advance.  A shift pulls the next CRAM's first bitlines into the last ones of
each CRAM; they stay beyond the bitline loop's extent as long as extent + total shift ≤
``cram_cols``, so every CRAM's window stays exact (checked here, statically).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .lang import Loop


@dataclass(frozen=True)
class Window:
    """How an operand slides: the index dimension holding the bitline loop, its coefficient, the
    serial loops that only move the window (nest order) and the total shift in bitlines."""

    dim: int
    cb: int
    loops: tuple[Loop, ...]
    shift: int


def _dims(nest, acc) -> list[tuple[int, dict[Loop, int]]]:
    out = []
    for a in acc.index:
        co: dict[Loop, int] = {}
        for lp, c in a.terms.items():
            for leaf, k in nest.sched.value[lp].items():
                co[leaf] = co.get(leaf, 0) + c * k
        out.append((a.const, {k: v for k, v in co.items() if v}))
    return out


def find_window(nest, o, tiles: dict, arrays: dict, cols: int) -> Window | None:
    """The :class:`Window` of a vector operand spread over CRAMs, or None when it cannot slide.

    Conditions: the bitline loop appears in one index dimension only, with a positive coefficient;
    the window loops (the serial reduction loops of that dimension: no tile or array factor) appear
    nowhere else, with positive coefficients that are multiples of the bitline one and offsets
    strictly increasing in nest order (so every move is a left shift); the bitline extent plus the
    total shift fits a CRAM.  Other loops of that dimension (e.g. a chunk of positions on tiles or
    CRAMs) only move each CRAM's window base; a move the halo cannot serve is a reload.
    """
    if o.kind != "vector" or not any(arrays.get(lp, 1) > 1 for lp in o.leaves):
        return None
    dims = _dims(nest, o.access)
    b = nest.bitline
    where = [i for i, (_, co) in enumerate(dims) if b in co]
    if len(where) != 1:
        return None
    d = where[0]
    co = dims[d][1]
    cb = co[b]
    loops = [lp for lp in nest.leaves if lp in co and lp is not b and lp.reduce and tiles.get(lp, 1) == 1
             and arrays.get(lp, 1) == 1]
    if cb <= 0 or not loops:
        return None
    for lp in loops:
        if co[lp] <= 0 or co[lp] % cb or any(lp in c2 for i, (_, c2) in enumerate(dims) if i != d):
            return None
    for i, lp in enumerate(loops):  # offsets strictly increase in the serial enumeration order
        if co[lp] <= sum(co[q] * (q.extent - 1) for q in loops[i + 1:]):
            return None
    shift = sum(co[lp] * (lp.extent - 1) for lp in loops) // cb
    if b.extent + shift > cols:
        return None
    return Window(d, cb, tuple(loops), shift)


def window_saving(win: Window, serial: dict, outer_key: list) -> int:
    """Loads replaced by shifts: the product of the window loops' serial extents when they are the
    innermost of the loops outside the operand's residency level that its reloads depend on
    (otherwise the model assumes no saving)."""
    n = len(win.loops)
    if n > len(outer_key) or tuple(outer_key[-n:]) != win.loops:
        return 1
    return math.prod(serial.get(lp, 1) for lp in win.loops)


def halo_pattern(dims, shape, parts: list[int], arr_val: dict, n_arr: int, cols: int, win: Window
                 ) -> tuple[int, np.ndarray] | None:
    """(offset, pattern) of a load that fills every bitline of each used CRAM: the window's dimension
    continues past the bitline loop's extent; positions outside the tensor are padding (−1).
    ``parts`` are the tile/serial parts of each dimension's index.  None if a valid position would
    fall below the offset (the pattern cannot encode it)."""
    b_idx = np.arange(cols, dtype=np.int64)[None, :]
    flat = np.zeros((n_arr, cols), np.int64)
    valid = np.ones((n_arr, cols), bool)
    strides = np.cumprod((1,) + tuple(reversed(shape[1:])))[::-1]
    off = 0
    for k, ((const, co), st, n) in enumerate(zip(dims, strides, shape)):
        v = np.full((n_arr, 1), parts[k], np.int64)
        for leaf, c in co.items():
            if leaf in arr_val:
                v = v + c * arr_val[leaf][:n_arr, None]
        if k == win.dim:
            v = v + win.cb * b_idx
        valid &= (v >= 0) & (v < n)
        flat = flat + int(st) * v
        off += int(st) * parts[k]
    pat = flat - off
    if (pat[valid] < 0).any():
        return None
    return off, np.where(valid, pat, -1).reshape(-1)


def column_trees(mesh_width: int, tiles) -> list[tuple[int, list[list[tuple[int, int]]]]]:
    """How a large operand reaches ``tiles``: per mesh column, the top tile of the group loads it
    from its own column's DRAM channel (the channels work in parallel) and it goes down the
    column by recursive halving: rounds of ``tile_tx``/``tile_rx`` hops whose paths do not share
    links, ceil(log2(n)) rounds for n tiles instead of the systolic chain's n − 1 store-and-forward
    hops.  Returns (loader, rounds of (source, destination) hops) per column."""
    cols: dict[int, list[int]] = {}
    for t in sorted(set(tiles)):
        cols.setdefault(t % mesh_width, []).append(t)
    out = []
    for members in cols.values():
        rounds: list[list[tuple[int, int]]] = []
        segs = [members]  # segments whose first tile has the data
        while any(len(sg) > 1 for sg in segs):
            hops, nxt = [], []
            for sg in segs:
                if len(sg) == 1:
                    nxt.append(sg)
                    continue
                h = (len(sg) + 1) // 2
                hops.append((sg[0], sg[h]))
                nxt += [sg[:h], sg[h:]]
            rounds.append(hops)
            segs = nxt
        out.append((members[0], rounds))
    return out

