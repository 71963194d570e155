"""PIMSAB timing results as a :class:`~nnisa.report.timeline.Timeline` (``--gantt``, ``--trace``)."""

from __future__ import annotations

import numpy as np

from ....report.timeline import Timeline, Track
from ..config import PimsabConfig
from ..program import PimsabProgram
from .ops import MN_NAMES, TimingOps, classify
from .timing import TimingResult

UNITS = ("compute", "dram", "network")


def to_timeline(prog: PimsabProgram, ops: TimingOps, tr: TimingResult, cfg: PimsabConfig) -> Timeline:
    """One track per tile stream; each op is an interval [start, end + 1) in cycles, coloured by
    its Fig. 18 class, labelled with its mnemonic."""
    cls = classify(ops.mnem)
    tracks = []
    for k, t in enumerate(ops.tiles.tolist()):
        lo, hi = int(ops.start[k]), int(ops.start[k + 1])
        s, e = tr.start[lo:hi], tr.end[lo:hi] + 1
        tracks.append(Track(f"tile {t}", s, e, cls[lo:hi].astype(np.int16), ops.mnem[lo:hi].astype(np.int32),
                            ops.row[lo:hi], finish=float(e.max()) if hi > lo else None))
    return Timeline(tracks, UNITS, MN_NAMES, "cycles", 1 / cfg.clock_ghz,
                    f"PIMSAB: {len(prog)} instructions, {tr.cycles:,} cycles", "PIMSAB chip",
                    {"clock_ghz": cfg.clock_ghz})
