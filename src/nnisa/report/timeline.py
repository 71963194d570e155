"""One timeline model for every target's ``--gantt`` picture and ``--trace`` file.

A simulator asked for a timeline (``simulate(..., timeline=True)``) hands back a
:class:`Timeline` in ``SimResult.timeline``: one :class:`Track` per core/tile/unit row, each with
arrays of intervals (start, end, unit, label, pc), built from flat per-event arrays by
:func:`build_timeline`.  :func:`draw_timeline` (what the CLI's ``--gantt``/``--trace`` call),
:func:`plot_gantt` and :func:`write_chrome_trace` draw and export any timeline, so the pictures
of all targets look and behave the same.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import orjson

from ..core.fileio import write_atomic

#: colour-blind-friendly Okabe–Ito palette, cycled over a timeline's units
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


@dataclass
class Track:
    """One row of a timeline (a core, a tile, a unit).

    ``start``/``end`` are in the timeline's time unit; ``unit`` indexes :attr:`Timeline.units` (the
    lane and colour), ``label`` indexes :attr:`Timeline.labels` (the event name in traces, e.g. a
    mnemonic), ``pc`` is the instruction index (``-1`` when not meaningful).  ``finish`` marks the
    row's end time.
    """

    name: str
    start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    unit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    label: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    pc: np.ndarray | None = None
    finish: float | None = None

    def __post_init__(self) -> None:
        self.start = np.asarray(self.start, dtype=np.float64)
        self.end = np.asarray(self.end, dtype=np.float64)
        n = len(self.start)
        self.unit = np.zeros(n, np.int16) if len(self.unit) != n else np.asarray(self.unit)
        self.label = np.zeros(n, np.int32) if len(self.label) != n else np.asarray(self.label)


@dataclass
class Timeline:
    """Rows of intervals on a common time axis.

    Parameters
    ----------
    tracks
        The rows, top to bottom.
    units
        Lane/colour names (e.g. ``("matrix", "vector", "transfer")``).
    labels
        Event names referenced by ``Track.label``.
    time_unit
        ``"ps"``, ``"ns"`` or ``"cycles"``.
    ns_per_unit
        Nanoseconds per time unit (for traces, which are in µs); ``None`` for cycles without a clock.
    title
        Figure title.
    process
        Name of the whole (the trace's process name), e.g. ``"PIM chip"``.
    hidden_units
        Units kept in the data but neither drawn nor exported (e.g. scalar bookkeeping).
    """

    tracks: list[Track]
    units: tuple[str, ...] = ("busy",)
    labels: tuple[str, ...] = ("busy",)
    time_unit: str = "ps"
    ns_per_unit: float | None = 1e-3
    title: str = ""
    process: str = "chip"
    meta: dict = field(default_factory=dict)
    hidden_units: tuple[str, ...] = ()

    @property
    def span(self) -> float:
        ends = [t.finish or 0.0 for t in self.tracks] + [float(t.end.max()) for t in self.tracks if len(t.end)]
        return max(ends, default=0.0)


def build_timeline(rows: Sequence[str], row: np.ndarray, start: np.ndarray, end: np.ndarray, *,
                   unit: np.ndarray | None = None, label: np.ndarray | None = None, pc: np.ndarray | None = None,
                   finish: Sequence[float | None] | None = None, drop_empty: bool = False,
                   **timeline: object) -> Timeline:
    """A :class:`Timeline` from flat per-event arrays: event ``i`` runs ``[start[i], end[i])`` on
    row ``row[i]`` (an index into ``rows``, the track names), in unit ``unit[i]`` with label
    ``label[i]`` and instruction index ``pc[i]``.  Events keep their order within a row.

    ``finish`` gives each row's end time (``None``: none); rows without events are kept (a bar to
    their finish) unless ``drop_empty``.  ``timeline`` are the :class:`Timeline` fields (units,
    labels, time_unit, ns_per_unit, title, process, meta, hidden_units).
    """
    row = np.asarray(row)
    order = np.argsort(row, kind="stable")
    bounds = np.searchsorted(row[order], np.arange(len(rows) + 1))
    tracks = []
    for r, name in enumerate(rows):
        idx = order[bounds[r]:bounds[r + 1]]
        if drop_empty and len(idx) == 0:
            continue
        fin = None if finish is None else finish[r]
        tracks.append(Track(name, start[idx], end[idx], unit[idx] if unit is not None else np.zeros(0, np.int16),
                            label[idx] if label is not None else np.zeros(0, np.int32),
                            pc[idx] if pc is not None else None, finish=fin))
    return Timeline(tracks, **timeline)


def draw_timeline(tl: Timeline, *, gantt: str | os.PathLike | None = None,
                  trace: str | os.PathLike | None = None) -> dict[str, str]:
    """Write the Gantt chart (PNG) and/or the Chrome/Perfetto trace of a timeline; returns
    ``{"gantt_file": ..., "trace_file": ...}`` for the files written."""
    out = {}
    if gantt:
        plot_gantt(tl, gantt)
        out["gantt_file"] = str(gantt)
    if trace:
        write_chrome_trace(tl, trace)
        out["trace_file"] = str(trace)
    return out


def merge_intervals(S: np.ndarray, E: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals (any order) whose gap is below ``gap``; returns sorted starts and ends."""
    if len(S) == 0:
        return S, E
    order = np.argsort(S, kind="stable")
    S, E = S[order], np.maximum.accumulate(E[order])
    brk = np.flatnonzero(S[1:] - E[:-1] > gap) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk - 1, [len(S) - 1]))
    return S[starts], E[ends]


