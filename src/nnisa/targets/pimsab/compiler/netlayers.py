"""Per-layer rows of a lowered PIMSAB network (issue 28 item 5, :mod:`nnisa.core.layers`)."""

from __future__ import annotations

import math

from ....core.layers import LayerRow
from ..config import PimsabConfig


def layer_table(layers, cfg: PimsabConfig, timed: list[dict] | None = None) -> list[LayerRow]:
    """Per-layer rows (:class:`~nnisa.core.layers.LayerRow`) of a lowered network, per input.

    With ``timed`` (:class:`.network.NetRun` ``layers``: one timed run) the cycles and dynamic
    energy are the simulator's; without, the compiler's estimated cycles and no energy.  A layer's
    programs run back to back, so its cycles are their sum; ``utilization`` is the fraction of the
    chip's CRAMs its programs spread the work over (the search's tile × array factors), weighted by
    program cycles; ``memory_bytes`` the CRAM bytes its largest program holds
    (wordlines × bitlines in use).  Host layers: 0 cycles, energy and on-chip memory."""
    chip_crams = cfg.n_tiles * cfg.crams_per_tile
    rows = []
    for k, L in enumerate(layers):
        t = timed[k] if timed is not None else None
        progs = L.programs if L.on_device else []
        cyc = [int(pr["cycles"]) for pr in t.get("programs", [])] if t is not None else \
            [int(p.compiled.report.get("estimated_cycles") or 0) for p in progs]
        occ = [p.compiled.report["occupancy"] * cfg.tiles_used * cfg.crams_per_tile * cfg.cram_cols for p in progs]
        crams = [math.prod(p.compiled.candidate.tiles.values()) * math.prod(p.compiled.candidate.arrays.values())
                 for p in progs]
        total = sum(cyc)
        util = sum(c * n for c, n in zip(cyc, crams)) / (total * chip_crams) if total else 0.0
        mem = max((int(p.compiled.report["wordlines"]) * o // 8 for p, o in zip(progs, occ)), default=0)
        rows.append(LayerRow(
            layer=L.node.name, op=L.node.op, cycles=total, latency_ns=total / cfg.clock_ghz,
            energy_pj=(float(t["energy_j"]) * 1e12 if t is not None else None), utilization=min(util, 1.0),
            memory_bytes=int(mem), instructions=sum(len(p.compiled.program) for p in progs),
            extra={"device": bool(L.on_device), "programs": len(progs), "crams": max(crams, default=0),
                   "tiles": max((len(p.compiled.program.stream_tiles()) for p in progs), default=0)}))
    return rows
