"""``nnisa sweep report``: Pareto fronts of a sweep's results as PNG and a Markdown table.

Objectives (all minimised): latency per input, energy per input, the target's area proxy and the
largest error against onnxruntime (a cheaper machine that computes a different answer is not
better; bit-width sweeps trade exactly these two).  Area proxies have per-target units (crossbar
cells, adder bits, PEs, ...), so fronts are computed within one target; the latency-energy front
also spans targets.  A target that models only some objectives is ranked on those it has.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from ..core.errors import FormatError, OutputError
from ..core.fileio import write_atomic
from .pareto import pareto_front
from .store import read_table

OBJECTIVES = ("latency_ns", "energy_pj", "area_proxy", "max_abs_error")
LABELS = {"latency_ns": "latency per input (ns)", "energy_pj": "energy per input (pJ)", "area_proxy": "area proxy",
          "max_abs_error": "max |error| vs onnxruntime"}
#: objective pairs drawn (when both are modelled)
PAIRS = (("latency_ns", "energy_pj"), ("latency_ns", "area_proxy"), ("energy_pj", "area_proxy"),
         ("area_proxy", "max_abs_error"))


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def target_front(rows: list[dict[str, Any]], objectives: tuple[str, ...] = OBJECTIVES) -> tuple[list[str], list[int]]:
    """The objectives every row has, and the indices of the rows on their Pareto front."""
    objs = [k for k in objectives if rows and all(_num(r.get(k)) for r in rows)]
    if not objs:
        return [], []
    return objs, pareto_front([[float(r[k]) for k in objs] for r in rows])


def _valid_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with a string id, target and status; a figure that is not a number counts as not modelled
    (a table edited or written by another tool must not break the report)."""
    out = []
    for r in rows:
        if all(isinstance(r.get(k), str) for k in ("point_id", "target", "status")):
            out.append({**r, **{k: None for k in OBJECTIVES + ("cycles", "top1_agreement")
                                if r.get(k) is not None and not _num(r.get(k))}})
    return out


