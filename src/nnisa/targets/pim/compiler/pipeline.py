"""Element (low-latency) schedule: an inter-layer pipeline at window / row granularity.

Every layer is cut into *tasks* (a batch of output windows of one replica unit, one pooled
output row, one element chunk; :class:`~.schedule.Task`), each with the global byte ranges it
reads and writes.  Activations still go through global memory, but there are no layer
barriers: a task depends only on the tasks of earlier layers that wrote the bytes it reads.

Synchronisation uses 1-byte **token** messages (``send``/``recv``, synchronous rendezvous):
before a task runs on a loading core ``C``, ``C`` receives one token from every other core
``P`` that stored data the task reads (unless an earlier token from ``P`` already covers it).
The matching ``send`` is inserted into ``P``'s program right after the producing store (or
after ``P``'s last message, whichever is later), so ``P`` is not held up by the consumer's
earlier work.  Tokens read/write local byte 0 (reserved) through ``r0`` and need no register
set-up, so inserting them never disturbs the emitter's register tracking.

Deadlock freedom: tasks are emitted in one global order (a list schedule), every message
(tokens and the partial-sum send/recv of split replicas) is created in that order, and on every
core its messages appear in program order in creation order (an inserted send goes after the
core's last message).  The first message of the global order that is not complete therefore
has both partners reaching it after only local work: no cycle can form.

Global order: each core runs its tasks layer by layer (the per-core order of the batch
schedule, which also keeps the per-layer local-memory arena valid); among the tasks that are
ready (head of all their cores' queues, producers emitted) the one with the earliest estimated
start time goes first.  The task of the lowest (layer, index) is always ready, so the list
schedule never stalls.  Global-memory buffers are not reused (no write-after-read hazards).
"""

from __future__ import annotations

import bisect
import heapq

from .c2c import message_at, pieces
from .costmodel import CostModel
from .emit import CoreEmitter
from .schedule import Task

#: writes longer than this (bytes) are searched separately by :func:`_deps`
_SHORT = 1024


def _deps(tasks: list[Task]) -> None:
    """``task.deps`` = tasks of earlier layers whose written byte ranges overlap its reads."""
    writes = sorted((lo, hi, i) for i, t in enumerate(tasks) for lo, hi in t.writes)
    # short and long writes apart: a read scans the writes starting up to the longest length
    # before it, so a few long writes (ResNet-18: 1 % over 1 KiB, up to 3.5 KiB) would widen
    # every scan
    groups = []
    for part in ([w for w in writes if w[1] - w[0] <= _SHORT], [w for w in writes if w[1] - w[0] > _SHORT]):
        if part:
            groups.append((part, [w[0] for w in part], max(hi - lo for lo, hi, _ in part)))
    layer = [t.layer for t in tasks]
    for t in tasks:
        found = set()
        tl = t.layer
        for a, b in t.reads:
            for part, los, maxlen in groups:
                j0 = bisect.bisect_right(los, a - maxlen)
                j1 = bisect.bisect_left(los, b)
                for lo, hi, i in part[j0:j1]:
                    if hi > a and layer[i] < tl:
                        found.add(i)
        t.deps = sorted(found)


class Producers:
    """Which core stored which global bytes (tasks of the layers generated so far)."""

    def __init__(self):
        self._new: list[tuple[int, int, int]] = []
        self._sorted: list[tuple[int, int, int]] = []
        self._los: list[int] = []
        self._maxlen = 0

    def add(self, tasks: list[Task]) -> None:
        for t in tasks:
            for lo, hi in t.writes:
                self._new.append((lo, hi, t.store))
                self._maxlen = max(self._maxlen, hi - lo)

    def pick(self, reads: list[tuple[int, int]], default: int) -> int:
        """The core that stored most of ``reads`` (``default`` if none): running a vector task
        there saves the tokens (and keeps a conv → pool chain on one core)."""
        if self._new:
            self._sorted = sorted(self._sorted + self._new)
            self._los = [w[0] for w in self._sorted]
            self._new = []
        score: dict[int, int] = {}
        for a, b in reads:
            j0 = bisect.bisect_right(self._los, a - self._maxlen)
            j1 = bisect.bisect_left(self._los, b)
            for lo, hi, c in self._sorted[j0:j1]:
                ov = min(hi, b) - max(lo, a)
                if ov > 0:
                    score[c] = score.get(c, 0) + ov
        if not score:
            return default
        return max(score, key=lambda c: (score[c], c == default, -c))


