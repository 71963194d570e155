"""Per-instruction timing traces (core, pc, S, E, R) and Chrome/Perfetto trace export.

The event loop only stores start/end times of event instructions; every other instruction's
times follow from the per-core prefix sums (§8.5), so the full trace is reconstructed here with
numpy, only when asked for.

* S = start of execution in the unit, E = end of execution, R = retire time (§8.5);
  scalar instructions and setbw (executed in the front end) get S = issue cycle, E = S + their
  front-end cost, R = E.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from ..isa import OPCODES
from .timing_units import EV_ST, EV_SYNC, EV_WAIT, PS, UNIT_OF_OP, UNITS, CorePlan

if TYPE_CHECKING:
    from ....report.timeline import Timeline  # imported when a timeline is built, not by the timing model

TRACE_DTYPE = np.dtype([("pc", "i4"), ("op", "i2"), ("S", "i8"), ("E", "i8"), ("R", "i8")])


def event_toff(kinds: np.ndarray, P: int) -> np.ndarray:
    """Issue-cursor offset after an event instruction's end: 2P for st/sync/wait, else P."""
    return np.where((kinds == EV_ST) | (kinds == EV_SYNC) | (kinds == EV_WAIT), 2 * P, P)


def instruction_times(plan: CorePlan, ev_S: np.ndarray, ev_E: np.ndarray, P: int,
                      upto_event: int | None = None, T0: int | None = None) -> np.ndarray:
    """Reconstruct S/E/R (ps) of every instruction of one core (latency mode, first pass).

    Parameters
    ----------
    plan
        The core's static plan.
    ev_S, ev_E
        Start and end of each event instruction from the event loop.
    upto_event
        Number of completed event instructions (a blocked core); instructions from the first
        incomplete event on are omitted.
    """
    n_done = len(plan.ev_idx) if upto_event is None else upto_event
    stop = plan.n if plan.hang < 0 else plan.hang
    if n_done < len(plan.ev_idx):
        stop = int(plan.ev_idx[n_done])
    if stop <= 0:
        return np.zeros(0, TRACE_DTYPE)
    ev_idx = plan.ev_idx[:n_done]
    kinds = plan.ev_kind[:n_done]
    base = np.empty(n_done + 1, np.int64)
    base[0] = 2 * P if T0 is None else T0
    base[1:] = ev_E[:n_done] + event_toff(kinds, P) - plan.pre[ev_idx]
    i = np.arange(stop)
    seg = np.searchsorted(ev_idx, i, side="left")
    T = base[seg] + plan.pre[:stop]
    S = T + plan.start[:stop]
    E = S + np.where(plan.X[:stop] > 0, plan.X[:stop], 0)
    op = plan.op[:stop]
    front = (op <= 8) & (plan.start[:stop] == 0)  # scalar, setbw, (native) nop
    E = np.where(front, S + plan.inc[:stop], E)
    R = np.where(front, E, E + 2 * P)
    if n_done:
        S[ev_idx] = ev_S[:n_done]
        E[ev_idx] = ev_E[:n_done]
        R[ev_idx] = ev_E[:n_done] + event_toff(kinds, P) + P
    out = np.zeros(stop, TRACE_DTYPE)
    out["pc"] = i
    out["op"] = op
    out["S"], out["E"], out["R"] = S, E, R
    return out


def timeline(result, cores: list[int] | None = None) -> Timeline:
    """The :class:`~nnisa.report.timeline.Timeline` of a timing result: one track per core,
    lanes matrix / vector / transfer (scalar front-end work kept as a hidden unit), labels =
    mnemonics, times in ps.  Without a per-instruction trace each core is one bar to its finish."""
    from ....report.timeline import build_timeline
    ids = sorted(result.finish_ps) if cores is None else list(cores)
    traces = [(result.trace.get(c) if result.trace else None) for c in ids]
    traces = [tr if tr is not None else np.zeros(0, TRACE_DTYPE) for tr in traces]
    ev = np.concatenate(traces) if traces else np.zeros(0, TRACE_DTYPE)
    row = np.repeat(np.arange(len(ids)), [len(tr) for tr in traces])
    return build_timeline([f"core {c}" for c in ids], row, ev["S"], ev["E"], unit=UNIT_OF_OP[ev["op"]],
                          label=ev["op"].astype(np.int32), pc=ev["pc"],
                          finish=[float(result.finish_ps.get(c, 0)) for c in ids],
                          units=UNITS, labels=tuple(OPCODES), time_unit="ps", ns_per_unit=1e-3,
                          title=f"PIM timing ({result.mode} mode): chip latency {result.latency_ps / 1000:,.0f} ns",
                          process="PIM chip", meta={"latency_ns": result.latency_ps / PS, "mode": result.mode},
                          hidden_units=("scalar",))


def write_chrome_trace(result, path: str | os.PathLike, *, max_events: int = 2_000_000) -> int:
    """Write a Chrome/Perfetto trace of a timing result (one track per core, one event per
    non-scalar instruction, args = pc); returns the number of events written."""
    from ....report.timeline import write_chrome_trace as write_trace
    return write_trace(timeline(result), path, max_events=max_events)


def plot_gantt(result, path_png: str | os.PathLike, **kw) -> None:
    """Write a per-core Gantt chart (PNG) of a timing result."""
    from ....report.timeline import plot_gantt as draw_gantt
    draw_gantt(timeline(result), path_png, **kw)
