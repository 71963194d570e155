"""Rich tables for the CLI: one look for every target's statistics, mappings and runs."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from .plots import energy_per_input


def wide_console(width: int = 160) -> Console:
    """A console for wide tables: the terminal's width on a terminal, ``width`` columns in a pipe or
    a log (rich would squeeze every table to 80 columns there)."""
    import sys
    return Console() if sys.stdout.isatty() else Console(width=width)


def _fmt(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
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


def print_kv(items: dict[str, Any], title: str) -> None:
    """Print :func:`kv_table` on the console."""
    Console().print(kv_table(title, items))


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


def _flat(d: dict[str, Any]) -> dict[str, Any]:
    """One table row from a nested dict: inner dicts become columns, [lo, hi] pairs "lo..hi"."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and all(not isinstance(x, dict) for x in v.values()):
            for kk, vv in v.items():
                out[str(kk)] = _cell(vv)
        elif not isinstance(v, dict):
            out[str(k)] = _cell(v)
    return out


def _cell(v: Any) -> Any:
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"{_fmt(v[0])}..{_fmt(v[1])}"
    return v


def _is_pair_dict(v: Any) -> bool:
    return isinstance(v, dict) and bool(v) and all(
        isinstance(x, dict) and x and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in x.values())
        for x in v.values())


def print_stats(stats: dict[str, Any], title: str, con: Console | None = None) -> None:
    """Print statistics: scalar figures, then one table per nested dict/list.

    Dicts of scalars print as two-column tables; dicts of dicts as one row per key (inner dicts
    merged into columns); ``{op: {field: [lo, hi]}}`` as a range table; lists of dicts as rows.
    """
    con = con or Console()
    scalars = {k: v for k, v in stats.items() if not isinstance(v, (list, dict))}
    con.print(kv_table(title, scalars))
    for k, v in stats.items():
        if not v or not isinstance(v, (dict, list)):
            continue
        if isinstance(v, list):
            if isinstance(v[0], dict):
                con.print(dict_rows_table(k, [_flat(x) for x in v]))
        elif _is_pair_dict(v):
            rows = [{"op": a, "field": f, "min": p[0], "max": p[1]} for a, fs in v.items() for f, p in fs.items()]
            con.print(dict_rows_table(k, rows, limit=200))
        elif all(not isinstance(x, (dict, list)) for x in v.values()):
            con.print(kv_table(k, v))
        elif all(isinstance(x, dict) for x in v.values()):
            con.print(dict_rows_table(k, [{"key": kk, **_flat(vv)} for kk, vv in v.items()]))
        else:
            flat = {kk: _cell(vv) for kk, vv in v.items() if not isinstance(vv, dict)}
            if flat:
                con.print(kv_table(k, flat))
            for kk, vv in v.items():
                if isinstance(vv, dict) and vv and all(isinstance(x, dict) for x in vv.values()):
                    con.print(dict_rows_table(f"{k}: {kk}", [{"key": a, **_flat(b)} for a, b in vv.items()]))
                elif isinstance(vv, dict) and vv:
                    con.print(kv_table(f"{k}: {kk}", {a: _cell(b) for a, b in vv.items()}))


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
            "cycles", "latency_ns", "period_ns", "inputs", "energy_pj", "energy_dynamic_pj", "energy_static_pj",
            "energy_per_input_pj", "instructions", "compile_s", "sim_s", "wall_s"]
    shown = {k: report.get(k) for k in keys}
    if report.get("energy_pj") is None:  # said, not dropped
        shown["energy_pj"] = f"– ({report.get('energy_note') or 'no energy model on ' + str(report.get('target'))})"
    t = kv_table(f"nnisa run: {report.get('model')} on {report.get('target')}", shown)
    t.caption = ("latency_ns: one input, in -> out; period_ns: steady-state time per input of a stream"
                 + ("" if report.get("period_ns") is not None else " (one input simulated: no period)"))
    Console().print(t)


def compare_table(rows: list[dict[str, Any]], title: str = "targets side by side") -> Table:
    """Runs side by side: one column per run (``target / model``), one row per figure.

    ``note`` entries (e.g. why a model was not compiled) go into the caption.
    """
    t = Table(title=title)
    t.add_column("figure", style="bold")
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in ("target", "model", "note") and k not in keys:
                keys.append(k)
    for r in rows:
        t.add_column(f"{r.get('target')}\n{r.get('model', '')}", justify="right")
    notes = []
    for r in rows:
        if r.get("note"):
            notes.append(f"{r.get('target')}/{r.get('model')}: {r['note']}")
    for k in keys:
        t.add_row(k, *[_fmt(r[k]) if k in r else "–" for r in rows])
    if notes:
        t.caption = "\n".join(notes)
    return t


