"""The compiled DAIS engine: lowering (spec §7.3) and the numba kernel (§7.2).

Layout: one int64 row of ``B`` samples per *register*; registers are reused once their value's
last reader has run (linear scan), so a 94k-op program needs only its peak live set of rows and
the working set stays in cache.  Every op runs for every sample, dead ones included (D11).
Ops loop outside, samples inside, so the inner loops are straight-line and SIMD-friendly; the
common adder shapes get their own loops.
"""

from __future__ import annotations

import math
import warnings

import numba as nb
import numpy as np

from ..errors import DaisLookupError, DaisWidthWarning
from ....core.fixedpoint import pow2
from ..program import Program, int_bounds

# lowered op kinds
K_INPUT, K_ADD, K_ADDG, K_RELU, K_QUANT, K_ADDC, K_CONST, K_MUX, K_MUL, K_LUT, K_BIT1, K_BIT2 = range(12)
NPAR = 13  # columns of the parameter matrix
I64MIN = np.int64(-(2**63))


@nb.njit(cache=True, inline="always")
def _shl(v, s):
    if s < 0:
        if s <= -64:
            return np.int64(-1) if v < 0 else np.int64(0)
        return v >> (-s)
    if s >= 64:
        return np.int64(0)
    return v << s


@nb.njit(cache=True, inline="always")
def _sar(v, s):
    if s < 0:
        return _shl(v, -s)
    if s >= 64:
        return np.int64(-1) if v < 0 else np.int64(0)
    return v >> s


@nb.njit(cache=True, inline="always")
def _wrap(z, k, w):
    if w <= 0:
        return np.int64(0)
    if w >= 64:
        return z
    m = (np.int64(1) << w) - 1
    if k:
        h = np.int64(1) << (w - 1)
        return ((z + h) & m) - h
    return z & m


@nb.njit(cache=True, inline="always")
def _cdiv(a, b):
    q = a // b
    if a < 0 and q * b != a:
        q += 1
    return q


@nb.njit(cache=True)
def _cwrap(z, k, w):
    # da4ml 0.6.0 C++ wrap, compat rule 2 (§6.2), wrapping int64 arithmetic
    m = -(np.int64(1) << ((w - 1) % 32)) if k else np.int64(0)
    M = np.int64(1) << w
    az = z if z == I64MIN else abs(z)
    t = z - m + (_cdiv(az, M) + 1) * M
    r = t - _cdiv(t, M) * M
    return r + m


@nb.njit(cache=True, inline="always")
def _qwrap(z, k, w, compat, cflag):
    if compat and (cflag or z >= (np.int64(1) << 61) or z <= -(np.int64(1) << 61)):
        return _cwrap(z, k, w)
    return _wrap(z, k, w)


@nb.njit(cache=True)
def _big_mod64(z):
    # an integral double with |z| >= 2^63, reduced modulo 2^64 into int64 (exact, §5.8)
    m, e = math.frexp(abs(z))
    mant = np.int64(m * 9007199254740992.0)  # 53-bit integer mantissa
    sh = e - 53
    r = np.int64(0) if sh >= 64 else mant << sh
    return -r if z < 0 else r


