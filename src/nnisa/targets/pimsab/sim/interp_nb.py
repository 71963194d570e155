"""The compiled interpreter of a planned batched run: the whole instruction stream in one kernel.

:func:`run` executes the rows of :class:`.plan.FunctionalPlan` ``code`` from ``k0`` on, for every
sample, on the column state of :mod:`.batch` (samples innermost: ``cols`` (columns, words, B),
latches ``mask``/``carry`` (columns, B), ``rf`` (tiles, regs, B)), the DRAM buffers of
:class:`.batch.FlatDram` (``own`` (bytes, B), ``shared`` (bytes, 1)) and a message buffer
(words, B); it returns at the first row whose opcode is :data:`.plan.PY` (the driver runs it with
the reference semantics, then calls again) or at the end.

Work goes one bitline at a time, across the samples: an operand of bitline g is the word (or two
words) of ``cols[g]`` that holds its rows, the same shift and mask for every sample, so each step
is a branch-free loop over B contiguous words that the compiler vectorises (:func:`_ld_row`,
:func:`_st_row`).  An element-wise instruction reads all its operands of a bitline before it
writes that bitline, which makes in-place updates exact; the instructions that read across
bitlines (``shift``, reductions, ``cram_local_shf``, transfers) order their bitlines so that no
source is overwritten before it is read.  The semantics are those of :mod:`.compute` and
:mod:`.machine` for integers (the reference; tests compare the two on random instruction
streams).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cram_nb import ZERO, load, low, operand
from .liveness import FULL, SKIP
from .plan import COL, OPC, PY

OP, T, N, PRED, RD, RA, RB, RS = (COL[c] for c in ("op", "t", "n", "pred", "rd", "ra", "rb", "rs"))
PD, SD, PA, SA, PB, SB, PC, SC, PE, SE = (COL[c] for c in ("pd", "sd", "pa", "sa", "pb", "sb", "pc", "sc", "pe", "se"))
X0, X1, X2, X3, DOFF, DOWN, DBYTES, MOFF = (COL[c] for c in ("x0", "x1", "x2", "x3", "doff", "down", "dbytes",
                                                            "moff"))
(ADD, SUB, MULT, MAX, MIN, AND, OR, XOR, NOT, COPY, SET, RESET, SHIFT, SET_MASK, RED_CRAM, RED_TILE, LOCAL, MAC,
 MUL_C, ADD_C, DOT_C, WRITE_RF, ADD_RF, SUB_RF, POPCOUNT, LOAD, STORE, LOAD_SHF, LOAD_RF, STORE_RF, CRAM_TX,
 CRAM_BC, TILE_TX, TILE_RX) = (OPC[m] for m in (
    "add", "sub", "mult", "max", "min", "and", "or", "xor", "not", "copy", "set", "reset", "shift", "set_mask",
    "reduce_cram", "reduce_tile", "cram_local_shf", "mac", "mul_const", "add_const", "dot_const", "write_rf",
    "add_rf", "sub_rf", "popcount_rf", "load", "store", "load_shf", "load_rf", "store_rf", "cram_tx_rx",
    "cram_bcast", "tile_tx", "tile_rx"))
U1 = np.uint64(1)
M32 = np.uint64(0xFFFFFFFF)
KEEP, CLEAR, CARRY = 0, 1, 2      # what a write does to the carry latch
#: scratch rows of ``tmp`` (each at least B words): operands, result, carries, enables, constants
RA_, RB_, RC_, RY_, REN, RK1, RK2, RZ = range(8)
TMP_ROWS = 8


@nb.njit(cache=True, inline="always")
def _ld_row(cols, g, od, out):
    """out[b] = the operand ``od`` at bitline g of sample b (sign-extended when signed)."""
    k, k2, sh, r, m, hm, sgn = od
    w0 = cols[g, k]
    if hm:
        w1 = cols[g, k2]
        for b in range(w0.shape[0]):
            x = ((w0[b] >> sh) | (w1[b] << r)) & m
            out[b] = (x ^ sgn) - sgn
    else:
        for b in range(w0.shape[0]):
            out[b] = (((w0[b] >> sh) & m) ^ sgn) - sgn


@nb.njit(cache=True, inline="always")
def _put_row(cols, g, od, v):
    """Store the low p bits of v[b] at bitline g of every sample (no predicate, latches kept)."""
    k, k2, sh, r, m, hm, _ = od
    w0 = cols[g, k]
    keep = ~(m << sh)
    for b in range(w0.shape[0]):
        w0[b] = (w0[b] & keep) | ((v[b] & m) << sh)
    if hm:
        w1 = cols[g, k2]
        keep1 = ~(m >> r)
        for b in range(w1.shape[0]):
            w1[b] = (w1[b] & keep1) | ((v[b] & m) >> r)


@nb.njit(cache=True, inline="always")
def _st_row(cols, mask, carry, g, od, v, y, pred, cy, en):
    """Store v[b] at bitline g where predicate ``pred`` allows (0: always, 1: mask, 2: carry,
    3: not carry); the carry latch of a written bitline is kept (KEEP), cleared (CLEAR) or set to
    y[b] ≠ 0 (CARRY).  ``en``: a scratch row for the enables."""
    cr = carry[g]
    if pred == 0:
        _put_row(cols, g, od, v)
        if cy == CLEAR:
            for b in range(cr.shape[0]):
                cr[b] = False
        elif cy == CARRY:
            for b in range(cr.shape[0]):
                cr[b] = y[b] != 0
        return
    k, k2, sh, r, m, hm, _ = od
    mk, w0 = mask[g], cols[g, k]
    keep = cy == KEEP
    for b in range(cr.shape[0]):
        c = cr[b]
        e = ((pred == 1) & mk[b]) | ((pred == 2) & c) | ((pred == 3) & (not c))
        en[b] = ZERO - np.uint64(e)
        w0[b] ^= (w0[b] ^ (v[b] << sh)) & (m << sh) & en[b]
        new = ((cy == CARRY) & (y[b] != 0)) & e
        cr[b] = (keep & c) | ((not keep) & (new | (c & (not e))))
    if hm:
        w1 = cols[g, k2]
        for b in range(w1.shape[0]):
            w1[b] ^= (w1[b] ^ ((v[b] & m) >> r)) & (m >> r) & en[b]


@nb.njit(cache=True)
def _rf_const(rf, t, reg, bits, signed, out):
    """out[b] = RF register ``reg`` of sample b read at a precision (low min(bits, 32) bits,
    extended)."""
    od = operand(0, bits, signed)
    sgn, m = od[6], low(min(bits, 32))
    for b in range(out.shape[0]):
        out[b] = ((np.uint64(rf[t, reg, b]) & m) ^ sgn) - sgn


@nb.njit(cache=True)
def _compute(c, o, cols, mask, carry, rf, base, tmp, lanes, full):
    """Instructions whose bitline i reads and writes only bitline i, one bitline at a time: every
    bitline of [0, n) when ``full``, else the bitlines ``lanes`` (offsets; :mod:`.liveness`)."""
    B = cols.shape[2]
    t, pred = c[T], c[PRED]
    n = c[N] if full else lanes.shape[0]
    A, Bv, C, Y, EN = tmp[RA_, :B], tmp[RB_, :B], tmp[RC_, :B], tmp[RY_, :B], tmp[REN, :B]
    K1, K2, Z = tmp[RK1, :B], tmp[RK2, :B], tmp[RZ, :B]
    Z[:] = 0
    od_d = operand(c[RD], c[PD], False)
    if o == SET_MASK:
        od = operand(c[RA], 1, False)
        for i in range(n):
            g = base + (i if full else lanes[i])
            _ld_row(cols, g, od, A)
            mk, cr = mask[g], carry[g]
            for b in range(B):
                cc = cr[b]
                e = (pred == 0) | ((pred == 1) & mk[b]) | ((pred == 2) & cc) | ((pred == 3) & (not cc))
                mk[b] = (e & (A[b] != 0)) | ((not e) & mk[b])
                cr[b] = cc & (not e)
        return
    if o == SET or o == RESET:
        v = low(c[PD]) if o == SET else ZERO
        for b in range(B):
            A[b] = v
        for i in range(n):
            _st_row(cols, mask, carry, base + (i if full else lanes[i]), od_d, A, Z, pred, CLEAR, EN)
        return
    sa, sb = c[SA] != 0, c[SB] != 0
    od_a, od_b = operand(c[RA], c[PA], sa), operand(c[RB], c[PB], sb)
    od_c, od_s = operand(c[RD], c[PC], c[SC] != 0), operand(c[RS], max(c[X0], 1), False)
    if o == MUL_C or o == ADD_C:
        _rf_const(rf, t, c[RB], c[PB], sb, K1)
    elif o == DOT_C:
        _rf_const(rf, t, c[X0], c[PC], c[SC] != 0, K1)
        _rf_const(rf, t, c[X1], c[PE], c[SE] != 0, K2)
    if o == MAC and pred == 0 and not (od_a[5] or od_b[5] or od_c[5] or od_d[5] or od_s[5]):
        _mac_plain(cols, carry, base, n, od_a, od_b, od_c, od_d, od_s, A, lanes, full)
        return
    two = not (o == NOT or o == COPY or o == MUL_C or o == ADD_C)
    pd = c[PD]
    m = low(pd)
    sh = np.uint64(min(pd, 63))
    for i in range(n):
        g = base + (i if full else lanes[i])
        _ld_row(cols, g, od_a, A)
        if two:
            _ld_row(cols, g, od_b, Bv)
        cy = CLEAR
        if o == ADD or o == ADD_C:
            cy = CARRY
            if o == ADD_C:
                for b in range(B):
                    Bv[b] = K1[b]
            if pd >= 64:
                for b in range(B):
                    s = A[b] + Bv[b]
                    Y[b] = np.uint64(s < A[b])
                    A[b] = s
            else:
                for b in range(B):
                    s = (A[b] & m) + (Bv[b] & m)
                    Y[b] = (s >> sh) & U1
                    A[b] = s
        elif o == SUB:
            cy = CARRY
            for b in range(B):
                Y[b] = np.uint64((A[b] & m) >= (Bv[b] & m))
                A[b] = A[b] - Bv[b]
        elif o == MULT:
            for b in range(B):
                A[b] = A[b] * Bv[b]
        elif o == MUL_C:
            for b in range(B):
                A[b] = A[b] * K1[b]
        elif o == AND:
            for b in range(B):
                A[b] = A[b] & Bv[b]
        elif o == OR:
            for b in range(B):
                A[b] = A[b] | Bv[b]
        elif o == XOR:
            for b in range(B):
                A[b] = A[b] ^ Bv[b]
        elif o == MAX or o == MIN:
            # x >= y for values read as signed (sa, sb) or unsigned: the sign decides when the signs
            # differ, else the unsigned order of the two's-complement patterns
            for b in range(B):
                x, y = A[b], Bv[b]
                xn = sa & (np.int64(x) < 0)
                yn = sb & (np.int64(y) < 0)
                ge = ((xn == yn) & (x >= y)) | ((xn != yn) & yn)
                pick = ge if o == MAX else (((xn == yn) & (y >= x)) | ((xn != yn) & xn))
                A[b] = x if pick else y
        elif o == NOT:
            for b in range(B):
                A[b] = ~A[b]
        elif o == DOT_C:
            for b in range(B):
                A[b] = A[b] * K1[b] + Bv[b] * K2[b]
        elif o == MAC:   # d = acc + a × b; the scratch rows are cleared
            _ld_row(cols, g, od_c, C)
            for b in range(B):
                A[b] = C[b] + A[b] * Bv[b]
            _st_row(cols, mask, carry, g, od_s, Z, Z, pred, KEEP, EN)
        _st_row(cols, mask, carry, g, od_d, A, Y, pred, cy, EN)


@nb.njit(cache=True)
def _mac_plain(cols, carry, base, n, od_a, od_b, od_c, od_d, od_s, r, lanes, full):
    """``mac`` without a predicate and with no operand across two words (the hot instruction of
    compiled convolutions): per bitline one fused loop into ``r`` (a scratch row, so that the
    compiler sees no overlap with the words it reads and vectorises), then the stores."""
    ka, _, sha, _, ma, _, sga = od_a
    kb, _, shb, _, mb, _, sgb = od_b
    kc, _, shc, _, mc, _, sgc = od_c
    kd, _, shd, _, md, _, _ = od_d
    ks, _, shs, _, ms, _, _ = od_s
    keep_d, keep_s = ~(md << shd), ~(ms << shs)
    for i in range(n):
        g = base + (i if full else lanes[i])
        wa, wb, wc, wd, ws = cols[g, ka], cols[g, kb], cols[g, kc], cols[g, kd], cols[g, ks]
        for b in range(wa.shape[0]):
            a = (((wa[b] >> sha) & ma) ^ sga) - sga
            x = (((wb[b] >> shb) & mb) ^ sgb) - sgb
            acc = (((wc[b] >> shc) & mc) ^ sgc) - sgc
            r[b] = ((acc + a * x) & md) << shd
        for b in range(wd.shape[0]):
            wd[b] = (wd[b] & keep_d) | r[b]
        for b in range(ws.shape[0]):
            ws[b] &= keep_s
        cr = carry[g]
        for b in range(cr.shape[0]):
            cr[b] = False


@nb.njit(cache=True)
def _across(c, o, cols, mask, carry, base, E, ccols, tmp, lanes, full):
    """``shift``, ``reduce_cram``, ``reduce_tile``, ``cram_local_shf`` (carry cleared), on every
    destination bitline of [0, n) when ``full``, else on the bitlines ``lanes`` (ascending).  No
    source bitline is written before it is read: a shift runs away from its sources; a reduction
    group or a CRAM's local shuffle reads its sources first."""
    B = cols.shape[2]
    n, x0, pred = c[N], c[X0], c[PRED]
    cnt = n if full else lanes.shape[0]
    od_a, od_d = operand(c[RA], c[PA], c[SA] != 0), operand(c[RD], c[PD], False)
    R, X, EN, Z = tmp[RB_, :B], tmp[RC_, :B], tmp[REN, :B], tmp[RZ, :B]
    Z[:] = 0
    if o == SHIFT:
        for k in range(cnt):
            kk = k if c[X1] == 0 else cnt - 1 - k
            i = kk if full else lanes[kk]
            src = i + x0 if c[X1] == 0 else i - x0
            if 0 <= src < n:
                _ld_row(cols, base + src, od_a, R)
                _st_row(cols, mask, carry, base + i, od_d, R, Z, pred, CLEAR, EN)
            else:
                _st_row(cols, mask, carry, base + i, od_d, Z, Z, pred, CLEAR, EN)
        return
    if o == RED_TILE:   # groups of x0 CRAMs: sums in the group's first CRAM, zeros after
        span = x0 * ccols
        for k in range(cnt):
            i = k if full else lanes[k]
            q = i - i % span
            j = i - q
            if j < min(ccols, n - q):
                R[:] = 0
                for kk in range(x0):
                    g = q + kk * ccols + j
                    if g < E:
                        _ld_row(cols, base + g, od_a, X)
                        for b in range(B):
                            R[b] += X[b]
                _st_row(cols, mask, carry, base + i, od_d, R, Z, pred, CLEAR, EN)
            else:
                _st_row(cols, mask, carry, base + i, od_d, Z, Z, pred, CLEAR, EN)
        return
    if o == RED_CRAM:   # groups of x0 bitlines: the sum in the group's first bitline, zeros after
        for k in range(cnt):
            i = k if full else lanes[k]
            if i % x0 == 0:
                R[:] = 0
                for kk in range(x0):
                    if i + kk < E:
                        _ld_row(cols, base + i + kk, od_a, X)
                        for b in range(B):
                            R[b] += X[b]
                _st_row(cols, mask, carry, base + i, od_d, R, Z, pred, CLEAR, EN)
            else:
                _st_row(cols, mask, carry, base + i, od_d, Z, Z, pred, CLEAR, EN)
        return
    # cram_local_shf: bitline j of a CRAM takes its bitline j mod x0 (a CRAM's x0 sources read first)
    S = tmp[RA_]
    q_now = -1
    for k in range(cnt):
        i = k if full else lanes[k]
        q = i - i % ccols
        if q != q_now:
            q_now = q
            for j in range(x0):
                if q + j < E:
                    _ld_row(cols, base + q + j, od_a, S[j * B:(j + 1) * B])
                else:
                    S[j * B:(j + 1) * B] = 0
        s = ((i - q) % x0) * B
        _st_row(cols, mask, carry, base + i, od_d, S[s:s + B], Z, pred, CLEAR, EN)


