"""The discrete-event loop of the timing model (spec §8.5–8.7, rob_size = 1 reduced model).

Purely local instructions were folded into per-core prefix sums by
:func:`~.timing_units.plan_core`; this loop only handles the event instructions (ld, st,
send, recv, sync, wait; native sld).  Heap events are global-memory arrivals (ordered by time,
then by the D13 hash key), sync deliveries and wait starts.  send/recv rendezvous are resolved
directly when both sides are known; the only shared resource whose order matters is the global
memory (§8.7).  Times are integer ps.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from .timing_units import (EV_LD, EV_RECV, EV_SEND, EV_SLD, EV_ST, EV_SYNC, PS, CorePlan,
                           SCALAR_OPS, OP_SETBW, OP_NOP)

# core states
RUN, GM_WAIT, SEND_WAIT, RECV_WAIT, WAIT_WAIT, DONE, HUNG, STOPPED = range(8)
STATE_NAMES = ("running", "global memory", "send", "recv", "wait", "finished", "hung at nop", "stopped")

_GM, _WAITSTART, _DELIVER = 0, 1, 2


@dataclass
class EngineResult:
    """Raw output of :func:`run_events` (per core, keyed by core id)."""

    ev_S: dict[int, np.ndarray]
    ev_E: dict[int, np.ndarray]
    T_end: dict[int, int]  # issue cursor after the last instruction (latency mode)
    state: dict[int, int]
    pos: dict[int, int]  # index of the event a blocked core is stuck at
    rounds: dict[int, int]
    gm_busy: int
    t_last: int
    sw: dict[int, int]
    counters: dict[tuple[int, int], int]
    blocked_info: dict[int, tuple] = field(default_factory=dict)
    events_done: dict[int, int] = field(default_factory=dict)  # throughput: executed instr count
    inst_times: dict[int, tuple] | None = None  # (S, E, R) per instruction (rob_size > 1 model)
    size_mismatch: list[tuple] = field(default_factory=list)  # (send core, pc, recv core, pc, sizes)
    round_ends: dict[int, list[int]] = field(default_factory=dict)  # repeat > 1: cursor after each round


def fetch_offset(p: CorePlan, P: int) -> int:
    """Throughput mode: offset from a round's base to the fetch of its last instruction."""
    if p.n and p.hang < 0:
        last = p.n - 1
        lop = int(p.op[last])
        if lop in SCALAR_OPS or lop == OP_SETBW or lop == OP_NOP:
            return int(p.pre[last]) - P
        return int(p.pre[last]) + int(p.start[last]) - 2 * P
    return 0


