"""Compiled (numba) event loop of the timing model: the same machine as :func:`.timing_engine.run_events`.

:func:`.timing_engine.run_events` is the readable reference (Python, one dict per core); this
module runs the identical algorithm over flat arrays (all cores' event instructions back to back,
``off[i]:off[i+1]`` for core index ``i``) in one compiled function, so that a program with
~10^5 event instructions (PIMCOMP-NN's ResNet-18) takes milliseconds instead of a second.

Same order of every step as the reference — the LIFO ready stack, the heap keys
``(time, D13 key, sequence)`` — so the results are identical, which the tests check on random
programs in every mode (latency/throughput, pimsim/native, repeated rounds).  Core ids are
mapped to indices ``0..K-1`` (sorted ids); a peer id that is not a planned core is index -1.
"""

from __future__ import annotations

import heapq

import numpy as np
from ....core.native import kernel

from .timing_units import EV_LD, EV_RECV, EV_SEND, EV_SLD, EV_ST, EV_SYNC, PS

# core states (as timing_engine)
RUN, GM_WAIT, SEND_WAIT, RECV_WAIT, WAIT_WAIT, DONE, HUNG, STOPPED = range(8)
_GM, _WAITSTART, _DELIVER = 0, 1, 2
#: event registers the compiled loop keeps counters for (per core; more: the reference loop)
MAX_EVENT_REGS = 1 << 12
#: "no limit" in throughput mode without sim_time
_NO_LIMIT = np.int64(1) << np.int64(62)


@kernel(cache=True, nogil=True, inline="always")
def _complete(c, E, toff, j, E_out, base, pre_ev, off, ready, rtop, rec):
    jj = j[c]
    if rec[c]:
        E_out[off[c] + jj] = E
    base[c] = E + toff - pre_ev[off[c] + jj]
    j[c] = jj + 1
    ready[rtop] = c
    return rtop + 1


