"""numba fast path of ``CMVMCompiler.solve`` after the CSE: terms, log replay, accumulation.

The readable reference is the Python code of :class:`~.cmvm.CMVMCompiler`: ``solve`` builds each
column's canonical-signed-digit terms in dicts, ``_cse``/``_cse_blocks`` run the greedy
(:mod:`.cmvm_nb`), ``_new`` replays every adder of the CSE log with its exact range from a
coefficient dict, and ``_accumulate`` sums each column's remaining terms earliest-available-first
with :mod:`heapq`.  The kernels here do the same on flat int64 arrays, in the same order, so the
builder receives the same ops (same slots, operands, shifts and dtypes) and the compiler the same
log and output terms (tested against the reference):

* :func:`csd_terms` – the terms of every (sub-)column in the order the dicts hold them;
* :func:`emit_kernel` – the log replay and the accumulation; each signal's exact range comes from
  its sparse coefficient vector, as in ``_new``.  The vectors of a column's accumulation adders are
  dropped when the column is done (only its output's is kept, for a decomposition child), so the
  memory is that of the CSE signals plus one column;
* :func:`dense_coefs` – dense coefficient rows of all signals from the log (for templates);
* :func:`make_replay` / :func:`replay_positions` – a convolution template replayed at all output
  positions at once (reference: one ``CMVMCompiler.instantiate`` per position).

Every kernel reports int64 overflow instead of wrapping; the caller then takes the reference path.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cmvm_nb import _bitlen, put_adder, range_kif, replay_kernel, sum_coefs

#: coefficient magnitudes above this make the caller fall back (their ranges could leave int64)
_COEF_LIMIT_BITS = 62


@nb.njit(cache=True)
def _popcount(v):
    c = 0
    while v:
        v &= v - 1
        c += 1
    return c


@nb.njit(cache=True)
def naf_count(M, live):
    """Number of NAF terms of the live rows of ``M`` (what :func:`csd_terms` emits)."""
    n, n_out = M.shape
    cnt = 0
    for j in range(n):
        if live[j]:
            for c in range(n_out):
                v = abs(M[j, c])
                cnt += _popcount(v ^ (3 * v))
    return cnt


@nb.njit(cache=True)
def csd_terms(M, live, block):
    """Non-adjacent-form terms of the integer matrix ``M`` (``n × n_out`` int64, ``|M| < 2^61``).

    One sub-column per column (``block <= 0``), or per non-empty block of ``block`` rows of a
    column (``CMVMCompiler._cse_blocks``).  Terms of a sub-column are ordered by row, then by
    shift (the insertion order of ``solve``'s dicts).  Returns ``(cstart, clen, owner, tsig,
    tsh, tsg)``: sub-column ``s`` holds terms ``cstart[s] : cstart[s] + clen[s]`` and belongs to
    column ``owner[s]``; a term is ``tsg · input[tsig] · 2^tsh``.
    """
    n, n_out = M.shape
    cnt = naf_count(M, live)
    tsig = np.empty(cnt, np.int64)
    tsh = np.empty(cnt, np.int64)
    tsg = np.empty(cnt, np.int64)
    nb_ = 1 if block <= 0 else (n + block - 1) // block
    bs = n if block <= 0 else block
    cstart = np.empty(n_out * nb_, np.int64)
    clen = np.empty(n_out * nb_, np.int64)
    owner = np.empty(n_out * nb_, np.int64)
    t = 0
    ns = 0
    for c in range(n_out):
        for blk in range(nb_):
            t0 = t
            for j in range(blk * bs, min(n, (blk + 1) * bs)):
                x = M[j, c]
                if x == 0 or not live[j]:
                    continue
                b = 0
                while x != 0:
                    if x & 1:
                        d = 2 - (x & 3)
                        tsig[t] = j
                        tsh[t] = b
                        tsg[t] = d
                        t += 1
                        x -= d
                    x >>= 1
                    b += 1
            if block <= 0 or t > t0:
                cstart[ns] = t0
                clen[ns] = t - t0
                owner[ns] = c
                ns += 1
    return cstart[:ns], clen[:ns], owner[:ns], tsig[:t], tsh[:t], tsg[:t]


@nb.njit(cache=True)
def _hless(hd, hw, hs, hb, i, j):
    """Heap entry ``i`` < entry ``j``: tuples ``(depth, width, signal, shift)`` (``_accumulate``)."""
    if hd[i] != hd[j]:
        return hd[i] < hd[j]
    if hw[i] != hw[j]:
        return hw[i] < hw[j]
    if hs[i] != hs[j]:
        return hs[i] < hs[j]
    return hb[i] < hb[j]


@nb.njit(cache=True)
def _hswap(hd, hw, hs, hb, hg, i, j):
    hd[i], hd[j] = hd[j], hd[i]
    hw[i], hw[j] = hw[j], hw[i]
    hs[i], hs[j] = hs[j], hs[i]
    hb[i], hb[j] = hb[j], hb[i]
    hg[i], hg[j] = hg[j], hg[i]


@nb.njit(cache=True)
def _hdown(hd, hw, hs, hb, hg, i, n):
    while True:
        m = i
        for c in (2 * i + 1, 2 * i + 2):
            if c < n and _hless(hd, hw, hs, hb, c, m):
                m = c
        if m == i:
            return
        _hswap(hd, hw, hs, hb, hg, i, m)
        i = m


@nb.njit(cache=True)
def _hup(hd, hw, hs, hb, hg, i):
    while i > 0:
        par = (i - 1) >> 1
        if not _hless(hd, hw, hs, hb, i, par):
            return
        _hswap(hd, hw, hs, hb, hg, i, par)
        i = par


@nb.njit(cache=True)
def emit_kernel(cse_log, tsig, tsh, tsg, talive, cstart, clen, owner, n_out, order, parent, sign,
                slot0, f0, width0, L, H, fin, base):
    """Replay the CSE log, then accumulate every column (``CMVMCompiler._new`` / ``_accumulate``).

    Parameters: the CSE's adders ``cse_log`` ``(p, q, d, rho)`` (signal ``n + t``); the final
    terms of the sub-columns (``talive`` marks live ones) and their column ``owner``; the columns'
    accumulation ``order`` with decomposition ``parent``/``sign`` (``parent -1``: none); per input
    signal its builder slot, ``f`` and width; the exact input bounds ``L``/``H`` (units of
    ``2^-fin``); ``base`` the builder slot of the first new op.

    Returns ``(ok, rows, log, out_sig, out_sh, out_neg, out_slot)``: the op rows
    ``(opcode, id0, id1, data, k, I, f)`` appended from ``base`` on, the whole log (CSE then
    accumulation adders), per column its output signal (``-1``: all-zero), shift, negation and
    slot.  ``ok`` False: a coefficient or a range left the int64 headroom (nothing is valid).
    """
    n = len(slot0)
    m_cse = cse_log.shape[0]
    n_t = len(tsig)
    cap = n + m_cse + n_t + 2 * n_out + 1
    sslot = np.empty(cap, np.int64)
    sf = np.empty(cap, np.int64)
    sdep = np.zeros(cap, np.int64)
    swid = np.empty(cap, np.int64)
    cf_start = np.zeros(cap, np.int64)
    cf_len = np.zeros(cap, np.int64)
    size = max(64, 4 * n + 4 * m_cse)
    cf_idx = np.empty(size, np.int64)
    cf_val = np.empty(size, np.int64)
    for j in range(n):
        sslot[j], sf[j], swid[j] = slot0[j], f0[j], width0[j]
        cf_start[j], cf_len[j], cf_idx[j], cf_val[j] = j, 1, j, 1
    cf_n = n
    maxr = 1
    for j in range(n):
        maxr = max(maxr, abs(L[j]), abs(H[j]))
    climit = np.int64(1) << max(0, _COEF_LIMIT_BITS - _bitlen(maxr) - _bitlen(max(n, 1)) - 1)
    rows = np.empty((cap - n, 7), np.int64)
    log = np.empty((cap - n, 4), np.int64)
    out_sig = -np.ones(n_out, np.int64)
    out_sh = np.zeros(n_out, np.int64)
    out_neg = np.zeros(n_out, np.int64)
    out_slot = -np.ones(n_out, np.int64)
    ok = True
    nsig = n
    # one loop emits every adder: first the CSE log's, then each column's accumulation (heap of
    # the column's terms ``(depth, width, signal, shift)`` with sign ``hg``)
    hd = np.empty(max(1, n_t + 2), np.int64)
    hw = np.empty(max(1, n_t + 2), np.int64)
    hs = np.empty(max(1, n_t + 2), np.int64)
    hb = np.empty(max(1, n_t + 2), np.int64)
    hg = np.empty(max(1, n_t + 2), np.int64)
    sub_of = -np.ones(n_out + 1, np.int64)  # first sub-column of each column (sub-columns contiguous)
    for s in range(len(owner) - 1, -1, -1):
        sub_of[owner[s]] = s
    perm_end = 0
    phase = 0          # 0: CSE log, then one column of ``order`` per step
    ci = 0
    col = -1
    hn = 0
    t = 0
    while True:
        # next adder to emit: (p, q, d, rho); the accumulation's bookkeeping around it
        if phase == 0:
            if t >= m_cse:
                phase = 1
                perm_end = cf_n
                continue
            p, q, d, rho = cse_log[t, 0], cse_log[t, 1], cse_log[t, 2], cse_log[t, 3]
            t += 1
            b1 = 0
            g1 = 0
        else:
            if col < 0:  # start the next column: gather its terms into the heap
                if ci >= len(order):
                    break
                col = order[ci]
                ci += 1
                hn = 0
                s = sub_of[col]
                while s >= 0 and s < len(owner) and owner[s] == col:
                    for x in range(cstart[s], cstart[s] + clen[s]):
                        if talive[x]:
                            hs[hn], hb[hn], hg[hn] = tsig[x], tsh[x], tsg[x]
                            hn += 1
                    s += 1
                pc = parent[col]
                if pc >= 0 and out_sig[pc] >= 0:  # _add_term: ± the parent's output, carries merged
                    ps, pb = out_sig[pc], out_sh[pc]
                    pg = -sign[col] if out_neg[pc] else sign[col]
                    while pg != 0:
                        at = -1
                        for x in range(hn):
                            if hs[x] == ps and hb[x] == pb:
                                at = x
                                break
                        if at < 0:
                            hs[hn], hb[hn], hg[hn] = ps, pb, pg
                            hn += 1
                            break
                        old = hg[at]
                        hn -= 1  # pop the old term (order is irrelevant: the heap is built next)
                        hs[at], hb[at], hg[at] = hs[hn], hb[hn], hg[hn]
                        if old != pg:
                            break  # cancelled
                        pb += 1
                for x in range(hn):
                    hd[x], hw[x] = sdep[hs[x]], swid[hs[x]]
                for x in range(hn // 2 - 1, -1, -1):
                    _hdown(hd, hw, hs, hb, hg, x, hn)
            if hn <= 1:  # column done
                if hn == 1:
                    out_sig[col], out_sh[col], out_neg[col] = hs[0], hb[0], 1 if hg[0] < 0 else 0
                    out_slot[col] = sslot[hs[0]]
                    o = hs[0]
                    if cf_start[o] >= perm_end:  # keep the output's coefficients (decomposition)
                        st = cf_start[o]
                        for x in range(cf_len[o]):
                            cf_idx[perm_end + x] = cf_idx[st + x]
                            cf_val[perm_end + x] = cf_val[st + x]
                        cf_start[o] = perm_end
                        perm_end += cf_len[o]
                cf_n = perm_end  # drop the column's other accumulation adders' coefficients
                col = -1
                continue
            s1, b1, g1 = hs[0], hb[0], hg[0]
            hn -= 1
            _hswap(hd, hw, hs, hb, hg, 0, hn)
            _hdown(hd, hw, hs, hb, hg, 0, hn)
            s2, b2, g2 = hs[0], hb[0], hg[0]
            hn -= 1
            _hswap(hd, hw, hs, hb, hg, 0, hn)
            _hdown(hd, hw, hs, hb, hg, 0, hn)
            if b2 < b1:
                s1, b1, g1, s2, b2, g2 = s2, b2, g2, s1, b1, g1
            p, q, d, rho = s1, s2, b2 - b1, g1 * g2
        # -- emit sig[p] + rho·sig[q]·2^d ------------------------------------------------------
        new = nsig
        nsig += 1
        cf_idx, cf_val, cf_n, lo, hi, ok = sum_coefs(cf_idx, cf_val, cf_start, cf_len, cf_n, p, q, new, d, rho, L, H,
                                                     climit)
        if not ok:
            break
        fn = max(sf[p], sf[q] - d)
        k, ii = range_kif(lo, hi, fn, fin)
        r = new - n
        put_adder(rows, r, rho, sslot[p], sslot[q], d, k, ii, fn)
        log[r, 0], log[r, 1], log[r, 2], log[r, 3] = p, q, d, rho
        sslot[new] = base + r
        sf[new] = fn
        swid[new] = k + ii + fn
        sdep[new] = max(sdep[p], sdep[q]) + 1
        if phase == 1:  # push the sum back: (depth, width, new, b1, g1)
            hd[hn], hw[hn], hs[hn], hb[hn], hg[hn] = sdep[new], swid[new], new, b1, g1
            hn += 1
            _hup(hd, hw, hs, hb, hg, hn - 1)
    m = nsig - n
    return ok, rows[:m].copy(), log[:m].copy(), out_sig, out_sh, out_neg, out_slot


@nb.njit(cache=True)
def dense_coefs(log, n):
    """Dense ``[signal, input]`` coefficients of inputs ``0..n-1`` and the log's adders (signal
    ``n + t``); ``ok`` False when one would reach ``2^61`` (``CMVMCompiler._coef_matrix``)."""
    m = log.shape[0]
    C = np.zeros((n + m, n), np.int64)
    for j in range(n):
        C[j, j] = 1
    lim = np.int64(1) << 61
    for t in range(m):
        p, q, d, rho = log[t, 0], log[t, 1], log[t, 2], log[t, 3]
        r = n + t
        for j in range(n):
            v = C[q, j]
            if v != 0:
                if d >= 61 or abs(v) >= (lim >> d):
                    return False, C
                v = rho * (v << d)
            v += C[p, j]
            if abs(v) >= lim:
                return False, C
            C[r, j] = v
    return True, C


def solve_fast(comp, M, live, parent, sign, order):
    """``CMVMCompiler.solve`` after its decomposition step, on arrays (see the module docstring).

    Returns the per-column ``(slot, shift, negate)`` list (and fills ``comp.log``,
    ``comp.out_terms``, ``comp.cse_info``; ``comp.sig`` keeps the inputs only), or None when the
    reference must run instead: ``engine="python"``, a compiler that already holds adders, entries
    or ranges without int64 headroom, or ``n ≥ 2^23`` (the CSE kernel's limit).  Same ops, log and
    outputs as the reference either way.
    """
    import time

    from .cmvm_nb import _cse_kernel
    n = comp.n
    if comp.engine == "python" or len(comp.sig) != n or n == 0 or n >= (1 << 23) or len(M) == 0 or len(M[0]) == 0:
        return None
    try:
        Mi = np.array(M, dtype=np.int64).reshape(n, -1)
    except OverflowError:
        return None
    if int(np.abs(Mi).max()) >= (1 << 61) or int(Mi.min()) == np.iinfo(np.int64).min:
        return None
    live_a = np.array(live, np.bool_)
    blocks = bool(comp.method != "dummy" and comp.block_rows and comp.max_depth is None and n > comp.block_rows)
    cstart, clen, owner, tsig, tsh, tsg = csd_terms(Mi, live_a, comp.block_rows if blocks else 0)
    maxr = max([abs(v) for v in comp.L + comp.H] + [1])
    sig = comp.sig
    width0 = np.array([s.width for s in sig], np.int64)
    f0 = np.array([s.f for s in sig], np.int64)
    L, H = np.array(comp.L, np.int64), np.array(comp.H, np.int64)
    cse_log = np.zeros((0, 4), np.int64)
    talive = np.ones(len(tsig), np.bool_)
    if comp.method != "dummy":
        maxb = int(tsh.max()) if len(tsh) else -1
        if (maxb + 2) + maxr.bit_length() + n.bit_length() >= 62:  # as CMVMCompiler._cse: reference
            return None
        t0 = time.perf_counter()
        cse_log, talive, complete, steps = _cse_kernel(
            cstart, clen, tsig, tsh, tsg, n, width0, f0, L, H, int(comp.fin), 1 if comp.method == "mc" else 0,
            int(comp.tiebreak), -1 if comp.max_depth is None else int(comp.max_depth),
            -1 if comp.budget is None else int(comp.budget), max(16, len(tsig)))
        comp._steps = int(steps)
        comp.cse_info = {"cse_s": round(time.perf_counter() - t0, 3), "complete": bool(complete),
                         "cse_steps": comp._steps}
    n_out = Mi.shape[1]
    res = emit_kernel(cse_log, tsig, tsh, tsg, talive, cstart, clen, owner, n_out,
                      np.array(order, np.int64), np.array(parent, np.int64), np.array(sign, np.int64),
                      np.array([s.slot for s in sig], np.int64), f0, width0, L, H, int(comp.fin), len(comp.b))
    ok, rows, log, out_sig, out_sh, out_neg, out_slot = res
    if not ok:  # rebuild the reference's state from the CSE result and let it finish
        return _fallback(comp, cse_log, tsig, tsh, tsg, talive, cstart, clen, owner, n_out, parent, sign, order)
    comp.b.extend_ops(rows)
    comp.log = list(map(tuple, log.tolist()))
    comp._log_arr = log
    comp.out_terms = [None if s < 0 else (s, h, bool(g)) for s, h, g in
                      zip(out_sig.tolist(), out_sh.tolist(), out_neg.tolist())]
    return [None if s < 0 else (sl, h, bool(g)) for s, sl, h, g in
            zip(out_sig.tolist(), out_slot.tolist(), out_sh.tolist(), out_neg.tolist())]


def _fallback(comp, cse_log, tsig, tsh, tsg, talive, cstart, clen, owner, n_out, parent, sign, order):
    """The reference's replay and accumulation from the CSE kernel's result (no int64 headroom)."""
    for p, q, d, rho in cse_log.tolist():
        comp._new(p, q, d, rho)
    cols: list[dict] = [{} for _ in range(n_out)]
    ts, tb, tg, ta = tsig.tolist(), tsh.tolist(), tsg.tolist(), talive.tolist()
    for s, c in enumerate(owner.tolist()):
        lo, hi = int(cstart[s]), int(cstart[s] + clen[s])
        cols[c].update({(a, b): g for a, b, g, alive in zip(ts[lo:hi], tb[lo:hi], tg[lo:hi], ta[lo:hi]) if alive})
    return comp._accumulate_columns(cols, parent, sign, order)


#: builder-slot placeholder of a position's own ops in :func:`replay_positions` (made absolute
#: when the position is emitted)
_MARK = -(1 << 50)


@nb.njit(cache=True)
def replay_positions(log, LOu, HIu, grp, live, f0, slot0, fin, out_sig, out_sh, out_neg):
    """:func:`.cmvm_nb.replay_kernel` at every position ``p`` (rows of ``live``/``f0``/``slot0``,
    bounds ``LOu/HIu[grp[p]]``, ``fin[p]``), plus each position's output terms.

    A position's own ops are numbered from ``_MARK`` (their slots are known only when the caller
    appends them).  Returns ``(rows, row_start, oslot, osh, oneg)``: position ``p``'s ops are
    ``rows[row_start[p] : row_start[p + 1]]``; per position and template output ``c`` its slot
    (``-1``: all-zero), shift and negation.
    """
    P, n = live.shape
    n_out = len(out_sig)
    m = log.shape[0]
    rows = np.empty((P * m, 7), np.int64)
    row_start = np.zeros(P + 1, np.int64)
    oslot = -np.ones((P, n_out), np.int64)
    osh = np.zeros((P, n_out), np.int64)
    oneg = np.zeros((P, n_out), np.int64)
    r = 0
    for p in range(P):
        g = grp[p]
        rw, al_s, al_sh, al_sg = replay_kernel(log, LOu[g], HIu[g], live[p], f0[p], slot0[p], fin[p], _MARK)
        for x in range(rw.shape[0]):
            for y in range(7):
                rows[r + x, y] = rw[x, y]
        r += rw.shape[0]
        row_start[p + 1] = r
        for c in range(n_out):
            t = out_sig[c]
            if t < 0 or al_sg[t] == 0:
                continue
            s_ = al_s[t]
            oslot[p, c] = slot0[p, s_] if s_ < n else _MARK + s_ - n
            osh[p, c] = al_sh[t] + out_sh[c]
            oneg[p, c] = 1 if (al_sg[t] < 0) != (out_neg[c] != 0) else 0
    return rows[:r], row_start, oslot, osh, oneg


class PositionReplay:
    """A solved template replayed at every output position of a convolution, in chunks of positions.

    Built by :func:`make_replay` from each position's inputs, the ``(slot, k, i, f)`` a fresh
    ``CMVMCompiler`` would get; its :meth:`~.cmvm.CMVMCompiler.instantiate` is the reference:
    :meth:`emit` appends position ``p``'s ops to the builder and returns the same output terms
    (same ops and dtypes).  The exact bounds are computed once per distinct input-range pattern
    (the interior positions of a layer usually share one); the kernel runs on chunks of
    positions of about ``CHUNK_ROWS`` ops, so only one chunk's rows exist outside the builder.
    """

    CHUNK_ROWS = 1 << 20

    def __init__(self, template, LOu, HIu, grp, live, f0, slots, fin):
        outs = template.out_terms
        self.out = (np.array([-1 if t is None else t[0] for t in outs], np.int64),
                    np.array([0 if t is None else t[1] for t in outs], np.int64),
                    np.array([0 if t is None else int(bool(t[2])) for t in outs], np.int64))
        self.log = template._log_array()
        self.args = (LOu, HIu, grp, live, f0, slots, fin)
        self.step = max(1, self.CHUNK_ROWS // max(1, len(self.log)))
        self.lo = self.hi = 0
        self.chunk = None

    def emit(self, p: int, builder) -> list[tuple[int, int, bool] | None]:
        """Append position ``p``'s ops; per template output ``(slot, shift, negate)`` or None."""
        if not self.lo <= p < self.hi:
            LOu, HIu, grp, live, f0, slots, fin = self.args
            self.lo, self.hi = p, min(p + self.step, len(grp))
            sl = slice(self.lo, self.hi)
            self.chunk = replay_positions(self.log, LOu, HIu, grp[sl], live[sl], f0[sl], slots[sl], fin[sl], *self.out)
        rows, row_start, oslot, osh, oneg = self.chunk
        q = p - self.lo
        base = len(builder)
        blk = rows[row_start[q]:row_start[q + 1]].copy()
        ids = blk[:, 1:3]
        ids += np.where(ids < -1, base - _MARK, 0)
        builder.extend_ops(blk)
        sl = oslot[q]
        sl = np.where(sl < -1, sl + (base - _MARK), sl).tolist()
        return [None if s < 0 else (s, h, bool(g)) for s, h, g in zip(sl, osh[q].tolist(), oneg[q].tolist())]


