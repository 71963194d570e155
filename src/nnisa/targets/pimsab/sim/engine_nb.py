"""Fast PIMSAB timing engine: the model of :mod:`.engine_ref` on flat arrays, compiled with numba.

State lives in integer arrays: one ring buffer per virtual-channel FIFO (router inputs N, S, W,
E with ``router_vcs`` VCs, L and D with one, plus one receive buffer per DRAM channel), the
connection of every input VC, the DRAM request queues and the tile controllers.  A message id is
the index of the timing op that injects it (a load's data flits reuse the id of its request).
Each cycle runs the tile controllers, then the routers, then the DRAM channels, exactly like the
reference.  Per-port bit masks of non-empty and connected VCs let idle VCs be skipped; when no flit is in
flight, no DRAM channel is busy and every live tile counts down a compute instruction, the clock
jumps to the next finish.  Tests check it against the reference cycle by cycle (start/end of
every op).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .ops import K_COMPUTE, K_LOAD, K_RX, K_SIGNAL, K_STORE, K_WAIT

N_, S_, W_, E_, L_, D_ = 0, 1, 2, 3, 4, 5
IDLE, REQ, SEND, RECV, POP = 0, 1, 2, 3, 4
OK, DEADLOCK, TIME_LIMIT = 0, 1, 2


@njit(cache=True, inline="always")
def _inject(f, dst, dram, key, count, msg, now, b_dst, b_dram, b_key, b_cnt, b_msg, b_t, head, length, depth):
    """Append a flit to the tail of FIFO ``f``."""
    pos = (head[f] + length[f]) % depth
    b_dst[f, pos] = dst
    b_dram[f, pos] = dram
    b_key[f, pos] = key
    b_cnt[f, pos] = count
    b_msg[f, pos] = msg
    b_t[f, pos] = now
    length[f] += 1


@njit(cache=True)
def run_engine(kind, cycles, flits, dst, key, bypass, op_tile, tile_start, tile_ids, n_routers, mesh_w, mesh_h,
               nvc, depth, dram_routers, banks, latency, store_setup, tdepth, max_cycles,
               start, end, op_state, hops, dram_busy):
    """Run every stream; fills ``start``/``end`` and ``op_state`` (cycles in each controller state)
    per op, ``hops`` per router and ``dram_busy`` per channel.  Returns (cycles, status): status 0 ok, 1 deadlock (cycles
    = the cycle it was detected), 2 time limit."""
    n_ops = kind.shape[0]
    V = nvc
    PV = 6 * V
    nfifo_r = n_routers * PV
    n_ch = dram_routers.shape[0]
    nfifo = nfifo_r + n_ch
    # FIFO slots: destination router, DRAM-bound flag, key, flits still to come, message, arrival cycle
    b_dst = np.zeros((nfifo, depth), np.int64)
    b_dram = np.zeros((nfifo, depth), np.int64)
    b_key = np.zeros((nfifo, depth), np.int64)
    b_cnt = np.zeros((nfifo, depth), np.int64)
    b_msg = np.zeros((nfifo, depth), np.int64)
    b_t = np.zeros((nfifo, depth), np.int64)
    head = np.zeros(nfifo, np.int64)
    length = np.zeros(nfifo, np.int64)
    nflits = np.zeros(n_routers, np.int64)
    nemask = np.zeros(n_routers * 6, np.int64)     # bit v: VC v of (router, input port) holds flits
    conn_out = np.full(nfifo_r, -1, np.int64)
    conn_vc = np.zeros(nfifo_r, np.int64)
    conn_rem = np.zeros(nfifo_r, np.int64)
    cnmask = np.zeros(n_routers * 6, np.int64)     # bit v: VC v of (router, input port) is connected
    out_busy = np.zeros((n_routers, 4, V), np.bool_)
    d_busy = np.zeros(n_routers, np.bool_)
    rr = np.zeros((n_routers, 6), np.int64)
    nb = np.full((n_routers, 4), -1, np.int64)
    opp = np.array([S_, N_, E_, W_], np.int64)
    for r in range(n_routers):
        row, col = r // mesh_w, r % mesh_w
        if row > 0:
            nb[r, N_] = r - mesh_w
        if row < mesh_h - 1:
            nb[r, S_] = r + mesh_w
        if col > 0:
            nb[r, W_] = r - 1
        if col < mesh_w - 1:
            nb[r, E_] = r + 1
    chan_of = np.full(n_routers, -1, np.int64)
    for c in range(n_ch):
        chan_of[dram_routers[c]] = c
    q_msg = np.zeros((n_ch, banks), np.int64)
    q_cd = np.zeros((n_ch, banks), np.int64)
    q_len = np.zeros(n_ch, np.int64)
    ready = np.full(n_ch, -1, np.int64)
    ready_done = np.zeros(n_ch, np.int64)
    ready_setup = np.zeros(n_ch, np.int64)
    submitted = np.zeros(n_ops, np.bool_)
    n_t = tile_ids.shape[0]
    pc = tile_start[:-1].copy()
    state = np.zeros(n_t, np.int64)
    finish = np.zeros(n_t, np.int64)
    remaining = np.zeros(n_t, np.int64)
    second = np.zeros(n_t, np.bool_)
    cur = np.full(n_t, -1, np.int64)
    live = np.ones(n_t, np.bool_)
    n_live = 0
    for k in range(n_t):
        if tile_start[k] == tile_start[k + 1]:
            live[k] = False
        else:
            n_live += 1
    total_flits = 0
    now = 0
    quiet = 0
    events = 0
    last_events = -1
    while n_live > 0:
        # ---------------------------------------------------------------- skip ahead
        if total_flits == 0:
            idle = True
            for c in range(n_ch):
                if ready[c] >= 0 or q_len[c] > 0 or length[nfifo_r + c] > 0:
                    idle = False
                    break
            nxt = -1
            if idle:
                for k in range(n_t):
                    if live[k]:
                        if state[k] != REQ or finish[k] <= now:
                            idle = False
                            break
                        if nxt < 0 or finish[k] < nxt:
                            nxt = finish[k]
            if idle and nxt > now:
                for k in range(n_t):
                    if live[k]:
                        op_state[cur[k], REQ] += nxt - now
                now = nxt
        if now > max_cycles:
            return now, TIME_LIMIT
        # ---------------------------------------------------------------- tile controllers
        for k in range(n_t):
            if not live[k]:
                continue
            st = state[k]
            t = tile_ids[k]
            if st == IDLE:
                i = pc[k]
                op_state[i, IDLE] += 1
                pc[k] += 1
                cur[k] = i
                start[i] = now
                second[k] = False
                events += 1
                ki = kind[i]
                if ki == K_RX or ki == K_WAIT:
                    remaining[k] = flits[i] if ki == K_RX else 1
                    state[k] = RECV
                elif ki == K_LOAD:
                    finish[k] = now + 1
                    state[k] = REQ
                else:
                    finish[k] = now + (cycles[i] if ki == K_COMPUTE else tdepth)
                    state[k] = REQ
                continue
            i = cur[k]
            op_state[i, st] += 1
            ki = kind[i]
            if st == REQ:
                if now < finish[k]:
                    continue
                events += 1
                if second[k] or ki == K_COMPUTE or ki == K_RX or ki == K_WAIT:
                    end[i] = now
                    state[k] = IDLE
                    if pc[k] >= tile_start[k + 1]:
                        live[k] = False
                        n_live -= 1
                else:
                    remaining[k] = 1 if (ki == K_LOAD or ki == K_SIGNAL) else flits[i]
                    state[k] = SEND
            elif st == SEND:
                if remaining[k] > 0:
                    f = t * PV + L_ * V
                    if length[f] < depth:
                        _inject(f, dst[i], 1 if (ki == K_LOAD or ki == K_STORE) else 0, key[i], remaining[k], i, now,
                                b_dst, b_dram, b_key, b_cnt, b_msg, b_t, head, length, depth)
                        nflits[t] += 1
                        nemask[t * 6 + L_] |= 1
                        total_flits += 1
                        remaining[k] -= 1
                        events += 1
                else:
                    events += 1
                    if ki == K_LOAD:
                        remaining[k] = flits[i]
                        state[k] = RECV
                    else:
                        end[i] = now
                        state[k] = IDLE
                        if pc[k] >= tile_start[k + 1]:
                            live[k] = False
                            n_live -= 1
            else:  # RECV or POP: a matching local flit at a FIFO head of ports N, S, W, E, D
                if st == POP and remaining[k] == 0:
                    second[k] = True
                    finish[k] = now + tdepth
                    state[k] = REQ
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
                        h = head[f]
                        if b_t[f, h] < now and b_key[f, h] == want and b_dst[f, h] == t and b_dram[f, h] == 0:
                            found = f
                            break
                    if found >= 0:
                        break
                if found >= 0:
                    events += 1
                    if st == RECV:
                        state[k] = POP
                    else:
                        head[found] = (head[found] + 1) % depth
                        length[found] -= 1
                        nflits[t] -= 1
                        if length[found] == 0:
                            nemask[found // V] &= ~(1 << (found % V))
                        total_flits -= 1
                        remaining[k] -= 1
        # ---------------------------------------------------------------- routers
        for r in range(n_routers):
            if nflits[r] == 0:
                continue
            base = r * PV
            rrow, rcol = r // mesh_w, r % mesh_w
            for p in range(6):  # 1. allocation, input directions N, S, W, E, L, D
                m_free = nemask[r * 6 + p] & ~cnmask[r * 6 + p]
                if m_free == 0:
                    continue
                nv = V if p < L_ else 1
                for v in range(nv):
                    if not (m_free >> v) & 1:
                        continue
                    f = base + p * V + v
                    h = head[f]
                    if b_t[f, h] >= now:
                        continue
                    d = b_dst[f, h]
                    drow, dcol = d // mesh_w, d % mesh_w
                    if drow < rrow:
                        out = N_
                    elif drow > rrow:
                        out = S_
                    elif dcol < rcol:
                        out = W_
                    elif dcol > rcol:
                        out = E_
                    elif b_dram[f, h] != 0:
                        out = D_
                    else:
                        continue  # local: stays until the tile pops it
                    if out == D_:
                        if not d_busy[r]:
                            d_busy[r] = True
                            conn_out[f] = D_
                            conn_vc[f] = 0
                            conn_rem[f] = b_cnt[f, h]
                            cnmask[r * 6 + p] |= 1 << v
                        continue
                    dbase = nb[r, out] * PV + opp[out] * V
                    for ov in range(V):
                        if not out_busy[r, out, ov] and length[dbase + ov] == 0:
                            out_busy[r, out, ov] = True
                            conn_out[f] = out
                            conn_vc[f] = ov
                            conn_rem[f] = b_cnt[f, h]
                            cnmask[r * 6 + p] |= 1 << v
                            break
            used = 0
            for p in range(6):  # 2. traversal, one flit per input and per output direction
                m_go = cnmask[r * 6 + p] & nemask[r * 6 + p]
                if m_go == 0:
                    continue
                nv = V if p < L_ else 1
                for kk in range(nv):
                    v = (rr[r, p] + kk) % nv
                    if not (m_go >> v) & 1:
                        continue
                    f = base + p * V + v
                    out = conn_out[f]
                    if (used >> out) & 1 or conn_rem[f] <= 0:
                        continue
                    h = head[f]
                    if b_t[f, h] >= now:
                        continue
                    if out == D_:
                        g = nfifo_r + chan_of[r]
                        gport = -1
                        grouter = -1
                    else:
                        grouter = nb[r, out]
                        gport = opp[out]
                        g = grouter * PV + gport * V + conn_vc[f]
                    if length[g] >= depth:
                        continue
                    pos = (head[g] + length[g]) % depth
                    b_dst[g, pos] = b_dst[f, h]
                    b_dram[g, pos] = b_dram[f, h]
                    b_key[g, pos] = b_key[f, h]
                    b_cnt[g, pos] = b_cnt[f, h]
                    b_msg[g, pos] = b_msg[f, h]
                    b_t[g, pos] = now
                    length[g] += 1
                    head[f] = (h + 1) % depth
                    length[f] -= 1
                    nflits[r] -= 1
                    if length[f] == 0:
                        nemask[r * 6 + p] &= ~(1 << v)
                    events += 1
                    if out == D_:
                        total_flits -= 1
                    else:
                        nflits[grouter] += 1
                        nemask[grouter * 6 + gport] |= 1 << conn_vc[f]
                        hops[r] += 1
                    used |= 1 << out
                    conn_rem[f] -= 1
                    if conn_rem[f] == 0:
                        if out == D_:
                            d_busy[r] = False
                        else:
                            out_busy[r, out, conn_vc[f]] = False
                        conn_out[f] = -1
                        cnmask[r * 6 + p] &= ~(1 << v)
                    rr[r, p] = (v + 1) % nv
                    break
        # ---------------------------------------------------------------- DRAM channels
        for c in range(n_ch):
            r = dram_routers[c]
            g = nfifo_r + c
            # 1. accept the request at the head of the receive buffer
            if length[g] > 0 and b_t[g, head[g]] < now:
                m = b_msg[g, head[g]]
                take = False
                if bypass[m]:
                    if (kind[m] == K_LOAD or not submitted[m]) and ready[c] < 0 and q_len[c] == 0:
                        ready[c] = m
                        ready_done[c] = 0
                        ready_setup[c] = store_setup if kind[m] == K_STORE else 0
                        take = True
                elif (kind[m] == K_LOAD or not submitted[m]) and q_len[c] < banks:
                    q_msg[c, q_len[c]] = m
                    q_cd[c, q_len[c]] = latency
                    q_len[c] += 1
                    take = True
                if take:
                    events += 1
                    if kind[m] == K_LOAD:
                        head[g] = (head[g] + 1) % depth
                        length[g] -= 1
                    else:
                        submitted[m] = True
            # 2. stream the ready request
            m = ready[c]
            if m >= 0:
                dram_busy[c] += 1
                if kind[m] == K_LOAD:
                    f = r * PV + D_ * V
                    if length[f] < depth:
                        _inject(f, op_tile[m], 0, key[m], flits[m] - ready_done[c], m, now,
                                b_dst, b_dram, b_key, b_cnt, b_msg, b_t, head, length, depth)
                        nflits[r] += 1
                        nemask[r * 6 + D_] |= 1
                        total_flits += 1
                        events += 1
                        ready_done[c] += 1
                        if ready_done[c] == flits[m]:
                            ready[c] = -1
                elif ready_setup[c] > 0:
                    ready_setup[c] -= 1
                elif length[g] > 0 and b_t[g, head[g]] < now and b_msg[g, head[g]] == m:
                    head[g] = (head[g] + 1) % depth
                    length[g] -= 1
                    events += 1
                    ready_done[c] += 1
                    if ready_done[c] == flits[m]:
                        ready[c] = -1
            # 3. count down; the oldest finished request becomes ready (streams next cycle)
            for j in range(q_len[c]):
                if q_cd[c, j] > 0:
                    q_cd[c, j] -= 1
            if q_len[c] > 0 and q_cd[c, 0] <= 0 and ready[c] < 0:
                m = q_msg[c, 0]
                for j in range(q_len[c] - 1):
                    q_msg[c, j] = q_msg[c, j + 1]
                    q_cd[c, j] = q_cd[c, j + 1]
                q_len[c] -= 1
                ready[c] = m
                ready_done[c] = 0
                ready_setup[c] = store_setup if kind[m] == K_STORE else 0
                events += 1
        # ---------------------------------------------------------------- deadlock watch
        if events == last_events:
            busy = False
            for k in range(n_t):
                if live[k] and (state[k] == IDLE or (state[k] == REQ and finish[k] >= now)
                                or (state[k] == POP and remaining[k] == 0)):
                    busy = True
                    break
            if not busy:  # only countdowns make progress without events
                for c in range(n_ch):
                    if ready_setup[c] > 0 or (q_len[c] > 0 and (q_cd[c, 0] > 0 or ready[c] < 0)):
                        busy = True
                        break
            quiet = 0 if busy else quiet + 1
            if quiet > 3:
                return now, DEADLOCK
        else:
            quiet = 0
        last_events = events
        now += 1
    last = 0
    for i in range(n_ops):
        if end[i] > last:
            last = end[i]
    return last, OK