def _time(ns: float | None) -> str:
    if not ns:
        return "–"
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} µs"


def side_by_side_table(rows: list[dict[str, Any]], title: str) -> Table:
    """Runs of models on targets (``nnisa compare``, the demo): one line per target and model with
    exactness, top-1 agreement and error vs onnxruntime, latency, energy, instructions, area proxy and
    wall times; a row whose ``status`` is not ``ok`` shows it, with its ``error`` in the caption."""
    t = Table(title=title, title_justify="left", caption_justify="left")
    for col in ("target", "model", "exact", "top-1", "max err", "cycles", "latency", "period", "energy/input", "instr.",
                "area", "compile", "sim"):
        t.add_column(col, justify="left" if col in ("target", "model") else "right")
    notes, units = [], {}
    for r in rows:
        if r.get("status", "ok") != "ok":
            t.add_row(r["target"], r.get("model", ""), r.get("status", "?"), *["–"] * 10)
            notes.append(f"{r['target']}/{r.get('model', '')}: {r.get('error', '')}")
            continue
        exact = {True: "yes", False: "NO", None: "n/a"}[r.get("bit_exact")]
        e_in = energy_per_input(r)
        energy = f"{e_in / 1e6:.3g} µJ" if e_in else "–"
        if not e_in:
            notes.append(f"{r['target']}: no energy ({r.get('energy_note') or 'no energy model yet'})")
        if r.get("area_unit"):
            units[r["target"]] = r["area_unit"]
        t.add_row(r["target"], r.get("model", ""), exact, f"{r['top1_agreement']:.2f}", f"{r['max_abs_error']:.3f}",
                  f"{r['cycles']:,}" if r.get("cycles") else "–", _time(r.get("latency_ns")), _time(r.get("period_ns")),
                  energy,
                  f"{r['instructions']:,}" if r.get("instructions") else "–",
                  f"{r['area_proxy']:.3g}" if r.get("area_proxy") else "–",
                  f"{r.get('compile_s') or 0:.1f} s", f"{r.get('sim_s') or 0:.1f} s")
    caption = ["exact: simulated integers = the frontend's int8 reference (n/a: a float or fixed-point machine with "
               "its own arithmetic); latency: one input in → out; period: steady-state time per input of a stream (runs "
               "that simulate one); each target's own timing model"]
    if units:
        caption.append("area proxy: " + ", ".join(f"{k} {v}" for k, v in units.items()))
    t.caption = "\n".join(caption + notes)
    return t


def layers_table(rows: list[dict[str, Any]], title: str, utilization: str | None = None,
                 limit: int = 200) -> Table:
    """The per-layer table (:mod:`nnisa.core.layers` columns, then the target's extras), with a
    total row for the additive columns and a caption saying what ``utilization`` measures."""
    from ..core.layers import LAYER_COLUMNS
    extras = [k for r in rows for k in r if k not in LAYER_COLUMNS]
    cols = [c for c in LAYER_COLUMNS if any(r.get(c) is not None for r in rows)]
    cols += list(dict.fromkeys(extras))
    t = Table(title=title)
    for c in cols:
        t.add_column(c.replace("_", " "), justify="left" if c in ("layer", "op") else "right")
    for r in rows[:limit]:
        t.add_row(*["" if r.get(c) is None else (f"{100 * r[c]:.1f} %" if c == "utilization" else _fmt(r[c]))
                    for c in cols])
    totals = {c: sum(r[c] for r in rows) for c in ("energy_pj", "instructions")
              if c in cols and all(r.get(c) is not None for r in rows)}
    if totals:
        t.add_section()
        t.add_row(*[("total" if c == "layer" else _fmt(totals[c]) if c in totals else "") for c in cols])
    notes = ["per input; cycles: each layer's span (layers overlap on pipelined machines)",
             "energy_pj: dynamic energy (static energy is in the run's totals)"]
    if utilization:
        notes.append(f"utilization: {utilization}")
    if len(rows) > limit:
        notes.append(f"{len(rows) - limit} more rows (use --json for all)")
    t.caption = "; ".join(notes)
    return t


def print_layers(rows: list[dict[str, Any]] | None, title: str, utilization: str | None = None,
                 why_not: str | None = None) -> None:
    """Print the per-layer table, or one warning line saying why there is none."""
    if not rows:
        import click
        click.echo(f"warning: no per-layer figures: {why_not or 'the target reported none'}", err=True)
        return
    wide_console().print(layers_table(rows, title, utilization))
