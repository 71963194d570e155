"""Comparison pictures across targets (matplotlib Agg): latency against energy, per-target bars and
breakdowns, and Pareto fronts of design-space sweeps."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from ..core.fileio import write_atomic
from .timeline import PALETTE


def _save(fig, path: str | os.PathLike) -> None:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def _column(rows: list[dict[str, Any]], key: str) -> np.ndarray:
    """``row[key]`` of every row as float64, NaN where it is missing or not a number."""
    return np.array([v if isinstance(v := r.get(key), (int, float)) and not isinstance(v, bool) else np.nan
                     for r in rows], dtype=np.float64)


def plot_latency_energy(rows: list[dict[str, Any]], path: str | os.PathLike, title: str = "") -> int:
    """Scatter of ``latency_ns`` against ``energy_pj`` (log axes), one colour per target, one marker per
    model; rows without both figures are left out.  Returns the number of points drawn."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    pts = [r for r in rows if r.get("latency_ns") and r.get("energy_pj")]
    targets = sorted({r["target"] for r in pts})
    models = sorted({r.get("model", "") for r in pts})
    markers = "os^DvP*X"
    fig, ax = plt.subplots(figsize=(7, 5))
    for r in pts:
        c = PALETTE[targets.index(r["target"]) % len(PALETTE)]
        m = markers[models.index(r.get("model", "")) % len(markers)]
        ax.scatter(r["latency_ns"] / 1e3, r["energy_pj"] / 1e6, color=c, marker=m, s=60, zorder=3)
        ax.annotate(f"{r['target']}/{r.get('model', '')}", (r["latency_ns"] / 1e3, r["energy_pj"] / 1e6),
                    textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency per input (µs)")
    ax.set_ylabel("energy per input (µJ)")
    ax.grid(True, which="both", linestyle=":", linewidth=0.5)
    ax.set_title(title or "targets: latency against energy", loc="left", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return len(pts)


def _label(r: dict[str, Any]) -> str:
    return f"{r['target']}\n{r.get('model', '')}"


def plot_breakdown(rows: list[dict[str, Any]], path: str | os.PathLike, title: str = "") -> int:
    """Per-target panels: latency, energy and instructions (log bars; a figure the target does not model
    is marked n/a) and the wall time split into compile and simulation.  Returns the rows drawn."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    pts = [r for r in rows if r.get("target")]
    if not pts:
        return 0
    targets = sorted({r["target"] for r in pts})
    colours = [PALETTE[targets.index(r["target"]) % len(PALETTE)] for r in pts]
    x = list(range(len(pts)))
    panels = (("latency_ns", 1e-3, "latency per input (µs)"), ("energy_pj", 1e-6, "energy per input (µJ)"),
              ("instructions", 1.0, "instructions"))
    fig, grid = plt.subplots(2, 2, figsize=(max(7.0, 0.9 * len(pts) * 2 + 2), 6.4))
    axes = grid.ravel()
    for ax, (key, scale, label) in zip(axes, panels):
        vals = [r[key] * scale if isinstance(r.get(key), (int, float)) and r[key] > 0 else float("nan") for r in pts]
        ax.bar(x, vals, color=colours)
        if any(v == v for v in vals):
            ax.set_yscale("log")
        for i, v in enumerate(vals):
            if v != v:
                ax.text(i, 0.02, "n/a", transform=ax.get_xaxis_transform(), ha="center", fontsize=8, color="grey")
        ax.set_title(label, loc="left", fontsize=9)
    ax = axes[3]
    comp = [float(r.get("compile_s") or 0) for r in pts]
    sim = [float(r.get("sim_s") or 0) for r in pts]
    ax.bar(x, comp, color=colours, label="compile")
    ax.bar(x, sim, bottom=comp, color=colours, alpha=0.45, hatch="//", label="simulate")
    ax.set_title("wall time (s): compile + simulate", loc="left", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    for ax in axes:
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.set_xticks(x)
        ax.set_xticklabels([_label(r) for r in pts], fontsize=7)
        ax.grid(True, axis="y", which="both", linestyle=":", linewidth=0.5)
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return len(pts)


def plot_pareto(rows: list[dict[str, Any]], pairs: list[tuple[str, str]], fronts: dict[tuple[str, str], list[int]],
                path: str | os.PathLike, *, labels: dict[str, str] | None = None, title: str = "") -> int:
    """One panel per objective pair (log axes where every value is positive): every row as a dot coloured by target, the rows
    whose indices ``fronts[pair]`` lists (the Pareto front in that plane) as a connected line.
    Returns the number of panels drawn."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    labels = labels or {}
    targets = sorted({r["target"] for r in rows})
    n = max(len(pairs), 1)
    ncols = n if n <= 2 else 2
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.2 * nrows), squeeze=False)
    for ax in axes.ravel()[len(pairs):]:
        ax.set_visible(False)
    drawn = 0
    tcode = np.array([targets.index(r["target"]) for r in rows], dtype=np.int64)
    for ax, (kx, ky) in zip(axes.ravel(), pairs):
        # numpy columns (NaN where a row lacks the figure): 100,000 rows draw in seconds, not minutes
        x, y = _column(rows, kx), _column(rows, ky)
        ok = (x >= 0) & (y >= 0)
        for k, t in enumerate(targets):
            sel = ok & (tcode == k)
            if sel.any():
                ax.scatter(x[sel], y[sel], s=18 if sel.sum() < 5000 else 4, alpha=0.55,
                           color=PALETTE[k % len(PALETTE)], label=t, rasterized=True)
        front = sorted(fronts.get((kx, ky), []), key=lambda i: rows[i][kx])
        if front:
            ax.plot([rows[i][kx] for i in front], [rows[i][ky] for i in front], "-o", color="black", ms=4,
                    linewidth=1, label="Pareto front", drawstyle="steps-post")
            drawn += 1
        if ok.any() and (x[ok] > 0).all():
            ax.set_xscale("log")
        if ok.any() and (y[ok] > 0).all():
            ax.set_yscale("log")
        ax.set_xlabel(labels.get(kx, kx))
        ax.set_ylabel(labels.get(ky, ky))
        ax.grid(True, which="both", linestyle=":", linewidth=0.5)
        ax.legend(fontsize=7, frameon=False, loc="best" if len(rows) < 2000 else "upper right")  # "best" scans every point
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return drawn


