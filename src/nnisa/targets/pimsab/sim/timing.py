"""Timing runs: one entry point over the numba engine and the Python reference (spec §3.3–§3.5, §3.4a)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core.errors import DeadlockError, SimTimeExceeded
from ..config import PimsabConfig
from .ops import MN_NAMES, TimingOps

STATES = ("idle", "req_mode", "send_wait", "receive_wait", "popping")
#: simulated cycles per call of the numba engine (a run returns to Python this often)
CHUNK_CYCLES = 1 << 16


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
    steps: int = 0             # cycles simulated one by one (the others were skipped: only countdowns ran)


def run_timing(ops: TimingOps, cfg: PimsabConfig, *, engine: str = "fast",
               max_cycles: int = 2_000_000_000) -> TimingResult:
    """Simulate the timing operations; ``engine`` = ``fast`` (numba) or ``reference`` (Python)."""
    if engine == "reference":
        from .engine_ref import simulate_ref
        r = simulate_ref(ops, cfg, max_cycles=max_cycles)
        return TimingResult(r.cycles, r.start, r.end, r.op_state, r.hops, r.dram_busy, "reference", r.steps)
    from . import engine_nb as nb
    n = len(ops)
    routers = np.array(sorted({cfg.dram_router(t) for t in range(cfg.n_tiles)}), np.int64)
    op_tile = np.repeat(ops.tiles, np.diff(ops.start)).astype(np.int64)
    st = nb.new_state(n, ops.start, cfg.n_tiles, cfg.mesh_width, cfg.mesh_height, cfg.router_vcs, cfg.vc_depth,
                      routers, cfg.dram_banks, cfg.dram_row_open_latency, cfg.transfer_depth, max_cycles)
    args = (ops.kind, ops.cycles, ops.flits, ops.dst, ops.key, ops.bypass, op_tile, ops.start, ops.tiles) + st.arrays()
    status = nb.RUNNING
    while status == nb.RUNNING:  # chunks of simulated time: signals are handled in between
        status = nb.run_chunk(*args, CHUNK_CYCLES)
    cycles = int(st.sc[nb.S_NOW])
    if status in (nb.DEADLOCK, nb.STUCK):
        _deadlock(ops, st.start, st.end, cycles, int(st.sc[nb.S_FLITS]))
    if status == nb.TIME_LIMIT:
        raise SimTimeExceeded(f"simulated time limit of {max_cycles} cycles reached")
    return TimingResult(cycles, st.start, st.end, st.op_state, st.hops, st.dram_busy, "fast", int(st.sc[nb.S_STEPS]))


def _deadlock(ops: TimingOps, start: np.ndarray, end: np.ndarray, cycle: int, flits: int) -> None:
    blocked = _blocked(ops, start, end)
    if not blocked:
        raise DeadlockError(f"deadlock at cycle {cycle}: every stream ended but {flits} flit(s) are never "
                            f"delivered (a tile_tx or signal without its tile_rx or wait?)")
    raise DeadlockError(f"deadlock at cycle {cycle}: {len(blocked)} tile stream(s) wait forever"
                        + f", first tile {blocked[0][0]} at {blocked[0][1]}",
                        report="\n".join(f"  tile {t}: {what}" for t, what in blocked))


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
