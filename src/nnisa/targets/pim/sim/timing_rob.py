"""Timing with a reorder buffer of more than one entry (spec §8.8; not calibrated).

Every core is walked instruction by instruction (a Python generator per core); cores only
meet at the global memory, send/recv rendezvous and sync/wait, which the scheduler below
orders exactly like the rob_size = 1 engine.  Model per non-scalar instruction *i*:

* it reaches the dispatcher at F = T + P (T = front-end cursor);
* dispatch D = max(F, retire of instruction i − rob_size (free ROB entry), target unit ready,
  retire of every ROB entry whose memory ranges conflict (RAW, WAR; WAW only in native mode));
* units: the vector FSM and the transfer FSM (ld st lldi lmv send recv sync wait) take one
  instruction at a time; mvmul passes the AG dispatcher register (one cycle: S = D + P) and then
  needs its array group idle — different groups run concurrently;
* local memory is one server per core; its accesses are placed at the earliest idle interval at
  or after their request time (FIFO for in-order requests);
* retirement is in order: R_i = max(E_i + 2P (3P for st/sync/wait), R_{i−1});
* the front end stalls while the ROB is full: after dispatching i, T = max(D, R_{i−rob+1} − P).

With rob_size = 1 this reduces exactly to the calibrated §8.5 rules, and it reproduces the
§8.8 reference values (two mvmul on groups 0/1: 1,987 ns; same group: 3,323 ns).  Ranges follow
pimsim-nn's ExecInfo (§8.8) in pimsim mode and the ISA operands in native mode.
"""

from __future__ import annotations

import bisect
import heapq

import numpy as np

from .timing_engine import DONE, GM_WAIT, RECV_WAIT, RUN, SEND_WAIT, WAIT_WAIT, EngineResult
from .semantics import wrap32
from .timing_units import (EV_LD, EV_RECV, EV_SEND, EV_SLD, EV_ST, EV_SYNC, OP_LLDI,
                           OBYW_WB, OP_LMV, OP_MVMUL, OP_SETBW, TWO_SRC, CorePlan, Params, cdiv)



class LocalMemory:
    """One single-port server: busy intervals, earliest-fit placement."""

    __slots__ = ("starts", "ends", "busy")

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.busy = 0

    def access(self, t: int, dur: int) -> int:
        """Place an access of ``dur`` ps requested at ``t``; return its end time."""
        if dur <= 0:
            return t
        self.busy += dur
        starts, ends = self.starts, self.ends
        i = bisect.bisect_right(ends, t)
        s = t
        while i < len(starts):
            if s + dur <= starts[i]:
                break
            s = max(s, ends[i])
            i += 1
        starts.insert(i, s)
        ends.insert(i, s + dur)
        return s + dur

    def prune(self, t: int) -> None:
        """Forget intervals that end before ``t`` (no later request can start before t)."""
        k = bisect.bisect_right(self.ends, t)
        if k > 64:
            del self.starts[:k]
            del self.ends[:k]


_TWO_SRC = frozenset(TWO_SRC)
_OBYW = frozenset(OBYW_WB)


