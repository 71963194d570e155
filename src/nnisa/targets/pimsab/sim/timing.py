"""Timing runs: one entry point over the numba engine and the Python reference (spec §3.3–§3.5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core.errors import DeadlockError, SimTimeExceeded
from ..config import PimsabConfig
from .ops import MN_NAMES, TimingOps

STATES = ("idle", "req_mode", "send_wait", "receive_wait", "popping")
#: extra cycles before a ready store streams (0: it streams the cycle after it becomes ready, like a
#: load; with the tile-router-DRAM update order this reproduces the calibration table)
STORE_SETUP = 0


@dataclass
class TimingResult:
    """Per-op start/end cycles and controller-state cycles, flit hops per router, DRAM busy cycles."""

    cycles: int
    start: np.ndarray
    end: np.ndarray
    op_state: np.ndarray       # (ops, 5): cycles in idle, req_mode, send_wait, receive_wait, popping
    hops: np.ndarray           # per router
    dram_busy: np.ndarray      # per channel
    engine: str


def run_timing(ops: TimingOps, cfg: PimsabConfig, *, engine: str = "fast", max_cycles: int = 2_000_000_000,
               store_setup: int = STORE_SETUP) -> TimingResult:
    """Simulate the timing operations; ``engine`` = ``fast`` (numba) or ``reference`` (Python)."""
    if engine == "reference":
        from .engine_ref import simulate_ref
        r = simulate_ref(ops, cfg, max_cycles=max_cycles, store_setup=store_setup)
        return TimingResult(r.cycles, r.start, r.end, r.op_state, r.hops, r.dram_busy, "reference")
    from .engine_nb import run_engine
    n = len(ops)
    start = np.full(n, -1, np.int64)
    end = np.full(n, -1, np.int64)
    sc = np.zeros((n, 5), np.int64)
    hops = np.zeros(cfg.n_tiles, np.int64)
    routers = np.array(sorted({cfg.dram_router(t) for t in range(cfg.n_tiles)}), np.int64)
    busy = np.zeros(len(routers), np.int64)
    op_tile = np.repeat(ops.tiles, np.diff(ops.start)).astype(np.int64)
    cycles, status = run_engine(ops.kind, ops.cycles, ops.flits, ops.dst, ops.key, ops.bypass, op_tile, ops.start,
                                ops.tiles, cfg.n_tiles, cfg.mesh_width, cfg.mesh_height, cfg.router_vcs,
                                cfg.vc_depth, routers, cfg.dram_banks, cfg.dram_row_open_latency,
                                store_setup, cfg.transfer_depth, max_cycles, start, end, sc, hops, busy)
    if status == 1:
        blocked = _blocked(ops, start, end)
        raise DeadlockError(f"deadlock at cycle {cycles}: {len(blocked)} tile stream(s) wait forever"
                            + (f", first tile {blocked[0][0]} at {blocked[0][1]}" if blocked else ""),
                            report="\n".join(f"  tile {t}: {what}" for t, what in blocked))
    if status == 2:
        raise SimTimeExceeded(f"simulated time limit of {max_cycles} cycles reached")
    return TimingResult(int(cycles), start, end, sc, hops, busy, "fast")


def _blocked(ops: TimingOps, start: np.ndarray, end: np.ndarray) -> list[tuple[int, str]]:
    out = []
    for k, t in enumerate(ops.tiles.tolist()):
        lo, hi = int(ops.start[k]), int(ops.start[k + 1])
        pending = [i for i in range(lo, hi) if end[i] < 0]
        if pending:
            i = pending[0]
            state = "started" if start[i] >= 0 else "not started"
            out.append((t, f"op {i - lo} ({MN_NAMES[ops.mnem[i]]}, {state})"))
    return out