@nb.njit(cache=True)
def _chunk(X, s0, nb_, P, FS, tabs, outp, outd, buf, Y, err, compat):
    n_ops = P.shape[0]
    for i in range(n_ops):
        kind = P[i, 0]
        d = P[i, 1]
        ra = P[i, 2]
        rc = P[i, 3]
        if kind == K_ADD:
            sa = P[i, 4]
            sc = P[i, 5]
            if P[i, 7] > 0:
                if sa == 0:
                    for j in range(nb_):
                        buf[d, j] = buf[ra, j] + (buf[rc, j] << sc)
                else:
                    for j in range(nb_):
                        buf[d, j] = (buf[ra, j] << sa) + buf[rc, j]
            else:
                if sa == 0:
                    for j in range(nb_):
                        buf[d, j] = buf[ra, j] - (buf[rc, j] << sc)
                else:
                    for j in range(nb_):
                        buf[d, j] = (buf[ra, j] << sa) - buf[rc, j]
            rs = P[i, 6]
            if rs > 0:
                for j in range(nb_):
                    buf[d, j] = buf[d, j] >> rs
        elif kind == K_INPUT:
            col = P[i, 4]
            k = P[i, 8]
            w = P[i, 9]
            cf = P[i, 10]
            sc = FS[i]
            for j in range(nb_):
                z = math.floor(X[s0 + j, col] * sc)
                if z >= -9.223372036854775808e18 and z < 9.223372036854775808e18:
                    zi = np.int64(z)
                elif compat:
                    zi = I64MIN
                else:
                    zi = _big_mod64(z)
                buf[d, j] = _qwrap(zi, k, w, compat, cf)
        elif kind == K_ADDG:
            sa = P[i, 4]
            sc = P[i, 5]
            rs = P[i, 6]
            sg = P[i, 7]
            for j in range(nb_):
                r = _shl(buf[ra, j], sa) + sg * _shl(buf[rc, j], sc)
                buf[d, j] = _sar(r, rs)
        elif kind == K_RELU or kind == K_QUANT:
            rsh = P[i, 4]
            sg = P[i, 5]
            k = P[i, 8]
            w = P[i, 9]
            cf = P[i, 10]
            relu = kind == K_RELU
            for j in range(nb_):
                v = sg * buf[ra, j]
                if relu and v < 0:
                    buf[d, j] = 0
                else:
                    buf[d, j] = _qwrap(_sar(v, rsh), k, w, compat, cf)
        elif kind == K_ADDC:
            ls = P[i, 4]
            cst = P[i, 5]
            for j in range(nb_):
                buf[d, j] = _shl(buf[ra, j], ls) + cst
        elif kind == K_CONST:
            cst = P[i, 4]
            for j in range(nb_):
                buf[d, j] = cst
        elif kind == K_MUX:
            rq = P[i, 4]
            mode = P[i, 5]
            thr = P[i, 6]
            s0_ = P[i, 7]
            s1_ = P[i, 11]
            sg = P[i, 12]
            k = P[i, 8]
            w = P[i, 9]
            cf = P[i, 10]
            for j in range(nb_):
                q = buf[rq, j]
                if mode == 0:
                    cond = q < 0
                elif mode == 1:
                    cond = q >= thr
                else:
                    cond = False
                if cond:
                    buf[d, j] = _qwrap(_shl(buf[ra, j], s0_), k, w, compat, cf)
                else:
                    buf[d, j] = _qwrap(_shl(sg * buf[rc, j], s1_), k, w, compat, cf)
        elif kind == K_MUL:
            for j in range(nb_):
                buf[d, j] = buf[ra, j] * buf[rc, j]
        elif kind == K_LUT:
            off = P[i, 4]
            ln = P[i, 5]
            base = P[i, 6]
            for j in range(nb_):
                idx = buf[ra, j] - base
                if idx < 0 or idx >= ln:
                    err[0] = 1
                    err[1] = i
                    err[2] = s0 + j
                    err[3] = idx
                    return
                buf[d, j] = tabs[off + idx]
        elif kind == K_BIT1:
            sg = P[i, 4]
            sub = P[i, 5]
            m = P[i, 6]
            sout = P[i, 7]
            for j in range(nb_):
                v = sg * buf[ra, j]
                if sub == 0:
                    buf[d, j] = ~v if sout else (~v) & m
                elif sub == 1:
                    buf[d, j] = 1 if v != 0 else 0
                else:
                    buf[d, j] = 1 if (v & m) == m else 0
        elif kind == K_BIT2:
            na = P[i, 4]
            nc = P[i, 5]
            sa = P[i, 6]
            sc = P[i, 7]
            sub = P[i, 8]
            for j in range(nb_):
                a = -buf[ra, j] if na else buf[ra, j]
                c = -buf[rc, j] if nc else buf[rc, j]
                a = _shl(a, sa)
                c = _shl(c, sc)
                if sub == 0:
                    buf[d, j] = a & c
                elif sub == 1:
                    buf[d, j] = a | c
                else:
                    buf[d, j] = a ^ c
    for o in range(outp.shape[0]):
        r = outp[o, 0]
        if r < 0:
            for j in range(nb_):
                Y[s0 + j, o] = 0.0
        else:
            neg = outp[o, 1]
            sc = outd[o]
            for j in range(nb_):
                v = -buf[r, j] if neg else buf[r, j]
                Y[s0 + j, o] = np.float64(v) * sc


