"""Readable reference of the PIMSAB timing model (spec §3.3–§3.5 with the corrections of §3.4a):
tile controller FSMs, a wormhole mesh of virtual-channel routers and DRAM channels, advanced one
cycle at a time.

Objects mirror the spec: :class:`Fifo` (a VC buffer with arrival stamps), :class:`Router`
(allocation then traversal, round-robin per input port), :class:`DramChannel` (receive buffer,
request queue of row-open countdowns, one streaming request) and :class:`TileFsm` (IDLE,
REQ_MODE, SEND_WAIT, RECEIVE_WAIT, POPPING).  Each cycle the tile controllers run first, then
every router in index order, and a router's cycle starts with its DRAM channel (§3.4a).

What a component sees (§3.4a): a flit pushed in cycle t is visible from cycle t + 1; a router
tests its neighbours' buffers as they were at the start of the cycle (a flit a neighbour forwarded
in this cycle still occupies its slot), while a tile's pops and the DRAM receive buffer are seen
at once.  Input directions are served in the order D, L, N, S, W, E, a ready store spends one
set-up cycle before its first flit is consumed, and the run ends when every tile is idle and the
mesh and every DRAM channel have drained.  Cycles in which nothing can change except countdowns
(compute instructions, row opens) are skipped.
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
#: input directions in the order the official router serves them (enum order of DynaSwitch.h)
PRIORITY = (D, L, N, S, W, E)
#: input directions a tile looks for its data in (N, S, W, E, D)
TILE_SEARCH = (N, S, W, E, D)
OPPOSITE = {N: S, S: N, W: E, E: W}
IDLE, REQ, SEND, RECV, POP = range(5)
STATE_NAMES = ("idle", "req_mode", "send_wait", "receive_wait", "popping")
STORE_SETUP = 1


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
    """A FIFO of ``depth`` flits; entries remember the cycle they arrived, ``last_pop`` the cycle a
    router last forwarded from it (that slot still counts for the upstream router in that cycle).
    ``owner`` (a router) counts the flits in its buffers so idle routers are skipped."""

    def __init__(self, depth: int, owner: "Router | None" = None) -> None:
        self.depth = depth
        self.q: deque[tuple[Flit, int]] = deque()
        self.owner = owner
        self.last_pop = -1

    def head(self, now: int) -> Flit | None:
        """The head flit if it arrived before this cycle."""
        if self.q and self.q[0][1] < now:
            return self.q[0][0]
        return None

    def seen(self, now: int) -> int:
        """Occupancy as the upstream router sees it: the start-of-cycle contents, less the tile's pops."""
        return len(self.q) + (self.last_pop == now)

    def full(self, now: int) -> bool:
        return self.seen(now) >= self.depth

    def push(self, flit: Flit, now: int) -> None:
        self.q.append((flit, now))
        if self.owner is not None:
            self.owner.nflits += 1

    def pop(self, now: int | None = None) -> Flit:
        """Remove the head; ``now`` marks a router's forward (deferred for its upstream neighbour)."""
        if self.owner is not None:
            self.owner.nflits -= 1
        if now is not None:
            self.last_pop = now
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

    def busy(self) -> bool:
        return self.nflits > 0 or (self.dram is not None and not self.dram.idle())

    def step(self, now: int, mesh_w: int) -> None:
        if self.dram is not None:
            self.dram.step(now)  # the DRAM phase opens the router's cycle (§3.4a)
        if self.nflits == 0:
            return
        # 1. allocation
        for p in PRIORITY:
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
                    if not self.out_busy[out][ov] and self.downstream(out, ov).seen(now) == 0:
                        self.out_busy[out][ov] = True
                        self.conn[p][v] = Conn(out, ov, f.count)
                        break
        # 2. traversal
        used = set()
        for p in PRIORITY:
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
                if down.full(now):
                    continue
                down.push(fifo.pop(now), now)
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
    """Receive buffer → request queue (row-open countdowns) → one streaming request (§3.5).

    The receive buffer is seen at once by the router and the channel (no start-of-cycle copy)."""

    def __init__(self, router: Router, cfg: PimsabConfig) -> None:
        self.router = router
        self.recv = Fifo(cfg.vc_depth)
        self.queue: list[list] = []          # [message, countdown]
        self.banks = cfg.dram_banks
        self.latency = cfg.dram_row_open_latency
        self.ready: Message | None = None
        self.done = 0                        # flits streamed of the ready request
        self.setup = 0
        self.busy_cycles = 0

    def _submit(self, m: Message) -> bool:
        """Bypassed requests go straight to the ready slot when it is free, others (and bypassed
        ones that find it taken) to the request queue when it has room."""
        if m.bypass and self.ready is None:
            self._make_ready(m)
            return True
        if len(self.queue) < self.banks:
            self.queue.append([m, self.latency])
            return True
        return False

    def step(self, now: int) -> None:
        # 1. accept a request at the head of the receive buffer
        f = self.recv.head(now)
        if f is not None:
            m = f.msg
            if m.kind == K_LOAD:
                if self._submit(m):
                    self.recv.pop()
            elif m.kind == K_STORE and not m.submitted:
                if self._submit(m):
                    m.submitted = True
        # 2. stream the ready request
        if self.ready is not None:
            self.busy_cycles += 1
            m = self.ready
            if m.kind == K_LOAD:
                d_in = self.router.inputs[D][0]
                if not d_in.full(now):
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
        self.setup = STORE_SETUP if m.kind == K_STORE else 0

    def idle(self) -> bool:
        return self.ready is None and not self.queue and not self.recv.q

    def next_countdown(self, now: int) -> int | None:
        """The cycle in which the oldest queued request becomes ready, when nothing else moves
        (``now`` is the next cycle to simulate; its countdown reaches 0 in cycle now + c - 1)."""
        if self.ready is None and self.queue:
            return now + self.queue[0][1] - 1
        return None


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


