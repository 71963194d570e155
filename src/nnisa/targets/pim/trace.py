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

import numpy as np
import orjson

from ...core.fileio import write_atomic
from .isa import OPCODES
from .timing_units import EV_ST, EV_SYNC, EV_WAIT, PS, UNIT_OF_OP, UNITS, CorePlan

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


def write_chrome_trace(result, path: str | os.PathLike, *, max_events: int = 2_000_000) -> int:
    """Write a Chrome/Perfetto trace (JSON) of a timing result, atomically.

    One process ("PIM chip"), one track (thread) per core; one complete event ("X") per
    non-scalar instruction (name = mnemonic, category = unit, args = pc), times in µs.  If the
    result carries no per-instruction trace, one event per core spanning its run is written.

    Returns
    -------
    int
        Number of events written (capped at ``max_events``; the rest is dropped).
    """
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "PIM chip"}}]
    count = 0
    for c in sorted(result.finish_ps):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": c, "args": {"name": f"core {c}"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": c, "args": {"sort_index": c}})
        tr = result.trace.get(c) if result.trace else None
        if tr is None:
            events.append({"name": f"core {c}", "ph": "X", "pid": 0, "tid": c, "ts": 0,
                           "dur": result.finish_ps[c] / 1e6, "cat": "core"})
            count += 1
            continue
        keep = UNIT_OF_OP[tr["op"]] > 0
        t = tr[keep]
        t = t[: max(0, max_events - count)]
        ops = t["op"].tolist()
        for pc, o, s, e in zip(t["pc"].tolist(), ops, t["S"].tolist(), t["E"].tolist()):
            events.append({"name": OPCODES[o], "cat": UNITS[UNIT_OF_OP[o]], "ph": "X", "pid": 0,
                           "tid": c, "ts": s / 1e6, "dur": (e - s) / 1e6, "args": {"pc": pc}})
        count += len(t)
    data = orjson.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                         "otherData": {"latency_ns": result.latency_ps / PS, "mode": result.mode}})
    write_atomic(path, data)
    return count
