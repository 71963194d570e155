"""Gantt chart of a PIM timing result: one row per core, bars coloured by unit.

Uses matplotlib's Agg backend (no display needed).  Intervals closer than one pixel are merged,
so a 3-million-instruction trace still renders in about a second.
"""

from __future__ import annotations

import io
import os

import numpy as np

from ..core.fileio import write_atomic

#: colours per unit (colour-blind-friendly Okabe–Ito palette)
UNIT_COLOURS = {"matrix": "#0072B2", "vector": "#E69F00", "transfer": "#009E73", "scalar": "#BBBBBB"}


def _merge(S: np.ndarray, E: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted intervals whose gap is below ``gap``."""
    if len(S) == 0:
        return S, E
    order = np.argsort(S, kind="stable")
    S, E = S[order], np.maximum.accumulate(E[order])
    brk = np.flatnonzero(S[1:] - E[:-1] > gap) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk - 1, [len(S) - 1]))
    return S[starts], E[ends]


def plot_gantt(result, path_png: str | os.PathLike, *, title: str | None = None,
               width_px: int = 1600, dpi: int = 100, cores: list[int] | None = None) -> None:
    """Write a PNG Gantt chart of a :class:`~nnisa.targets.pim.timing.TimingResult`.

    Parameters
    ----------
    result
        Timing result; with a per-instruction trace (``simulate_timing(..., trace=True)``) each
        core's matrix / vector / transfer activity is drawn, otherwise one bar per core from 0
        to its finish time.
    path_png
        Output file (written atomically).
    title
        Figure title (default: mode and chip latency).
    cores
        Subset of cores to draw (default all).
    """
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from ..targets.pim.timing_units import UNIT_OF_OP, UNITS

    ids = sorted(result.finish_ps) if cores is None else list(cores)
    scale = 1e-6  # ps → µs
    lat = max(result.latency_ps, 1)
    unit_ms = lat > 5e9  # > 5 ms: show ms
    scale = 1e-9 if unit_ms else 1e-6
    height = max(3.0, 0.22 * len(ids) + 1.4)
    fig, ax = plt.subplots(figsize=(width_px / dpi, height), dpi=dpi)
    gap = lat / width_px  # one pixel
    lanes = {"matrix": (0.05, 0.3), "vector": (0.35, 0.3), "transfer": (0.65, 0.3)}
    for y, c in enumerate(ids):
        tr = result.trace.get(c) if result.trace else None
        if tr is None or len(tr) == 0:
            fin = result.finish_ps.get(c, 0)
            ax.broken_barh([(0, fin * scale)], (y - 0.4, 0.8), facecolors="#888888")
            continue
        u = UNIT_OF_OP[tr["op"]]
        for k, name in enumerate(UNITS):
            if name == "scalar":
                continue
            sel = u == k
            if not sel.any():
                continue
            S, E = _merge(tr["S"][sel].astype(float), tr["E"][sel].astype(float), gap)
            off, h = lanes[name]
            ax.broken_barh(list(zip(S * scale, (E - S) * scale)), (y - 0.5 + off, h),
                           facecolors=UNIT_COLOURS[name], linewidth=0)
        fin = result.finish_ps.get(c, 0)
        if fin:
            ax.plot([fin * scale] * 2, [y - 0.45, y + 0.45], color="black", linewidth=0.8)
    ax.set_yticks(range(len(ids)))
    ax.set_yticklabels([f"core {c}" for c in ids], fontsize=7 if len(ids) > 24 else 9)
    ax.invert_yaxis()
    ax.set_xlim(0, lat * scale * 1.01)
    ax.set_xlabel("time (ms)" if unit_ms else "time (µs)")
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    ax.set_title(title or f"PIM timing ({result.mode} mode): chip latency {result.latency_ps / 1000:,.0f} ns",
                 loc="left", fontsize=10)
    handles = [Patch(color=UNIT_COLOURS[n], label=n) for n in ("matrix", "vector", "transfer")]
    handles.append(plt.Line2D([], [], color="black", linewidth=0.8, label="finish"))
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, ncol=4,
              frameon=False, borderaxespad=0.2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    write_atomic(path_png, buf.getvalue())