@dataclass
class RefResult:
    cycles: int
    start: np.ndarray
    end: np.ndarray
    op_state: np.ndarray
    hops: np.ndarray
    dram_busy: np.ndarray
    steps: int


def simulate_ref(ops: TimingOps, cfg: PimsabConfig, *, max_cycles: int = 50_000_000) -> RefResult:
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
    drams = []
    for i in sorted({cfg.dram_router(t) for t in range(nr)}):
        routers[i].dram = DramChannel(routers[i], cfg)
        drams.append(routers[i].dram)
    fsms = [TileFsm(int(t), range(int(ops.start[k]), int(ops.start[k + 1]))) for k, t in enumerate(ops.tiles)]
    start = np.full(len(ops), -1, np.int64)
    end = np.full(len(ops), -1, np.int64)
    op_state = np.zeros((len(ops), 5), np.int64)
    depth = cfg.transfer_depth
    now = 0
    live = [f for f in fsms if len(f.ops)]
    steps = 0
    while live or any(r.busy() for r in routers):
        if now > max_cycles:
            raise SimTimeExceeded(f"simulated time limit of {max_cycles} cycles reached")
        steps += 1
        before = _fingerprint(routers, drams, live)
        for f in live:
            _tile_step(f, ops, routers, now, depth, start, end, op_state)
        for r in routers:
            r.step(now, Wm)
        live = [f for f in live if not (f.pc >= len(f.ops) and f.state == IDLE)]
        now += 1
        if _fingerprint(routers, drams, live) != before:
            continue
        # nothing but countdowns changed: jump to the next countdown that ends (or report a deadlock)
        nxt = [f.finish for f in live if f.state == REQ and f.finish >= now]
        nxt += [t for t in (d.next_countdown(now) for d in drams) if t is not None]
        nxt += [now for f in live if f.state in (IDLE, POP) or (f.state == SEND and f.remaining == 0)]
        nxt += [now for d in drams if d.setup]
        if not nxt and not live:
            flits = sum(r.nflits for r in routers)
            raise DeadlockError(f"deadlock at cycle {now}: every stream ended but {flits} flit(s) are never "
                                f"delivered (a tile_tx or signal without its tile_rx or wait?)")
        if not nxt:
            raise DeadlockError(f"deadlock at cycle {now}: {len(live)} tile(s) wait forever",
                                report="\n".join(f"  tile {f.tile}: {_describe(f)}" for f in live))
        target = min(min(nxt), max_cycles + 1)
        skip = target - now
        if skip > 0:
            for f in live:
                op_state[f.cur, f.state] += skip
            for d in drams:
                if d.ready is not None:
                    d.busy_cycles += skip
                for e in d.queue:
                    e[1] = max(0, e[1] - skip)
            now = target
    return RefResult(now, start, end, op_state,
                     np.array([r.hops for r in routers]), np.array([d.busy_cycles for d in drams]), steps)