@nb.njit(cache=True, parallel=True)
def _run(X, P, FS, tabs, outp, outd, n_regs, chunk, n_threads, compat, Y, err):
    n = X.shape[0]
    n_chunks = (n + chunk - 1) // chunk
    per = (n_chunks + n_threads - 1) // n_threads
    for t in nb.prange(n_threads):
        buf = np.zeros((max(n_regs, 1), chunk), np.int64)
        for ci in range(t * per, min((t + 1) * per, n_chunks)):
            if err[t, 0] != 0:
                break
            s0 = ci * chunk
            _chunk(X, s0, min(chunk, n - s0), P, FS, tabs, outp, outd, buf, Y, err[t], compat)


@nb.njit(cache=True)
def _run_serial(X, P, FS, tabs, outp, outd, n_regs, chunk, compat, Y, err):
    # single-thread path: no parallel region, so no thread wake-up latency at small batches
    n = X.shape[0]
    buf = np.zeros((max(n_regs, 1), chunk), np.int64)
    for s0 in range(0, n, chunk):
        _chunk(X, s0, min(chunk, n - s0), P, FS, tabs, outp, outd, buf, Y, err[0], compat)
        if err[0, 0] != 0:
            break


@nb.njit(cache=True)
def _allocate(n_ops, uses_a, uses_c, uses_q, a, c, q, out_idxs, dst):
    """Linear-scan register allocation; returns the register count."""
    last = np.arange(n_ops)
    for i in range(n_ops):
        if uses_a[i]:
            last[a[i]] = i
        if uses_c[i]:
            last[c[i]] = i
        if uses_q[i]:
            last[q[i]] = i
    for o in out_idxs:
        if o >= 0:
            last[o] = n_ops
    free = np.empty(n_ops + 1, np.int64)
    nfree = 0
    n_regs = 0
    for i in range(n_ops):
        # operands dying here free their rows first: reads and the write use the same
        # sample index, so the result may overwrite an operand in place
        if uses_a[i] and last[a[i]] == i:
            free[nfree] = dst[a[i]]
            nfree += 1
        if uses_c[i] and last[c[i]] == i and not (uses_a[i] and a[i] == c[i]):
            free[nfree] = dst[c[i]]
            nfree += 1
        if uses_q[i] and last[q[i]] == i and not (uses_a[i] and a[i] == q[i]) and not (
                uses_c[i] and c[i] == q[i]):
            free[nfree] = dst[q[i]]
            nfree += 1
        if nfree > 0:
            nfree -= 1
            dst[i] = free[nfree]
        else:
            dst[i] = n_regs
            n_regs += 1
        if last[i] == i:  # dead value: its row is free again right away
            free[nfree] = dst[i]
            nfree += 1
    return n_regs


@nb.njit(cache=True)
def _dfs_order(n_ops, uses_a, uses_c, uses_q, a, c, q, out_idxs):
    """A topological order that finishes each output's cone depth-first (post-order from the
    outputs, then any dead ops).  Evaluating in this order keeps few values live at once, which is
    what makes register reuse effective (level-ordered CMVM programs keep ~n_ops/2 alive)."""
    order = np.empty(n_ops, np.int64)
    done = np.zeros(n_ops, np.bool_)
    stack = np.empty(n_ops * 4 + 4, np.int64)
    state = np.zeros(n_ops, np.int64)
    cnt = 0
    roots = np.concatenate((out_idxs, np.arange(n_ops)))
    for r in roots:
        if r < 0 or done[r]:
            continue
        sp = 0
        stack[sp] = r
        sp += 1
        while sp > 0:
            i = stack[sp - 1]
            if done[i]:
                sp -= 1
                continue
            if state[i] == 0:
                state[i] = 1
                # push deeper operands last so they are visited first (Sethi–Ullman flavour)
                if uses_q[i] and not done[q[i]]:
                    stack[sp] = q[i]
                    sp += 1
                if uses_c[i] and not done[c[i]]:
                    stack[sp] = c[i]
                    sp += 1
                if uses_a[i] and not done[a[i]]:
                    stack[sp] = a[i]
                    sp += 1
            else:
                sp -= 1
                done[i] = True
                order[cnt] = i
                cnt += 1
    return order


