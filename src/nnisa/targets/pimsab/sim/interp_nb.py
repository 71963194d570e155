"""The compiled interpreter of a planned batched run: the whole instruction stream in one kernel.

:func:`run` executes the rows of :class:`.plan.FunctionalPlan` ``code`` from ``k0`` on, for every
sample, on the column state of :mod:`.batch` (samples innermost: ``cols`` (columns, words, B),
latches ``mask``/``carry`` (columns, B), ``rf`` (tiles, regs, B)), the DRAM buffers of
:class:`.batch.FlatDram` (``own`` (bytes, B), ``shared`` (bytes, 1)) and a message buffer
(words, B); it returns at the first row whose opcode is :data:`.plan.PY` (the driver runs it with
the reference semantics, then calls again) or at the end.

A compute instruction runs in three passes over flat (bitlines × samples) scratch rows: gather
the operands (sign-extended words), compute, scatter the result through the predicate (the
carry latch takes the add/sub carry, else 0).  Every pass is a branch-free loop over the samples,
so the work per element is a few vector instructions; reading every source before writing also
makes in-place updates and the instructions that read across bitlines (``shift``, reductions,
``cram_local_shf``, CRAM transfers) exact.  The semantics are those of :mod:`.compute` and
:mod:`.machine` for integers (the reference; tests compare the two on random instruction
streams).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cram_nb import ALL, ZERO, load, low, operand, store
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
KEEP, CLEAR, CARRY = 0, 1, 2      # what a scatter does to the carry latch


@nb.njit(cache=True)
def _gather(cols, base, n, od, out):
    """out[i·B + b] = the operand at bitline base + i, sample b."""
    B = cols.shape[2]
    for i in range(n):
        g = base + i
        for b in range(B):
            out[i * B + b] = load(cols, g, b, od)


@nb.njit(cache=True, inline="always")
def _put(cols, mask, carry, g, b, od, v, y, pred, cy):
    """Store ``v`` at bitline g of sample b where predicate ``pred`` allows; the carry latch of a
    written bitline is kept (KEEP), cleared (CLEAR) or set to ``y`` ≠ 0 (CARRY)."""
    c = carry[g, b]
    e = (pred == 0) | ((pred == 1) & mask[g, b]) | ((pred == 2) & c) | ((pred == 3) & (not c))
    store(cols, g, b, od, v, ZERO - np.uint64(e))
    keep = cy == KEEP
    new = ((cy == CARRY) & (y != 0)) & e
    carry[g, b] = (keep & c) | ((not keep) & (new | (c & (not e))))


@nb.njit(cache=True)
def _scatter(cols, mask, carry, base, n, od, R, Y, pred, cy):
    """:func:`_put` of R[i·B + b] (carry Y[i·B + b]) at bitlines [base, base+n)."""
    B = cols.shape[2]
    for i in range(n):
        g = base + i
        for b in range(B):
            _put(cols, mask, carry, g, b, od, R[i * B + b], Y[i * B + b], pred, cy)


@nb.njit(cache=True)
def _fill(cols, mask, carry, base, n, od, v, pred, cy):
    """:func:`_put` of the value ``v`` at bitlines [base, base+n)."""
    B = cols.shape[2]
    for i in range(n):
        for b in range(B):
            _put(cols, mask, carry, base + i, b, od, v, ZERO, pred, cy)


@nb.njit(cache=True, inline="always")
def _chunk(B):
    """Bitlines per pass of a compute instruction: the scratch rows stay in the L1/L2 caches."""
    return max(8, 4096 // max(B, 1))


@nb.njit(cache=True)
def _rf_const(rf, t, reg, bits, signed, n, out):
    """out[i·B + b] = RF register ``reg`` of sample b read at a precision (low min(bits, 32) bits,
    extended), for every i < n."""
    B = rf.shape[2]
    od = operand(0, bits, signed)
    sgn, m = od[6], low(min(bits, 32))
    for b in range(B):
        v = ((np.uint64(rf[t, reg, b]) & m) ^ sgn) - sgn
        for i in range(n):
            out[i * B + b] = v


@nb.njit(cache=True)
def _compute(c, o, cols, mask, carry, rf, base, tmp):
    """Instructions whose bitline i reads and writes only bitline i, a chunk of bitlines at a time."""
    B = cols.shape[2]
    n, pred = c[N], c[PRED]
    od_d = operand(c[RD], c[PD], False)
    if o == SET_MASK:
        od = operand(c[RA], 1, False)
        for i in range(n):
            g = base + i
            for b in range(B):
                cc = carry[g, b]
                e = (pred == 0) | ((pred == 1) & mask[g, b]) | ((pred == 2) & cc) | ((pred == 3) & (not cc))
                mask[g, b] = (e & (load(cols, g, b, od) != 0)) | ((not e) & mask[g, b])
                carry[g, b] = cc & (not e)
        return
    if o == SET or o == RESET:
        _fill(cols, mask, carry, base, n, od_d, low(c[PD]) if o == SET else ZERO, pred, CLEAR)
        return
    ch = _chunk(B)
    for i0 in range(0, n, ch):
        cnt = min(ch, n - i0)
        cy = _alu(c, o, cols, rf, base + i0, cnt, tmp)
        if o == MAC:
            _fill(cols, mask, carry, base + i0, cnt, operand(c[RS], c[X0], False), ZERO, pred, KEEP)
        _scatter(cols, mask, carry, base + i0, cnt, od_d, tmp[0], tmp[3], pred, cy)


@nb.njit(cache=True, inline="always")
def _alu(c, o, cols, rf, base, n, tmp):
    """tmp[0] ← the result of bitlines [base, base+n) (tmp[3]: carries); returns the carry mode."""
    B = cols.shape[2]
    t, pd, sa, sb = c[T], c[PD], c[SA] != 0, c[SB] != 0
    A, Bv, C, Y = tmp[0], tmp[1], tmp[2], tmp[3]
    m = low(pd)
    nb_ = n * B
    cy = CLEAR
    _gather(cols, base, n, operand(c[RA], c[PA], sa), A)
    if o == MUL_C or o == ADD_C:
        _rf_const(rf, t, c[RB], c[PB], sb, n, Bv)
    elif o == DOT_C:
        _rf_const(rf, t, c[X0], c[PC], c[SC] != 0, n, C)
        _rf_const(rf, t, c[X1], c[PE], c[SE] != 0, n, Y)
        _gather(cols, base, n, operand(c[RB], c[PB], sb), Bv)
    elif o != NOT and o != COPY:
        _gather(cols, base, n, operand(c[RB], c[PB], sb), Bv)
    if o == ADD or o == ADD_C:
        cy = CARRY
        if pd >= 64:
            for j in range(nb_):
                s = A[j] + Bv[j]
                Y[j] = np.uint64(s < A[j])
                A[j] = s
        else:
            sh = np.uint64(pd)
            for j in range(nb_):
                s = (A[j] & m) + (Bv[j] & m)
                Y[j] = (s >> sh) & U1
                A[j] = s
    elif o == SUB:
        cy = CARRY
        for j in range(nb_):
            Y[j] = np.uint64((A[j] & m) >= (Bv[j] & m))
            A[j] = A[j] - Bv[j]
    elif o == MULT or o == MUL_C:
        for j in range(nb_):
            A[j] = A[j] * Bv[j]
    elif o == AND:
        for j in range(nb_):
            A[j] = A[j] & Bv[j]
    elif o == OR:
        for j in range(nb_):
            A[j] = A[j] | Bv[j]
    elif o == XOR:
        for j in range(nb_):
            A[j] = A[j] ^ Bv[j]
    elif o == MAX or o == MIN:
        # x >= y for values read as signed (sa, sb) or unsigned: the sign decides when the signs
        # differ, else the unsigned order of the two's-complement patterns
        for j in range(nb_):
            x, y = A[j], Bv[j]
            xn = sa & (np.int64(x) < 0)
            yn = sb & (np.int64(y) < 0)
            ge = ((xn == yn) & (x >= y)) | ((xn != yn) & yn)
            pick = ge if o == MAX else (((xn == yn) & (y >= x)) | ((xn != yn) & xn))
            A[j] = x if pick else y
    elif o == NOT:
        for j in range(nb_):
            A[j] = ~A[j]
    elif o == DOT_C:
        for j in range(nb_):
            A[j] = A[j] * C[j] + Bv[j] * Y[j]
    elif o == MAC:   # the scratch rows are cleared, then d = acc + a × b
        _gather(cols, base, n, operand(c[RD], c[PC], c[SC] != 0), C)
        for j in range(nb_):
            A[j] = C[j] + A[j] * Bv[j]
    return cy


@nb.njit(cache=True)
def _across(c, o, cols, mask, carry, base, E, ccols, tmp):
    """``shift``, ``reduce_cram``, ``reduce_tile``, ``cram_local_shf`` (carry cleared).  Each block
    of bitlines reads its sources before writing, and no block reads what an earlier block wrote
    (a shift runs away from its sources; reductions and local shuffles read inside their group or
    CRAM), so in-place updates are exact."""
    B = cols.shape[2]
    n, x0, pred = c[N], c[X0], c[PRED]
    od_a, od_d = operand(c[RA], c[PA], c[SA] != 0), operand(c[RD], c[PD], False)
    A, R = tmp[0], tmp[1]
    if o == SHIFT:
        for k in range(n):
            i = k if c[X1] == 0 else n - 1 - k
            src = i + x0 if c[X1] == 0 else i - x0
            if 0 <= src < n:
                for b in range(B):
                    _put(cols, mask, carry, base + i, b, od_d, load(cols, base + src, b, od_a), ZERO, pred, CLEAR)
            else:
                for b in range(B):
                    _put(cols, mask, carry, base + i, b, od_d, ZERO, ZERO, pred, CLEAR)
        return
    if o == RED_TILE:   # one group of x0 CRAMs at a time: sums in its first CRAM, zeros after
        span = x0 * ccols
        for q in range(0, n, span):
            m_ = min(ccols, n - q)
            for j in range(m_):
                for b in range(B):
                    R[j * B + b] = ZERO
                for k in range(x0):
                    for b in range(B):
                        R[j * B + b] += load(cols, base + q + k * ccols + j, b, od_a)
            _scatter(cols, mask, carry, base + q, m_, od_d, R, R, pred, CLEAR)
            _fill(cols, mask, carry, base + q + m_, max(min(span, n - q) - m_, 0), od_d, ZERO, pred, CLEAR)
        return
    # reduce_cram (groups of x0 bitlines) and cram_local_shf (within a CRAM): blocks of whole groups
    unit = x0 if o == RED_CRAM else ccols
    blk = max(1, _chunk(B) // unit) * unit
    for i0 in range(0, n, blk):
        cnt = min(blk, n - i0)
        _gather(cols, base + i0, min(blk, E - i0), od_a, A)
        for i in range(cnt):
            for b in range(B):
                R[i * B + b] = ZERO
            if o == RED_CRAM:
                if i % x0 == 0:
                    for k in range(x0):
                        for b in range(B):
                            R[i * B + b] += A[(i + k) * B + b]
            else:
                q = ((i // ccols) * ccols + (i % ccols) % x0) * B
                for b in range(B):
                    R[i * B + b] = A[q + b]
        _scatter(cols, mask, carry, base + i0, cnt, od_d, R, R, pred, CLEAR)


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
    if c[DOWN]:
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
                for b in range(B):
                    store(cols, base + start + i, b, od, A[i * B + b], ALL)
        else:
            _dram_read(c, own, shared, n, (n + 7) // 8, w, tr, p, A, B)
            mode, G = c[X3], c[X0]
            for g in range(E if mode else min(n, E)):
                q = _spread_src(mode, g, ccols, G) * B
                for b in range(B):
                    store(cols, base + g, b, od, A[q + b], ALL)
    elif o == STORE:
        start, plane = c[X0], (n + 7) // 8
        own[off:off + c[DBYTES], :] = 0
        od = operand(row, p, c[SD] != 0 and tr)
        for i in range(n):
            for b in range(B):
                v = load(cols, base + start + i, b, od)
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
def _move(c, o, cols, rf, base, E, msg, tmp, ccols, crams):
    """``cram_tx_rx``, ``cram_bcast``, ``tile_tx``, ``tile_rx``."""
    B = cols.shape[2]
    t, n, moff = c[T], c[N], c[MOFF]
    p = c[PD]
    if o == CRAM_TX or o == CRAM_BC:
        A = tmp[0]
        _gather(cols, base + (c[X0] if o == CRAM_TX else 0), n, operand(c[RA], p, False), A)
        od = operand(c[RD], p, False)
        for d in range(1 if o == CRAM_TX else crams - 1):
            dst = c[X1] if o == CRAM_TX else (d + 1) * ccols
            for i in range(max(min(n, E - dst), 0)):
                for b in range(B):
                    store(cols, base + dst + i, b, od, A[i * B + b], ALL)
    elif o == TILE_TX:
        mode = c[X1]
        if mode == 2:      # the RF image
            for j in range(n):
                for b in range(B):
                    msg[moff + j, b] = np.uint64(rf[t, j, b])
        else:
            od = operand(c[RA], p, False)
            G = c[X0] if mode == 1 else n
            for q in range(crams if mode == 1 else 1):
                for j in range(G):
                    for b in range(B):
                        msg[moff + q * G + j, b] = load(cols, base + q * ccols + j, b, od)
    else:   # TILE_RX
        mode = c[X3]
        if mode == 4:
            for j in range(n):
                for b in range(B):
                    rf[t, j, b] = np.uint32(msg[moff + j, b])
        else:
            od = operand(c[RD], p, False)
            for g in range(E if mode else min(n, E)):
                q = moff + _spread_src(mode, g, ccols, c[X0])
                for b in range(B):
                    store(cols, base + g, b, od, msg[q, b], ALL)


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
def run(code, k0, cols, mask, carry, rf, bases, extents, own, shared, msg, tmp, ccols, crams):
    """Execute ``code[k0:]`` until a :data:`.plan.PY` row (returned) or the end (``len(code)``)."""
    K = code.shape[0]
    for k in range(k0, K):
        c = code[k]
        o = c[OP]
        if o == PY:
            return k
        base, E = bases[c[T]], extents[c[T]]
        if o == SHIFT or o == RED_CRAM or o == RED_TILE or o == LOCAL:
            _across(c, o, cols, mask, carry, base, E, ccols, tmp)
        elif (ADD <= o <= SET_MASK) or o == MAC or o == MUL_C or o == ADD_C or o == DOT_C:
            _compute(c, o, cols, mask, carry, rf, base, tmp)
        elif o == WRITE_RF or o == ADD_RF or o == SUB_RF or o == POPCOUNT:
            _rf_scalar(c, o, cols, rf, base)
        elif LOAD <= o <= STORE_RF:
            _dram_op(c, o, cols, rf, base, E, own, shared, tmp, ccols)
        elif CRAM_TX <= o <= TILE_RX:
            _move(c, o, cols, rf, base, E, msg, tmp, ccols, crams)
    return K
