"""Core-to-core activations for the pipelined schedules: plan, regions and messages.

Without it every layer output goes through the chip's single global memory (one FIFO server).
With it (``-O c2c=true``, the default of the element schedule; the throughput schedule keeps
every image's activations in that image's own global-memory buffers), a conv/Gemm
*consumer unit* keeps the input rows its windows read in a local **region** on each of its cores
(and the residual positions of a fused Add on its home core), and a *producer unit* keeps the
positions it computed in a local **output region**; when the list schedule (:mod:`.pipeline`)
emits a consumer task it creates, for every producer task it depends on, the messages that
copy the missing positions from the producer's output region into the consumer's region:

* a ``send`` inserted into the producer's program after the producing code (and after the
  producer's last message, where the producer is estimated to reach the consumer's start —
  the token rule of the element schedule), addressed as ``r0`` + offset (``r0`` is always 0 and
  the offset field holds the whole local address: no register set-up, so an insert at an earlier
  position never disturbs the registers the emitter tracks);
* the matching ``recv`` appended to the consumer's program before the task (a local ``lmv``
  when producer and consumer share the core).

Messages are created in the one global emission order and appear on every core in that order
(the argument of :mod:`.pipeline`), so the program stays deadlock-free by construction.  Global
memory still holds the model input and output, the GlobalAveragePool partial sums, tensors with
a consumer that is not a conv/Gemm (pooling, Add, Relu that were not fused), and **spills**:
a consumer unit whose regions do not fit into the lower half of its cores' local memory (the
per-unit half of the element schedule) reads that input from global memory (with tokens).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..isa import OPCODE
from .emit import MAXLEN, CoreEmitter, pack_msg
from .graph import Lowered, MatLayer

_SEND, _RECV = OPCODE["send"], OPCODE["recv"]


@dataclass
class Need:
    """Bytes ``[lo, hi)`` (offsets in the tensor's storage) of buffer ``buf`` that core ``core``
    needs in region ``key``, where byte ``b`` lives at local address ``addr + b - base``."""

    core: int
    key: tuple
    buf: int
    lo: int
    hi: int
    base: int
    addr: int


@dataclass
class Run:
    """Bytes ``[lo, hi)`` of buffer ``buf`` at local address ``addr`` of the producing core."""

    buf: int
    lo: int
    hi: int
    addr: int


@dataclass
class C2CPlan:
    """Which inputs travel core to core.  Keys are units ``(layer index, replica, first column)``."""

    main: set = field(default_factory=set)        # units whose main input is received
    res: set = field(default_factory=set)         # units whose residual is received
    producers: set = field(default_factory=set)   # id(buffer) of tensors sent core to core
    gm: set = field(default_factory=set)          # id(buffer) of those that global memory needs too
    spilled: list = field(default_factory=list)   # units that fell back to global memory

    def gm_store(self, buf) -> bool:
        """Must a producer of ``buf`` still store it to global memory?"""
        return id(buf) not in self.producers or id(buf) in self.gm


def out_box(layer: MatLayer, r: int) -> tuple[int, int, int, int] | None:
    """The conv output rows/columns ``(y0, y1, x0, x1)`` replica ``r`` computes (a tile; for a
    contiguous window range, the rows it touches over the full width); None for a Gemm."""
    if layer.windows == 1:
        return None
    oh, ow = layer.out_hw
    plan = layer.plan
    if layer.fused_pool is not None:
        from .fusion import conv_cols_for, conv_rows_for
        p0, p1, x0, x1 = plan.pool_tiles[r]
        rows, cols = conv_rows_for(layer.fused_pool, p0, p1), conv_cols_for(layer.fused_pool, x0, x1)
        return rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    if plan.tiles:
        return plan.tiles[r]
    w0, w1 = plan.windows[r]
    return w0 // ow, (w1 - 1) // ow + 1, 0, ow


def input_box(layer: MatLayer, r: int) -> tuple[int, int, int, int]:
    """Input rows and columns ``(y0, y1, x0, x1)`` the windows of replica ``r`` read (the whole
    input of a Gemm)."""
    h, w, c = layer.in_hwc
    box = out_box(layer, r)
    if box is None:
        return 0, h, 0, w
    oy0, oy1, ox0, ox1 = box

    def span(lo, hi, s, pad, k, d, n):
        a = max(0, lo * s - pad)
        return a, max(a + 1, min(n, (hi - 1) * s - pad + (k - 1) * d + 1))

    y0, y1 = span(oy0, oy1, layer.strides[0], layer.pads[0], layer.kernel[0], layer.dilations[0], h)
    x0, x1 = span(ox0, ox1, layer.strides[1], layer.pads[1], layer.kernel[1], layer.dilations[1], w)
    return y0, y1, x0, x1


def out_positions(layer: MatLayer, r: int) -> int:
    """Output positions replica ``r`` keeps in its output region."""
    if layer.fused_pool is not None:
        p0, p1, x0, x1 = layer.plan.pool_tiles[r]
        return (p1 - p0) * (x1 - x0)
    if layer.plan.tiles:
        y0, y1, x0, x1 = layer.plan.tiles[r]
        return (y1 - y0) * (x1 - x0)
    w0, w1 = layer.plan.windows[r]
    return w1 - w0


def plan_c2c(low: Lowered, lmem: int, enabled: bool = True) -> C2CPlan:
    """Decide the transport of every conv/Gemm input (see the module docstring)."""
    plan = C2CPlan()
    if not enabled:
        return plan
    producer = {id(l.out.buf): l for l in low.layers}
    outputs = {id(t.buf) for t in low.outputs}

    def sendable(buf) -> bool:
        p = producer.get(id(buf))
        return (isinstance(p, MatLayer) and p.plan is not None and p.plan.agp == 1 and p.fused_gap is None
                and not getattr(p.plan, "chunks", None) and id(buf) not in outputs)

    load: dict[int, int] = defaultdict(int)       # core → bytes of regions (per-unit state)
    wants: list[tuple[tuple, str, list[tuple[int, int]]]] = []
    for li, l in enumerate(low.layers):
        if not isinstance(l, MatLayer) or l.plan is None or getattr(l.plan, "chunks", None):
            continue
        for r, ags in enumerate(l.plan.ags):
            for u, (c0, c1) in enumerate(l.plan.col_ranges):
                unit = [a for a in ags if a.unit == u]
                home = next(a.core for a in unit if a.row_slice == 0)
                key = (li, r, c0)
                if sendable(l.out.buf):       # (an upper bound: unused output regions are not allocated)
                    load[home] += out_positions(l, r) * l.N
                if sendable(l.inputs[0].buf):
                    y0, y1, x0, x1 = input_box(l, r)
                    size = (y1 - y0) * (x1 - x0) * l.in_hwc[2]
                    wants.append((key, "main", [(c, size) for c in sorted({a.core for a in unit})]))
                add = l.fused_add
                if add is not None and sendable(add.other.buf) and c1 - c0 == l.N:
                    wants.append((key, "res", [(home, out_positions(l, r) * l.N)]))
    budget = int(lmem // 2 * 0.75)     # the rest: constants, bands of global-memory inputs
    for key, kind, cores in sorted(wants, key=lambda w: max(s for _, s in w[2])):
        if all(load[c] + s <= budget for c, s in cores):
            for c, s in cores:
                load[c] += s
            (plan.main if kind == "main" else plan.res).add(key)
        else:
            plan.spilled.append((key, kind))
    # producers and the tensors global memory still needs
    received = defaultdict(set)     # id(buffer) → consumer layers reading it core to core
    for li, l in enumerate(low.layers):
        if isinstance(l, MatLayer):
            if any(k[0] == li for k in plan.main):
                received[id(l.inputs[0].buf)].add(li)
            if l.fused_add is not None and any(k[0] == li for k in plan.res):
                received[id(l.fused_add.other.buf)].add(li)
    plan.producers = set(received)
    for li, l in enumerate(low.layers):
        reads = [(l.inputs[0].buf, "main")] + ([(l.fused_add.other.buf, "res")]
                                                if isinstance(l, MatLayer) and l.fused_add is not None else [])
        if not isinstance(l, MatLayer):
            reads = [(t.buf, "main") for t in l.inputs]
        for buf, kind in reads:
            if id(buf) not in plan.producers:
                continue
            units = [(li, r, c0) for r in range(l.plan.replicas) for c0, _ in l.plan.col_ranges] \
                if isinstance(l, MatLayer) else []
            got = plan.main if kind == "main" else plan.res
            if not units or not all(u in got for u in units):
                plan.gm.add(id(buf))
    return plan


def pieces(need: Need, run: Run, have: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(source address, destination address, bytes) of the part of ``run`` that ``need`` wants
    and the region does not ``have`` yet (tensor byte offsets, so aliases with another logical
    shape — a Flatten — match too); ``have`` is updated."""
    lo, hi = max(need.lo, run.lo), min(need.hi, run.hi)
    if lo >= hi:
        return []
    if not have:              # (the first piece of this run: nothing to subtract)
        have.append((lo, hi))
        return [(run.addr + lo - run.lo, need.addr + lo - need.base, hi - lo)]
    todo = [(lo, hi)]
    for a, b in have:
        todo = [seg for x, y in todo for seg in ((x, min(y, a)), (max(x, b), y)) if seg[0] < seg[1]]
    have.extend(todo)
    return [(run.addr + a - run.lo, need.addr + a - need.base, b - a) for a, b in todo]


def message_at(e: CoreEmitter, pos: int, seq: int, op: str, addr: int, peer: int, size: int) -> int:
    """Insert the ``send``/``recv`` chunks of ``size`` bytes at local address ``addr`` (``r0`` +
    offset) at ``pos`` (>= the core's last message, so messages stay in creation order on every
    core); returns the next sequence number (inserts at one position keep their order)."""
    assert pos >= e.msg_pos
    ins = e.inserts
    done = 0
    while done < size:
        n = min(MAXLEN, size - done)
        if op == "send":
            row = pack_msg(_SEND, 0, 0, n, peer, addr + done)
        else:
            row = pack_msg(_RECV, 0, 0, n, peer, addr + done)
        ins.append((pos, seq, row))
        seq += 1
        done += n
    e.msg_pos = pos
    return seq