def plot_bars(rows: list[dict[str, Any]], key: str, path: str | os.PathLike, *, label: str = "",
              title: str = "", log: bool = True) -> int:
    """One bar per row (``target/model``) of ``row[key]``; rows without it are left out."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    pts = [r for r in rows if isinstance(r.get(key), (int, float)) and r[key] > 0]
    targets = sorted({r["target"] for r in pts})
    fig, ax = plt.subplots(figsize=(max(5.0, 0.7 * len(pts) + 2), 4))
    names = [f"{r['target']}\n{r.get('model', '')}" for r in pts]
    ax.bar(range(len(pts)), [r[key] for r in pts],
           color=[PALETTE[targets.index(r["target"]) % len(PALETTE)] for r in pts])
    ax.set_xticks(range(len(pts)))
    ax.set_xticklabels(names, fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(label or key)
    ax.grid(True, axis="y", which="both", linestyle=":", linewidth=0.5)
    ax.set_title(title or key, loc="left", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return len(pts)


def plot_grouped_bars(categories: list[str], series: dict[str, list[float]], path: str | os.PathLike, *,
                      stacked: bool = False, ylabel: str = "", title: str = "", log: bool = False,
                      hline: float | None = None) -> None:
    """Bars per category, one colour per series, side by side or stacked (e.g. a time breakdown);
    ``hline`` draws a reference line (e.g. 1.0 for normalised figures)."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import numpy as np

    n = len(series)
    x = np.arange(len(categories))
    fig, ax = plt.subplots(figsize=(max(5.5, 0.9 * len(categories) * (1 if stacked else max(1, n / 2)) + 2), 4))
    width = 0.8 if stacked else 0.8 / max(n, 1)
    bottom = np.zeros(len(categories))
    for k, (name, vals) in enumerate(series.items()):
        v = np.asarray([float("nan") if val is None else val for val in vals], float)
        colour = PALETTE[k % len(PALETTE)]
        if stacked:
            ax.bar(x, np.nan_to_num(v), width, bottom=bottom, label=name, color=colour)
            bottom += np.nan_to_num(v)
        else:
            ax.bar(x - 0.4 + width * (k + 0.5), v, width, label=name, color=colour)
    if hline is not None:
        ax.axhline(hline, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(categories, fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", which="both", linestyle=":", linewidth=0.5)
    ax.legend(fontsize=7, ncol=min(n, 4), frameon=False)
    ax.set_title(title, loc="left", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