def _axis(tl: Timeline) -> tuple[float, str]:
    """(scale from time units to display units, axis label)."""
    span = max(tl.span, 1.0)
    if tl.time_unit == "cycles" or tl.ns_per_unit is None:
        if span > 5e6:
            return 1e-6, "cycles (millions)"
        if span > 5e3:
            return 1e-3, "cycles (thousands)"
        return 1.0, "cycles"
    ns = span * tl.ns_per_unit
    if ns > 5e6:
        return tl.ns_per_unit * 1e-6, "time (ms)"
    if ns > 5e3:
        return tl.ns_per_unit * 1e-3, "time (µs)"
    return tl.ns_per_unit, "time (ns)"


def plot_gantt(tl: Timeline, path_png: str | os.PathLike, *, width_px: int = 1600, dpi: int = 100,
               skip_units: tuple[str, ...] = (), max_rows: int = 256) -> None:
    """Write a PNG Gantt chart of a timeline (matplotlib Agg, written atomically).

    Each row shows one lane per unit (colours from :data:`PALETTE`), intervals closer than one
    pixel merged (a multi-million-instruction trace renders in about a second), and a black tick
    at the row's finish time.  Units in ``skip_units`` are not drawn (e.g. scalar bookkeeping).
    """
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    tracks = tl.tracks[:max_rows]
    scale, xlabel = _axis(tl)
    span = max(tl.span, 1.0)
    drawn = [i for i, u in enumerate(tl.units) if u not in skip_units and u not in tl.hidden_units]
    lane_h = 0.9 / max(1, len(drawn))
    lane_of = {u: k for k, u in enumerate(drawn)}
    colours = {u: PALETTE[k % len(PALETTE)] for k, u in enumerate(drawn)}
    height = max(3.0, 0.22 * len(tracks) + 1.4)
    fig, ax = plt.subplots(figsize=(width_px / dpi, height), dpi=dpi)
    gap = span / width_px
    bars: dict[int, list[np.ndarray]] = {u: [] for u in drawn}  # per unit: rows of (x0, x1, y0, y1)
    idle = []
    for y, tr in enumerate(tracks):
        if len(tr.start) == 0:
            if tr.finish:
                idle.append((0.0, tr.finish * scale, y - 0.4, y + 0.4))
            continue
        for u in drawn:
            sel = tr.unit == u
            if not sel.any():
                continue
            S, E = merge_intervals(tr.start[sel], tr.end[sel], gap)
            y0 = y - 0.45 + lane_of[u] * lane_h
            bars[u].append(np.column_stack([S * scale, E * scale, np.full(len(S), y0), np.full(len(S), y0 + lane_h)]))
        if tr.finish:
            ax.plot([tr.finish * scale] * 2, [y - 0.45, y + 0.45], color="black", linewidth=0.8)
    # one collection of rectangles per unit (not one artist per row and unit): drawing a
    # multi-million-instruction timeline stays a fraction of its simulation
    for colour, rects in [("#888888", [np.array(idle).reshape(-1, 4)])] + [(colours[u], bars[u]) for u in drawn]:
        r = np.concatenate(rects) if rects else np.zeros((0, 4))
        if len(r):
            verts = np.stack([r[:, [0, 2]], r[:, [1, 2]], r[:, [1, 3]], r[:, [0, 3]]], axis=1)
            ax.add_collection(PolyCollection(verts, facecolors=colour, linewidths=0))
    ax.set_ylim(len(tracks) - 0.5, -0.5)  # first track on top
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([t.name for t in tracks], fontsize=7 if len(tracks) > 24 else 9)
    ax.set_xlim(0, span * scale * 1.01)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    if tl.title:
        ax.set_title(tl.title, loc="left", fontsize=10)
    handles = [Patch(color=colours[u], label=tl.units[u]) for u in drawn]
    handles.append(plt.Line2D([], [], color="black", linewidth=0.8, label="finish"))
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, ncol=len(handles),
              frameon=False, borderaxespad=0.2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    write_atomic(path_png, buf.getvalue())