def run_events(plans: dict[int, CorePlan], P: int, native: bool, throughput: bool = False,
               limit: int | None = None, repeat: int = 1) -> EngineResult:
    """Run the event loop over all cores.

    Parameters
    ----------
    plans
        Per-core static plans.
    P
        Core period (ps).
    native
        Native mode: send completes when the data is written at the receiver (§8.11).
    throughput, limit
        Throughput mode (§8.9): cores loop their program; nothing starts after ``limit`` ps.
    repeat
        Latency mode: every core runs its program ``repeat`` times back to back (a stream of
        images through a program that has no image marks); ``round_ends`` records the issue
        cursor after each round, ``ev_S``/``ev_E`` keep the first round's event times.
    """
    cores = sorted(plans)
    n_ev = {c: len(plans[c].ev_idx) for c in cores}
    kinds = {c: plans[c].ev_kind.tolist() for c in cores}
    pre_ev = {c: plans[c].pre[plans[c].ev_idx].tolist() for c in cores}
    pre_n = {c: int(plans[c].pre[plans[c].hang if plans[c].hang >= 0 else plans[c].n]) for c in cores}
    A = {c: plans[c].ev_a.tolist() for c in cores}
    B = {c: plans[c].ev_b.tolist() for c in cores}
    C = {c: plans[c].ev_c.tolist() for c in cores}
    D = {c: plans[c].ev_d.tolist() for c in cores}
    peer = {c: plans[c].ev_peer.tolist() for c in cores}
    evr = {c: plans[c].ev_e.tolist() for c in cores}
    evv = {c: plans[c].ev_v.tolist() for c in cores}
    key = {c: plans[c].ev_key.tolist() for c in cores}
    S_out = {c: [0] * n_ev[c] for c in cores}
    E_out = {c: [0] * n_ev[c] for c in cores}
    fetch_off = {c: fetch_offset(plans[c], P) for c in cores}
    j = {c: 0 for c in cores}
    base = {c: 2 * P for c in cores}  # T before event j = base + pre_ev[j]
    state = {c: RUN for c in cores}
    rounds = {c: 0 for c in cores}
    T_end: dict[int, int] = {}
    sw = {c: 0 for c in cores}
    pending_send: dict[tuple[int, int], tuple] = {}
    waiting_recv: dict[tuple[int, int], tuple] = {}
    counters: dict[tuple[int, int], int] = {}
    waiting: dict[int, tuple[int, int]] = {}
    heap: list = []
    seq = 0
    gm_free = 0
    gm_busy = 0
    t_last = 0
    lim = limit if (throughput and limit is not None) else None
    ONE_NS = PS
    ready: list[tuple[int, int]] = []
    executed = {c: 0 for c in cores}
    round_ends: dict[int, list[int]] = {c: [] for c in cores}
    first_S: dict[int, list[int]] = {}
    first_E: dict[int, list[int]] = {}

    def complete(c: int, E: int, toff: int) -> None:
        jj = j[c]
        E_out[c][jj] = E
        base[c] = E + toff - pre_ev[c][jj]
        j[c] = jj + 1
        ready.append(c)

    size = {c: plans[c].ev_size for c in cores}
    mismatch: list[tuple] = []

    def pair(s: int, r: int, js: int, jr: int, d1: int, s_recv: int) -> None:
        if size[s][js] != size[r][jr] and len(mismatch) < 100:
            mismatch.append((s, int(plans[s].ev_idx[js]), r, int(plans[r].ev_idx[jr]),
                             int(size[s][js]), int(size[r][jr])))
        ans = d1 if d1 > s_recv else s_recv
        q2 = ans if ans > sw[r] else sw[r]
        d2 = q2 + B[s][js]
        sw[r] = d2
        rr = d2 + C[s][js]
        q3 = rr if rr > sw[s] else sw[s]
        d3 = q3 + D[s][js]
        sw[s] = d3
        e_recv = d3 + C[r][jr]
        state[s] = RUN
        state[r] = RUN
        complete(s, e_recv if native else rr, P)
        complete(r, e_recv, P)

    def advance(c: int) -> None:
        nonlocal seq
        ks = kinds[c]
        pe = pre_ev[c]
        while True:
            jj = j[c]
            if jj == n_ev[c]:
                t_end = base[c] + pre_n[c]
                if throughput and n_ev[c] == 0:
                    # no event instructions: every round takes pre_n; count fetches ≤ lim
                    first = base[c] + fetch_off[c]
                    L = pre_n[c]
                    if plans[c].n == 0 or first > lim:
                        k = 0
                    elif L <= 0:
                        k = 0  # a round of zero length (only a free setbw): not counted
                    else:
                        k = (lim - first) // L + 1
                    rounds[c] = k
                    executed[c] = k * plans[c].n
                    T_end[c] = base[c] + k * L
                    state[c] = STOPPED
                    return
                if throughput:
                    if base[c] + fetch_off[c] <= lim:
                        rounds[c] += 1
                    executed[c] += plans[c].n
                    if n_ev[c] == 0 or t_end > lim:
                        state[c] = STOPPED
                        T_end[c] = t_end
                        return
                    base[c] = t_end
                    j[c] = 0
                    continue
                round_ends[c].append(t_end)
                if len(round_ends[c]) < repeat and plans[c].hang < 0:
                    if len(round_ends[c]) == 1:   # keep the first round's event times
                        first_S[c], first_E[c] = S_out[c], E_out[c]
                        S_out[c], E_out[c] = [0] * n_ev[c], [0] * n_ev[c]
                    base[c] = t_end
                    j[c] = 0
                    continue
                T_end[c] = t_end
                state[c] = HUNG if plans[c].hang >= 0 else DONE
                return
            S = base[c] + pe[jj] + P
            if lim is not None and S > lim:
                state[c] = STOPPED
                return
            S_out[c][jj] = S
            k = ks[jj]
            if k == EV_LD or k == EV_SLD:
                a = (S if S > sw[c] else sw[c]) + A[c][jj]
                heapq.heappush(heap, (a, key[c][jj], seq, _GM, c))
                seq += 1
                state[c] = GM_WAIT
                return
            if k == EV_ST:
                r = S + A[c][jj]
                a = (r if r > sw[c] else sw[c]) + B[c][jj]
                heapq.heappush(heap, (a, key[c][jj], seq, _GM, c))
                seq += 1
                state[c] = GM_WAIT
                return
            if k == EV_SEND:
                r = peer[c][jj]
                d1 = (S if S > sw[c] else sw[c]) + A[c][jj]
                sw[c] = d1 + ONE_NS
                w = waiting_recv.pop((c, r), None)
                state[c] = SEND_WAIT
                if w is None:
                    pending_send[(c, r)] = (jj, d1)
                else:
                    pair(c, r, jj, w[0], d1, w[1])
                return
            if k == EV_RECV:
                s = peer[c][jj]
                pnd = pending_send.pop((s, c), None)
                state[c] = RECV_WAIT
                if pnd is None:
                    waiting_recv[(s, c)] = (jj, S)
                else:
                    pair(s, c, pnd[0], jj, pnd[1], S)
                return
            if k == EV_SYNC:
                r = peer[c][jj]
                d = (S if S > sw[c] else sw[c]) + A[c][jj]
                sw[c] = d
                heapq.heappush(heap, (d, 0, seq, _DELIVER, (r, evr[c][jj])))
                seq += 1
                E = S + P
                E_out[c][jj] = E
                base[c] = E + 2 * P - pe[jj]
                j[c] = jj + 1
                continue
            # EV_WAIT: processed in time order with the sync deliveries
            heapq.heappush(heap, (S, 0, seq, _WAITSTART, c))
            seq += 1
            state[c] = WAIT_WAIT
            return

    ready.extend(cores)
    while True:
        while ready:
            advance(ready.pop())
        if not heap:
            break
        t, _, _, typ, who = heapq.heappop(heap)
        if lim is not None and t > lim:
            break
        t_last = t
        if typ == _GM:
            c = who
            jj = j[c]
            g0 = t if t > gm_free else gm_free
            if kinds[c][jj] == EV_ST:
                g1 = g0 + C[c][jj]
                gm_free = sw[c] = g1
                state[c] = RUN
                complete(c, g1, 2 * P)
            else:
                g1 = g0 + B[c][jj]
                gm_free = sw[c] = g1
                state[c] = RUN
                complete(c, g1 + C[c][jj], P)
            gm_busy += g1 - g0
        elif typ == _WAITSTART:
            c = who
            jj = j[c]
            e, v = evr[c][jj], evv[c][jj]
            if counters.get((c, e), 0) == v:
                counters[(c, e)] = 0
                state[c] = RUN
                complete(c, t, 2 * P)
            else:
                waiting[c] = (e, v)
        else:
            r, e = who
            cnt = counters.get((r, e), 0) + 1
            counters[(r, e)] = cnt
            w = waiting.get(r)
            if w is not None and w[0] == e and w[1] == cnt:
                counters[(r, e)] = 0
                del waiting[r]
                state[r] = RUN
                complete(r, t, 2 * P)

    blocked = {}
    for c in cores:
        st = state[c]
        if st in (SEND_WAIT, RECV_WAIT, WAIT_WAIT, GM_WAIT, RUN):
            jj = j[c]
            if st == SEND_WAIT:
                blocked[c] = ("send", peer[c][jj])
            elif st == RECV_WAIT:
                blocked[c] = ("recv", peer[c][jj])
            elif st == WAIT_WAIT:
                blocked[c] = ("wait", evr[c][jj], evv[c][jj], counters.get((c, evr[c][jj]), 0))
            else:
                blocked[c] = ("limit",)
        if throughput and j[c] < n_ev[c]:
            executed[c] += int(plans[c].ev_idx[j[c]])
    for c in first_S:   # repeat > 1: the first round's times (what traces and reports show)
        S_out[c], E_out[c] = first_S[c], first_E[c]
    return EngineResult(
        ev_S={c: np.asarray(S_out[c], np.int64) for c in cores},
        ev_E={c: np.asarray(E_out[c], np.int64) for c in cores},
        T_end=T_end, state=state, pos=dict(j), rounds=rounds, gm_busy=gm_busy, t_last=t_last,
        sw=sw, counters=counters, blocked_info=blocked, events_done=executed, size_mismatch=mismatch,
        round_ends=round_ends if repeat > 1 else {})
