"""Crossbar partition and weight replication (spec §11.1 steps 2–3).

A ``K × N`` weight matrix is cut into ``HBar = ceil(K / rows)`` row slices.  One **array group
(AG)** is one row slice spanning ``ceil(N_part / cols)`` logical crossbars (one weight per cell).
When a row slice needs more crossbars than a core has, the columns are split into ``AGP`` parts
(each part is its own *unit* producing a contiguous range of output channels).  A **replica**
is a full copy of the matrix (``HBar × AGP`` AGs); the output windows of a layer are divided
evenly (contiguous ranges) among its replicas.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .fusion import grid_tiles, pool_tiles, tile_conv_windows, tile_windows
from .graph import MatLayer


@dataclass
class AG:
    """One array group: rows ``[r0, r1)`` and columns ``[c0, c1)`` of a layer's matrix."""

    layer: int
    replica: int
    unit: int          # column part index
    row_slice: int
    r0: int
    r1: int
    c0: int
    c1: int
    xbars: int
    core: int = -1
    group: int = -1    # per-core id, assigned in first-use order during code generation


@dataclass
class MatPlan:
    """Partition of one MatLayer: geometry, replicas and their AGs."""

    hbar: int
    agp: int
    col_ranges: list[tuple[int, int]]
    xbars_per_replica: int
    replicas: int = 1
    ags: list[list[AG]] = field(default_factory=list)   # [replica] -> AGs (unit-major, row slice minor)
    windows: list[tuple[int, int]] = field(default_factory=list)  # [replica] -> [p0, p1)
    # fused pool: [replica] -> pool-output tile (rows p0..p1, columns x0..x1)
    pool_tiles: list[tuple[int, int, int, int]] = field(default_factory=list)
    # element schedule with core-to-core activations: [replica] -> output tile (y0, y1, x0, x1)
    tiles: list[tuple[int, int, int, int]] = field(default_factory=list)


