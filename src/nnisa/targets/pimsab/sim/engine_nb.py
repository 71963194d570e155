"""Fast PIMSAB timing engine: the model of :mod:`.engine_ref` on flat arrays, compiled with numba.

State lives in integer arrays (:class:`EngineState`): one ring buffer per virtual-channel FIFO
(router inputs N, S, W, E with ``router_vcs`` VCs, L and D with one, plus one receive buffer per
DRAM channel), the connection of every input VC, the DRAM request queues and the tile
controllers.  A message id is the index of the timing op that injects it (a load's data flits
reuse the id of its request).  Each cycle runs the tile controllers, then every router in index
order, a router's cycle opening with its DRAM channel; routers test their neighbours' buffers as
they were at the start of the cycle (``last_pop``), inputs are served D, L, N, S, W, E (spec
§3.4a).  A cycle in which nothing but countdowns changed is followed by a jump to the next
countdown that ends (compute instructions, DRAM row opens), so idle time costs nothing.

:func:`run_chunk` simulates at most ``budget`` cycles and returns, so a long run comes back to
Python regularly (signals such as Ctrl-C/SIGTERM are handled between chunks).  Tests check the
engine against the reference cycle by cycle (start/end of every op).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numba import njit

from .ops import K_COMPUTE, K_LOAD, K_RX, K_SIGNAL, K_STORE, K_WAIT

N_, S_, W_, E_, L_, D_ = 0, 1, 2, 3, 4, 5
IDLE, REQ, SEND, RECV, POP = 0, 1, 2, 3, 4
RUNNING, DONE, DEADLOCK, TIME_LIMIT, STUCK = 0, 1, 2, 3, 4
STORE_SETUP = 1
NEVER = np.int64(2**62)
# flit fields of a FIFO slot
F_DST, F_DRAM, F_KEY, F_CNT, F_MSG, F_T = range(6)
# FIFO fields: head slot, length, cycle of the last forward by its router
Q_HEAD, Q_LEN, Q_POP = range(3)
# connection of an input VC: output direction (-1 none), output VC, flits left
C_OUT, C_VC, C_REM = range(3)
# DRAM channel: queued requests, ready request (-1 none), flits streamed, store set-up left
CH_QLEN, CH_READY, CH_DONE, CH_SETUP = range(4)
# tile controller: next op, state, finish cycle, flits left, second pass, current op, live
T_PC, T_STATE, T_FINISH, T_REM, T_SECOND, T_CUR, T_LIVE = range(7)
# scalars: cycle, live streams, flits in router FIFOs, change counter, cycles simulated (not skipped)
S_NOW, S_LIVE, S_FLITS, S_EVENTS, S_STEPS = range(5)
# parameters
P_MESH_W, P_MESH_H, P_VCS, P_DEPTH, P_BANKS, P_LATENCY, P_TDEPTH, P_MAX = range(8)


@dataclass
class EngineState:
    """Every array the engine reads and updates; built by :func:`new_state`."""

    prm: np.ndarray
    nb: np.ndarray
    chan_of: np.ndarray
    dram_routers: np.ndarray
    slot: np.ndarray
    fq: np.ndarray
    nflits: np.ndarray
    nemask: np.ndarray
    cnmask: np.ndarray
    conn: np.ndarray
    out_busy: np.ndarray
    d_busy: np.ndarray
    rr: np.ndarray
    queue: np.ndarray
    chan: np.ndarray
    submitted: np.ndarray
    ts: np.ndarray
    sc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    op_state: np.ndarray
    hops: np.ndarray
    dram_busy: np.ndarray

    def arrays(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))


def new_state(n_ops: int, tile_start: np.ndarray, n_routers: int, mesh_w: int, mesh_h: int, nvc: int, depth: int,
              dram_routers: np.ndarray, banks: int, latency: int, tdepth: int, max_cycles: int) -> EngineState:
    """Empty machine: FIFOs, connections, DRAM queues, tile controllers at their first op."""
    PV = 6 * nvc
    n_ch = len(dram_routers)
    nfifo = n_routers * PV + n_ch
    nb = np.full((n_routers, 4), -1, np.int64)
    for r in range(n_routers):
        row, col = divmod(r, mesh_w)
        nb[r] = (r - mesh_w if row > 0 else -1, r + mesh_w if row < mesh_h - 1 else -1,
                 r - 1 if col > 0 else -1, r + 1 if col < mesh_w - 1 else -1)
    chan_of = np.full(n_routers, -1, np.int64)
    chan_of[dram_routers] = np.arange(n_ch)
    fq = np.zeros((nfifo, 3), np.int64)
    fq[:, Q_POP] = -1
    conn = np.zeros((n_routers * PV, 3), np.int64)
    conn[:, C_OUT] = -1
    chan = np.zeros((n_ch, 4), np.int64)
    chan[:, CH_READY] = -1
    n_t = len(tile_start) - 1
    ts = np.zeros((n_t, 7), np.int64)
    ts[:, T_PC] = tile_start[:-1]
    ts[:, T_CUR] = -1
    ts[:, T_LIVE] = np.diff(tile_start) > 0
    sc = np.zeros(5, np.int64)
    sc[S_LIVE] = int(ts[:, T_LIVE].sum())
    prm = np.array([mesh_w, mesh_h, nvc, depth, banks, latency, tdepth, max_cycles], np.int64)
    return EngineState(prm, nb, chan_of, np.asarray(dram_routers, np.int64), np.zeros((nfifo, depth, 6), np.int64),
                       fq, np.zeros(n_routers, np.int64), np.zeros(n_routers * 6, np.int64),
                       np.zeros(n_routers * 6, np.int64), conn, np.zeros((n_routers, 4, nvc), np.int64),
                       np.zeros(n_routers, np.int64), np.zeros((n_routers, 6), np.int64),
                       np.zeros((n_ch, banks, 2), np.int64), chan, np.zeros(n_ops, np.bool_), ts, sc,
                       np.full(n_ops, -1, np.int64), np.full(n_ops, -1, np.int64), np.zeros((n_ops, 5), np.int64),
                       np.zeros(n_routers, np.int64), np.zeros(n_ch, np.int64))


@njit(cache=True, inline="always")
def _push(slot, fq, g, dst, dram, key, cnt, msg, now):
    """Append a flit to the tail of FIFO ``g``."""
    depth = slot.shape[1]
    pos = (fq[g, Q_HEAD] + fq[g, Q_LEN]) % depth
    slot[g, pos, F_DST] = dst
    slot[g, pos, F_DRAM] = dram
    slot[g, pos, F_KEY] = key
    slot[g, pos, F_CNT] = cnt
    slot[g, pos, F_MSG] = msg
    slot[g, pos, F_T] = now
    fq[g, Q_LEN] += 1


@njit(cache=True, inline="always")
def _pop(fq, f, depth):
    fq[f, Q_HEAD] = (fq[f, Q_HEAD] + 1) % depth
    fq[f, Q_LEN] -= 1


@njit(cache=True)
def run_chunk(kind, cycles, flits, dst, key, bypass, op_tile, tile_start, tile_ids, prm, nb, chan_of, dram_routers,
              slot, fq, nflits, nemask, cnmask, conn, out_busy, d_busy, rr, queue, chan, submitted, ts, sc,
              start, end, op_state, hops, dram_busy, budget):
    """Simulate up to ``budget`` cycles (skipped idle cycles count once).  Returns RUNNING (call
    again), DONE (``sc[S_NOW]`` = cycles), DEADLOCK, STUCK (every stream ended, flits undelivered)
    or TIME_LIMIT."""
    mesh_w, V = prm[P_MESH_W], prm[P_VCS]
    depth, banks, latency, tdepth, max_cycles = prm[P_DEPTH], prm[P_BANKS], prm[P_LATENCY], prm[P_TDEPTH], prm[P_MAX]
    PV = 6 * V
    n_routers = nflits.shape[0]
    nfifo_r = n_routers * PV
    n_ch = dram_routers.shape[0]
    n_t = tile_ids.shape[0]
    now = sc[S_NOW]
    n_live = sc[S_LIVE]
    total_flits = sc[S_FLITS]
    events = sc[S_EVENTS]
    steps = sc[S_STEPS]
    status = RUNNING
    for _ in range(budget):
        if n_live == 0 and total_flits == 0:
            drained = True
            for c in range(n_ch):
                if chan[c, CH_READY] >= 0 or chan[c, CH_QLEN] > 0 or fq[nfifo_r + c, Q_LEN] > 0:
                    drained = False
            if drained:
                status = DONE
                break
        if now > max_cycles:
            status = TIME_LIMIT
            break
        before = events
        steps += 1
        # ------------------------------------------------------------------ tile controllers
        for k in range(n_t):
            if ts[k, T_LIVE] == 0:
                continue
            st = ts[k, T_STATE]
            t = tile_ids[k]
            if st == IDLE:
                i = ts[k, T_PC]
                op_state[i, IDLE] += 1
                ts[k, T_PC] += 1
                ts[k, T_CUR] = i
                start[i] = now
                ts[k, T_SECOND] = 0
                events += 1
                ki = kind[i]
                if ki == K_RX or ki == K_WAIT:
                    ts[k, T_REM] = flits[i] if ki == K_RX else 1
                    ts[k, T_STATE] = RECV
                elif ki == K_LOAD:
                    ts[k, T_FINISH] = now + 1
                    ts[k, T_STATE] = REQ
                else:
                    ts[k, T_FINISH] = now + (cycles[i] if ki == K_COMPUTE else tdepth)
                    ts[k, T_STATE] = REQ
                continue
            i = ts[k, T_CUR]
            op_state[i, st] += 1
            ki = kind[i]
            if st == REQ:
                if now < ts[k, T_FINISH]:
                    continue
                events += 1
                if ts[k, T_SECOND] or ki == K_COMPUTE or ki == K_RX or ki == K_WAIT:
                    end[i] = now
                    ts[k, T_STATE] = IDLE
                    if ts[k, T_PC] >= tile_start[k + 1]:
                        ts[k, T_LIVE] = 0
                        n_live -= 1
                else:
                    ts[k, T_REM] = 1 if (ki == K_LOAD or ki == K_SIGNAL) else flits[i]
                    ts[k, T_STATE] = SEND
            elif st == SEND:
                if ts[k, T_REM] > 0:
                    f = t * PV + L_ * V
                    if fq[f, Q_LEN] < depth:
                        _push(slot, fq, f, dst[i], 1 if (ki == K_LOAD or ki == K_STORE) else 0, key[i], ts[k, T_REM],
                              i, now)
                        nflits[t] += 1
                        nemask[t * 6 + L_] |= 1
                        total_flits += 1
                        ts[k, T_REM] -= 1
                        events += 1
                else:
                    events += 1
                    if ki == K_LOAD:
                        ts[k, T_REM] = flits[i]
                        ts[k, T_STATE] = RECV
                    else:
                        end[i] = now
                        ts[k, T_STATE] = IDLE
                        if ts[k, T_PC] >= tile_start[k + 1]:
                            ts[k, T_LIVE] = 0
                            n_live -= 1
            else:  # RECV or POP: a matching local flit at a FIFO head of ports N, S, W, E, D
                if st == POP and ts[k, T_REM] == 0:
                    ts[k, T_SECOND] = 1
                    ts[k, T_FINISH] = now + tdepth
                    ts[k, T_STATE] = REQ
                    events += 1
                    continue
                want = key[i]
                found = -1
                for p in (N_, S_, W_, E_, D_):
                    m_ne = nemask[t * 6 + p]
                    if m_ne == 0:
                        continue
                    nv = V if p < L_ else 1
                    for v in range(nv):
                        if not (m_ne >> v) & 1:
                            continue
                        f = t * PV + p * V + v
                        h = fq[f, Q_HEAD]
                        if slot[f, h, F_T] < now and slot[f, h, F_KEY] == want and slot[f, h, F_DST] == t \
                                and slot[f, h, F_DRAM] == 0:
                            found = f
                            break
                    if found >= 0:
                        break
                if found >= 0:
                    events += 1
                    if st == RECV:
                        ts[k, T_STATE] = POP
                    else:  # a tile's pop is seen by the upstream router at once
                        _pop(fq, found, depth)
                        nflits[t] -= 1
                        if fq[found, Q_LEN] == 0:
                            nemask[found // V] &= ~(1 << (found % V))
                        total_flits -= 1
                        ts[k, T_REM] -= 1
        # ------------------------------------------------------------------ routers (DRAM phase first)
        for r in range(n_routers):
            c = chan_of[r]
            if c >= 0:  # the router's DRAM channel: accept, stream, count down (spec §3.5)
                g = nfifo_r + c
                # 1. accept the request at the head of the receive buffer
                if fq[g, Q_LEN] > 0 and slot[g, fq[g, Q_HEAD], F_T] < now:
                    m = slot[g, fq[g, Q_HEAD], F_MSG]
                    if kind[m] == K_LOAD or not submitted[m]:
                        take = False
                        if bypass[m] and chan[c, CH_READY] < 0:
                            chan[c, CH_READY] = m
                            chan[c, CH_DONE] = 0
                            chan[c, CH_SETUP] = STORE_SETUP if kind[m] == K_STORE else 0
                            take = True
                        elif chan[c, CH_QLEN] < banks:
                            queue[c, chan[c, CH_QLEN], 0] = m
                            queue[c, chan[c, CH_QLEN], 1] = latency
                            chan[c, CH_QLEN] += 1
                            take = True
                        if take:
                            events += 1
                            if kind[m] == K_LOAD:
                                _pop(fq, g, depth)
                            else:
                                submitted[m] = True
                # 2. stream the ready request
                m = chan[c, CH_READY]
                if m >= 0:
                    dram_busy[c] += 1
                    if kind[m] == K_LOAD:
                        f = r * PV + D_ * V
                        if fq[f, Q_LEN] < depth:
                            _push(slot, fq, f, op_tile[m], 0, key[m], flits[m] - chan[c, CH_DONE], m, now)
                            nflits[r] += 1
                            nemask[r * 6 + D_] |= 1
                            total_flits += 1
                            events += 1
                            chan[c, CH_DONE] += 1
                            if chan[c, CH_DONE] == flits[m]:
                                chan[c, CH_READY] = -1
                    elif chan[c, CH_SETUP] > 0:
                        chan[c, CH_SETUP] -= 1
                        events += 1
                    elif fq[g, Q_LEN] > 0 and slot[g, fq[g, Q_HEAD], F_T] < now and slot[g, fq[g, Q_HEAD], F_MSG] == m:
                        _pop(fq, g, depth)
                        events += 1
                        chan[c, CH_DONE] += 1
                        if chan[c, CH_DONE] == flits[m]:
                            chan[c, CH_READY] = -1
                # 3. count down; the oldest finished request becomes ready (streams next cycle)
                n = chan[c, CH_QLEN]
                for j in range(n):
                    if queue[c, j, 1] > 0:
                        queue[c, j, 1] -= 1
                if n > 0 and queue[c, 0, 1] <= 0 and chan[c, CH_READY] < 0:
                    m = queue[c, 0, 0]
                    for j in range(n - 1):
                        queue[c, j, 0] = queue[c, j + 1, 0]
                        queue[c, j, 1] = queue[c, j + 1, 1]
                    chan[c, CH_QLEN] -= 1
                    chan[c, CH_READY] = m
                    chan[c, CH_DONE] = 0
                    chan[c, CH_SETUP] = STORE_SETUP if kind[m] == K_STORE else 0
                    events += 1
            if nflits[r] == 0:
                continue
            base = r * PV
            rrow, rcol = r // mesh_w, r % mesh_w
            for p in (D_, L_, N_, S_, W_, E_):  # 1. allocation
                m_free = nemask[r * 6 + p] & ~cnmask[r * 6 + p]
                if m_free == 0:
                    continue
                nv = V if p < L_ else 1
                for v in range(nv):
                    if not (m_free >> v) & 1:
                        continue
                    f = base + p * V + v
                    h = fq[f, Q_HEAD]
                    if slot[f, h, F_T] >= now:
                        continue
                    d = slot[f, h, F_DST]
                    drow, dcol = d // mesh_w, d % mesh_w
                    if drow < rrow:
                        out = N_
                    elif drow > rrow:
                        out = S_
                    elif dcol < rcol:
                        out = W_
                    elif dcol > rcol:
                        out = E_
                    elif slot[f, h, F_DRAM] != 0:
                        out = D_
                    else:
                        continue  # local: stays until the tile pops it
                    if out == D_:
                        if d_busy[r] == 0:
                            d_busy[r] = 1
                            conn[f, C_OUT] = D_
                            conn[f, C_VC] = 0
                            conn[f, C_REM] = slot[f, h, F_CNT]
                            cnmask[r * 6 + p] |= 1 << v
                            events += 1
                        continue
                    dbase = nb[r, out] * PV + (out ^ 1) * V  # the neighbour's opposite input port
                    for ov in range(V):
                        g = dbase + ov
                        if out_busy[r, out, ov] == 0 and fq[g, Q_LEN] + (fq[g, Q_POP] == now) == 0:
                            out_busy[r, out, ov] = 1
                            conn[f, C_OUT] = out
                            conn[f, C_VC] = ov
                            conn[f, C_REM] = slot[f, h, F_CNT]
                            cnmask[r * 6 + p] |= 1 << v
                            events += 1
                            break
            used = 0
            for p in (D_, L_, N_, S_, W_, E_):  # 2. traversal, one flit per input and per output direction
                m_go = cnmask[r * 6 + p] & nemask[r * 6 + p]
                if m_go == 0:
                    continue
                nv = V if p < L_ else 1
                for kk in range(nv):
                    v = (rr[r, p] + kk) % nv
                    if not (m_go >> v) & 1:
                        continue
                    f = base + p * V + v
                    out = conn[f, C_OUT]
                    if (used >> out) & 1 or conn[f, C_REM] <= 0:
                        continue
                    h = fq[f, Q_HEAD]
                    if slot[f, h, F_T] >= now:
                        continue
                    if out == D_:
                        g = nfifo_r + chan_of[r]
                        if fq[g, Q_LEN] >= depth:  # the DRAM receive buffer is seen at once
                            continue
                        grouter = -1
                    else:
                        grouter = nb[r, out]
                        g = grouter * PV + (out ^ 1) * V + conn[f, C_VC]
                        if fq[g, Q_LEN] + (fq[g, Q_POP] == now) >= depth:
                            continue
                    _push(slot, fq, g, slot[f, h, F_DST], slot[f, h, F_DRAM], slot[f, h, F_KEY], slot[f, h, F_CNT],
                          slot[f, h, F_MSG], now)
                    _pop(fq, f, depth)
                    fq[f, Q_POP] = now
                    nflits[r] -= 1
                    if fq[f, Q_LEN] == 0:
                        nemask[r * 6 + p] &= ~(1 << v)
                    events += 1
                    if out == D_:
                        total_flits -= 1
                    else:
                        nflits[grouter] += 1
                        nemask[grouter * 6 + (out ^ 1)] |= 1 << conn[f, C_VC]
                        hops[r] += 1
                    used |= 1 << out
                    conn[f, C_REM] -= 1
                    if conn[f, C_REM] == 0:
                        if out == D_:
                            d_busy[r] = 0
                        else:
                            out_busy[r, out, conn[f, C_VC]] = 0
                        conn[f, C_OUT] = -1
                        cnmask[r * 6 + p] &= ~(1 << v)
                    rr[r, p] = (v + 1) % nv
                    break
        now += 1
        if events != before:
            continue
        # ------------------------------------------------------------------ nothing moved: jump
        target = NEVER
        for k in range(n_t):
            if ts[k, T_LIVE] != 0:
                st = ts[k, T_STATE]
                if st == REQ:
                    target = min(target, ts[k, T_FINISH])
                elif st == IDLE or ((st == POP or st == SEND) and ts[k, T_REM] == 0):
                    target = now
        for c in range(n_ch):
            if chan[c, CH_READY] < 0 and chan[c, CH_QLEN] > 0:
                target = min(target, now + queue[c, 0, 1] - 1)
        if target == NEVER:
            status = STUCK if n_live == 0 else DEADLOCK
            break
        target = min(target, max_cycles + 1)
        skip = target - now
        if skip > 0:
            for k in range(n_t):
                if ts[k, T_LIVE] != 0:
                    op_state[ts[k, T_CUR], ts[k, T_STATE]] += skip
            for c in range(n_ch):
                if chan[c, CH_READY] >= 0:
                    dram_busy[c] += skip
                for j in range(chan[c, CH_QLEN]):
                    queue[c, j, 1] = max(0, queue[c, j, 1] - skip)
            now = target
    sc[S_NOW] = now
    sc[S_LIVE] = n_live
    sc[S_FLITS] = total_flits
    sc[S_EVENTS] = events
    sc[S_STEPS] = steps
    return status