def make_replay(template, slots: np.ndarray, kifs: np.ndarray) -> PositionReplay | None:
    """:class:`PositionReplay` of ``template`` (a solved ``CMVMCompiler``) at the positions whose
    inputs are ``slots`` (``[P, K]``, ``-1``: padding) and ``kifs`` (``[P, K, 3]``), or None when
    the reference must run (``engine="python"``, no int64 headroom)."""
    C = template._coef_matrix()
    if C is None or template.engine == "python":
        return None
    slots = np.ascontiguousarray(slots, np.int64)
    kifs = np.asarray(kifs, np.int64)
    k, i, f = kifs[..., 0], kifs[..., 1], kifs[..., 2]
    live = (k + i + f) > 0
    fin = np.maximum(f.max(axis=1, initial=0), 0)
    e = np.where(live, i + fin[:, None], 0)
    if e.size and (int(e.max()) > 60 or int(e.min()) < 0 or int((fin[:, None] - f).max()) > 60):
        return None
    one = np.int64(1)
    Lv = np.where(live & (k != 0), -(one << e), 0)
    Hv = np.where(live, (one << e) - (one << np.where(live, fin[:, None] - f, 0)), 0)
    bound = max(int(np.abs(Lv).max(initial=1)), int(np.abs(Hv).max(initial=1)), 1)
    if (int(np.abs(C).max(initial=1)) * bound * max(template.n, 1)).bit_length() > 62:
        return None
    n = template.n
    uniq, grp = np.unique(np.concatenate([Lv, Hv], axis=1), axis=0, return_inverse=True)
    Lu, Hu = uniq[:, :n].T, uniq[:, n:].T
    Cp, Cn = np.maximum(C, 0), np.minimum(C, 0)
    LOu = np.ascontiguousarray((Cp @ Lu + Cn @ Hu).T)
    HIu = np.ascontiguousarray((Cp @ Hu + Cn @ Lu).T)
    return PositionReplay(template, LOu, HIu, grp.reshape(-1).astype(np.int64), np.ascontiguousarray(live),
                          np.ascontiguousarray(f), slots, fin.astype(np.int64))