def partition(layer: MatLayer, rows: int, cols: int, xbars_per_core: int) -> MatPlan:
    """Geometry of one replica of ``layer`` for ``rows × cols`` crossbars."""
    k, n = layer.K, layer.N
    hbar = -(-k // rows)
    wbar = -(-n // cols)
    agp = -(-wbar // xbars_per_core)
    per = -(-wbar // agp)
    col_ranges = [(i * per * cols, min(n, (i + 1) * per * cols)) for i in range(agp)]
    col_ranges = [c for c in col_ranges if c[0] < c[1]]
    xb = sum(-(-(c1 - c0) // cols) for c0, c1 in col_ranges) * hbar
    return MatPlan(hbar, len(col_ranges), col_ranges, xb)


def build_ags(li: int, layer: MatLayer, plan: MatPlan, rows: int, cols: int, tall: bool = False) -> None:
    """Create the AG objects of every replica and split the windows among replicas: contiguous
    window ranges, or with ``tall`` (the element schedule with core-to-core activations) column
    strips of the output (``plan.tiles``; pool tiles for a fused pool)."""
    k = layer.K
    plan.ags = []
    for r in range(plan.replicas):
        ags = []
        for u, (c0, c1) in enumerate(plan.col_ranges):
            for h in range(plan.hbar):
                ags.append(AG(li, r, u, h, h * rows, min(k, (h + 1) * rows), c0, c1, -(-(c1 - c0) // cols)))
        plan.ags.append(ags)
    plan.tiles = []
    if layer.fused_pool is not None:
        # a fused max-pool: every replica owns a tile of pool outputs (and computes the conv
        # rows/columns they read, sharing the boundary ones with its neighbours)
        plan.pool_tiles = pool_tiles(layer.fused_pool, plan.replicas, tall)
        plan.windows = [tile_windows(layer, t) for t in plan.pool_tiles]
        return
    if tall and layer.windows > 1:
        ow = layer.out_hw[1]
        plan.tiles = grid_tiles(layer.out_hw[0], ow, plan.replicas, tall=True)
        plan.windows = [(y0 * ow + x0, (y1 - 1) * ow + x1) for y0, y1, x0, x1 in plan.tiles]
        return
    w = layer.windows
    base, extra = divmod(w, plan.replicas)
    plan.windows = []
    p = 0
    for r in range(plan.replicas):
        q = p + base + (1 if r < extra else 0)
        plan.windows.append((p, q))
        p = q


def _vec_ns(elems: int, nbytes: int, srcs: int = 2) -> int:
    """Rough ns of a vector op on ``elems`` elements of ``nbytes`` bytes (conformance parameters:
    64-byte local memory beats, 20 ns read, 30 ns write, 32 lanes × 4 ns)."""
    beats = -(-elems * nbytes // 64)
    return srcs * beats * 20 + -(-elems // 32) * 4 + beats * 30


def window_ns(layer: MatLayer, plan: MatPlan, xbars_per_core: int = 64, rows: int = 128) -> float:
    """Estimated time (ns) of one output window on a replica's busiest (home) core: its
    ``mvmul``, the partial-sum additions, the gather of the other cores' sums and the
    requantization — the static cost model the replication balances (``mvmul`` ≈ 1,660 ns;
    a partial sum of a 512-wide, 31-bit layer costs more than its ``mvmul``)."""
    from .memory_plan import elem_bytes
    n = max(c1 - c0 for c0, c1 in plan.col_ranges)
    xb_ag = max(1, plan.xbars_per_replica // max(1, plan.hbar * plan.agp))
    per_core = max(1, min(plan.hbar, xbars_per_core // xb_ag))
    cores = -(-plan.hbar // per_core)
    accb = elem_bytes(layer.acc_bits)
    t = per_core * 1660 + (per_core - 1) * _vec_ns(n, accb)
    t += (cores - 1) * (_vec_ns(n, accb) + n * accb * 0.7)
    t += 2 * _vec_ns(n, accb) + _vec_ns(n, accb, 1)
    t += -(-min(layer.K, per_core * rows) // 64) * 50
    return t


def replica_windows(layer: MatLayer, replicas: int) -> int:
    """Output windows of the largest replica (whole pool rows plus halo for a fused pool)."""
    if layer.fused_pool is not None:
        return max(tile_conv_windows(layer, t) for t in pool_tiles(layer.fused_pool, replicas))
    return -(-layer.windows // replicas)


def _next_count(layer: MatLayer, r: int, cap: int) -> int:
    """The smallest replica count above ``r`` that shrinks the largest replica (or cap + 1)."""
    now = replica_windows(layer, r)
    for q in range(r + 1, cap + 1):
        if replica_windows(layer, q) < now:
            return q
    return cap + 1


def replicate(layers: list[MatLayer], plans: list[MatPlan], total_xbars: int, *, mode: str = "balance",
              fill: float = 0.9, max_replicas=None, work: bool = False, xbars_per_core: int = 64) -> None:
    """Choose replica counts in place (``plans[i].replicas``).

    ``balance`` (PIMCOMP-NN's default policy, adapted): repeatedly give more replicas to the
    layer with the most output windows per replica while the crossbars still free after that
    stay within ``fill × total``; replicas never exceed the window count (nor ``max_replicas``).
    With ``work`` the priority is the estimated time of the largest replica (windows per
    replica × :func:`window_ns`) instead of the window count, and a layer grows straight to the
    next replica count that shrinks its largest replica (window ranges are whole windows —
    whole pool rows when a pool is fused).  ``none``: one replica each.
    """
    for p in plans:
        p.replicas = 1
    if mode == "none":
        return
    if mode != "balance":
        raise ValueError(f"unknown replication mode {mode!r} (balance, none)")
    used = sum(p.xbars_per_replica for p in plans)
    budget = int(total_xbars * fill)
    if max_replicas is None or isinstance(max_replicas, int):
        max_replicas = [max_replicas] * len(layers)
    cap = [l.max_replicas if m is None else min(l.max_replicas, m) for l, m in zip(layers, max_replicas)]
    if work:
        # every replica costs a few fixed global-memory requests (constants, first input band,
        # stores) on the chip's single global memory: beyond ~sqrt(6·windows·AGs) replicas the
        # serialised requests outweigh the shorter per-replica compute
        cap = [min(c, max(1, int((6 * l.windows * p.hbar * p.agp) ** 0.5))) for c, l, p in zip(cap, layers, plans)]
        cost = [window_ns(l, p, xbars_per_core) for l, p in zip(layers, plans)]

    def prio(i: int) -> float:
        if work:
            return -replica_windows(layers[i], plans[i].replicas) * cost[i]
        return -(-(-layers[i].windows // plans[i].replicas))

    heap = [(prio(i), i) for i, l in enumerate(layers) if l.windows > 1]
    heapq.heapify(heap)
    while heap:
        negw, i = heapq.heappop(heap)
        p = plans[i]
        nxt = _next_count(layers[i], p.replicas, cap[i]) if work else p.replicas + 1
        if nxt > cap[i] or used + (nxt - p.replicas) * p.xbars_per_replica > budget:
            continue  # this layer cannot grow any more; others still may
        used += (nxt - p.replicas) * p.xbars_per_replica
        p.replicas = nxt
        heapq.heappush(heap, (prio(i), i))