@kernel(cache=True, nogil=True)
def _events(off, kind, pre_ev, A, B, C, D, peer, evr, evv, key, size, ev_idx,
            pre_n, fetch_off, n_instr, hang, P, native, throughput, lim, repeat,
            S_out, E_out, state, j, rounds, executed, T_end, T_set, round_ends, n_ends, sw,
            mism, counters, blocked_cnt):
    """Run the loop; fills the output arrays, returns (gm_busy, t_last, mismatches).

    A blocked core has at most one unmatched send and one unmatched recv, so the reference's
    pending-send / waiting-recv dicts are per-core slots here; ``counters[core, event]``.
    """
    K = len(pre_n)
    base = np.full(K, 2 * P, np.int64)
    rec = np.ones(K, np.bool_)  # record S/E of this round (repeat > 1: the first round only)
    ready = np.zeros(K + 2, np.int64)
    ps_to = np.full(K, -2, np.int64)  # pending send of core c: to core index ps_to[c] (-2: none)
    ps_j = np.zeros(K, np.int64)
    ps_d1 = np.zeros(K, np.int64)
    wr_from = np.full(K, -2, np.int64)  # waiting recv of core c: from core index wr_from[c] (-2: none)
    wr_j = np.zeros(K, np.int64)
    wr_S = np.zeros(K, np.int64)
    has_wait = np.zeros(K, np.bool_)
    wait_e = np.zeros(K, np.int64)
    wait_v = np.zeros(K, np.int64)
    heap = [(np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0))]
    heap.pop()
    seq = 0
    gm_free = 0
    gm_busy = 0
    t_last = 0
    n_mism = 0
    for i in range(K):  # popped from the top: the last core first, as the reference's list.pop()
        ready[i] = i
    rtop = K
    while True:
        while rtop > 0:
            rtop -= 1
            c = ready[rtop]
            o = off[c]
            n_ev = off[c + 1] - o
            while True:  # advance(c)
                jj = j[c]
                if jj == n_ev:
                    t_end = base[c] + pre_n[c]
                    if throughput and n_ev == 0:
                        first = base[c] + fetch_off[c]
                        L = pre_n[c]
                        if n_instr[c] == 0 or first > lim:
                            k = 0
                        elif L <= 0:
                            k = 0
                        else:
                            k = (lim - first) // L + 1
                        rounds[c] = k
                        executed[c] = k * n_instr[c]
                        T_end[c] = base[c] + k * L
                        T_set[c] = True
                        state[c] = STOPPED
                        break
                    if throughput:
                        if base[c] + fetch_off[c] <= lim:
                            rounds[c] += 1
                        executed[c] += n_instr[c]
                        if n_ev == 0 or t_end > lim:
                            state[c] = STOPPED
                            T_end[c] = t_end
                            T_set[c] = True
                            break
                        base[c] = t_end
                        j[c] = 0
                        continue
                    round_ends[c, n_ends[c]] = t_end
                    n_ends[c] += 1
                    if n_ends[c] < repeat and hang[c] < 0:
                        rec[c] = False
                        base[c] = t_end
                        j[c] = 0
                        continue
                    T_end[c] = t_end
                    T_set[c] = True
                    state[c] = HUNG if hang[c] >= 0 else DONE
                    break
                e = o + jj
                S = base[c] + pre_ev[e] + P
                if throughput and S > lim:
                    state[c] = STOPPED
                    break
                if rec[c]:
                    S_out[e] = S
                k = kind[e]
                if k == EV_LD or k == EV_SLD:
                    a = (S if S > sw[c] else sw[c]) + A[e]
                    heapq.heappush(heap, (a, key[e], np.int64(seq), np.int64(_GM), c, np.int64(0)))
                    seq += 1
                    state[c] = GM_WAIT
                    break
                if k == EV_ST:
                    r = S + A[e]
                    a = (r if r > sw[c] else sw[c]) + B[e]
                    heapq.heappush(heap, (a, key[e], np.int64(seq), np.int64(_GM), c, np.int64(0)))
                    seq += 1
                    state[c] = GM_WAIT
                    break
                if k == EV_SEND or k == EV_RECV:
                    if k == EV_SEND:
                        s, r = c, peer[e]
                        d1 = (S if S > sw[c] else sw[c]) + A[e]
                        sw[c] = d1 + PS
                        state[c] = SEND_WAIT
                        if r < 0 or wr_from[r] != c:
                            ps_to[c], ps_j[c], ps_d1[c] = r, jj, d1
                            break
                        wr_from[r] = -2
                        js, jr, s_recv = jj, wr_j[r], wr_S[r]
                    else:
                        s, r = peer[e], c
                        state[c] = RECV_WAIT
                        if s < 0 or ps_to[s] != c:
                            wr_from[c], wr_j[c], wr_S[c] = s, jj, S
                            break
                        ps_to[s] = -2
                        js, jr, d1, s_recv = ps_j[s], jj, ps_d1[s], S
                    # pair(s, r, js, jr, d1, s_recv)
                    es, er = off[s] + js, off[r] + jr
                    if size[es] != size[er]:
                        if n_mism < len(mism):
                            mism[n_mism, 0] = s
                            mism[n_mism, 1] = ev_idx[es]
                            mism[n_mism, 2] = r
                            mism[n_mism, 3] = ev_idx[er]
                            mism[n_mism, 4] = size[es]
                            mism[n_mism, 5] = size[er]
                            n_mism += 1
                    ans = d1 if d1 > s_recv else s_recv
                    q2 = ans if ans > sw[r] else sw[r]
                    d2 = q2 + B[es]
                    sw[r] = d2
                    rr = d2 + C[es]
                    q3 = rr if rr > sw[s] else sw[s]
                    d3 = q3 + D[es]
                    sw[s] = d3
                    e_recv = d3 + C[er]
                    state[s] = RUN
                    state[r] = RUN
                    rtop = _complete(s, e_recv if native else rr, P, j, E_out, base, pre_ev, off, ready, rtop, rec)
                    rtop = _complete(r, e_recv, P, j, E_out, base, pre_ev, off, ready, rtop, rec)
                    break
                if k == EV_SYNC:
                    d = (S if S > sw[c] else sw[c]) + A[e]
                    sw[c] = d
                    heapq.heappush(heap, (d, np.int64(0), np.int64(seq), np.int64(_DELIVER), peer[e], evr[e]))
                    seq += 1
                    E = S + P
                    if rec[c]:
                        E_out[e] = E
                    base[c] = E + 2 * P - pre_ev[e]
                    j[c] = jj + 1
                    continue
                heapq.heappush(heap, (S, np.int64(0), np.int64(seq), np.int64(_WAITSTART), c, np.int64(0)))
                seq += 1
                state[c] = WAIT_WAIT
                break
        if len(heap) == 0:
            break
        t, _, _, typ, who, ev = heapq.heappop(heap)
        if throughput and t > lim:
            break
        t_last = t
        if typ == _GM:
            c = who
            e = off[c] + j[c]
            g0 = t if t > gm_free else gm_free
            if kind[e] == EV_ST:
                g1 = g0 + C[e]
                gm_free = g1
                sw[c] = g1
                state[c] = RUN
                rtop = _complete(c, g1, 2 * P, j, E_out, base, pre_ev, off, ready, rtop, rec)
            else:
                g1 = g0 + B[e]
                gm_free = g1
                sw[c] = g1
                state[c] = RUN
                rtop = _complete(c, g1 + C[e], P, j, E_out, base, pre_ev, off, ready, rtop, rec)
            gm_busy += g1 - g0
        elif typ == _WAITSTART:
            c = who
            e = off[c] + j[c]
            ee, v = evr[e], evv[e]
            if counters[c, ee] == v:
                counters[c, ee] = 0
                state[c] = RUN
                rtop = _complete(c, t, 2 * P, j, E_out, base, pre_ev, off, ready, rtop, rec)
            else:
                has_wait[c] = True
                wait_e[c] = ee
                wait_v[c] = v
        else:
            r, ee = who, ev
            if r < 0:  # a sync to a core that is not simulated: counted nowhere
                continue
            cnt = counters[r, ee] + 1
            counters[r, ee] = cnt
            if has_wait[r] and wait_e[r] == ee and wait_v[r] == cnt:
                counters[r, ee] = 0
                has_wait[r] = False
                state[r] = RUN
                rtop = _complete(r, t, 2 * P, j, E_out, base, pre_ev, off, ready, rtop, rec)
    for c in range(K):
        if state[c] == WAIT_WAIT:
            blocked_cnt[c] = counters[c, evr[off[c] + j[c]]]
    return gm_busy, t_last, n_mism


