"""Which bitlines each instruction of a planned run must evaluate: a backward liveness pass.

A compiled layer rarely fills its CRAMs: a convolution with 8 output columns on the bitlines runs
every instruction over whole 256-bitline CRAMs (the vector ``size`` of the ISA counts bitlines
from bitline 0, so it cannot name "the first 8 of every CRAM"), and the timed program must keep
those instructions as they are.  The values on the other bitlines are never stored where the
host reads them.  This pass finds, for every instruction that writes bitlines, the bitlines whose
result can reach a DRAM byte the caller reads (``observed``), so that the interpreter
(:mod:`.interp_nb`) evaluates only those.  The program, its timing and its energy are unchanged.

The pass walks the execution order backwards with one bit per (wordline, bitline) of every tile,
plus two latch rows (mask, carry):

* a compute instruction is *needed* at bitline g when one of the rows it writes at g (its
  destination, the carry latch, a ``mac`` scratch, the mask for ``set_mask``) is live there;
  without a predicate it overwrites them (they are dead before it), and its sources at the needed
  bitlines become live (with a predicate the old destination and the predicate latch stay live);
* the instructions that move data across bitlines (``shift``, reductions, ``cram_local_shf``,
  ``cram_tx_rx``, ``cram_bcast``, ``tile_tx``/``tile_rx`` through the message slots) map the
  liveness of what they write onto what they read; ``shift``, the reductions, ``cram_local_shf``
  and ``tile_rx`` then write only their needed bitlines, a ``tile_tx`` sends only the message
  elements its ``tile_rx`` reads (the CRAM transfers run in full);
* loads kill what they write; a ``popcount_rf`` makes its sources live (the RF is assumed live);
* a ``store`` makes live the elements whose bytes are observed; a store whose bytes a DRAM read of
  the same program overlaps is made live whole (the DRAM is not tracked further).

Sound by construction: every value an evaluated instruction reads at a live position was itself
evaluated, so the observed bytes equal those of a full evaluation (tested against it on random
programs).  Bytes outside ``observed`` are left unspecified.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np
from numba.typed import Dict, List

from ..config import PimsabConfig
from ..program import PimsabProgram
from .plan import COL, OPC, FunctionalPlan

FULL, SKIP = -1, -2   #: ``Lanes.sel`` values: evaluate every bitline of [0, n); evaluate none
(OP, T, N, PRED, RD, RA, RB, RS, PD, PA, PB, PC, X0, X1, X3, MOFF, ADDR, DBYTES) = (COL[c] for c in (
    "op", "t", "n", "pred", "rd", "ra", "rb", "rs", "pd", "pa", "pb", "pc", "x0", "x1", "x3", "moff", "addr",
    "dbytes"))
_K = {m: OPC[m] for m in ("add", "sub", "mult", "max", "min", "and", "or", "xor", "not", "copy", "set", "reset",
                          "set_mask", "mac", "mul_const", "add_const", "dot_const", "shift", "reduce_cram",
                          "reduce_tile", "cram_local_shf", "popcount_rf", "load", "load_shf", "store",
                          "cram_tx_rx", "cram_bcast", "tile_tx", "tile_rx")}
SET_MASK, SET, RESET, MAC, DOT_C = _K["set_mask"], _K["set"], _K["reset"], _K["mac"], _K["dot_const"]
MUL_C, ADD_C, NOT, COPY = _K["mul_const"], _K["add_const"], _K["not"], _K["copy"]
SHIFT, RED_CRAM, RED_TILE, LOCAL, POPCOUNT = (_K[m] for m in ("shift", "reduce_cram", "reduce_tile",
                                                               "cram_local_shf", "popcount_rf"))
LOAD, LOAD_SHF, STORE, CRAM_TX, CRAM_BC, TILE_TX, TILE_RX = (_K[m] for m in (
    "load", "load_shf", "store", "cram_tx_rx", "cram_bcast", "tile_tx", "tile_rx"))
ELEMENTWISE = np.array([_K[m] for m in ("add", "sub", "mult", "max", "min", "and", "or", "xor", "not", "copy",
                                        "set", "reset", "set_mask", "mac", "mul_const", "add_const",
                                        "dot_const")], np.int64)
ONE = np.uint64(1)


@dataclass
class Lanes:
    """Per code row of a plan: ``sel`` = :data:`FULL`, :data:`SKIP` or a span index; span s
    evaluates the bitlines ``idx[spans[s, 0]:spans[s, 1]]`` (offsets from the tile's first; for a
    ``tile_tx``, message elements)."""

    sel: np.ndarray
    spans: np.ndarray
    idx: np.ndarray

    @staticmethod
    def full(rows: int) -> "Lanes":
        return Lanes(np.full(rows, FULL, np.int64), np.zeros((1, 2), np.int64), np.zeros(1, np.int64))

    def evaluated(self, n: np.ndarray) -> int:
        """Bitline evaluations of the rows with n > 0 (``n``: each row's vector length, 0 for the
        rows to leave out) under this selection."""
        lens = self.spans[:, 1] - self.spans[:, 0]
        per = np.where(self.sel == FULL, n, np.where(self.sel == SKIP, 0, lens[np.maximum(self.sel, 0)]))
        return int(np.where(n > 0, per, 0).sum())


@nb.njit(cache=True, inline="always")
def _bit(words, i):
    return ((words[i >> 6] >> np.uint64(i & 63)) & ONE) != 0


@nb.njit(cache=True, inline="always")
def _put(words, i):
    words[i >> 6] |= ONE << np.uint64(i & 63)


@nb.njit(cache=True)
def _range(lo, hi, out):
    """out = the bitset of bitlines [lo, hi) (words of ``out``)."""
    out[:] = 0
    for w in range(lo >> 6, (hi + 63) >> 6):
        a, b = max(lo - 64 * w, 0), min(hi - 64 * w, 64)
        if b > a:
            m = ~np.uint64(0) if b - a == 64 else ((ONE << np.uint64(b - a)) - ONE)
            out[w] = m << np.uint64(a)


@nb.njit(cache=True)
def _gather_rows(live, r0, p, w0, rng, nw, out):
    """out |= (OR of live rows [r0, r0+p)) & rng over nw words (rows clipped to the state: a row
    out of range is an error the run raises when it gets there)."""
    for r in range(max(r0, 0), min(r0 + p, live.shape[0])):
        for w in range(nw):
            out[w] |= live[r, w0 + w] & rng[w]


@nb.njit(cache=True)
def _kill_rows(live, r0, p, w0, rng, nw):
    for r in range(max(r0, 0), min(r0 + p, live.shape[0])):
        for w in range(nw):
            live[r, w0 + w] &= ~rng[w]


@nb.njit(cache=True)
def _gen_rows(live, r0, p, w0, m, nw):
    for r in range(max(r0, 0), min(r0 + p, live.shape[0])):
        for w in range(nw):
            live[r, w0 + w] |= m[w]


@nb.njit(cache=True)
def _record(need, nw, n, table, masks):
    """The lane id of bitset ``need`` over [0, n): FULL, SKIP or the index of an equal stored mask."""
    anyb, full = False, True
    for w in range(nw):
        want = ~np.uint64(0) if n - 64 * w >= 64 else ((ONE << np.uint64(n - 64 * w)) - ONE)
        anyb |= need[w] != 0
        full &= need[w] == want
    if not anyb:
        return SKIP
    if full:
        return FULL
    h = np.uint64(1469598103934665603) ^ np.uint64(n)
    for w in range(nw):
        h = (h ^ need[w]) * np.uint64(1099511628211)
    key = np.int64(h >> np.uint64(1))
    while key in table:
        j = table[key]
        m = masks[j]
        if m.shape[0] == nw and np.all(m == need[:nw]):
            return j
        key += 1
    table[key] = len(masks)
    masks.append(need[:nw].copy())
    return len(masks) - 1


@nb.njit(cache=True)
def _backward(code, oop, wbase, extents, R, W, ccols, crams, obs_off, obs, msg_words, elementwise):
    """The pass of the module docstring; returns (sel per code row, the distinct masks)."""
    K = code.shape[0]
    live = np.zeros((R + 2, wbase[-1]), np.uint64)
    MASK, CARRY = R, R + 1
    maxw = (W + 63) >> 6                 # a message or a vector of the whole tile
    for t in range(extents.shape[0]):
        maxw = max(maxw, (extents[t] + 63) >> 6)
    rng, need, src = np.zeros(maxw, np.uint64), np.zeros(maxw, np.uint64), np.zeros(maxw, np.uint64)
    msgl = np.zeros(max(msg_words, 1), np.bool_)
    sel = np.full(K, FULL, np.int64)
    table = Dict.empty(key_type=nb.int64, value_type=nb.int64)
    masks = List.empty_list(nb.uint64[::1])
    is_elem = np.zeros(256, np.bool_)
    for o in elementwise:
        is_elem[o] = True
    for k in range(K - 1, -1, -1):
        c = code[k]
        o, t = oop[k], c[T]
        E, w0 = extents[t], wbase[t]
        pred = c[PRED]
        if is_elem[o]:
            n = min(c[N], E)
            nw = (n + 63) >> 6
            _range(0, n, rng)
            need[:nw] = 0
            if o == SET_MASK:
                _gather_rows(live, MASK, 1, w0, rng, nw, need)
            else:
                _gather_rows(live, c[RD], c[PD], w0, rng, nw, need)
                if o == MAC:
                    _gather_rows(live, c[RS], c[X0], w0, rng, nw, need)
            _gather_rows(live, CARRY, 1, w0, rng, nw, need)
            if code[k, OP] == o:         # a row the interpreter runs (not left to Python)
                sel[k] = _record(need, nw, n, table, masks)
            if pred == 0:
                if o == SET_MASK:
                    _kill_rows(live, MASK, 1, w0, rng, nw)
                else:
                    _kill_rows(live, c[RD], c[PD], w0, rng, nw)
                    if o == MAC:
                        _kill_rows(live, c[RS], c[X0], w0, rng, nw)
                _kill_rows(live, CARRY, 1, w0, rng, nw)
            else:
                _gen_rows(live, MASK if pred == 1 else CARRY, 1, w0, need, nw)
            if o == SET_MASK:
                _gen_rows(live, c[RA], 1, w0, need, nw)
            elif o != SET and o != RESET:
                _gen_rows(live, c[RA], c[PA], w0, need, nw)
                if not (o == NOT or o == COPY or o == MUL_C or o == ADD_C):
                    _gen_rows(live, c[RB], c[PB], w0, need, nw)
                if o == MAC:
                    _gen_rows(live, c[RD], c[PC], w0, need, nw)
        elif o == SHIFT or o == RED_CRAM or o == RED_TILE or o == LOCAL:
            n = min(c[N], E)             # the plan keeps E >= n (and whole reduction groups)
            nw, ew = (n + 63) >> 6, (E + 63) >> 6
            _range(0, n, rng)
            need[:nw] = 0
            _gather_rows(live, c[RD], c[PD], w0, rng, nw, need)
            _gather_rows(live, CARRY, 1, w0, rng, nw, need)
            if code[k, OP] == o:
                sel[k] = _record(need, nw, n, table, masks)
            if pred == 0:
                _kill_rows(live, c[RD], c[PD], w0, rng, nw)
                _kill_rows(live, CARRY, 1, w0, rng, nw)
            else:
                _gen_rows(live, MASK if pred == 1 else CARRY, 1, w0, need, nw)
            src[:ew] = 0
            x0 = c[X0]
            for i in range(n):
                if not _bit(need, i):
                    continue
                if o == SHIFT:
                    s = i + x0 if c[X1] == 0 else i - x0
                    if 0 <= s < n:
                        _put(src, s)
                elif o == RED_CRAM:
                    if i % x0 == 0:
                        for g in range(i, min(i + x0, E)):
                            _put(src, g)
                elif o == RED_TILE:
                    span = x0 * ccols
                    j = i % span
                    if j < ccols:
                        for kk in range(x0):
                            g = i - j + kk * ccols + j
                            if g < E:
                                _put(src, g)
                else:
                    g = (i // ccols) * ccols + (i % ccols) % x0
                    if g < E:
                        _put(src, g)
            _gen_rows(live, c[RA], c[PA], w0, src, ew)
        elif o == POPCOUNT:
            n = min(c[N], E)
            _range(0, n, rng)
            _gen_rows(live, c[RA], c[PA], w0, rng, (n + 63) >> 6)
        elif o == LOAD:
            lo, hi = c[X0], min(c[X0] + c[N], E)
            if hi > lo:
                _range(lo, hi, rng)
                _kill_rows(live, c[RD], c[PD], w0, rng, (hi + 63) >> 6)
        elif o == LOAD_SHF:
            hi = E if c[X3] else min(c[N], E)
            _range(0, hi, rng)
            _kill_rows(live, c[RD], c[PD], w0, rng, (hi + 63) >> 6)
        elif o == STORE:
            lo, hi = c[X0], min(c[X0] + c[N], E)
            if hi > lo:
                if obs_off[k] < 0:
                    _range(lo, hi, rng)
                else:                    # the observed elements only
                    rng[:(hi + 63) >> 6] = 0
                    for e in range(hi - lo):
                        if _bit(obs[obs_off[k]:], e):
                            _put(rng, lo + e)
                _gen_rows(live, c[RD], c[PD], w0, rng, (hi + 63) >> 6)
        elif o == CRAM_TX or o == CRAM_BC:
            p, ew = c[PD], (E + 63) >> 6
            src[:ew] = 0
            s0 = c[X0] if o == CRAM_TX else 0
            for d in range(1 if o == CRAM_TX else crams - 1):
                dst = c[X1] if o == CRAM_TX else (d + 1) * ccols
                hi = min(dst + ccols, E)
                if hi <= dst:
                    continue
                _range(dst, hi, rng)
                need[:ew] = 0
                _gather_rows(live, c[RD], p, w0, rng, ew, need)
                _kill_rows(live, c[RD], p, w0, rng, ew)
                for i in range(hi - dst):
                    if _bit(need, dst + i) and s0 + i < E:
                        _put(src, s0 + i)
            _gen_rows(live, c[RA], p, w0, src, ew)
        elif o == TILE_RX and c[X3] != 4:
            mode, G, p = c[X3], c[X0], c[PD]
            hi = E if mode else min(c[N], E)
            nw = (hi + 63) >> 6
            _range(0, hi, rng)
            need[:nw] = 0
            _gather_rows(live, c[RD], p, w0, rng, nw, need)
            if code[k, OP] == o:
                sel[k] = _record(need, nw, hi, table, masks)
            _kill_rows(live, c[RD], p, w0, rng, nw)
            for g in range(hi):
                if _bit(need, g):
                    b = g % ccols
                    e = g if mode == 0 else (b if mode == 1 else (b % G if mode == 2 else (g // ccols) * G + b % G))
                    if c[MOFF] + e < msgl.shape[0]:
                        msgl[c[MOFF] + e] = True
        elif o == TILE_TX and c[X1] != 2:
            G, ew = (c[X0] if c[X1] == 1 else c[N]), (E + 63) >> 6
            count = crams * G if c[X1] == 1 else c[N]
            src[:ew] = 0
            need[:(count + 63) >> 6] = 0
            for e in range(count):       # message element e from bitline (e // G)·cram_cols + e % G
                m, g = c[MOFF] + e, (e // G) * ccols + e % G
                if m < msgl.shape[0] and msgl[m]:
                    msgl[m] = False
                    _put(need, e)
                    if g < E:
                        _put(src, g)
            if code[k, OP] == o:
                sel[k] = _record(need, (count + 63) >> 6, count, table, masks)
            _gen_rows(live, c[RA], c[PD], w0, src, ew)
    return sel, masks


def _observed_words(plan: FunctionalPlan, oop: np.ndarray, observed: np.ndarray | None, loads_hit: np.ndarray):
    """Per code row: offset of its store's observed-element bitset in the returned words (−1: every
    element), from the observed DRAM bytes (a bool array from address 0; beyond it: unobserved)."""
    code = plan.code
    off = np.full(len(code), -1, np.int64)
    chunks, pos = [], 0
    for k in np.flatnonzero(oop == STORE):
        if observed is None or loads_hit[k]:
            continue
        c = code[k]
        n, w, tr, addr = int(c[N]), int(c[COL["x1"]]), int(c[COL["x2"]]), int(c[ADDR])
        seen = observed[addr:addr + int(c[DBYTES])]
        seen = np.pad(seen, (0, int(c[DBYTES]) - len(seen)))
        if not tr:
            el = np.full(n, bool(seen.any()))
        elif w >= 8:
            el = seen[:n * (w // 8)].reshape(n, w // 8).any(axis=1)
        else:
            el = seen[(np.arange(n) * w) >> 3]
        bits = np.packbits(np.pad(el, (0, -n % 64)), bitorder="little").view(np.uint64)
        off[k] = pos
        chunks.append(bits)
        pos += len(bits)
    words = np.concatenate(chunks) if chunks else np.zeros(1, np.uint64)
    return off, words


def _stores_read_back(plan: FunctionalPlan, oop: np.ndarray) -> np.ndarray:
    """Per code row: a store whose DRAM bytes some read of the same program overlaps."""
    code = plan.code
    lo, hi = code[:, ADDR], code[:, ADDR] + code[:, DBYTES]
    reads = np.isin(oop, [LOAD, LOAD_SHF, OPC["load_rf"]]) & (code[:, DBYTES] > 0)
    st = (oop == STORE) & (code[:, DBYTES] > 0)
    out = np.zeros(len(code), bool)
    if not reads.any() or not st.any():
        return out
    r_lo, r_hi = lo[reads], hi[reads]
    idx = np.argsort(r_lo)
    r_lo, r_hi = r_lo[idx], np.maximum.accumulate(r_hi[idx])
    s = np.flatnonzero(st)
    j = np.searchsorted(r_lo, hi[s], side="left") - 1     # the last read starting before the store ends
    out[s] = (j >= 0) & (r_hi[np.maximum(j, 0)] > lo[s])
    return out


def lanes_for(plan: FunctionalPlan, prog: PimsabProgram, cfg: PimsabConfig, observed: np.ndarray) -> Lanes:
    """The bitlines each compute row of ``plan`` must evaluate for the DRAM bytes ``observed``
    (a bool array over addresses from 0) to equal a full evaluation."""
    code = plan.code
    oop = prog.rows["op"][plan.order].astype(np.int64)
    back = _stores_read_back(plan, oop)
    obs_off, obs = _observed_words(plan, oop, np.asarray(observed, bool), back)
    ext = plan.extents.astype(np.int64)
    wbase = np.concatenate(([0], np.cumsum((ext + 63) >> 6))).astype(np.int64)
    sel, masks = _backward(code, oop, wbase, ext, cfg.cram_rows, cfg.tile_bitlines, cfg.cram_cols, cfg.crams_per_tile, obs_off, obs,
                           plan.msg_words, ELEMENTWISE)
    sel = np.asarray(sel)
    spans = np.zeros((max(len(masks), 1), 2), np.int64)
    parts, pos = [], 0
    for j, m in enumerate(masks):
        ix = np.flatnonzero(np.unpackbits(np.asarray(m).view(np.uint8), bitorder="little"))
        spans[j] = pos, pos + len(ix)
        parts.append(ix)
        pos += len(ix)
    idx = np.concatenate(parts).astype(np.int64) if parts else np.zeros(1, np.int64)
    return Lanes(sel, spans, idx)