def _fingerprint(routers: list[Router], drams: list["DramChannel"], live: list[TileFsm]) -> tuple:
    """Everything that changes when something other than a countdown happens."""
    return (sum(r.hops for r in routers), sum(r.nflits for r in routers),
            sum(1 for r in routers for row in r.conn for c in row if c is not None),
            tuple((f.pc, f.state, f.remaining) for f in live),
            tuple((len(d.recv.q), d.done, len(d.queue), id(d.ready), d.setup) for d in drams))


def _describe(f: TileFsm) -> str:
    return f"op {f.cur} state {STATE_NAMES[f.state]}"


def _find(router: Router, key: int, now: int) -> Fifo | None:
    for p in TILE_SEARCH:
        for fifo in router.inputs[p]:
            f = fifo.head(now)
            if f is not None and f.key == key and f.dst == router.idx and not f.dram:
                return fifo
    return None


def _tile_step(f: TileFsm, ops: TimingOps, routers: list[Router], now: int, depth: int,
               start: np.ndarray, end: np.ndarray, op_state: np.ndarray) -> None:
    router = routers[f.tile]
    if f.state == IDLE:
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
        return
    i = f.cur
    op_state[i, f.state] += 1
    k = ops.kind[i]
    if f.state == REQ:
        if now < f.finish:
            return
        if f.second or k in (K_COMPUTE, K_RX, K_WAIT):
            end[i] = now
            f.state = IDLE
        else:
            f.remaining = 1 if k in (K_LOAD, K_SIGNAL) else int(ops.flits[i])
            f.state = SEND
        return
    if f.state == SEND:
        if f.remaining > 0:
            fifo = router.inputs[L][0]
            if not fifo.full(now):
                msg = _message(f, ops, i)
                dram = k in (K_LOAD, K_STORE)
                fifo.push(Flit(int(ops.dst[i]), dram, msg.key, f.remaining, msg), now)
                f.remaining -= 1
            return
        if k == K_LOAD:
            f.remaining = int(ops.flits[i])
            f.state = RECV
        else:
            end[i] = now
            f.state = IDLE
        return
    if f.state == RECV:
        if _find(router, int(ops.key[i]), now) is not None:
            f.state = POP
        return
    if f.state == POP:
        if f.remaining > 0:
            fifo = _find(router, int(ops.key[i]), now)
            if fifo is not None:
                fifo.pop()
                f.remaining -= 1
            return
        f.second = True
        f.finish = now + depth
        f.state = REQ


def _message(f: TileFsm, ops: TimingOps, i: int) -> Message:
    """The packet a tile is injecting (one object per op instance, shared by its flits)."""
    m = getattr(f, "_msg", None)
    if m is None or getattr(f, "_msg_op", -1) != i:
        k = int(ops.kind[i])
        m = Message(k, int(ops.flits[i]), f.tile, int(ops.key[i]), bool(ops.bypass[i]))
        f._msg, f._msg_op = m, i
    return m