def coarsen(tasks: list[Task], em: dict[int, CoreEmitter]) -> list[Task]:
    """Merge the tasks of one unit (a chain) or one core of a layer, per image, into one task
    (the throughput schedule's granularity: one token per producer core, consumer core, layer
    boundary and image).  Sub-tasks keep their order; each gets its own transient buffers."""
    groups: dict[tuple, list[Task]] = {}
    for t in tasks:
        key = (t.image, t.layer, t.unit if t.unit is not None else ("core", t.store))
        groups.setdefault(key, []).append(t)
    out = []
    for key, subs in groups.items():
        first = subs[0]

        def run(subs=subs) -> None:
            for i, sub in enumerate(subs):
                if i:
                    for c in sub.cores:
                        em[c].tarena.reset()
                sub.run()

        cores = list(dict.fromkeys(c for t in subs for c in t.cores))
        loaders = list(dict.fromkeys(c for t in subs for c in t.loaders))
        m = Task(first.layer, cores, loaders, [r for t in subs for r in t.reads],
                 [w for t in subs for w in t.writes], first.store, run, first.where,
                 chain=key[2] if (first.chain is not None or first.unit is not None) else None, image=first.image,
                 unit=first.unit,
                 out_buf=first.out_buf)
        if any(t.prepare for t in subs):
            m.prepare = lambda subs=subs: [t.prepare() for t in subs if t.prepare]
        if any(t.needs for t in subs):
            m.needs = lambda subs=subs: [nd for t in subs if t.needs for nd in t.needs()]
        if any(t.runs for t in subs):
            m.runs = lambda subs=subs: [rn for t in subs if t.runs for rn in t.runs()]
        out.append(m)
    out.sort(key=lambda t: (t.image, t.layer))
    return out


def _sync_rows(times: list[float], n: int, t: float | None = None) -> None:
    """Pad ``times`` to ``n`` rows (token recvs appended outside a task: time ``t`` or the last)."""
    k = n - len(times)
    if k > 0:
        times.extend([t if t is not None else (times[-1] if times else 0.0)] * k)


