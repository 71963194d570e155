"""Fast path of the Tensil emulator: one numba kernel runs a whole decoded program.

Bit-exact to :meth:`~nnisa.targets.tensil.sim.machine.Machine.run_reference` (tests compare
every memory).  Two facts make it fast without changing a single bit:

* ``mac(0, w, y) == y`` exactly, so zero input scalars (padding lanes, ReLU zeros) are skipped;
* for data types up to 18 bits, ``x*w + (y << bp)`` is exact in float64, division by ``2^bp``
  is exact, and ``rint`` rounds half to even — the MAC's own rounding — so the array's inner
  loop runs on float64 lanes that the compiler vectorises.  Saturating vectors are recomputed
  on the exact integer path, which also records the overflow statistics.

FLOAT32 and the LUT extension run on the reference interpreter.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# statistics rows: 0 MatMul, 1 DataMove, 2 SIMD; columns: overflows, underflows, max delta, sum delta
STAT_KINDS = ("MatMul", "DataMove", "SIMD")


@njit(cache=True, inline="always")
def _round(m, bp):
    r = m >> bp
    rem = m - (r << bp)
    half = np.int64(1) << (bp - 1)
    if rem > half or (rem == half and (r & 1) == 1):
        r += 1
    return r


@njit(cache=True, inline="always")
def _sat(v, lo, hi, stats, kind):
    if v > hi:
        stats[kind, 0] += 1
        d = float(v - hi)
        stats[kind, 3] += d
        if d > stats[kind, 2]:
            stats[kind, 2] = d
        return hi
    if v < lo:
        stats[kind, 1] += 1
        d = float(lo - v)
        stats[kind, 3] += d
        if d > stats[kind, 2]:
            stats[kind, 2] = d
        return lo
    return v


@njit(cache=True, inline="always")
def _mac(x, y, z, bp, lo, hi, stats, kind):
    return _sat(_round(np.int64(x) * np.int64(y) + (np.int64(z) << bp), bp), lo, hi, stats, kind)


@njit(cache=True)
def _simd_lane(op, L, R, inp, bp, lo, hi, stats):
    one = np.int64(1) << bp
    if op == 0:
        return inp
    if op == 1:
        return 0
    if op == 2:
        return L
    if op == 3:
        return one if L == 0 else 0
    if op == 4:
        return one if (L != 0 and R != 0) else 0
    if op == 5:
        return one if (L != 0 or R != 0) else 0
    if op == 6:
        return _sat(L + one, lo, hi, stats, 2)
    if op == 7:
        return _sat(L - one, lo, hi, stats, 2)
    if op == 8:
        return _sat(L + R, lo, hi, stats, 2)
    if op == 9:
        return _sat(L - R, lo, hi, stats, 2)
    if op == 10:
        return _mac(L, R, 0, bp, lo, hi, stats, 2)
    if op == 11:
        a = L if L >= 0 else -L
        return lo if a > hi else a
    if op == 12:
        return one if L > R else 0
    if op == 13:
        return one if L >= R else 0
    if op == 14:
        return L if L < R else R
    return L if L > R else R


@njit(cache=True)
def _matmul_exact(x, zeroes, W, y, n, bp, lo, hi, stats):
    for j in range(n):
        y[j] = W[0, j]
    if zeroes:
        return
    for k in range(n):
        xk = np.int64(x[k])
        if xk == 0:
            continue
        for j in range(n):
            y[j] = _mac(xk, W[k + 1, j], y[j], bp, lo, hi, stats, 0)


@njit(cache=True)
def _weight_bounds(Wf, cmax):
    """Largest |bias| (returned) and largest |weight| of each input row (into ``cmax``)."""
    n = Wf.shape[1]
    b = 0.0
    for j in range(n):
        b = max(b, abs(Wf[0, j]))
    for k in range(n):
        c = 0.0
        for j in range(n):
            c = max(c, abs(Wf[k + 1, j]))
        cmax[k] = c
    return b


@njit(cache=True, fastmath={'contract'})
def run_program(hdr, a0, s0, a1, s1, nn, sop, sl, sr, sd, local, acc, dram0, dram1, W, regs,
                bits, bp, stats, use_float):
    """Execute the decoded program on the state arrays (all int32, modified in place)."""
    n = local.shape[1]
    lo = -(np.int64(1) << (bits - 1))
    hi = (np.int64(1) << (bits - 1)) - 1
    flo, fhi = float(lo), float(hi)
    scale = float(np.int64(1) << bp)
    inv = 1.0 / scale
    Wf = np.empty((n + 1, n), np.float64)
    Wi = np.empty((n + 1, n), np.float64)  # weights / 2^bp (exact)
    for r in range(n + 1):
        for j in range(n):
            Wf[r, j] = W[r, j]
            Wi[r, j] = W[r, j] * inv
    yf = np.empty(n, np.float64)
    tot = np.empty(n, np.float64)
    cmax = np.zeros(n, np.float64)
    bmax = _weight_bounds(Wf, cmax)
    yi = np.empty(n, np.int64)
    newW = np.empty_like(W)
    inp = np.empty(n, np.int64)
    res = np.empty(n, np.int64)
    for i in range(hdr.shape[0]):
        h = hdr[i]
        op = h >> 4
        fl = h & 15
        if op == 1:  # MatMul
            cnt = nn[i] + 1
            zeroes = (fl & 2) != 0
            for v in range(cnt):
                la = a0[i] + (v << s0[i])
                aa = a1[i] + (v << s1[i])
                if use_float:
                    # cheap bound on every partial sum (max |weight| per row): in range → no step saturates
                    bound = bmax + n
                    if not zeroes:
                        for k in range(n):
                            bound += abs(float(local[la, k])) * cmax[k] * inv
                    for j in range(n):
                        yf[j] = Wf[0, j]
                    if not zeroes and bound < fhi:
                        for k in range(n):
                            xk = float(local[la, k])
                            if xk != 0.0:
                                wrow = Wi[k + 1]
                                for j in range(n):  # x·w/2^bp + y is exact in float64: one rounding, half even
                                    yf[j] = np.rint(xk * wrow[j] + yf[j])
                    elif not zeroes:  # per-lane bound Σ|terms| (vectorises, unlike a running max)
                        for j in range(n):
                            tot[j] = 0.0
                        for k in range(n):
                            xk = float(local[la, k])
                            if xk != 0.0:
                                wrow = Wi[k + 1]
                                for j in range(n):
                                    t = xk * wrow[j]
                                    yf[j] = np.rint(t + yf[j])
                                    tot[j] += abs(t)
                    ok = zeroes or bound < fhi
                    if not ok:
                        worst = 0.0
                        for j in range(n):
                            v = abs(Wf[0, j]) + tot[j]
                            if v > worst:
                                worst = v
                        ok = worst + n < fhi
                    if ok:
                        for j in range(n):
                            yi[j] = np.int64(yf[j])
                    else:
                        _matmul_exact(local[la], zeroes, W, yi, n, bp, lo, hi, stats)
                else:
                    _matmul_exact(local[la], zeroes, W, yi, n, bp, lo, hi, stats)
                if fl & 1:
                    for j in range(n):
                        acc[aa, j] = _sat(np.int64(acc[aa, j]) + yi[j], lo, hi, stats, 0)
                else:
                    for j in range(n):
                        acc[aa, j] = yi[j]
        elif op == 3:  # LoadWeights
            cnt = a1[i] + 1
            kk = min(cnt, n + 1)
            for r in range(kk):
                if fl & 1:
                    for j in range(n):
                        newW[r, j] = 0
                else:
                    la = a0[i] + (r << s0[i])
                    for j in range(n):
                        newW[r, j] = local[la, j]
            for r in range(kk, n + 1):
                for j in range(n):
                    newW[r, j] = W[r - kk, j]
            for r in range(n + 1):
                for j in range(n):
                    W[r, j] = newW[r, j]
                    Wf[r, j] = newW[r, j]
                    Wi[r, j] = newW[r, j] * inv
            bmax = _weight_bounds(Wf, cmax)
        elif op == 2:  # DataMove
            cnt = nn[i] + 1
            for v in range(cnt):
                la = a0[i] + (v << s0[i])
                oa = a1[i] + (v << s1[i])
                if fl == 0:
                    for j in range(n):
                        local[la, j] = dram0[oa, j]
                elif fl == 1:
                    for j in range(n):
                        dram0[oa, j] = local[la, j]
                elif fl == 2:
                    for j in range(n):
                        local[la, j] = dram1[oa, j]
                elif fl == 3:
                    for j in range(n):
                        dram1[oa, j] = local[la, j]
                elif fl == 12:
                    for j in range(n):
                        local[la, j] = acc[oa, j]
                elif fl == 13:
                    for j in range(n):
                        acc[oa, j] = local[la, j]
                else:
                    for j in range(n):
                        acc[oa, j] = _sat(np.int64(acc[oa, j]) + local[la, j], lo, hi, stats, 1)
        elif op == 4:  # SIMD
            o = sop[i]
            if fl & 1:
                for j in range(n):
                    inp[j] = acc[a1[i], j]
            else:
                for j in range(n):
                    inp[j] = 0
            l_, r_, d_ = sl[i], sr[i], sd[i]
            if o == 1:
                for j in range(n):
                    res[j] = 0
            elif o == 2 and l_ == 0:
                for j in range(n):
                    res[j] = inp[j]
            elif o == 15 and l_ == 0 and r_ != 0:
                for j in range(n):
                    b = np.int64(regs[r_ - 1, j])
                    res[j] = inp[j] if inp[j] > b else b
            elif o == 8 and l_ == 0 and r_ != 0:
                for j in range(n):
                    res[j] = _sat(inp[j] + regs[r_ - 1, j], lo, hi, stats, 2)
            elif o == 10 and l_ == 0 and r_ != 0:
                for j in range(n):
                    res[j] = _mac(inp[j], regs[r_ - 1, j], 0, bp, lo, hi, stats, 2)
            else:
                for j in range(n):
                    L = inp[j] if l_ == 0 else np.int64(regs[l_ - 1, j])
                    R = inp[j] if r_ == 0 else np.int64(regs[r_ - 1, j])
                    res[j] = _simd_lane(o, L, R, inp[j], bp, lo, hi, stats)
            if d_ != 0 and o != 0:
                for j in range(n):
                    regs[d_ - 1, j] = res[j]
            if fl & 2:
                wa = a0[i]
                if fl & 4:
                    for j in range(n):
                        acc[wa, j] = _sat(np.int64(acc[wa, j]) + res[j], lo, hi, stats, 2)
                else:
                    for j in range(n):
                        acc[wa, j] = res[j]
        # NoOp and Configure: no effect on the data state
