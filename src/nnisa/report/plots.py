"""Comparison pictures across targets (matplotlib Agg): latency against energy, and a per-target bar chart."""

from __future__ import annotations

import io
import os
from typing import Any

from ..core.fileio import write_atomic
from .timeline import PALETTE


def _save(fig, path: str | os.PathLike) -> None:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_atomic(path, buf.getvalue())


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