class Lowered:
    """A program lowered for the compiled kernel (one semantics)."""

    def __init__(self, P, FS, tabs, outp, outd, n_regs, chunk, compat, program, order):
        self.order = order
        self.P, self.FS, self.tabs, self.outp, self.outd = P, FS, tabs, outp, outd
        self.n_regs, self.chunk, self.compat, self.program = n_regs, chunk, compat, program

    def run(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        n = X.shape[0]
        chunk = self.chunk if n > 1 else 1
        if n < chunk:
            chunk = n
        n_threads = max(1, min(int(n_threads), (n + 31) // 32))
        Y = np.empty((n, len(self.outd)))
        err = np.zeros((n_threads, 4), np.int64)
        if n_threads == 1:
            _run_serial(X, self.P, self.FS, self.tabs, self.outp, self.outd, self.n_regs, chunk, self.compat, Y, err)
        else:
            _run(X, self.P, self.FS, self.tabs, self.outp, self.outd, self.n_regs, chunk, n_threads,
                 self.compat, Y, err)
        bad = np.flatnonzero(err[:, 0])
        if len(bad):
            _, i, s, idx = err[bad[0]].tolist()
            i = int(self.order[i])
            p = self.program
            t = int(p.data_lo()[i])
            raise DaisLookupError(f"lookup index {idx} out of table {t} of size {len(p.tables[t])} "
                                  f"(pad_left {int(p.data_hi()[i])})", where=f"op {i}, sample {s}")
        return Y


def lower(p: Program, *, compat: bool = False, chunk: int | None = None) -> Lowered:
    """Precompute per-op kernel parameters (spec §7.3), vectorised over ops."""
    n = p.n_ops
    opc = p.opcode.astype(np.int64)
    a = p.id0.astype(np.int64)
    c = p.id1.astype(np.int64)
    lo = p.data_lo().astype(np.int64)
    hi = p.data_hi().astype(np.int64)
    k = p.k.astype(np.int64)
    f = p.f.astype(np.int64)
    w = p.width()
    ao = np.abs(opc)
    uses_a = np.isin(opc, [0, 1, 2, -2, 3, -3, 4, 6, -6, 7, 8, 9, -9, 10])
    uses_c = np.isin(opc, [0, 1, 6, -6, 7, 10])
    uses_q = ao == 6
    ai, ci, qi = np.where(uses_a, a, 0), np.where(uses_c, c, 0), np.where(uses_q, lo, 0)
    fa = np.where(uses_a, f[ai], 0) if n else f
    fc = np.where(uses_c, f[ci], 0) if n else f
    order = _dfs_order(n, uses_a, uses_c, uses_q, ai, ci, qi, p.out_idxs.astype(np.int64)) if n else ai
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    dst_o = np.zeros(n, np.int64)
    # allocation runs in execution order, on positions; dst is indexed by original op index
    n_regs = _allocate(n, uses_a[order], uses_c[order], uses_q[order], pos[ai[order]], pos[ci[order]],
                       pos[qi[order]], np.where(p.out_idxs >= 0, pos[np.maximum(p.out_idxs, 0)] if n else 0,
                                               -1).astype(np.int64), dst_o)
    dst = np.empty(n, np.int64)
    dst[order] = dst_o
    P = np.zeros((n, NPAR), np.int64)
    FS = np.ones(n, np.float64)
    P[:, 1] = dst
    P[:, 2] = np.where(uses_a, dst[ai], 0) if n else 0
    P[:, 3] = np.where(uses_c, dst[ci], 0) if n else 0
    P[:, 8], P[:, 9] = k, w
    quant = np.isin(opc, [-1, 2, -2, 3, -3, 6, -6])
    if compat:
        P[:, 10] = (quant & (w >= 1) & (w <= 62) & (k == 1) & (w > 32)).astype(np.int64)
        if np.any(quant & (w >= 63)):
            warnings.warn("compat wrap is defined for widths ≤ 62; wider ops use the default wrap",
                          DaisWidthWarning, stacklevel=3)
        # outside 1..62 the compat formula does not apply: mark with w sentinel handled by _wrap
        P[:, 10] = np.where(quant & ((w < 1) | (w > 62)), 0, P[:, 10])
    # -1
    m = opc == -1
    P[m, 0] = K_INPUT
    P[m, 4] = a[m]
    FS[m] = [pow2(int(p.inp_shifts[j]) + int(ff)) for j, ff in zip(a[m], f[m])]
    # 0 / 1
    m = (opc == 0) | (opc == 1)
    e = lo + fa - fc
    sa, sc = np.maximum(-e, 0), np.maximum(e, 0)
    rs = np.maximum(np.maximum(fa, fc - lo) - f, 0)
    fast = m & (sa < 64) & (sc < 64) & (rs < 64)
    P[m, 0] = np.where(fast[m], K_ADD, K_ADDG)
    P[m, 4], P[m, 5], P[m, 6] = sa[m], sc[m], rs[m]
    P[m, 7] = np.where(opc[m] == 0, 1, -1)
    # ±2 / ±3
    m = (ao == 2) | (ao == 3)
    P[m, 0] = np.where(ao[m] == 2, K_RELU, K_QUANT)
    P[m, 4] = (fa - f)[m]
    P[m, 5] = np.sign(opc[m])
    # 4 / 5
    m = opc == 4
    P[m, 0], P[m, 4], P[m, 5] = K_ADDC, (f - fa)[m], p.data[m]
    m = opc == 5
    P[m, 0], P[m, 4] = K_CONST, p.data[m]
    # ±6: key test chosen per semantics (Q1)
    m = ao == 6
    if m.any():
        kq, wq = k[qi], w[qi]
        mode = np.where(kq == 1, 0, 1)
        if compat:
            thr = np.where(wq >= 2, (1 << np.clip(wq - 2, 0, 62)) + 1, 1)
            mode = np.where((kq == 0) & ((wq <= 0) | (wq >= 64)), 2, mode)
        else:
            thr = np.where((wq >= 1) & (wq <= 63), 1 << np.clip(wq - 1, 0, 62), 0)
            mode = np.where((kq == 0) & (wq <= 0), 2, mode)
            mode = np.where((kq == 0) & (wq == 64), 0, mode)
            mode = np.where((kq == 0) & (wq > 64), 2, mode)
        P[m, 0] = K_MUX
        P[m, 4] = dst[qi][m]
        P[m, 5], P[m, 6] = mode[m], thr[m]
        P[m, 7] = (f - fa)[m]
        P[m, 11] = (f - fc + hi)[m]
        P[m, 12] = np.sign(opc[m])
    # 7
    P[opc == 7, 0] = K_MUL
    # 8
    m = opc == 8
    sizes = np.array([len(t) for t in p.tables], np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)])[:-1] if len(sizes) else np.zeros(0, np.int64)
    tabs = np.concatenate([t.astype(np.int64) for t in p.tables]) if p.tables else np.zeros(1, np.int64)
    if m.any():
        wa, ka = w[ai], k[ai]
        lo_a = np.array([int_bounds(int(x), int(y))[0] for x, y in zip(ka[m], wa[m])], np.int64)
        P[m, 0] = K_LUT
        P[m, 4], P[m, 5], P[m, 6] = offs[lo[m]], sizes[lo[m]], lo_a + hi[m]
    # ±9
    m = ao == 9
    if m.any():
        wa = w[ai][m]
        P[m, 0] = K_BIT1
        P[m, 4], P[m, 5] = np.sign(opc[m]), lo[m]
        P[m, 6] = [((1 << int(x)) - 1) if 0 < x < 64 else (-1 if x >= 64 else 0) for x in wa]
        P[m, 7] = k[m]
    # 10
    m = opc == 10
    if m.any():
        e = lo + fa - fc
        P[m, 0] = K_BIT2
        P[m, 4], P[m, 5] = (hi[m] & 1), (hi[m] >> 1) & 1
        P[m, 6], P[m, 7] = np.maximum(-e, 0)[m], np.maximum(e, 0)[m]
        P[m, 8] = (hi[m] >> 24) & 0xFF
    outp = np.stack([np.where(p.out_idxs >= 0, dst[np.maximum(p.out_idxs, 0)] if n else 0, -1),
                     (p.out_negs != 0).astype(np.int64)], axis=1).astype(np.int64).reshape(-1, 2)
    outd = np.array([pow2(int(s) - int(f[q])) if q >= 0 else 0.0
                     for q, s in zip(p.out_idxs.tolist(), p.out_shifts.tolist())], np.float64)
    if chunk is None:
        # keep the live rows within ~0.5 MiB (L2) while amortising per-op dispatch
        chunk = int(np.clip(2 ** int(np.log2(max(65536 // max(n_regs, 1), 1))), 16, 512))
    return Lowered(np.ascontiguousarray(P[order]), FS[order], tabs, outp, outd, n_regs, chunk, compat, p, order)