def run_element(tasks: list[Task], em: dict[int, CoreEmitter], *, interleave: bool = True,
                lmem: int = 1 << 20, cost: CostModel | None = None, debug: list | None = None) -> dict:
    """Emit ``tasks`` (in batch order: layer, index) with the element schedule; returns stats.

    ``interleave``: a core's tasks of different layers may interleave (true pipelining on every
    core); per-unit state then lives in the lower half of local memory and each task's
    transient buffers in the upper half.  Otherwise each core runs its layers in order.
    Streams: among ready tasks the earliest image goes first (low latency: a core starts the
    next image when it has nothing left of the current one), so all of image k's messages are
    created before image k+1 overwrites an output region."""
    _deps(tasks)
    n = len(tasks)
    cost = cost if cost is not None else CostModel()
    if interleave:
        from .emit import LmemArena
        for e in em.values():
            e.per_task = True
            e.tarena = LmemArena(lmem)
            e.tarena.base = e.tarena.top = lmem // 2
    order_deps: list[list[int]] = [[] for _ in range(n)]
    last: dict = {}
    for i, t in enumerate(tasks):
        if t.chain is not None:
            if t.chain in last:
                order_deps[i].append(last[t.chain])
            last[t.chain] = i
    queues: dict[int, list[int]] = {}
    for i, t in enumerate(tasks):
        for c in t.cores:
            queues.setdefault(c, []).append(i)
    head = {c: 0 for c in queues}
    pending = [len(t.deps) + len(order_deps[i]) for i, t in enumerate(tasks)]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, t in enumerate(tasks):
        for d in list(t.deps) + order_deps[i]:
            users[d].append(i)
    fin = [0.0] * n
    endpos = [0] * n
    avail = {c: 0.0 for c in queues}
    cur_layer = {c: None for c in queues}
    known: dict[tuple[int, int], int] = {}
    done = [False] * n
    heap: list[tuple[float, int]] = []
    seq = 0
    tokens = 0
    messages = msg_bytes = 0
    produced: dict[int, dict] = {}       # task → buffer → [(task, run)]: its core-to-core output runs
    received: dict[tuple, list] = {}     # (core, region, producer task, run) → bytes already there
    present: set[tuple] = set()          # (core, region, lo, hi, image) of needs wholly received
    times: dict[int, list[float]] = {c: [] for c in em}   # estimated end time of every row

    def ready(i: int) -> bool:
        t = tasks[i]
        return pending[i] == 0 and (interleave or all(queues[c][head[c]] == i for c in t.cores))

    # A ready task's dependences are all emitted, so its dependence-ready time ``dr`` is fixed
    # when it is queued; its estimated start is max(dr, A) with A the latest ``avail`` of its
    # cores, which only grows.  The next task is the queued one of the least
    # (image, estimated start, index).
    #
    # Queued tasks are grouped by (image, cores): a group shares A, so its least task is the
    # least index among ``low`` (dr <= A: start A) or, if ``low`` is empty, the least (dr, index)
    # of ``high`` (dr > A).  One heap holds lower bounds of every group's least key (pushed
    # when a task is queued, re-pushed when a popped entry is out of date), so a busier core
    # costs one re-push per group, not one per queued task (~30 per task with a heap of tasks).
    dep_ready: list[float] = [0.0] * n
    gid_of = [0] * n
    groups: dict[tuple, int] = {}
    g_cores: list = []
    g_low: list[list[int]] = []
    g_high: list[list[tuple[float, int]]] = []
    g_entry: list = []     # the group's live heap entry (other entries of the group are dead)

    def g_avail(g: int) -> float:
        cores = g_cores[g]
        return avail[cores[0]] if len(cores) == 1 else max([avail[c] for c in cores])

    def g_least(g: int):
        """(start, index) of group ``g``'s least task (None if empty)."""
        a = g_avail(g)
        low, high = g_low[g], g_high[g]
        while high and high[0][0] <= a:
            heapq.heappush(low, heapq.heappop(high)[1])
        if low:
            return a, low[0]
        if high:
            return high[0]
        return None

    def push(i: int) -> None:
        t = tasks[i]
        dr = 0.0                 # = max(0, producers' ends + 50, previous batch's end)
        for d in t.deps:
            dr = max(dr, fin[d] + 50)
        for d in order_deps[i]:
            dr = max(dr, fin[d])
        dep_ready[i] = dr
        if not interleave:
            cores = t.cores
            a = avail[cores[0]] if len(cores) == 1 else max([avail[c] for c in cores])
            heapq.heappush(heap, (t.image, a if a > dr else dr, i))
            return
        key = (t.image, tuple(t.cores))
        g = groups.get(key)
        if g is None:
            g = groups[key] = len(g_cores)
            g_cores.append(t.cores)
            g_low.append([])
            g_high.append([])
            g_entry.append(None)
        gid_of[i] = g
        a = g_avail(g)
        if dr <= a:
            heapq.heappush(g_low[g], i)
        else:
            heapq.heappush(g_high[g], (dr, i))
        e = (t.image, a if a > dr else dr, i)
        if g_entry[g] is None or e < g_entry[g]:   # the group's least got lower: a new entry
            g_entry[g] = e
            heapq.heappush(heap, e)

    queued = [False] * n
    for i in range(n):
        if ready(i):
            queued[i] = True
            push(i)
    emitted = 0
    while heap:
        if not interleave:
            # layer-major per core: the estimate is not re-checked (no re-queueing)
            img, key, i = heapq.heappop(heap)
            cores = tasks[i].cores
            a = avail[cores[0]] if len(cores) == 1 else max([avail[c] for c in cores])
            start = a if a > dep_ready[i] else dep_ready[i]
        else:
            e = heap[0]
            img, key, i = e
            g = gid_of[i]
            if e != g_entry[g]:
                heapq.heappop(heap)
                continue
            start, j = g_least(g)
            if start != key or j != i:   # out of date: re-queue the group's least task
                # (one sift instead of pop + push; the heap's least entry is the same)
                g_entry[g] = e = (img, start, j)
                heapq.heapreplace(heap, e)
                continue
            heapq.heappop(heap)
            if g_low[g] and g_low[g][0] == i:
                heapq.heappop(g_low[g])
            else:
                heapq.heappop(g_high[g])
            least = g_least(g)
            g_entry[g] = None
            if least is not None:
                g_entry[g] = e = (img, least[0], least[1])
                heapq.heappush(heap, e)
        t = tasks[i]
        tcores = t.cores
        for c in tcores:
            if interleave:
                ta = em[c].tarena
                ta.top = ta.base        # (tarena.reset(), inlined)
            elif cur_layer[c] != t.layer:
                em[c].arena.reset()
                cur_layer[c] = t.layer
        if t.prepare is not None:
            t.prepare()
        needs = t.needs() if t.needs is not None else []
        covered = {nd.buf for nd in needs}
        if needs:
            # a need already wholly present (an earlier task of this image received every byte)
            # has nothing to fetch: a producer's output positions are its own (a duplicate producer
            # would compute the same values, so skipping it would still be exact)
            timg = t.image
            needs = [nd for nd in needs if (nd.core, nd.key, nd.lo, nd.hi, timg) not in present]
        # core-to-core data: the positions the task's regions still lack, from its producers
        # (the producers' runs by buffer, in dependence order: taken once, not per need)
        dep_runs: dict[int, list] = {}
        if needs:
            for d in t.deps:
                pd = produced.get(d)
                if pd is not None:
                    for b, pairs in pd.items():
                        got = dep_runs.get(b)
                        if got is None:
                            dep_runs[b] = list(pairs)
                        else:
                            got += pairs
        for nd in needs:
            nbuf, nlo, nhi = nd.buf, nd.lo, nd.hi
            spans = []       # the need's bytes present after this (every overlapping run's part)
            for d, run in dep_runs.get(nbuf, ()):
                rlo, rhi = run.lo, run.hi
                if not (nlo < nhi and nlo < rhi and rlo < nhi and rlo < rhi):
                    continue     # no overlap: pieces() would find nothing
                spans.append((rlo if rlo > nlo else nlo, rhi if rhi < nhi else nhi))
                have = received.setdefault((nd.core, nd.key, d, rlo), [])
                for src, dst, size in pieces(nd, run, have):
                    p, c = tasks[d].store, nd.core
                    if p == c:
                        em[p].lmv(dst, src, size)
                        continue
                    # the consumer waits for its data (its recv goes just before the task); the
                    # send goes where the producer is estimated to reach the consumer's start
                    # (a synchronous send placed earlier would stall the producer; a recv placed
                    # earlier would stall a consumer that has other work first)
                    ep, ec = em[p], em[c]
                    tp = times[p]
                    _sync_rows(tp, len(ep.rows))
                    pos_p = max(endpos[d], ep.msg_pos, bisect.bisect_left(tp, start))
                    pos_c = len(ec.rows)
                    seq = message_at(ep, pos_p, seq, "send", src, c, size)
                    seq = message_at(ec, pos_c, seq, "recv", dst, p, size)
                    avail[c] += cost.message(size)    # (the rows after the insert get later)
                    avail[p] += cost.lr(size) + 2 * cost.noc
                    known[(c, p)] = max(known.get((c, p), -1), pos_p)
                    messages += 1
                    msg_bytes += size
            if spans:
                spans.sort()
                reach = nlo
                for a, b in spans:
                    if a > reach:
                        break
                    if b > reach:
                        reach = b
                if reach >= nhi:
                    present.add((nd.core, nd.key, nlo, nhi, t.image))
        # tokens: one per (producer core, loading core) not yet covered
        # (the last producing row of each producer core: the same for every loading core)
        need: dict[int, int] = {}
        for d in t.deps:
            td = tasks[d]
            if td.out_buf is not None and td.out_buf in covered:
                continue
            p = td.store
            if endpos[d] > need.get(p, -1):
                need[p] = endpos[d]
        need_cores = sorted(need)
        for c in t.loaders:
            for p in need_cores:
                if p == c or known.get((c, p), -1) >= need[p]:
                    continue
                ep = em[p]
                lo = max(need[p], ep.msg_pos)
                # the send goes where the producer is estimated to reach the consumer's start
                # (a synchronous send placed earlier would stall the producer)
                tp = times[p]
                _sync_rows(tp, len(ep.rows))
                pos = max(lo, bisect.bisect_left(tp, start))
                ep.token_send_at(pos, c, seq)
                seq += 1
                em[c].token_recv(p)
                known[(c, p)] = pos
                tokens += 1
        before = [len(em[c].rows) for c in tcores]
        t.run()
        end = start
        img = t.image
        for c, b in zip(tcores, before):
            tc = times[c]
            _sync_rows(tc, b, start)
            rows = em[c].rows
            end = max(end, cost.run(c, rows[b:], max(start, tc[-1] if tc else 0.0), tc))
            em[c].marks[img] = len(rows)      # (em[c].mark(image), inlined)
        fin[i] = end
        endpos[i] = len(em[t.store].rows)
        if debug is not None:
            debug.append((i, t.layer, t.image, t.store, before[tcores.index(t.store)] if t.store in tcores else 0,
                          endpos[i], start, end))
        if t.runs is not None:
            # (producer, run) pairs by buffer (a need only takes runs of its own buffer), in the
            # original order
            pd = produced[i] = {}
            for run in t.runs():
                pd.setdefault(run.buf, []).append((i, run))
        done[i] = True
        emitted += 1
        for c in tcores:
            avail[c] = end
            head[c] += 1
        cand = [queues[c][head[c]] for c in tcores if head[c] < len(queues[c])]
        for u in users[i]:
            pending[u] -= 1
            cand.append(u)
        for u in cand:
            if not queued[u] and (pending[u] == 0 if interleave else ready(u)):
                queued[u] = True
                push(u)
    if emitted != n:  # pragma: no cover - impossible by construction (see module docstring)
        raise RuntimeError(f"element schedule stalled after {emitted} of {n} tasks")
    for e in em.values():
        e.merge_inserts()
    return {"tasks": n, "tokens": tokens, "messages": messages, "message_bytes": msg_bytes,
            "estimated_ns": max(fin) if fin else 0.0}