def run_events_fast(plans, P: int, native: bool, throughput: bool = False, limit: int | None = None,
                    repeat: int = 1):
    """:func:`.timing_engine.run_events` on the compiled loop (same arguments, same
    :class:`~.timing_engine.EngineResult`; ``counters`` is left empty).  Event registers outside
    ``0 .. MAX_EVENT_REGS - 1`` go to the reference loop."""
    from .timing_engine import EngineResult, fetch_offset, run_events

    evr = np.concatenate([plans[c].ev_e for c in plans]) if plans else np.zeros(0, np.int64)
    n_regs = int(evr.max()) + 1 if len(evr) else 1
    if len(evr) and (int(evr.min()) < 0 or n_regs > MAX_EVENT_REGS):
        return run_events(plans, P, native, throughput=throughput, limit=limit, repeat=repeat)
    cores = sorted(plans)
    K = len(cores)
    index = {c: i for i, c in enumerate(cores)}
    n_ev = np.array([len(plans[c].ev_idx) for c in cores], np.int64)
    off = np.zeros(K + 1, np.int64)
    np.cumsum(n_ev, out=off[1:])

    def cat(get, dtype=np.int64):
        parts = [np.asarray(get(plans[c]), dtype) for c in cores]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    peer_ids = cat(lambda p: p.ev_peer)
    ids = np.asarray(cores, np.int64)
    peer = np.full(len(peer_ids), -1, np.int64)  # peer core index, -1: not a planned core
    if K:
        pos = np.minimum(np.searchsorted(ids, peer_ids), K - 1)
        found = ids[pos] == peer_ids
        peer[found] = pos[found]
    pre_n = np.array([int(p.pre[p.hang if p.hang >= 0 else p.n]) for p in (plans[c] for c in cores)], np.int64)
    fetch = np.array([fetch_offset(plans[c], P) for c in cores], np.int64)
    n_instr = np.array([plans[c].n for c in cores], np.int64)
    hang = np.array([plans[c].hang for c in cores], np.int64)
    total = int(off[-1])
    S_out, E_out = np.zeros(total, np.int64), np.zeros(total, np.int64)
    state = np.zeros(K, np.int64)
    j = np.zeros(K, np.int64)
    rounds, executed = np.zeros(K, np.int64), np.zeros(K, np.int64)
    T_end, T_set = np.zeros(K, np.int64), np.zeros(K, np.bool_)
    round_ends, n_ends = np.zeros((K, max(int(repeat), 1)), np.int64), np.zeros(K, np.int64)
    sw = np.zeros(K, np.int64)
    mism = np.zeros((100, 6), np.int64)
    counters = np.zeros((K, n_regs), np.int64)
    blocked_cnt = np.zeros(K, np.int64)
    lim = int(limit) if (throughput and limit is not None) else int(_NO_LIMIT)
    ev_idx = cat(lambda p: p.ev_idx)
    gm_busy, t_last, n_mism = _events(
        off, cat(lambda p: p.ev_kind), cat(lambda p: p.pre[p.ev_idx]), cat(lambda p: p.ev_a), cat(lambda p: p.ev_b),
        cat(lambda p: p.ev_c), cat(lambda p: p.ev_d), peer, cat(lambda p: p.ev_e), cat(lambda p: p.ev_v),
        cat(lambda p: p.ev_key), cat(lambda p: p.ev_size), ev_idx, pre_n, fetch, n_instr, hang, int(P),
        bool(native), bool(throughput), lim, int(repeat), S_out, E_out, state, j, rounds, executed, T_end, T_set,
        round_ends, n_ends, sw, mism, counters, blocked_cnt)
    st = {c: int(state[i]) for i, c in enumerate(cores)}
    pos_d = {c: int(j[i]) for i, c in enumerate(cores)}
    blocked = {}
    for i, c in enumerate(cores):
        s = st[c]
        if s in (SEND_WAIT, RECV_WAIT, WAIT_WAIT, GM_WAIT, RUN):
            e = int(off[i] + j[i])
            if s == SEND_WAIT:
                blocked[c] = ("send", int(peer_ids[e]))
            elif s == RECV_WAIT:
                blocked[c] = ("recv", int(peer_ids[e]))
            elif s == WAIT_WAIT:
                ev_e, ev_v = plans[c].ev_e, plans[c].ev_v
                blocked[c] = ("wait", int(ev_e[j[i]]), int(ev_v[j[i]]), int(blocked_cnt[i]))
            else:
                blocked[c] = ("limit",)
        if throughput and j[i] < n_ev[i]:
            executed[i] += int(plans[c].ev_idx[j[i]])
    mismatch = [(int(cores[m[0]]), int(m[1]), int(cores[m[2]]), int(m[3]), int(m[4]), int(m[5]))
                for m in mism[:n_mism]]
    return EngineResult(
        ev_S={c: S_out[off[i]:off[i + 1]] for i, c in enumerate(cores)},
        ev_E={c: E_out[off[i]:off[i + 1]] for i, c in enumerate(cores)},
        T_end={c: int(T_end[i]) for i, c in enumerate(cores) if T_set[i]}, state=st, pos=pos_d,
        rounds={c: int(rounds[i]) for i, c in enumerate(cores)}, gm_busy=int(gm_busy), t_last=int(t_last),
        sw={c: int(sw[i]) for i, c in enumerate(cores)}, counters={}, blocked_info=blocked,
        events_done={c: int(executed[i]) for i, c in enumerate(cores)}, size_mismatch=mismatch,
        round_ends={c: round_ends[i, :n_ends[i]].tolist() for i, c in enumerate(cores)} if repeat > 1 else {})
