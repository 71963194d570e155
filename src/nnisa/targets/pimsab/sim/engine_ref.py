"""Readable reference of the PIMSAB timing model (spec §3.3–§3.5): tile controller FSMs, a
wormhole mesh of virtual-channel routers and DRAM channels, advanced one cycle at a time.

Objects mirror the spec: :class:`Fifo` (a VC buffer with arrival stamps), :class:`Router`
(allocation then traversal, round-robin per input port), :class:`DramChannel` (receive buffer,
request queue of row-open countdowns, one streaming request) and :class:`TileFsm` (IDLE,
REQ_MODE, SEND_WAIT, RECEIVE_WAIT, POPPING).  Components are updated in a fixed order each cycle
(tile controllers, then routers, then DRAM channels); a flit pushed in cycle t can be forwarded,
accepted or popped from cycle t + 1 on, while buffer occupancy is seen as it is when a component
runs (docs/pimsab.md explains this choice against the calibration table).
This path is slow and exists to check the numba engine (:mod:`.engine_nb`) on small programs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ....core.errors import DeadlockError, SimTimeExceeded
from ..config import PimsabConfig
from .ops import K_COMPUTE, K_LOAD, K_RX, K_SIGNAL, K_STORE, K_WAIT, TimingOps

N, S, W, E, L, D = range(6)
PORT_NAMES = "NSWELD"
OPPOSITE = {N: S, S: N, W: E, E: W}
IDLE, REQ, SEND, RECV, POP = range(5)
STATE_NAMES = ("idle", "req_mode", "send_wait", "receive_wait", "popping")


@dataclass
class Flit:
    dst: int          # destination router
    dram: bool        # bound for the DRAM port of the destination router
    key: int          # message key (receive matching)
    count: int        # flits still to come at injection (head: the packet length)
    msg: "Message"


@dataclass
class Message:
    kind: int         # K_LOAD (request packet), K_STORE, data (K_LOAD data uses kind=-1), K_TX, K_SIGNAL
    flits: int
    src_tile: int
    key: int
    bypass: bool = False
    submitted: bool = False


class Fifo:
    """A FIFO of ``depth`` flits; entries remember the cycle they arrived.  ``owner`` (a router)
    counts the flits in its buffers so idle routers are skipped."""

    def __init__(self, depth: int, owner: "Router | None" = None) -> None:
        self.depth = depth
        self.q: deque[tuple[Flit, int]] = deque()
        self.owner = owner

    def head(self, now: int) -> Flit | None:
        """The head flit if it arrived before this cycle."""
        if self.q and self.q[0][1] < now:
            return self.q[0][0]
        return None

    def full(self) -> bool:
        return len(self.q) >= self.depth

    def push(self, flit: Flit, now: int) -> None:
        self.q.append((flit, now))
        if self.owner is not None:
            self.owner.nflits += 1

    def pop(self) -> Flit:
        if self.owner is not None:
            self.owner.nflits -= 1
        return self.q.popleft()[0]


@dataclass
class Conn:
    out: int
    vc: int
    remaining: int


class Router:
    def __init__(self, idx: int, cfg: PimsabConfig) -> None:
        self.idx = idx
        self.row, self.col = divmod(idx, cfg.mesh_width)
        self.nvc = cfg.router_vcs
        self.nflits = 0
        self.inputs = [[Fifo(cfg.vc_depth, self) for _ in range(self.nvc if p < L else 1)] for p in range(6)]
        self.conn: list[list[Conn | None]] = [[None] * len(self.inputs[p]) for p in range(6)]
        self.out_busy = [[False] * self.nvc for _ in range(4)]
        self.d_busy = False
        self.rr = [0] * 6
        self.neighbour: dict[int, "Router"] = {}
        self.dram: "DramChannel | None" = None
        self.hops = 0

    def route(self, f: Flit, mesh_w: int) -> int:
        """Output port: destination row first (N/S), then column (E/W); -1 = local delivery."""
        r, c = divmod(f.dst, mesh_w)
        if r < self.row:
            return N
        if r > self.row:
            return S
        if c < self.col:
            return W
        if c > self.col:
            return E
        return D if f.dram else -1

    def downstream(self, out: int, vc: int) -> Fifo:
        if out == D:
            return self.dram.recv
        return self.neighbour[out].inputs[OPPOSITE[out]][vc]

    def step(self, now: int, mesh_w: int) -> None:
        if self.nflits == 0:
            return
        # 1. allocation
        for p in range(6):
            for v, fifo in enumerate(self.inputs[p]):
                if self.conn[p][v] is not None:
                    continue
                f = fifo.head(now)
                if f is None:
                    continue
                out = self.route(f, mesh_w)
                if out < 0:
                    continue
                if out == D:
                    if not self.d_busy:
                        self.d_busy = True
                        self.conn[p][v] = Conn(D, 0, f.count)
                    continue
                for ov in range(self.nvc):
                    if not self.out_busy[out][ov] and not self.downstream(out, ov).q:
                        self.out_busy[out][ov] = True
                        self.conn[p][v] = Conn(out, ov, f.count)
                        break
        # 2. traversal
        used = set()
        for p in range(6):
            n = len(self.inputs[p])
            for k in range(n):
                v = (self.rr[p] + k) % n
                c = self.conn[p][v]
                if c is None or c.out in used or c.remaining <= 0:
                    continue
                fifo = self.inputs[p][v]
                if fifo.head(now) is None:
                    continue
                down = self.downstream(c.out, c.vc)
                if down.full():
                    continue
                down.push(fifo.pop(), now)
                used.add(c.out)
                if c.out != D:
                    self.hops += 1
                c.remaining -= 1
                if c.remaining == 0:
                    self.conn[p][v] = None
                    if c.out == D:
                        self.d_busy = False
                    else:
                        self.out_busy[c.out][c.vc] = False
                self.rr[p] = (v + 1) % n
                break


class DramChannel:
    """Receive buffer → request queue (row-open countdowns) → one streaming request (§3.5)."""

    def __init__(self, router: Router, cfg: PimsabConfig, store_setup: int) -> None:
        self.router = router
        self.recv = Fifo(cfg.vc_depth)
        self.queue: list[list] = []          # [message, countdown]
        self.banks = cfg.dram_banks
        self.latency = cfg.dram_row_open_latency
        self.ready: Message | None = None
        self.done = 0                        # flits streamed of the ready request
        self.setup = 0
        self.store_setup = store_setup
        self.busy_cycles = 0

    def step(self, now: int) -> None:
        # 1. accept a request at the head of the receive buffer
        f = self.recv.head(now)
        if f is not None:
            m = f.msg
            if m.kind == K_LOAD:
                if m.bypass and self.ready is None and not self.queue:
                    self._make_ready(m)
                    self.recv.pop()
                elif not m.bypass and len(self.queue) < self.banks:
                    self.queue.append([m, self.latency])
                    self.recv.pop()
            elif m.kind == K_STORE and not m.submitted:
                if m.bypass and self.ready is None and not self.queue:
                    m.submitted = True
                    self._make_ready(m)
                elif not m.bypass and len(self.queue) < self.banks:
                    m.submitted = True
                    self.queue.append([m, self.latency])
        # 2. stream the ready request
        if self.ready is not None:
            self.busy_cycles += 1
            m = self.ready
            if m.kind == K_LOAD:
                d_in = self.router.inputs[D][0]
                if not d_in.full():
                    left = m.flits - self.done
                    d_in.push(Flit(m.src_tile, False, m.key, left, m), now)
                    self.done += 1
                    if self.done == m.flits:
                        self.ready = None
            elif self.setup:
                self.setup -= 1
            else:
                f = self.recv.head(now)
                if f is not None and f.msg is m:
                    self.recv.pop()
                    self.done += 1
                    if self.done == m.flits:
                        self.ready = None
        # 3. count down; the oldest finished request becomes ready
        for e in self.queue:
            if e[1] > 0:
                e[1] -= 1
        if self.queue and self.queue[0][1] <= 0 and self.ready is None:
            self._make_ready(self.queue.pop(0)[0])

    def _make_ready(self, m: Message) -> None:
        self.ready = m
        self.done = 0
        self.setup = self.store_setup if m.kind == K_STORE else 0

    def idle(self) -> bool:
        return self.ready is None and not self.queue and not self.recv.q


@dataclass
class TileFsm:
    tile: int
    ops: range
    pc: int = 0
    state: int = IDLE
    finish: int = 0
    remaining: int = 0
    second: bool = False
    cur: int = -1
    start_t: int = 0


@dataclass
class RefResult:
    cycles: int
    start: np.ndarray
    end: np.ndarray
    op_state: np.ndarray
    hops: np.ndarray
    dram_busy: np.ndarray


def simulate_ref(ops: TimingOps, cfg: PimsabConfig, *, max_cycles: int = 50_000_000,
                 store_setup: int = 0) -> RefResult:
    """Cycle-by-cycle reference run of the timing operations."""
    nr = cfg.n_tiles
    routers = [Router(i, cfg) for i in range(nr)]
    Wm = cfg.mesh_width
    for r in routers:
        if r.row > 0:
            r.neighbour[N] = routers[r.idx - Wm]
        if r.row < cfg.mesh_height - 1:
            r.neighbour[S] = routers[r.idx + Wm]
        if r.col > 0:
            r.neighbour[W] = routers[r.idx - 1]
        if r.col < Wm - 1:
            r.neighbour[E] = routers[r.idx + 1]
    dram_routers = sorted({cfg.dram_router(t) for t in range(nr)})
    drams = []
    for i in dram_routers:
        routers[i].dram = DramChannel(routers[i], cfg, store_setup)
        drams.append(routers[i].dram)
    fsms = [TileFsm(int(t), range(int(ops.start[k]), int(ops.start[k + 1]))) for k, t in enumerate(ops.tiles)]
    start = np.full(len(ops), -1, np.int64)
    end = np.full(len(ops), -1, np.int64)
    op_state = np.zeros((len(ops), 5), np.int64)
    depth = cfg.transfer_depth
    now = 0
    live = [f for f in fsms if len(f.ops)]
    quiet = 0
    last = None
    while live:
        if all(f.state == REQ and f.finish > now for f in live) and all(d.idle() for d in drams) \
                and not any(r.nflits for r in routers):
            skip = min(f.finish for f in live) - now  # nothing moves until the next compute ends
            for f in live:
                op_state[f.cur, REQ] += skip
            now += skip
        if now > max_cycles:
            raise SimTimeExceeded(f"simulated time limit of {max_cycles} cycles reached")
        for f in live:
            _tile_step(f, ops, routers, now, depth, start, end, op_state)
        for r in routers:
            r.step(now, Wm)
        for d in drams:
            d.step(now)
        live = [f for f in live if not (f.pc >= len(f.ops) and f.state == IDLE)]
        snapshot = (sum(r.hops for r in routers), sum(r.nflits for r in routers),
                    tuple((f.pc, f.state, f.remaining) for f in live),
                    tuple((len(d.recv.q), d.done, len(d.queue), d.ready is None) for d in drams))
        counting = any(f.state == IDLE or (f.state == REQ and f.finish >= now) or (f.state == POP and not f.remaining)
                       for f in live) or any(d.setup or (d.queue and (d.queue[0][1] > 0 or d.ready is None))
                                             for d in drams)
        quiet = 0 if (snapshot != last or counting) else quiet + 1
        last = snapshot
        if quiet > 3:
            raise DeadlockError(f"deadlock at cycle {now}: {len(live)} tile(s) wait forever",
                                report="\n".join(f"  tile {f.tile}: {_describe(f, ops)}" for f in live))
        now += 1
    last_end = int(end.max()) if len(end) else 0
    return RefResult(last_end, start, end, op_state,
                     np.array([r.hops for r in routers]), np.array([d.busy_cycles for d in drams]))


def _describe(f: TileFsm, ops: TimingOps) -> str:
    return f"op {f.cur} state {STATE_NAMES[f.state]}"


def _find(router: Router, key: int, now: int) -> Fifo | None:
    for p in (N, S, W, E, D):
        for fifo in router.inputs[p]:
            f = fifo.head(now)
            if f is not None and f.key == key and f.dst == router.idx and not f.dram:
                return fifo
    return None


def _tile_step(f: TileFsm, ops: TimingOps, routers: list[Router], now: int, depth: int,
               start: np.ndarray, end: np.ndarray, op_state: np.ndarray) -> bool:
    router = routers[f.tile]
    if f.state == IDLE:
        if f.pc >= len(f.ops):
            return False
        i = f.ops[f.pc]
        op_state[i, IDLE] += 1
        f.pc += 1
        f.cur = i
        start[i] = now
        k = ops.kind[i]
        f.second = False
        if k == K_RX or k == K_WAIT:
            f.remaining = int(ops.flits[i]) if k == K_RX else 1
            f.state = RECV
        elif k == K_LOAD:
            f.finish = now + 1
            f.state = REQ
        else:
            f.finish = now + (int(ops.cycles[i]) if k == K_COMPUTE else depth)
            f.state = REQ
        return True
    i = f.cur
    op_state[i, f.state] += 1
    k = ops.kind[i]
    if f.state == REQ:
        if now < f.finish:
            return True
        if f.second or k in (K_COMPUTE, K_RX, K_WAIT):
            end[i] = now
            f.state = IDLE
        else:
            f.remaining = 1 if k in (K_LOAD, K_SIGNAL) else int(ops.flits[i])
            f.state = SEND
        return True
    if f.state == SEND:
        if f.remaining > 0:
            fifo = router.inputs[L][0]
            if not fifo.full():
                msg = _message(f, ops, i)
                dram = k in (K_LOAD, K_STORE)
                fifo.push(Flit(int(ops.dst[i]), dram, msg.key, f.remaining, msg), now)
                f.remaining -= 1
            return True
        if k == K_LOAD:
            f.remaining = int(ops.flits[i])
            f.state = RECV
        else:
            end[i] = now
            f.state = IDLE
        return True
    if f.state == RECV:
        if _find(router, int(ops.key[i]), now) is not None:
            f.state = POP
        return True
    if f.state == POP:
        if f.remaining > 0:
            fifo = _find(router, int(ops.key[i]), now)
            if fifo is not None:
                fifo.pop()
                f.remaining -= 1
            return True
        f.second = True
        f.finish = now + depth
        f.state = REQ
        return True
    return False


_MSG_CACHE: dict[tuple[int, int], Message] = {}


def _message(f: TileFsm, ops: TimingOps, i: int) -> Message:
    """The packet a tile is injecting (one object per op instance, shared by its flits)."""
    m = getattr(f, "_msg", None)
    if m is None or getattr(f, "_msg_op", -1) != i:
        k = int(ops.kind[i])
        flits = 1 if k in (K_LOAD, K_SIGNAL) else int(ops.flits[i])
        m = Message(k, flits if k != K_LOAD else int(ops.flits[i]), f.tile, int(ops.key[i]), bool(ops.bypass[i]))
        f._msg, f._msg_op = m, i
    return m
