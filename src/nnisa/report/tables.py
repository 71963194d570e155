"""Rich tables for the CLI: one look for every target's statistics, mappings and runs."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1e6:
            return f"{v:,.0f}" if abs(v) < 1e18 else f"{v:.4g}"
        if abs(v) < 1e-3:
            return f"{v:.4g}"
        return f"{v:,.4f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)) and len(v) > 8:
        return f"[{len(v)} items]"
    if isinstance(v, dict):
        return f"{{{len(v)} keys}}"
    return str(v)


def kv_table(title: str, items: dict[str, Any]) -> Table:
    """A two-column table of scalar figures (nested dicts/lists summarised)."""
    t = Table(title=title, show_header=False)
    t.add_column("figure", style="bold")
    t.add_column("value", justify="right")
    for k, v in items.items():
        if v is None:
            continue
        t.add_row(str(k), _fmt(v))
    return t


def dict_rows_table(title: str, rows: list[dict[str, Any]], limit: int = 64) -> Table:
    """A table from a list of flat dicts (columns = union of keys, first-seen order)."""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    t = Table(title=title)
    for c in cols:
        t.add_column(c, justify="right")
    for r in rows[:limit]:
        t.add_row(*[_fmt(r.get(c, "")) for c in cols])
    if len(rows) > limit:
        t.caption = f"{len(rows) - limit} more rows (use --json for all)"
    return t


def print_stats(stats: dict[str, Any], title: str) -> None:
    """Print a program's static statistics (scalar figures, then any list-of-dict tables)."""
    con = Console()
    scalars = {k: v for k, v in stats.items() if not isinstance(v, (list, dict))}
    con.print(kv_table(title, scalars))
    for k, v in stats.items():
        if isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values()):
            con.print(kv_table(k, v))
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            con.print(dict_rows_table(k, v))
        elif isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            con.print(dict_rows_table(k, [{"key": kk, **vv} for kk, vv in v.items()]))


def print_mapping(summary: dict[str, Any]) -> None:
    """Print a compile summary and its mapping report."""
    con = Console()
    head = {k: v for k, v in summary.items() if k not in ("report", "files")}
    con.print(kv_table(f"compiled {summary.get('model')} for {summary.get('target')}", head))
    files = summary.get("files") or {}
    if files:
        con.print(kv_table("files", files))
    print_stats({k: v for k, v in (summary.get("report") or {}).items()}, "mapping report")


def print_sim(stats: dict[str, Any], outputs: dict[str, np.ndarray], title: str) -> None:
    """Print simulation statistics and the output tensors' shapes."""
    con = Console()
    print_stats(stats, title)
    if outputs:
        con.print(dict_rows_table("outputs", [{"name": k, "shape": str(tuple(np.shape(v))),
                                               "dtype": str(np.asarray(v).dtype)} for k, v in outputs.items()]))


def print_run(report: dict[str, Any]) -> None:
    """Print the summary of ``nnisa run``: accuracy against onnxruntime plus cost figures."""
    keys = ["target", "model", "samples", "bit_exact", "top1_agreement", "max_abs_error", "max_rel_error",
            "cycles", "latency_ns", "energy_pj", "instructions", "compile_s", "sim_s", "wall_s"]
    Console().print(kv_table(f"nnisa run: {report.get('model')} on {report.get('target')}",
                             {k: report.get(k) for k in keys}))


def compare_table(rows: list[dict[str, Any]], title: str = "targets side by side") -> Table:
    """One row per target run (for ``nnisa demo`` and comparisons)."""
    return dict_rows_table(title, rows)