def _ranges(op: int, r: list[int], row, ibyw: int, obyw: int, native: bool, rows_: int, cols: int,
            cell: int, xb: int):
    """(read ranges, write ranges) of one instruction as closed intervals (§8.8)."""
    rd, rs1, rs2 = r[row[1]], r[row[2]], r[row[3]]
    ln = row[4]
    sel, ov = row[14], row[15]
    if native:
        if sel & 1:
            rd += ov
        if sel & 2:
            rs1 += ov
        if sel & 4:
            rs2 += ov
    else:  # pimsim-nn tests bits 1/2 of offset_value for rs1/rs2 (§6.3)
        if sel & 1:
            rd += ov
        if ov & 2:
            rs1 += ov
        if ov & 4:
            rs2 += ov
    if op == OP_MVMUL:
        return [(rs1, rs1 + rows_ * ibyw)], [(rd, rd + (cols * cell // max(row[6], 1)) * xb * obyw)]
    if 10 <= op <= 23:
        if op == 21 and not native:  # vmv records nothing in pimsim-nn
            return [], []
        reads = [(rs1, rs1 + ln * ibyw)]
        if op in _TWO_SRC or (op in (22, 23) and not native):
            reads.append((rs2, rs2 + ln * ibyw))
        if op == 17:
            w = obyw if not native else obyw
            return reads, [(rd, rd + w)]
        if native and op == 13:
            return reads, [(rd, rd + obyw)]
        return reads, [(rd, rd + ln * (obyw if op in _OBYW else ibyw))]
    if op == 24:
        return [], [(rd, rd + ln)]
    if op == 25:
        return [(rs1, rs1 + ln)], []
    if op == OP_LLDI:
        return [], [(rd, rd + (ln if native else 1))]
    if op == OP_LMV:
        return ([(rs1, rs1 + ln)], [(rd, rd + ln)]) if native else ([], [])
    if op == 28:
        return [(rs1, rs1 + ln)], []
    if op == 29:
        return [], [(rd, rd + ln)]
    return [], []


def _overlap(a: list, b: list) -> bool:
    for lo, hi in a:
        for lo2, hi2 in b:
            if lo <= hi2 and lo2 <= hi:
                return True
    return False


def run_rob(program, plans: dict[int, CorePlan], prm: Params, cfg, native: bool):
    """Latency-mode simulation with ``rob_size`` > 1; returns (EngineResult, plans)."""
    P = prm.P
    rob = cfg.chip_config.core_config.rob_size
    cores = sorted(plans)
    sw = {c: 0 for c in cores}
    lmem = {c: LocalMemory() for c in cores}
    times = {c: (np.zeros(plans[c].n, np.int64), np.zeros(plans[c].n, np.int64),
                 np.zeros(plans[c].n, np.int64)) for c in cores}
    stuck_pc = {c: 0 for c in cores}
    agm = program.array_group_map

    def walk(c: int):
        p = plans[c]
        rows = program.cores[c]
        tl = rows.tolist()
        S_a, E_a, R_a = times[c]
        regs = [0] * 32
        T = 2 * P
        retire: list[int] = []  # R of dispatched non-scalar instructions, in order
        entries: list[tuple[int, list, list]] = []  # (R, reads, writes) still possibly in the ROB
        vec_free = xfer_free = agreg_free = 0
        group_free: dict[int, int] = {}
        lm = lmem[c]
        ev_pos = {int(i): k for k, i in enumerate(p.ev_idx.tolist())}
        ibyw_a, obyw_a = cdiv(p.ibiw, 8).tolist(), cdiv(p.obiw, 8).tolist()
        groups = agm.get(c, [])
        last_R = 0
        first_setbw = True
        for i in range(p.n if p.hang < 0 else p.hang):
            row = tl[i]
            op = row[0]
            if (1 <= op <= 7 and not (native and op == 2)) or op == 0 or op == OP_SETBW:
                if op == OP_SETBW and first_setbw:
                    first_setbw = False
                    cost = 0
                else:
                    cost = P
                if op == 1:
                    regs[row[1]] = wrap32(row[5])
                elif op == 2 and not native:
                    regs[0] = 0
                elif 3 <= op <= 5:
                    a, b = regs[row[2]], regs[row[3]]
                    regs[row[1]] = wrap32(a + b if op == 3 else a - b if op == 4 else a * b)
                elif op in (6, 7):
                    regs[row[1]] = wrap32(regs[row[2]] + row[5] if op == 6 else regs[row[2]] * row[5])
                S_a[i] = T
                E_a[i] = R_a[i] = T + cost
                T += cost
                continue
            xb = groups[row[8]] if op == OP_MVMUL else 0
            reads, writes = _ranges(op, regs, row, ibyw_a[i], obyw_a[i], native, prm.rows, prm.cols,
                                    prm.cell, xb)
            D = T + P
            k = len(retire)
            if k >= rob:
                D = max(D, retire[k - rob])
            if op == OP_MVMUL:
                D = max(D, agreg_free, group_free.get(row[8], 0))
            elif 10 <= op <= 23:
                D = max(D, vec_free)
            else:
                D = max(D, xfer_free)
            live = [e for e in entries if e[0] > D]
            for eR, er, ew in live:
                if _overlap(reads, ew) or _overlap(writes, er) or (native and _overlap(writes, ew)):
                    D = max(D, eR)
            entries = [e for e in live if e[0] > D]
            lm.prune(min(D, T))
            roff = 2 * P
            if op == OP_MVMUL or 10 <= op <= 23 or op in (OP_LMV, OP_LLDI):
                S = D + (P if op == OP_MVMUL else 0)
                t = S
                for _ in range(int(p.nrd[i])):
                    t = lm.access(t, int(p.lr[i]))
                t += int(p.mid[i])
                E = lm.access(t, int(p.lw[i]))
                if op == OP_MVMUL:
                    agreg_free = S
                    group_free[row[8]] = E
                elif 10 <= op <= 23:
                    vec_free = E
                else:
                    xfer_free = E
            else:
                S = D
                j = ev_pos[i]
                kind = int(p.ev_kind[j])
                stuck_pc[c] = i
                if kind in (EV_LD, EV_SLD):
                    a = max(S, sw[c]) + int(p.ev_a[j])
                    g1 = yield ("gm", a, int(p.ev_key[j]), int(p.ev_b[j]))
                    sw[c] = g1
                    E = lm.access(g1, int(p.ev_c[j]))
                elif kind == EV_ST:
                    r = lm.access(S, int(p.ev_a[j]))
                    a = max(r, sw[c]) + int(p.ev_b[j])
                    E = yield ("gm", a, int(p.ev_key[j]), int(p.ev_c[j]))
                    sw[c] = E
                    roff = 3 * P
                elif kind == EV_SEND:
                    r = int(p.ev_peer[j])
                    d1 = max(S, sw[c]) + int(p.ev_a[j])
                    sw[c] = d1 + 1000
                    E = yield ("send", r, d1, int(p.ev_b[j]), int(p.ev_c[j]), int(p.ev_d[j]))
                elif kind == EV_RECV:
                    E = yield ("recv", int(p.ev_peer[j]), S, int(p.ev_c[j]))
                elif kind == EV_SYNC:
                    r = int(p.ev_peer[j])
                    d = max(S, sw[c]) + int(p.ev_a[j])
                    sw[c] = d
                    yield ("sync", r, int(p.ev_e[j]), d)
                    E = S + P
                    roff = 3 * P
                else:
                    E = yield ("wait", int(p.ev_e[j]), int(p.ev_v[j]), S)
                    roff = 3 * P
                xfer_free = E
            R = max(E + roff, last_R)
            last_R = R
            S_a[i], E_a[i], R_a[i] = S, E, R
            retire.append(R)
            entries.append((R, reads, writes))
            k = len(retire)
            oldest = retire[k - rob] if k >= rob else 0
            T = max(D, oldest - P) if k >= rob else D
        stuck_pc[c] = -1
        return T

    gens = {c: walk(c) for c in cores}
    state = {c: RUN for c in cores}
    T_end: dict[int, int] = {}
    heap: list = []
    seq = 0
    gm_free = gm_busy = t_last = 0
    pending_send: dict = {}
    waiting_recv: dict = {}
    counters: dict = {}
    waiting: dict = {}
    ready = [(c, None) for c in reversed(cores)]
    blocked_req: dict[int, tuple] = {}

    def pair(s, r, snd, rcv):
        _, _, d1, ans_fl, lr_b, data_fl = snd
        _, _, s_recv, lw_b = rcv
        ans = max(d1, s_recv)
        d2 = max(ans, sw[r]) + ans_fl
        sw[r] = d2
        rr = lmem[s].access(d2, lr_b)
        d3 = max(rr, sw[s]) + data_fl
        sw[s] = d3
        e_recv = lmem[r].access(d3, lw_b)
        state[s] = state[r] = RUN
        ready.append((s, e_recv if native else rr))
        ready.append((r, e_recv))

    while True:
        while ready:
            c, val = ready.pop()
            try:
                req = gens[c].send(val)
            except StopIteration as stop:
                state[c] = DONE
                T_end[c] = stop.value
                continue
            kind = req[0]
            blocked_req[c] = req
            if kind == "gm":
                heapq.heappush(heap, (req[1], req[2], seq, 0, c, req[3]))
                seq += 1
                state[c] = GM_WAIT
            elif kind == "send":
                r = req[1]
                state[c] = SEND_WAIT
                w = waiting_recv.pop((c, r), None)
                if w is None:
                    pending_send[(c, r)] = req
                else:
                    pair(c, r, req, w)
            elif kind == "recv":
                s = req[1]
                state[c] = RECV_WAIT
                pnd = pending_send.pop((s, c), None)
                if pnd is None:
                    waiting_recv[(s, c)] = req
                else:
                    pair(s, c, pnd, req)
            elif kind == "sync":
                heapq.heappush(heap, (req[3], 0, seq, 2, (req[1], req[2]), 0))
                seq += 1
                ready.append((c, None))
            else:  # wait
                heapq.heappush(heap, (req[3], 0, seq, 1, c, 0))
                seq += 1
                state[c] = WAIT_WAIT
        if not heap:
            break
        t, _, _, typ, who, svc = heapq.heappop(heap)
        t_last = t
        if typ == 0:
            g0 = max(t, gm_free)
            gm_free = g0 + svc
            gm_busy += svc
            state[who] = RUN
            ready.append((who, gm_free))
        elif typ == 1:
            _, e, v, _ = blocked_req[who]
            if counters.get((who, e), 0) == v:
                counters[(who, e)] = 0
                state[who] = RUN
                ready.append((who, t))
            else:
                waiting[who] = (e, v)
        else:
            r, e = who
            cnt = counters.get((r, e), 0) + 1
            counters[(r, e)] = cnt
            w = waiting.get(r)
            if w is not None and w == (e, cnt):
                counters[(r, e)] = 0
                del waiting[r]
                state[r] = RUN
                ready.append((r, t))

    blocked, pos = {}, {}
    for c in cores:
        p = plans[c]
        if state[c] == DONE:
            pos[c] = len(p.ev_idx)
            if p.hang >= 0:
                from .timing_engine import HUNG
                state[c] = HUNG
            continue
        req = blocked_req.get(c, ("limit",))
        pc = stuck_pc[c]
        pos[c] = int(np.searchsorted(p.ev_idx, pc))
        if req[0] in ("send", "recv"):
            blocked[c] = (req[0], req[1])
        elif req[0] == "wait":
            blocked[c] = ("wait", req[1], req[2], counters.get((c, req[1]), 0))
        else:
            blocked[c] = ("limit",)
    # T_end + P is the finish for a non-scalar last instruction: express R_last that way
    for c in cores:
        if state[c] == DONE and plans[c].n:
            T_end[c] = int(times[c][2][-1]) - P
    res = EngineResult(ev_S={c: times[c][0][plans[c].ev_idx] for c in cores},
                       ev_E={c: times[c][1][plans[c].ev_idx] for c in cores},
                       T_end=T_end, state=state, pos=pos, rounds={c: 0 for c in cores},
                       gm_busy=gm_busy, t_last=t_last, sw=sw, counters=counters, blocked_info=blocked,
                       inst_times=times)
    return res, plans