def write_chrome_trace(tl: Timeline, path: str | os.PathLike, *, max_events: int = 2_000_000,
                       skip_units: tuple[str, ...] = ()) -> int:
    """Write a Chrome/Perfetto trace (JSON, open in ui.perfetto.dev), atomically.

    One process (``tl.process``), one thread per track, one complete event per interval (name =
    label, category = unit, args = pc).  Times are µs when the timeline has a clock, else cycles
    shown as µs (the trace's ``otherData`` says which).  Returns the number of events written
    (capped at ``max_events``; the rest is dropped).
    """
    to_us = (tl.ns_per_unit or 1e3) * 1e-3
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": tl.process}}]
    count = 0
    skip = {i for i, u in enumerate(tl.units) if u in skip_units or u in tl.hidden_units}
    for tid, tr in enumerate(tl.tracks):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": tr.name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid, "args": {"sort_index": tid}})
        if len(tr.start) == 0:
            if tr.finish is not None:
                events.append({"name": tr.name, "ph": "X", "pid": 0, "tid": tid, "ts": 0,
                               "dur": tr.finish * to_us, "cat": "busy"})
                count += 1
            continue
        keep = np.ones(len(tr.start), bool) if not skip else ~np.isin(tr.unit, list(skip))
        idx = np.flatnonzero(keep)[: max(0, max_events - count)]
        pcs = tr.pc[idx].tolist() if tr.pc is not None else [None] * len(idx)
        for s, e, u, lab, pc in zip(tr.start[idx].tolist(), tr.end[idx].tolist(), tr.unit[idx].tolist(),
                                    tr.label[idx].tolist(), pcs):
            ev = {"name": tl.labels[lab], "cat": tl.units[u], "ph": "X", "pid": 0, "tid": tid,
                  "ts": s * to_us, "dur": (e - s) * to_us}
            if pc is not None and pc >= 0:
                ev["args"] = {"pc": pc}
            events.append(ev)
        count += len(idx)
    other = dict(tl.meta)
    other.update({"time_unit": "us" if tl.ns_per_unit else "cycles (shown as us)", "title": tl.title})
    data = orjson.dumps({"traceEvents": events, "displayTimeUnit": "ns", "otherData": other},
                        option=orjson.OPT_SERIALIZE_NUMPY)
    write_atomic(path, data)
    return count
