"""numba kernel of the CMVM common-subexpression elimination (same greedy as ``CMVMCompiler._cse_py``).

The kernel reproduces the pure-Python reference step for step (same pattern keys, scores, heap
order, occurrence order and depth test), so both give the same adders; it only replaces Python
dicts/sets by flat arrays:

* terms of column ``c`` live in fixed slots (a replaced pair frees one slot for the new term);
  a hash table ``(c, signal, shift) → slot`` finds a term;
* an open-addressing table holds pattern frequencies, updated incrementally; a lazy binary heap
  (rows of an int64 array) holds ``(-score, secondary key, pattern)`` entries (stale ones are
  skipped on pop, ones whose count dropped are requeued);
* each signal's exact integer range is computed from its sparse coefficient vector (inputs and
  coefficients in flat growable arrays), so adder widths match the Python compiler's exactly.

Patterns are packed into one int64 ``p<<32 | q<<8 | d<<1 | (rho > 0)``, which orders like the
Python tuple ``(p, q, d, rho)``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _bitlen(n):
    b = 0
    while n > 0:
        n >>= 1
        b += 1
    return b


@nb.njit(cache=True)
def _pkey(s1, b1, g1, s2, b2, g2):
    if b2 < b1 or (b2 == b1 and s2 < s1):
        s1, b1, g1, s2, b2, g2 = s2, b2, g2, s1, b1, g1
    return (s1 << 32) | (s2 << 8) | ((b2 - b1) << 1) | (1 if g1 * g2 > 0 else 0)


@nb.njit(cache=True)
def _tkey(c, s, b):
    return (c << 44) | (s << 12) | b


@nb.njit(cache=True)
def _mix(k):
    """Hash of a key for the open-addressing tables: a multiplicative hash whose high half is folded
    into the low bits the tables index with, so every key bit counts (keys put the column or the
    signal in their high bits; a plain product's low bits ignore those, and whole columns then
    landed on one probe chain)."""
    h = np.uint64(k) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h ^ (h >> np.uint64(29))) >> np.uint64(1))


@nb.njit(cache=True)
def _hslot(keys, k):
    """Open-addressing (linear probing) slot of key ``k ≥ 0`` in ``keys`` (-1 = empty)."""
    mask = len(keys) - 1
    i = _mix(k) & mask
    while keys[i] != k and keys[i] != -1:
        i = (i + 1) & mask
    return i


@nb.njit(cache=True)
def _hget(keys, vals, k):
    i = _hslot(keys, k)
    return vals[i] if keys[i] == k else 0


@nb.njit(cache=True)
def _score(key, count, width, depth, method, tiebreak):
    p = key >> 32
    q = (key >> 8) & 0xFFFFFF
    d = (key >> 1) & 0x7F
    w = max(width[p], width[q] + d, 1)
    t = 0
    if tiebreak == 1:
        t = -w
    elif tiebreak == 2:
        t = w
    elif tiebreak == 3:
        t = -d
    elif tiebreak == 4:
        t = -max(depth[p], depth[q])
    if method == 1:  # mc
        return -(count * 4096 + t)
    return -((count - 1) * w * 4096 + t)


@nb.njit(cache=True)
def _sec(key, tiebreak):
    """Secondary heap key (as ``CMVMCompiler._sec``): tie-break 5 prefers high signal indices."""
    if tiebreak != 5:
        return 0
    p = key >> 32
    q = (key >> 8) & 0xFFFFFF
    return -((max(p, q) << 32) | min(p, q))


# Pattern counts live in two open-addressing tables of interleaved ``[key, count]`` pairs (one cache
# line per probe): the global table ``gt`` and, for the patterns of the signal created in the current
# step, a small local table ``lt``.  A pattern's count can only grow in the step that creates its
# newer signal (new occurrences exist only of the new signal), so at the end of the step the local
# patterns with count < 2 are dropped for good and the others move to ``gt``; later decrements of
# absent patterns are skipped.  The counts ≥ 2, the only ones the greedy reads, are unchanged, and
# ``gt`` stays a few times smaller (most new patterns occur once), which is what the kernel's time
# is about: its probes miss the caches.
@nb.njit(cache=True)
def _pslot(t, k):
    """Slot of pattern ``k`` in the interleaved table ``t`` (empty key: -1)."""
    mask = (len(t) >> 1) - 1
    i = _mix(k) & mask
    while t[2 * i] != k and t[2 * i] != -1:
        i = (i + 1) & mask
    return i


@nb.njit(cache=True)
def _ptable(slots):
    t = np.empty(2 * slots, np.int64)
    for i in range(slots):
        t[2 * i] = -1
        t[2 * i + 1] = 0
    return t


@nb.njit(cache=True)
def _pgrow(t):
    """The table with twice the slots (keys rehashed)."""
    nt = _ptable(len(t))
    for i in range(len(t) >> 1):
        if t[2 * i] >= 0:
            j = _pslot(nt, t[2 * i])
            nt[2 * j] = t[2 * i]
            nt[2 * j + 1] = t[2 * i + 1]
    return nt


@nb.njit(cache=True)
def _change(c, s0, b0, g0, cstart, clen, tsig, tsh, tsg, talive, gt, lt, lused, ln, newsig, heap, heap_n,
            width, depth, method, tiebreak, delta):
    """Add ``delta`` to the count of every pattern of term ``(s0, b0, g0)`` with column ``c``'s live
    terms (patterns of signal ``newsig`` in ``lt``, whose used slots are listed in ``lused[:ln[0]]``;
    ``lt`` must have room for ``clen[c]`` new keys).  Returns the heap (grown if needed)."""
    for t in range(cstart[c], cstart[c] + clen[c]):
        if talive[t]:
            k = _pkey(s0, b0, g0, tsig[t], tsh[t], tsg[t])
            if (k >> 32) == newsig or ((k >> 8) & 0xFFFFFF) == newsig:
                i = _pslot(lt, k)
                if lt[2 * i] != k:
                    lt[2 * i] = k
                    lt[2 * i + 1] = 0
                    lused[ln[0]] = i
                    ln[0] += 1
                v = lt[2 * i + 1] + delta
                lt[2 * i + 1] = v
            else:  # an older pattern: only decremented, absent ones stay absent
                i = _pslot(gt, k)
                if gt[2 * i] != k:
                    continue
                v = gt[2 * i + 1] + delta
                gt[2 * i + 1] = v
            if delta > 0 and v >= 2:
                heap = heap_push(heap, heap_n, _score(k, v, width, depth, method, tiebreak), _sec(k, tiebreak), k)
    return heap


@nb.njit(cache=True)
def _merge_local(gt, hn, lt, lused, ln):
    """End of a step: local patterns with count ≥ 2 move to the global table, ``lt`` is emptied."""
    while 2 * (hn[0] + ln[0]) > (len(gt) >> 1):
        gt = _pgrow(gt)
    for j in range(ln[0]):
        i = lused[j]
        if lt[2 * i + 1] >= 2:
            g = _pslot(gt, lt[2 * i])
            gt[2 * g] = lt[2 * i]
            gt[2 * g + 1] = lt[2 * i + 1]
            hn[0] += 1
        lt[2 * i] = -1
        lt[2 * i + 1] = 0
    ln[0] = 0
    return gt


@nb.njit(cache=True)
def sum_coefs(cf_idx, cf_val, cf_start, cf_len, cf_n, p, q, new, d, rho, L, H, climit):
    """Sparse coefficient vector of signal ``new = sig[p] + rho·sig[q]·2^d`` appended at ``cf_n``
    (signal ``s`` has entries ``cf_start[s] : cf_start[s] + cf_len[s]`` of ``cf_idx``/``cf_val``,
    sorted by input; the arrays grow when full) and its exact range on the input bounds
    ``L``/``H``.  Returns ``(cf_idx, cf_val, cf_n, lo, hi, ok)``; with ``climit > 0``, ``ok`` is
    False (the vector unfinished) once a coefficient would reach ``climit`` or its shift leave
    int64 (``climit = 0``: the caller checked the headroom)."""
    need = cf_n + cf_len[p] + cf_len[q]
    if need > len(cf_idx):
        m2 = max(need, 2 * len(cf_idx))
        cf_idx = _grown(cf_idx, cf_n, m2)
        cf_val = _grown(cf_val, cf_n, m2)
    i1, e1 = cf_start[p], cf_start[p] + cf_len[p]
    i2, e2 = cf_start[q], cf_start[q] + cf_len[q]
    cf_start[new] = cf_n
    lo = 0
    hi = 0
    dlim = (np.int64(1) << (62 - d)) if d < 62 else np.int64(0)
    while i1 < e1 or i2 < e2:
        if i2 >= e2 or (i1 < e1 and cf_idx[i1] < cf_idx[i2]):
            j, cv = cf_idx[i1], cf_val[i1]
            i1 += 1
        else:
            if climit > 0 and abs(cf_val[i2]) >= dlim:
                return cf_idx, cf_val, cf_n, lo, hi, False
            sh = rho * (cf_val[i2] << d)
            if i1 >= e1 or cf_idx[i2] < cf_idx[i1]:
                j, cv = cf_idx[i2], sh
            else:
                j, cv = cf_idx[i1], cf_val[i1] + sh
                i1 += 1
            i2 += 1
        if cv != 0:
            if climit > 0 and abs(cv) >= climit:
                return cf_idx, cf_val, cf_n, lo, hi, False
            cf_idx[cf_n] = j
            cf_val[cf_n] = cv
            cf_n += 1
            if cv > 0:
                lo += cv * L[j]
                hi += cv * H[j]
            else:
                lo += cv * H[j]
                hi += cv * L[j]
    cf_len[new] = cf_n - cf_start[new]
    return cf_idx, cf_val, cf_n, lo, hi, True


@nb.njit(cache=True)
def put_adder(rows, r, rho, id0, id1, d, k, i, f):
    """Row ``r`` of an op array: ``id0 + rho·id1·2^d`` (opcode 0, or 1 for ``rho < 0``), dtype ``(k, i, f)``."""
    rows[r, 0], rows[r, 1], rows[r, 2], rows[r, 3] = (0 if rho > 0 else 1), id0, id1, d
    rows[r, 4], rows[r, 5], rows[r, 6] = k, i, f


@nb.njit(cache=True)
def range_kif(lo, hi, f, fin):
    """``(k, I)`` of the dtype with resolution ``2^-f`` holding the exact range ``[lo, hi]`` (units
    of ``2^-fin``; ``f <= fin`` or both multiples): ``minimal_kif``, a zero range keeps 1 bit."""
    if lo == 0 and hi == 0:
        return 0, 1 - f
    if f >= fin:
        a, b = lo << (f - fin), hi << (f - fin)
    elif fin - f >= 63:
        a, b = -1 if lo < 0 else 0, -1 if hi < 0 else 0
    else:
        a, b = lo >> (fin - f), hi >> (fin - f)
    return (1 if lo < 0 else 0), _bitlen(max(-a, b + 1) - 1) - f


# Slice assignments (``a[:n] = b[:n]``) and ``np.sort`` are avoided in these kernels: numba compiles
# their shape-error and quicksort machinery for seconds on a cold cache, for no speed gain here.
@nb.njit(cache=True)
def _grown(a, n, m):
    """A copy of ``a`` with room for ``m`` entries (the first ``n`` copied); a is 1-D int64."""
    g = np.empty(m, np.int64)
    for i in range(n):
        g[i] = a[i]
    return g


@nb.njit(cache=True)
def _sort_prefix(a, n):
    """Sort ``a[:n]`` in place, ascending (heapsort)."""
    for start in range(n // 2 - 1, -1, -1):
        _sift(a, start, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift(a, 0, end)


@nb.njit(cache=True)
def _sift(a, i, n):
    v = a[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and a[c + 1] > a[c]:
            c += 1
        if a[c] <= v:
            break
        a[i] = a[c]
        i = c
    a[i] = v


# A 4-ary min-heap of (score, secondary key, pattern) triples in the rows of an int64 array
# ``heap[:heap_n[0]]``, ordered like Python tuples: the same pops as ``heapq`` (equal triples are
# interchangeable).  Plain arrays instead of a typed list of tuples compile in a fraction of the
# time; four children per node halve the levels a pop walks (the heap, often a million mostly stale
# entries, is walked out of cache).
@nb.njit(cache=True)
def _row_less(heap, i, a, b, k):
    """``heap[i] < (a, b, k)`` lexicographically."""
    if heap[i, 0] != a:
        return heap[i, 0] < a
    if heap[i, 1] != b:
        return heap[i, 1] < b
    return heap[i, 2] < k


@nb.njit(cache=True)
def heap_push(heap, heap_n, a, b, k):
    """Push ``(a, b, k)``; returns the heap array (a larger copy when it was full)."""
    i = heap_n[0]
    if i == heap.shape[0]:
        grown = np.empty((2 * i + 16, 3), np.int64)
        for j in range(i):
            grown[j, 0], grown[j, 1], grown[j, 2] = heap[j, 0], heap[j, 1], heap[j, 2]
        heap = grown
    heap_n[0] = i + 1
    while i > 0:
        par = (i - 1) >> 2
        if _row_less(heap, par, a, b, k) or (heap[par, 0] == a and heap[par, 1] == b and heap[par, 2] == k):
            break
        heap[i, 0], heap[i, 1], heap[i, 2] = heap[par, 0], heap[par, 1], heap[par, 2]
        i = par
    heap[i, 0], heap[i, 1], heap[i, 2] = a, b, k
    return heap


@nb.njit(cache=True)
def heap_pop(heap, heap_n):
    """Remove and return the smallest triple (the heap must not be empty)."""
    a, b, k = heap[0, 0], heap[0, 1], heap[0, 2]
    n = heap_n[0] - 1
    heap_n[0] = n
    if n > 0:
        _sift_down(heap, 0, n, heap[n, 0], heap[n, 1], heap[n, 2])
    return a, b, k


@nb.njit(cache=True)
def _sift_down(heap, i, n, la, lb, lk):
    """Place ``(la, lb, lk)`` at the hole ``i`` of ``heap[:n]``, moving smaller children up."""
    while True:
        l = 4 * i + 1
        if l >= n:
            break
        m = l
        for j in range(l + 1, min(l + 4, n)):
            if _row_less(heap, j, heap[m, 0], heap[m, 1], heap[m, 2]):
                m = j
        if not _row_less(heap, m, la, lb, lk):
            break
        heap[i, 0], heap[i, 1], heap[i, 2] = heap[m, 0], heap[m, 1], heap[m, 2]
        i = m
    heap[i, 0], heap[i, 1], heap[i, 2] = la, lb, lk


@nb.njit(cache=True)
def _heapify(heap, n):
    for i in range((n - 2) // 4, -1, -1):
        _sift_down(heap, i, n, heap[i, 0], heap[i, 1], heap[i, 2])


@nb.njit(cache=True)
def _cse_kernel(cstart, clen, tsig, tsh, tsg, n_in, width0, f0, L, H, fin, method, tiebreak, max_depth,
                max_steps, max_new):
    n_cols = len(cstart)
    n_t = len(tsig)
    talive = np.ones(n_t, np.bool_)
    cap = n_in + max_new + 1
    width = np.zeros(cap, np.int64)
    depth = np.zeros(cap, np.int64)
    sf = np.zeros(cap, np.int64)
    for j in range(n_in):
        width[j] = width0[j]
        sf[j] = f0[j]
    # sparse coefficient vectors: signal s has entries cf_idx/cf_val[cf_start[s] : cf_start[s] + cf_len[s]]
    cf_start = np.zeros(cap, np.int64)
    cf_len = np.zeros(cap, np.int64)
    cf_idx = np.empty(max(16, 4 * n_in), np.int64)
    cf_val = np.empty(max(16, 4 * n_in), np.int64)
    for j in range(n_in):
        cf_start[j] = j
        cf_len[j] = 1
        cf_idx[j] = j
        cf_val[j] = 1
    cf_n = n_in
    n_sig = n_in
    log = np.zeros((max_new, 4), np.int64)
    n_new = 0
    tcap = 1 << _bitlen(4 * (n_t + max_new) + 16)
    pk = -np.ones(tcap, np.int64)  # (c, signal, shift) -> term index (-1: removed)
    pv = np.zeros(tcap, np.int64)
    ck_ = -np.ones(tcap, np.int64)  # (c, signal) -> number of its terms in column c
    cv_ = np.zeros(tcap, np.int64)
    gt = _ptable(1 << 16)  # pattern -> count (see _change)
    hn = np.zeros(1, np.int64)  # keys in gt
    lt = _ptable(1 << 10)
    lused = np.empty(1 << 10, np.int64)
    ln = np.zeros(1, np.int64)
    # per-signal linked list of columns (may hold stale/duplicate entries; colcnt decides)
    head = -np.ones(cap, np.int64)
    lnext = np.empty(max(16, n_t * 2), np.int64)
    lcol = np.empty(max(16, n_t * 2), np.int64)
    n_link = 0
    base = np.zeros(n_cols, np.int64)
    for c in range(n_cols):
        nt = clen[c]
        base[c] = math.ceil(math.log2(nt)) if nt > 1 else 0
        for x in range(cstart[c], cstart[c] + nt):
            i = _hslot(pk, _tkey(c, tsig[x], tsh[x]))
            pk[i] = _tkey(c, tsig[x], tsh[x])
            pv[i] = x
            ck = (c << 32) | tsig[x]
            i = _hslot(ck_, ck)
            ck_[i] = ck
            v = cv_[i]
            if v == 0:
                lcol[n_link] = c
                lnext[n_link] = head[tsig[x]]
                head[tsig[x]] = n_link
                n_link += 1
            cv_[i] = v + 1
    # pair counts, sub-columns grouped by their first input (row blocks share their patterns: the
    # table's working set stays one block's); counts do not depend on the order
    first = np.zeros(n_in + 1, np.int64)
    for c in range(n_cols):
        if clen[c] > 0:
            first[tsig[cstart[c]] + 1] += 1
    for j in range(n_in):
        first[j + 1] += first[j]
    corder = np.empty(n_cols, np.int64)
    nz = 0
    for c in range(n_cols):
        if clen[c] > 0:
            corder[first[tsig[cstart[c]]]] = c
            first[tsig[cstart[c]]] += 1
            nz += 1
    for ci in range(nz):
        c = corder[ci]
        nt = clen[c]
        for x in range(cstart[c], cstart[c] + nt):
            if 2 * (hn[0] + nt) > (len(gt) >> 1):
                gt = _pgrow(gt)
            for y in range(x + 1, cstart[c] + nt):
                k = _pkey(tsig[x], tsh[x], tsg[x], tsig[y], tsh[y], tsg[y])
                i = _pslot(gt, k)
                if gt[2 * i] != k:
                    gt[2 * i] = k
                    hn[0] += 1
                gt[2 * i + 1] += 1
    heap = np.empty((max(16, hn[0]), 3), np.int64)
    heap_n = np.zeros(1, np.int64)
    m = 0
    for i in range(len(gt) >> 1):
        if gt[2 * i] >= 0 and gt[2 * i + 1] >= 2:
            heap[m, 0] = _score(gt[2 * i], gt[2 * i + 1], width, depth, method, tiebreak)
            heap[m, 1] = _sec(gt[2 * i], tiebreak)
            heap[m, 2] = gt[2 * i]
            m += 1
    heap_n[0] = m
    _heapify(heap, m)
    mark = -np.ones(n_cols, np.int64)
    it = 0
    complete = True
    colbuf = np.empty(n_cols, np.int64)
    shbuf = np.empty(max(1, n_t), np.int64)
    while heap_n[0] > 0:
        if max_steps >= 0 and it >= max_steps:   # work budget: heap pops, not seconds (deterministic)
            complete = False
            break
        it += 1
        negscore, sec, key = heap_pop(heap, heap_n)
        i = _pslot(gt, key)
        v = gt[2 * i + 1] if gt[2 * i] == key else 0
        if v < 2:
            continue
        sc = _score(key, v, width, depth, method, tiebreak)
        if negscore != sc:  # count dropped since the push: requeue at the current score
            heap = heap_push(heap, heap_n, sc, sec, key)
            continue
        p = key >> 32
        q = (key >> 8) & 0xFFFFFF
        d = (key >> 1) & 0x7F
        rho = 1 if key & 1 else -1
        # columns holding both p and q, ascending
        nc = 0
        li = head[p]
        while li >= 0:
            c = lcol[li]
            if mark[c] != it and _hget(ck_, cv_, (c << 32) | p) > 0 and _hget(ck_, cv_, (c << 32) | q) > 0:
                mark[c] = it
                colbuf[nc] = c
                nc += 1
            li = lnext[li]
        _sort_prefix(colbuf, nc)
        new = -1
        used = 0
        for ci in range(nc):
            c = colbuf[ci]
            ns = 0
            for t in range(cstart[c], cstart[c] + clen[c]):
                if talive[t] and tsig[t] == p:
                    shbuf[ns] = tsh[t]
                    ns += 1
            _sort_prefix(shbuf, ns)
            for si in range(ns):
                b = shbuf[si]
                i1 = _hslot(pk, _tkey(c, p, b))
                i2 = _hslot(pk, _tkey(c, q, b + d))
                tp = pv[i1] if pk[i1] >= 0 else -1
                tq = pv[i2] if pk[i2] >= 0 else -1
                if tp < 0 or tq < 0 or tp == tq:
                    continue
                sg = tsg[tp]
                if tsg[tq] != sg * rho:
                    continue
                if max_depth >= 0:
                    dnew = max(depth[p], depth[q]) + 1
                    tot = 2.0 ** dnew
                    for t in range(cstart[c], cstart[c] + clen[c]):
                        if talive[t] and t != tp and t != tq:
                            tot += 2.0 ** depth[tsig[t]]
                    if math.ceil(math.log2(tot) - 1e-9) > max(max_depth, base[c]):
                        continue
                if new < 0:
                    if n_sig >= cap:
                        complete = False
                        break
                    new = n_sig
                    n_sig += 1
                    log[n_new, 0] = p
                    log[n_new, 1] = q
                    log[n_new, 2] = d
                    log[n_new, 3] = rho
                    n_new += 1
                    depth[new] = max(depth[p], depth[q]) + 1
                    # exact range of sig[p] + rho·sig[q]·2^d from the merged coefficient vectors
                    cf_idx, cf_val, cf_n, lo, hi, _ = sum_coefs(cf_idx, cf_val, cf_start, cf_len, cf_n, p, q, new, d,
                                                                rho, L, H, 0)
                    fn = max(sf[p], sf[q] - d)
                    sf[new] = fn
                    kk, ii = range_kif(lo, hi, fn, fin)
                    width[new] = kk + ii + fn
                if 2 * (ln[0] + 3 * clen[c]) > (len(lt) >> 1):
                    while 2 * (ln[0] + 3 * clen[c]) > (len(lt) >> 1):
                        lt = _pgrow(lt)
                    lused = np.empty(len(lt) >> 1, np.int64)  # rehashed: list the used slots again
                    ln[0] = 0
                    for j in range(len(lt) >> 1):
                        if lt[2 * j] >= 0:
                            lused[ln[0]] = j
                            ln[0] += 1
                for tt in (tp, tq):
                    talive[tt] = False
                    pv[_hslot(pk, _tkey(c, tsig[tt], tsh[tt]))] = -1
                    cv_[_hslot(ck_, (c << 32) | tsig[tt])] -= 1
                    heap = _change(c, tsig[tt], tsh[tt], tsg[tt], cstart, clen, tsig, tsh, tsg, talive, gt, lt,
                                   lused, ln, new, heap, heap_n, width, depth, method, tiebreak, -1)
                heap = _change(c, new, b, sg, cstart, clen, tsig, tsh, tsg, talive, gt, lt, lused, ln, new, heap,
                               heap_n, width, depth, method, tiebreak, 1)
                tsig[tp] = new
                tsh[tp] = b
                tsg[tp] = sg
                talive[tp] = True
                i1 = _hslot(pk, _tkey(c, new, b))
                pk[i1] = _tkey(c, new, b)
                pv[i1] = tp
                ck = (c << 32) | new
                i2 = _hslot(ck_, ck)
                ck_[i2] = ck
                v2 = cv_[i2]
                if v2 == 0:
                    if n_link >= len(lcol):
                        lcol = _grown(lcol, n_link, 2 * len(lcol))
                        lnext = _grown(lnext, n_link, 2 * len(lnext))
                    lcol[n_link] = c
                    lnext[n_link] = head[new]
                    head[new] = n_link
                    n_link += 1
                cv_[i2] = v2 + 1
                used += 1
            if not complete:
                break
        if not complete:
            break
        if new >= 0:
            gt = _merge_local(gt, hn, lt, lused, ln)
        if used == 0:
            gt[2 * _pslot(gt, key) + 1] = 0
    return log[:n_new], talive, complete, it


@nb.njit(cache=True)
def replay_kernel(log, LO, HI, live, f0, slot0, fin, base):
    """Replay a solved template on an instance (``CMVMCompiler.instantiate``'s fast path).

    ``log``: the template's adders ``(p, q, d, rho)`` (template signal ``n + t`` is adder ``t``);
    ``LO``/``HI``: exact bounds of every template signal restricted to this instance's live inputs
    (units of ``2^-fin``); ``live``, ``f0``, ``slot0``: per input.  An adder with a zero operand
    becomes an alias of the other one; the others are emitted with builder slot ``base + row``
    (instance signal ``n + row``).  Returns the op rows ``(opcode, id0, id1, data, k, I, f)`` and the
    alias of every template signal as ``(instance signal, shift, sign)`` arrays (sign 0: zero).
    """
    n = live.shape[0]
    m = log.shape[0]
    al_s = np.zeros(n + m, np.int64)
    al_sh = np.zeros(n + m, np.int64)
    al_sg = np.zeros(n + m, np.int64)
    sf = np.empty(n + m, np.int64)
    sslot = np.empty(n + m, np.int64)
    for j in range(n):
        if live[j]:
            al_s[j] = j
            al_sg[j] = 1
        sf[j] = f0[j]
        sslot[j] = slot0[j]
    rows = np.empty((m, 7), np.int64)
    nsig = n
    nrow = 0
    for t in range(m):
        p, q, d, rho = log[t, 0], log[t, 1], log[t, 2], log[t, 3]
        ti = n + t
        if al_sg[q] == 0:
            al_s[ti], al_sh[ti], al_sg[ti] = al_s[p], al_sh[p], al_sg[p]
            continue
        cs, csh, csg = al_s[q], al_sh[q] + d, al_sg[q] * rho
        if al_sg[p] == 0:
            al_s[ti], al_sh[ti], al_sg[ti] = cs, csh, csg
            continue
        a0, a1, a2 = al_s[p], al_sh[p], al_sg[p]
        if a1 > csh:
            a0, a1, a2, cs, csh, csg = cs, csh, csg, a0, a1, a2
        dd = csh - a1
        rr = a2 * csg
        if a1 >= 63:  # |LO|, |HI| < 2^62 are multiples of 2^a1: both 0
            lo, hi = np.int64(0), np.int64(0)
        elif a2 > 0:
            lo, hi = LO[ti] >> a1, HI[ti] >> a1
        else:
            lo, hi = -(HI[ti] >> a1), -(LO[ti] >> a1)
        f = max(sf[a0], sf[cs] - dd)
        k, i = range_kif(lo, hi, f, fin)
        put_adder(rows, nrow, rr, sslot[a0], sslot[cs], dd, k, i, f)
        sf[nsig], sslot[nsig] = f, base + nrow
        al_s[ti], al_sh[ti], al_sg[ti] = nsig, a1, a2
        nsig += 1
        nrow += 1
    return rows[:nrow], al_s, al_sh, al_sg


def cse_numba(cols: list[dict], sig, L, H, fin: int, method: str, tiebreak: int, max_depth, budget):
    """Run the kernel on Python column dicts; returns ``(log, final cols, complete, steps)``.

    ``budget`` caps the CSE steps (heap pops; ``None``: unlimited), so the result depends only on
    the inputs, never on the machine's speed.

    ``log`` rows are ``(p, q, d, rho)`` in creation order (signal ``n_in + i``); the caller replays
    them with ``CMVMCompiler._new`` (exact dtypes) before rebuilding the column dicts.
    """
    n_in = len(sig)
    cstart = np.zeros(len(cols), np.int64)
    clen = np.zeros(len(cols), np.int64)
    ts, tb, tg = [], [], []
    for c, terms in enumerate(cols):
        cstart[c] = len(ts)
        clen[c] = len(terms)
        for (s, b), d in terms.items():
            ts.append(s)
            tb.append(b)
            tg.append(d)
    tsig = np.array(ts, np.int64)
    tsh = np.array(tb, np.int64)
    tsg = np.array(tg, np.int64)
    width0 = np.array([s.width for s in sig], np.int64)
    f0 = np.array([s.f for s in sig], np.int64)
    max_new = max(16, len(tsig))
    log, alive, complete, steps = _cse_kernel(cstart, clen, tsig, tsh, tsg, n_in, width0, f0,
                                       np.asarray(L, np.int64), np.asarray(H, np.int64), int(fin),
                                       1 if method == "mc" else 0, int(tiebreak),
                                       -1 if max_depth is None else int(max_depth), -1 if budget is None else int(budget),
                                              max_new)
    out = []
    ts, tb, tg, ta = tsig.tolist(), tsh.tolist(), tsg.tolist(), alive.tolist()  # Python ints, not numpy scalars
    for c in range(len(cols)):
        lo, hi = int(cstart[c]), int(cstart[c] + clen[c])
        out.append({(s, b): g for s, b, g, a in zip(ts[lo:hi], tb[lo:hi], tg[lo:hi], ta[lo:hi]) if a})
    return log, out, complete, int(steps)
