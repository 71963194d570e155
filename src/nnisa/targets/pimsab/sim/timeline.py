"""PIMSAB timing results as a :class:`~nnisa.report.timeline.Timeline` (``--gantt``, ``--trace``)."""

from __future__ import annotations

import numpy as np

from ....report.timeline import Timeline, build_timeline
from ..config import PimsabConfig
from ..program import PimsabProgram
from .ops import MN_NAMES, TimingOps, classify
from .timing import TimingResult

UNITS = ("compute", "dram", "network")


def to_timeline(prog: PimsabProgram, ops: TimingOps, tr: TimingResult, cfg: PimsabConfig) -> Timeline:
    """One track per tile stream; each op is an interval [start, end + 1) in cycles, coloured by
    its Fig. 18 class, labelled with its mnemonic."""
    tiles = ops.tiles.tolist()
    bounds = ops.start[:len(tiles) + 1].astype(np.int64)
    n = int(bounds[-1]) if len(tiles) else 0
    row = np.repeat(np.arange(len(tiles)), np.diff(bounds))
    end = tr.end[:n] + 1
    finish = [float(end[lo:hi].max()) if hi > lo else None for lo, hi in zip(bounds[:-1], bounds[1:])]
    return build_timeline([f"tile {t}" for t in tiles], row, tr.start[:n], end,
                          unit=classify(ops.mnem)[:n].astype(np.int16), label=ops.mnem[:n].astype(np.int32),
                          pc=ops.row[:n], finish=finish, units=UNITS, labels=MN_NAMES, time_unit="cycles",
                          ns_per_unit=1 / cfg.clock_ghz,
                          title=f"PIMSAB: {len(prog)} instructions, {tr.cycles:,} cycles", process="PIMSAB chip",
                          meta={"clock_ghz": cfg.clock_ghz})
