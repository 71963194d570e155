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


def build_ags(li: int, layer: MatLayer, plan: MatPlan, rows: int, cols: int) -> None:
    """Create the AG objects of every replica and split the windows among replicas."""
    k = layer.K
    plan.ags = []
    for r in range(plan.replicas):
        ags = []
        for u, (c0, c1) in enumerate(plan.col_ranges):
            for h in range(plan.hbar):
                ags.append(AG(li, r, u, h, h * rows, min(k, (h + 1) * rows), c0, c1, -(-(c1 - c0) // cols)))
        plan.ags.append(ags)
    w = layer.windows
    base, extra = divmod(w, plan.replicas)
    plan.windows = []
    p = 0
    for r in range(plan.replicas):
        q = p + base + (1 if r < extra else 0)
        plan.windows.append((p, q))
        p = q


def replicate(layers: list[MatLayer], plans: list[MatPlan], total_xbars: int, *, mode: str = "balance",
              fill: float = 0.9, max_replicas=None, work: bool = False) -> None:
    """Choose replica counts in place (``plans[i].replicas``).

    ``balance`` (PIMCOMP-NN's default policy, adapted): repeatedly give one more replica to the
    layer with the most output windows per replica while the crossbars still free after that
    stay within ``fill × total``; replicas never exceed the window count (nor ``max_replicas``).
    With ``work`` the priority is the ``mvmul`` count of one replica (windows per replica × AGs)
    instead of the window count.  ``none``: one replica each.
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
    cap = [l.windows if m is None else min(l.windows, m) for l, m in zip(layers, max_replicas)]
    if work:
        # every replica costs a few fixed global-memory requests (constants, first input band,
        # stores) on the chip's single global memory: beyond ~sqrt(6·windows·AGs) replicas the
        # serialised requests outweigh the shorter per-replica compute
        cap = [min(c, max(1, int((6 * l.windows * p.hbar * p.agp) ** 0.5))) for c, l, p in zip(cap, layers, plans)]

    def prio(i: int) -> int:
        per = -(-layers[i].windows // plans[i].replicas)
        return -(per * plans[i].hbar * plans[i].agp if work else per)

    heap = [(prio(i), i) for i, l in enumerate(layers) if l.windows > 1]
    heapq.heapify(heap)
    while heap:
        negw, i = heapq.heappop(heap)
        p = plans[i]
        if p.replicas >= cap[i] or used + p.xbars_per_replica > budget:
            continue  # this layer cannot grow any more; others still may
        p.replicas += 1
        used += p.xbars_per_replica
        heapq.heappush(heap, (prio(i), i))