@nb.njit(cache=True, inline="always")
def _dram_get(buf, col, off, i, w, tr, p, plane):
    """Element i of a DRAM vector at ``off`` of column ``col`` of ``buf`` (bytes, samples): w-bit
    packed elements (tr=1) or p bit planes of ``plane`` bytes."""
    if tr:
        if w >= 8:
            v = ZERO
            q = off + i * (w // 8)
            for j in range(w // 8):
                v |= np.uint64(buf[q + j, col]) << np.uint64(8 * j)
            return v
        bit = i * w
        return (np.uint64(buf[off + (bit >> 3), col]) >> np.uint64(bit & 7)) & low(w)
    v = ZERO
    for j in range(p):
        v |= ((np.uint64(buf[off + j * plane + (i >> 3), col]) >> np.uint64(i & 7)) & U1) << np.uint64(j)
    return v


@nb.njit(cache=True, inline="always")
def _dram_put(buf, col, off, i, w, v):
    """Element i as a w-bit packed element (its bytes were cleared)."""
    if w >= 8:
        q = off + i * (w // 8)
        for j in range(w // 8):
            buf[q + j, col] = np.uint8((v >> np.uint64(8 * j)) & np.uint64(0xFF))
    else:
        bit = i * w
        buf[off + (bit >> 3), col] |= np.uint8((v & low(w)) << np.uint64(bit & 7))


@nb.njit(cache=True, inline="always")
def _spread_src(mode, g, ccols, G):
    """Source element of tile bitline g for a spread write (mode 1 bcast, 2 bcast+shuffle, 3 shuffle)."""
    if mode == 0:
        return g
    b = g % ccols
    if mode == 1:
        return b
    if mode == 2:
        return b % G
    return (g // ccols) * G + b % G


@nb.njit(cache=True)
def _dram_read(c, own, shared, n, plane, w, tr, p, out, B):
    """out[i·B + b] = element i < n of the instruction's DRAM vector (bit planes of ``plane``
    bytes when tr=0; shared data decoded once)."""
    off = c[DOFF]
    if c[DOWN] and tr and w >= 8:    # whole bytes per element: rows of B samples at a time
        nb_ = w // 8
        for i in range(n):
            r = out[i * B:(i + 1) * B]
            r[:] = 0
            for j in range(nb_):
                src = own[off + i * nb_ + j]
                s8 = np.uint64(8 * j)
                for b in range(B):
                    r[b] |= np.uint64(src[b]) << s8
    elif c[DOWN]:
        for i in range(n):
            for b in range(B):
                out[i * B + b] = _dram_get(own, b, off, i, w, tr, p, plane)
    else:
        for i in range(n):
            v = _dram_get(shared, 0, off, i, w, tr, p, plane)
            for b in range(B):
                out[i * B + b] = v


@nb.njit(cache=True)
def _dram_op(c, o, cols, rf, base, E, own, shared, tmp, ccols):
    """``load``, ``store``, ``load_shf``, ``load_rf``, ``store_rf``."""
    B = cols.shape[2]
    t, n, row, p = c[T], c[N], c[RD], c[PD]
    w, tr, off = c[X1], c[X2] != 0, c[DOFF]
    A = tmp[0]
    if o == LOAD or o == LOAD_SHF:
        od = operand(row, p, False)
        if o == LOAD:
            start = c[X0]
            kept = max(min(n, E - start), 0)          # elements on bitlines the program reads
            _dram_read(c, own, shared, kept, (n + 7) // 8, w, tr, p, A, B)
            for i in range(kept):
                _put_row(cols, base + start + i, od, A[i * B:(i + 1) * B])
        else:
            _dram_read(c, own, shared, n, (n + 7) // 8, w, tr, p, A, B)
            mode, G = c[X3], c[X0]
            for g in range(E if mode else min(n, E)):
                q = _spread_src(mode, g, ccols, G) * B
                _put_row(cols, base + g, od, A[q:q + B])
    elif o == STORE:
        start, plane = c[X0], (n + 7) // 8
        own[off:off + c[DBYTES], :] = 0
        od = operand(row, p, c[SD] != 0 and tr)
        for i in range(n):
            for b in range(B):
                v = load(cols, base + start + i, b, od) if start + i < E else ZERO
                if tr:
                    _dram_put(own, b, off, i, w, v)
                else:
                    for j in range(p):
                        own[off + j * plane + (i >> 3), b] |= np.uint8(((v >> np.uint64(j)) & U1) << np.uint64(i & 7))
    elif o == LOAD_RF:
        if n == 0:   # the whole RF, little-endian 32-bit words
            _dram_read(c, own, shared, rf.shape[1], 0, 32, True, 32, A, B)
            for j in range(rf.shape[1]):
                for b in range(B):
                    rf[t, j, b] = np.uint32(A[j * B + b])
        else:
            _dram_read(c, own, shared, n, 0, w, True, p, A, B)
            od = operand(0, p, c[SD] != 0)
            for j in range(n):
                for b in range(B):
                    v = ((A[j * B + b] & od[4]) ^ od[6]) - od[6]
                    rf[t, row + j, b] = np.uint32(v & M32)
    else:   # STORE_RF
        own[off:off + c[DBYTES], :] = 0
        od = operand(0, p, c[SD] != 0) if n else operand(0, 32, False)
        for j in range(n if n else rf.shape[1]):
            for b in range(B):
                v = ((np.uint64(rf[t, row + j if n else j, b]) & od[4]) ^ od[6]) - od[6]
                _dram_put(own, b, off, j, w if n else 32, v)


@nb.njit(cache=True)
def _move(c, o, cols, rf, base, E, msg, tmp, ccols, crams, lanes, full):
    """``cram_tx_rx``, ``cram_bcast``, ``tile_tx``, ``tile_rx``."""
    B = cols.shape[2]
    t, n, moff = c[T], c[N], c[MOFF]
    p = c[PD]
    if o == CRAM_TX or o == CRAM_BC:
        A = tmp[0]
        src, oda = base + (c[X0] if o == CRAM_TX else 0), operand(c[RA], p, False)
        for i in range(n):
            if src - base + i < E:
                _ld_row(cols, src + i, oda, A[i * B:(i + 1) * B])
            else:
                A[i * B:(i + 1) * B] = 0
        od = operand(c[RD], p, False)
        for d in range(1 if o == CRAM_TX else crams - 1):
            dst = c[X1] if o == CRAM_TX else (d + 1) * ccols
            for i in range(max(min(n, E - dst), 0)):
                _put_row(cols, base + dst + i, od, A[i * B:(i + 1) * B])
    elif o == TILE_TX:   # message element e of the lanes (all: full) from its bitline
        mode = c[X1]
        if mode == 2:      # the RF image
            for j in range(n):
                for b in range(B):
                    msg[moff + j, b] = np.uint64(rf[t, j, b])
        else:
            od = operand(c[RA], p, False)
            G = c[X0] if mode == 1 else n
            for k in range((crams * G if mode == 1 else n) if full else lanes.shape[0]):
                e = k if full else lanes[k]
                g = (e // G) * ccols + e % G
                if g < E:
                    _ld_row(cols, base + g, od, msg[moff + e])
                else:
                    msg[moff + e] = 0
    else:   # TILE_RX: the bitlines of the lanes (all: full)
        mode = c[X3]
        if mode == 4:
            for j in range(n):
                for b in range(B):
                    rf[t, j, b] = np.uint32(msg[moff + j, b])
        else:
            od = operand(c[RD], p, False)
            for k in range((E if mode else min(n, E)) if full else lanes.shape[0]):
                g = k if full else lanes[k]
                _put_row(cols, base + g, od, msg[moff + _spread_src(mode, g, ccols, c[X0])])


@nb.njit(cache=True)
def _rf_scalar(c, o, cols, rf, base):
    B = cols.shape[2]
    t, rd = c[T], c[RD]
    if o == POPCOUNT:
        od = operand(c[RA], c[PA], False)
        for b in range(B):
            s = ZERO
            for i in range(c[N]):
                s += load(cols, base + i, b, od)
            rf[t, rd, b] = np.uint32(s & M32)
        return
    for b in range(B):
        if o == WRITE_RF:
            rf[t, rd, b] = np.uint32(c[X0])
        elif o == ADD_RF:
            rf[t, rd, b] = np.uint32((np.uint64(rf[t, c[RA], b]) + np.uint64(rf[t, c[RB], b])) & M32)
        else:   # SUB_RF
            rf[t, rd, b] = np.uint32((np.uint64(rf[t, c[RA], b]) - np.uint64(rf[t, c[RB], b])) & M32)


@nb.njit(cache=True)
def run(code, k0, cols, mask, carry, rf, bases, extents, own, shared, msg, tmp, ccols, crams, sel, spans, lidx):
    """Execute ``code[k0:]`` until a :data:`.plan.PY` row (returned) or the end (``len(code)``);
    an element-wise row k evaluates the bitlines ``sel[k]`` selects (:class:`.liveness.Lanes`)."""
    K = code.shape[0]
    for k in range(k0, K):
        c = code[k]
        o = c[OP]
        if o == PY:
            return k
        base, E = bases[c[T]], extents[c[T]]
        s = sel[k]
        if s == SKIP:
            continue
        lanes = lidx[spans[max(s, 0), 0]:spans[max(s, 0), 1]]
        if o == SHIFT or o == RED_CRAM or o == RED_TILE or o == LOCAL:
            _across(c, o, cols, mask, carry, base, E, ccols, tmp, lanes, s == FULL)
        elif (ADD <= o <= SET_MASK) or o == MAC or o == MUL_C or o == ADD_C or o == DOT_C:
            _compute(c, o, cols, mask, carry, rf, base, tmp, lanes, s == FULL)
        elif o == WRITE_RF or o == ADD_RF or o == SUB_RF or o == POPCOUNT:
            _rf_scalar(c, o, cols, rf, base)
        elif LOAD <= o <= STORE_RF:
            _dram_op(c, o, cols, rf, base, E, own, shared, tmp, ccols)
        elif CRAM_TX <= o <= TILE_RX:
            _move(c, o, cols, rf, base, E, msg, tmp, ccols, crams, lanes, s == FULL)
    return K