def picture_stems(targets: list[str]) -> dict[str, str]:
    """Target → the file-name part of its picture: the target's name when it is a plain one (all
    registered names are), else a slug of it (a table's target column is data: ``../../x`` must not
    choose where a file goes), made unique."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for t in targets:
        stem = t if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", t) else \
            (re.sub(r"[^A-Za-z0-9_-]+", "_", t).strip("_-")[:48] or "target")
        base, k = stem, 1
        while stem in used or stem == "all":
            k += 1
            stem = f"{base}_{k}"
        used.add(stem)
        out[t] = stem
    return out


def _settings(r: dict[str, Any]) -> str:
    parts = [f"{k[4:]}={_short(v)}" for k, v in r.items() if k.startswith(("cfg.", "opt.")) and v is not None]
    return ", ".join(parts) or "(defaults)"


def _short(v: Any) -> str:
    text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v).replace("|", "\\|")


def sweep_report(results: str | Path, out_dir: str | Path | None = None,
                 objectives: tuple[str, ...] = OBJECTIVES) -> dict[str, Any]:
    """Write ``report.md`` and ``pareto_<target>.png`` (+ ``pareto_all.png``) into ``out_dir``
    (default ``<results>/report``); returns the fronts and the files written."""
    from ..report.plots import plot_pareto
    results = Path(results)
    raw = read_table(results)
    rows = _valid_rows(raw)
    if raw and not rows:
        raise FormatError("no row has a point_id, target and status: not a sweep results table", file=str(results))
    out = Path(out_dir) if out_dir is not None else (results if results.is_dir() else results.parent) / "report"
    if out.exists() and not out.is_dir():
        raise OutputError("exists and is not a folder", file=str(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write the report here: {exc.strerror or exc}", file=str(out)) from None
    ok = [r for r in rows if r.get("status") == "ok"]
    for r in ok:  # the energy objective is per input (a stream of 16 images divides by 16), as labelled
        if _num(r.get("energy_per_input_pj")):
            r["energy_pj"] = r["energy_per_input_pj"]
    failed = [r for r in rows if r.get("status") != "ok"]
    targets = sorted({r["target"] for r in ok})
    files: list[str] = []
    fronts: dict[str, dict[str, Any]] = {}
    kinds = sorted({str(r.get("status")) for r in failed})
    by_kind = ", ".join(f"{s} {sum(str(r.get('status')) == s for r in failed)}" for s in kinds) or "none"
    md = [f"# Sweep report: {rows[0].get('sweep', '') if rows else ''}", "",
          f"{len(rows)} points: {len(ok)} ok, {len(failed)} failed ({by_kind}); "
          f"written {time.strftime('%Y-%m-%d %H:%M')}.", "",
          f"Objectives, all minimised: {', '.join(LABELS.get(k, k) for k in objectives)} (area proxy units "
          "per target). A row is Pareto-optimal when no other point of the same target is at least as good in "
          "every objective the target models and better in one.", ""]
    stems = picture_stems(targets)
    for t in targets:
        trows = [r for r in ok if r["target"] == t]
        objs, idx = target_front(trows, objectives)
        unit = next((r.get("area_unit") for r in trows if r.get("area_unit")), None)
        fronts[t] = {"objectives": objs, "points": len(trows), "front": [trows[i]["point_id"] for i in idx]}
        md += [f"## {t}: {len(idx)} Pareto-optimal of {len(trows)} points"
               + (f" (objectives: {', '.join(objs)})" if objs else " (no objective modelled)"), ""]
        md += ["| model | settings | latency (ns) | energy (pJ) | area" + (f" ({unit})" if unit else "")
               + " | max err | cycles | top-1 | bit-exact |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for i in sorted(idx, key=lambda i: tuple(trows[i].get(k) or 0 for k in objs)):
            r = trows[i]
            md.append(f"| {r.get('model')} | {_settings(r)} | {_fmt(r.get('latency_ns'))} | {_fmt(r.get('energy_pj'))} "
                      f"| {_fmt(r.get('area_proxy'))} | {_fmt(r.get('max_abs_error'), 3)} | {_fmt(r.get('cycles'))} "
                      f"| {_fmt(r.get('top1_agreement'), 3)} "
                      f"| {_fmt(r.get('bit_exact'))} |")
        md.append("")
        pairs = [(a, b) for a, b in PAIRS if a in objs and b in objs]
        if pairs:
            pf = {}
            for a, b in pairs:
                pf[(a, b)] = pareto_front([[r[a], r[b]] for r in trows])
            png = out / f"pareto_{stems[t]}.png"
            labels = dict(LABELS, area_proxy=f"area proxy ({unit})" if unit else "area proxy")
            plot_pareto(trows, pairs, pf, png, labels=labels, title=f"{t}: Pareto fronts ({len(trows)} points)")
            files.append(str(png))
            md += [f"![{_fmt(t)}]({png.name})", ""]
    both = [r for r in ok if _num(r.get("latency_ns")) and _num(r.get("energy_pj"))]
    if len({r["target"] for r in both}) > 1:
        front = pareto_front([[r["latency_ns"], r["energy_pj"]] for r in both])
        png = out / "pareto_all.png"
        plot_pareto(both, [("latency_ns", "energy_pj")], {("latency_ns", "energy_pj"): front}, png, labels=LABELS,
                    title="all targets: latency against energy")
        files.append(str(png))
        md += ["## All targets: latency against energy", "", "![all](pareto_all.png)", ""]
    if failed:
        md += ["## Failed points", "", "| target | model | settings | status | error |", "| --- | --- | --- | --- | --- |"]
        for r in failed[:50]:
            md.append(f"| {r.get('target')} | {r.get('model')} | {_settings(r)} | {r.get('status')} "
                      f"| {_fmt((r.get('error') or '')[:160])} |")
        if len(failed) > 50:
            md.append(f"\n({len(failed) - 50} more in the table)")
        md.append("")
    write_atomic(out / "report.md", "\n".join(md))
    files.insert(0, str(out / "report.md"))
    return {"results": str(results), "points": len(rows), "ok": len(ok), "failed": len(failed), "fronts": fronts,
            "files": files}
