"""PIMSAB reproduction report: the paper's evaluation re-run on nnisa's simulator.

Runs the replay workloads of spec §5 (vadd, fir, gemv, gemm, conv2d, resnet18, bert) on the base
configuration and compares them with the A100 figures and the paper's claims (§6), then Table 6
(``_nap`` variants), the ablations of §1.5 (Fig. 21), the sensitivity presets of §1.6 (Fig. 19),
size and precision sweeps (Fig. 20) and the Fig. 18 breakdowns.  Writes ``pimsab_report.md``, PNG
figures and the raw results (``results.json``) under ``pimsab_report/`` into ``benchmarks/out/``, or
into ``docs/`` with ``--update-docs`` (``--out`` names another folder).

    python benchmarks/pimsab_report.py            # everything (about 10-20 minutes on 2 cores)
    python benchmarks/pimsab_report.py --quick    # vadd, gemv, conv2d only, no sweeps
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _results import docs_path, machine, today  # noqa: E402

from nnisa.core.errors import NnisaError  # noqa: E402
from nnisa.report.plots import plot_grouped_bars  # noqa: E402
from nnisa.targets.pimsab.config import preset  # noqa: E402
from nnisa.targets.pimsab.workloads.paper import (A100, BENCHMARKS, CLAIMED_GEOMEAN_ENERGY,  # noqa: E402
                                                  CLAIMED_GEOMEAN_SPEEDUP, CLAIMED_SPEEDUP, TABLE5_DRAM,
                                                  TABLE6)
from nnisa.targets.pimsab.workloads.official import benchmark_cycles  # noqa: E402
from nnisa.targets.pimsab.workloads.registry import geomean, run_workload  # noqa: E402

ABLATIONS = [  # (figure, label, presets averaged)
    ("21a", "shuffle off", ["abl_shuffle_off"]),
    ("21b", "constant ops off", ["abl_const_off", "abl_const_off_kickout"]),
    ("21c", "H-tree → bus", ["abl_bus"]),
    ("21d", "cross-CRAM shift off", ["abl_shift_off", "abl_shift_off_bypass"]),
    ("21e", "one-to-all broadcast", ["abl_one_to_all"]),
    ("21f", "mesh → ring", ["abl_ring"]),
    ("21g", "intra-CRAM reduction", ["abl_intracram"]),
    ("21h", "everything off", ["abl_all_off"]),
]
SENSITIVITY = ["sens_cram128", "sens_cram512", "sens_12x5", "sens_12x20", "sens_6x20", "sens_24x5"]
SIZE_SWEEP = ["vadd", "gemv", "fir", "gemm", "conv2d"]
PREC_SWEEP = ["vadd", "gemv", "gemm", "conv2d"]
WHY = {
    "vadd": "DRAM-bound ({dram:.0f} % of the time in loads/stores); cycles, traffic and energy equal the official "
            "simulator's",
    "gemv": "DRAM-bound ({dram:.0f} %); cycles, traffic and energy equal the official simulator's, so the speedup is "
            "the paper's",
    "fir": "the paper gives no number; the A100 runs an ArrayFire FIR for 1.83 ms, PIMSAB keeps the taps in the RF "
           "(mul_const) and slides the window with one-bitline shifts across the CRAM ring",
    "gemm": "the paper says 'slightly lower performance than A100'; the replay is network-bound (A slices "
            "streamed down each mesh column, {network:.0f} % of the time in tile_tx/tile_rx)",
    "conv2d": "the replay of the artifact's inputDup template spends {net_idle:.0f} % of the time broadcasting the "
              "input to 86 "
              "tiles (systolic chain) or idle behind it; the source of the paper's 13.84x (a shorter run, "
              "another template or broadcast) is not in the spec, so the gap stays unexplained",
    "resnet18": "sum of the 17 conv layers as in the artifact; the weightDup layers load each tile's input with its "
                "halo, so DRAM reads are 2.3x Table 5's 6.1 MB while the time matches the paper",
    "bert": "30 GEMMs + the artifact's fixed 13,136-cycle softmax charge; compute-bound ({compute:.0f} %) like the "
            "paper says",
}


def log(msg: str) -> None:
    print(msg, flush=True)


def run(name: str, cfg_name: str = "base", **kw) -> dict:
    t = time.perf_counter()
    try:
        r = run_workload(name, preset(cfg_name), **kw).figures()
    except NnisaError as exc:  # recorded as n/a in the report
        log(f"  {name:10s} {cfg_name:22s} {kw or ''} failed: {exc}")
        return {"cycles": None, "error": str(exc)}
    log(f"  {name:10s} {cfg_name:22s} {kw or ''} {r['cycles']:>10,} cycles  {time.perf_counter() - t:6.1f} s")
    return r


def rel(base_cycles: int, cycles) -> float | None:
    """base / cycles (performance relative to the base), None when a run failed."""
    if cycles is None or (isinstance(cycles, list) and None in cycles):
        return None
    c = sum(cycles) / len(cycles) if isinstance(cycles, list) else cycles
    return base_cycles / c


def collect(quick: bool) -> dict:
    benches = ["vadd", "gemv", "conv2d"] if quick else list(BENCHMARKS)
    res: dict = {"machine": machine(), "date": today(), "benchmarks": benches, "base": {}, "nap": {},
                 "ablations": {}, "sensitivity": {}, "size": {}, "precision": {}}
    log("base configuration")
    for b in benches:
        res["base"][b] = run(b)
    add_compiled(res)
    log("Table 6: without adaptive precision")
    for b in benches:
        res["nap"][b] = run(b + "_nap") if b not in ("vadd", "fir") else res["base"][b]
    if quick:
        return res
    log("ablations (Fig. 21)")
    for fig, label, presets in ABLATIONS:
        res["ablations"][fig] = {b: [run(b, p)["cycles"] for p in presets] for b in benches}
        res["ablations"][fig] = {b: (None if None in v else v) for b, v in res["ablations"][fig].items()}
    log("sensitivity (Fig. 19)")
    for p in SENSITIVITY:
        res["sensitivity"][p] = {b: run(b, p)["cycles"] for b in benches}
    log("size sweep (Fig. 20a)")
    for b in SIZE_SWEEP:
        res["size"][b] = {str(s): run(b, scale=s)["cycles"] for s in (0.5, 2.0)}
    log("precision sweep (Fig. 20b)")
    for b in PREC_SWEEP:
        res["precision"][b] = {str(w): run(b, bits=w)["cycles"] for w in (4, 5, 6, 7, 8)}
    return res


def add_compiled(res: dict) -> None:
    """Cycles of the compiled DSL programs (issue 15) next to the replays'."""
    from nnisa.targets.pimsab.compiler.suite import COMPILED, run_compiled_benchmark
    log("compiled DSL programs")
    res["compiled"] = {}
    for b in COMPILED:
        if b in res["benchmarks"]:
            t = time.perf_counter()
            res["compiled"][b] = run_compiled_benchmark(b)
            log(f"  {b:10s} compiled {res['compiled'][b]['cycles']:>10,} cycles  {time.perf_counter() - t:6.1f} s")


def _compiled_cell(res: dict, b: str) -> str:
    c = res.get("compiled", {}).get(b)
    if not c:
        return "–"
    return f"{c['cycles']:,} ({100 * (c['cycles'] / res['base'][b]['cycles'] - 1):+.0f} %)"


def _time_shares(r: dict) -> dict:
    """Percent of the time per Fig. 18 class (and network + idle), for the prose."""
    t = r["time_breakdown_cycles"]
    tot = sum(t.values()) or 1
    out = {k: 100 * t.get(k, 0) / tot for k in ("compute", "dram", "network", "idle")}
    out["net_idle"] = out["network"] + out["idle"]
    return out


def _loss(res: dict, fig: str, b: str) -> float:
    """Percent performance lost by ablation ``fig`` on benchmark ``b``."""
    return 100 * (1 - rel(res["base"][b]["cycles"], res["ablations"][fig][b]))


def _official_cell(b: str, r: dict) -> str:
    c = benchmark_cycles(b, r.get("extra_cycles", 0))
    if c is None:
        return "–"
    return f"{c:,} (equal)" if c == r["cycles"] else f"{c:,} ({100 * (r['cycles'] / c - 1):+.2f} %)"


def _fmt(v, nd=2):
    return "–" if v is None else (f"{v:,.{nd}f}" if isinstance(v, float) else f"{v:,}")


def render(res: dict, out: Path) -> str:
    figs = out / "pimsab_report"
    figs.mkdir(parents=True, exist_ok=True)
    benches = res["benchmarks"]
    base = res["base"]
    L = ["# PIMSAB reproduction report", "",
         f"Generated by `python benchmarks/pimsab_report.py` on {res['date']} ({res['machine']}).",
         "Every figure is a run of nnisa's PIMSAB simulator (`simulator` cycle mode, base configuration = "
         "Table 2 unless stated) on the replay of the artifact's handcoded workload (spec §5.2–5.4). "
         "Time = cycles / 1.5 GHz; energy = dynamic energy (instructions + NoC), as in Fig. 16. "
         "A100 figures: spec §6.2.", "",
         "## Table 5 benchmarks against the A100 (Fig. 16)", "",
         "| benchmark | cycles | official simulator | compiled (vs replay) | time (µs) | DRAM read / write (MB) "
         "| Table 5 (MB) | energy (mJ) | A100 (µs, mJ) | speedup | paper | energy ratio |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    speed, ener = [], []
    for b in benches:
        r = base[b]
        a_ns, a_j = A100[b]
        sp, er = a_ns / r["time_ns"], a_j / r["energy_j"]
        speed.append(sp)
        ener.append(er)
        t5 = TABLE5_DRAM.get(b)
        L.append(f"| {b} | {r['cycles']:,} | {_official_cell(b, r)} | {_compiled_cell(res, b)} | {r['time_ns'] / 1e3:,.1f} | {r['dram_read_bits'] / 8e6:,.2f} / "
                 f"{r['dram_write_bits'] / 8e6:,.2f} | {t5[0] / 1e6:g} / {t5[1] / 1e6:g} | {r['energy_j'] * 1e3:.3f} | "
                 f"{a_ns / 1e3:,.1f}, {a_j * 1e3:.2f} | {sp:.2f}x | "
                 f"{_fmt(CLAIMED_SPEEDUP.get(b)) + 'x' if b in CLAIMED_SPEEDUP else '–'} | {er:.2f}x |")
    gs, ge = geomean(speed), geomean(ener)
    if res.get("compiled"):
        L += ["", "Compiled: the Table 5 DSL program of the benchmark (nnisa.targets.pimsab.compiler.suite) "
                  "compiled by nnisa's PIMSAB compiler (spec §4) and timed the same way; "
                  + "; ".join(f"{b}: {c['distribution']}, compiled in {c['compile_s']:.1f} s"
                              for b, c in res["compiled"].items()) + "."]
    L += ["", f"Geometric mean over {len(benches)} benchmarks: **{gs:.2f}x** speedup (paper {CLAIMED_GEOMEAN_SPEEDUP}x, "
              f"{100 * (gs / CLAIMED_GEOMEAN_SPEEDUP - 1):+.0f} %), **{ge:.2f}x** energy (paper {CLAIMED_GEOMEAN_ENERGY}x, "
              f"{100 * (ge / CLAIMED_GEOMEAN_ENERGY - 1):+.0f} %).", "",
          "Official simulator: the cycles of the artifact's simulator (aman26kbm/pim-simulator, built and run "
          "here; resnet18 and bert are the sums of its layer runs, as the artifact makes them; "
          "`benchmarks/pimsab_official.py` compares every recorded run, dynamic energy included).", "",
          "Where a figure differs from the paper:", ""]
    for b in benches:
        claim = CLAIMED_SPEEDUP.get(b)
        sp = A100[b][0] / base[b]["time_ns"]
        diff = f" ({100 * (sp / claim - 1):+.0f} % vs the paper's {claim}x)" if claim else ""
        L.append(f"* **{b}**: {sp:.2f}x{diff}: {WHY[b].format(**_time_shares(base[b]))}.")
    plot_grouped_bars(benches, {"speedup vs A100": speed, "energy ratio vs A100": ener,
                                "paper speedup": [CLAIMED_SPEEDUP.get(b) for b in benches]},
                      figs / "fig16_vs_a100.png", ylabel="x (log)", log=True, hline=1.0,
                      title="PIMSAB vs A100 (nnisa replays)")
    L += ["", "![vs A100](pimsab_report/fig16_vs_a100.png)", "", "## Fig. 18: time and energy breakdown", "",
          "| benchmark | compute | DRAM | network | idle | array | DRAM | NoC | H-tree | transpose | other |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    tb = {k: [] for k in ("compute", "dram", "network", "idle")}
    eb = {k: [] for k in ("array", "dram", "noc", "htree", "transpose", "other")}
    for b in benches:
        r = base[b]
        tot = sum(r["time_breakdown_cycles"].values()) or 1
        t = {k: r["time_breakdown_cycles"].get(k, 0) / tot for k in tb}
        comp = r["energy_by_component_j"]
        etot = sum(comp.values()) or 1
        e = {k: comp.get(k, 0) / etot for k in eb if k != "other"}
        e["other"] = 1 - sum(e.values())
        for k in tb:
            tb[k].append(t[k])
        for k in eb:
            eb[k].append(e[k])
        L.append(f"| {b} | " + " | ".join(f"{100 * t[k]:.0f} %" for k in tb) + " | "
                 + " | ".join(f"{100 * e[k]:.0f} %" for k in eb) + " |")
    plot_grouped_bars(benches, tb, figs / "fig18_time.png", stacked=True, ylabel="fraction of time",
                      title="Fig. 18a-style time breakdown (average over tiles)")
    plot_grouped_bars(benches, eb, figs / "fig18_energy.png", stacked=True, ylabel="fraction of dynamic energy",
                      title="Fig. 18b-style energy breakdown")
    L += ["", "Time classes as in spec §3.9 (per tile: DRAM = load/store instructions, network = "
              "tile_tx/tile_rx, compute = the rest, idle = no instruction; averaged over the 120 tiles). "
              "Paper: vecadd mostly DRAM, fir ~60 % DRAM, gemv DRAM-bound, gemm/conv2d network-dominated, "
              "bert compute-bound.", "",
          "![time](pimsab_report/fig18_time.png) ![energy](pimsab_report/fig18_energy.png)", "",
          "## Table 6: speedup from adaptive precision", "",
          "| benchmark | cycles | without (`_nap`) | speedup | paper |", "| --- | ---: | ---: | ---: | ---: |"]
    for b in benches:
        c, n = base[b]["cycles"], res["nap"][b]["cycles"]
        L.append(f"| {b} | {c:,} | {n:,} | {100 * (n / c - 1):.2f} % | {100 * TABLE6[b]:g} % |")
    if res["ablations"]:
        L += ["", "## Ablations (Fig. 21): performance relative to the full design", "",
              "| | " + " | ".join(benches) + " |", "| --- | " + " | ".join("---:" for _ in benches) + " |"]
        series = {}
        for fig, label, presets in ABLATIONS:
            row = [rel(base[b]["cycles"], res["ablations"][fig][b]) for b in benches]
            series[f"{fig} {label}"] = row
            L.append(f"| {fig} {label}{' (avg of 2 runs)' if len(presets) > 1 else ''} | "
                     + " | ".join(_fmt(v) for v in row) + " |")
        plot_grouped_bars(benches, series, figs / "fig21_ablations.png", ylabel="performance (base = 1)",
                          hline=1.0, title="Fig. 21-style ablations")
        L += ["", "Paper (qualitative): shuffle off hurts conv/gemm/resnet18/bert; constant ops off up to 45 % "
                  "(fir); bus hurts conv/gemm/resnet18/bert; shift off hurts fir; one-to-all hurts conv/resnet18 "
                  "by up to 40 %; ring hurts all; intra-CRAM reduction hurts conv2d/gemm/resnet18/bert; "
                  "everything off > 90 %.", "",
              "Agreements and differences: the directions all match (no ablation speeds anything up by more than "
              "2 %, each hits the workloads the paper names).  Constant ops off costs fir "
              f"{_loss(res, '21b', 'fir'):.0f} % (paper: up to 45 %).  "
              "The sizes differ where a rewrite of §3.7 is much more expensive than the feature it removes: "
              "without cross-CRAM shifts each of fir's 32 shifts per chunk becomes a full-tile store and load "
              "(1,024 flits each way) and without shuffling each of bert's 2-flit `load_shf` becomes a 512-flit "
              f"load, so fir and bert lose {_loss(res, '21d', 'fir'):.0f} % and {_loss(res, '21a', 'bert'):.0f} %, "
              "where the paper only says 'significantly'.  One-to-all broadcasts cost conv2d/resnet18 "
              f"{_loss(res, '21e', 'conv2d'):.0f} % / {_loss(res, '21e', 'resnet18'):.0f} % (paper: up to 40 %).", "",
              "![ablations](pimsab_report/fig21_ablations.png)"]
    if res["sensitivity"]:
        L += ["", "## Sensitivity (Fig. 19): performance relative to the base configuration", "",
              "| preset | " + " | ".join(benches) + " |", "| --- | " + " | ".join("---:" for _ in benches) + " |"]
        series = {}
        for p in SENSITIVITY:
            row = [rel(base[b]["cycles"], res["sensitivity"][p][b]) for b in benches]
            series[p] = row
            L.append(f"| {p} | " + " | ".join(_fmt(v) for v in row) + " |")
        plot_grouped_bars(benches, series, figs / "fig19_sensitivity.png", ylabel="performance (base = 1)",
                          hline=1.0, title="Fig. 19-style sensitivity")
        L += ["", "Paper: vecadd and gemv insensitive to CRAM size, scale ~linearly with mesh width (DRAM "
                  "bandwidth); gemm ~40 % better from 512² to 256² CRAMs; conv2d slightly slower with a wider mesh.",
              "", "Differences: the replays are the artifact's handcoded sequences on each geometry (docs/pimsab.md), "
                  "not re-optimised per configuration like the paper's compiled runs.  With 1,024 CRAMs of 128² (or "
                  "512 per tile) conv2d and ResNet-18's inputDup layers switch to the weightDup template (C < CRAMs "
                  "per tile), so these points lose where the paper gains; vecadd and gemv are insensitive to CRAM "
                  "size and scale with mesh width (DRAM bandwidth) as in the paper (gemv "
                  f"{_fmt(res['sensitivity']['sens_24x5']['gemv'] and base['gemv']['cycles'] / res['sensitivity']['sens_24x5']['gemv'])}x "
                  f"on the 24x5 mesh), gemm gains "
                  f"{_fmt(res['sensitivity']['sens_cram512']['gemm'] and res['sensitivity']['sens_cram512']['gemm'] / base['gemm']['cycles'])}x "
                  "from 512² to 256² CRAMs (paper ~40 %) and little more at 128².", "",
              "![sensitivity](pimsab_report/fig19_sensitivity.png)"]
    if res["size"]:
        L += ["", "## Size and precision sweeps (Fig. 20)", "", "| benchmark | half size | double size |",
              "| --- | ---: | ---: |"]
        for b in SIZE_SWEEP:
            s = res["size"][b]
            half, double = (None if s[k] is None else s[k] / base[b]["cycles"] for k in ("0.5", "2.0"))
            L.append(f"| {b} | {_fmt(half)}x time | {_fmt(double)}x time |")
        L += ["", "| benchmark | " + " | ".join(f"int{w}" for w in (4, 5, 6, 7, 8)) + " |",
              "| --- | " + " | ".join("---:" for _ in range(5)) + " |"]
        series = {}
        for b in PREC_SWEEP:
            p = res["precision"][b]
            row = [None if p[str(w)] is None or not p["8"] else p[str(w)] / p["8"] for w in (4, 5, 6, 7, 8)]
            series[b] = row
            L.append(f"| {b} (time vs int8) | " + " | ".join(_fmt(v) for v in row) + " |")
        plot_grouped_bars([f"int{w}" for w in (4, 5, 6, 7, 8)], series, figs / "fig20_precision.png",
                          ylabel="time relative to int8", title="Fig. 20b-style precision sweep")
        L += ["", "Paper: vecadd and gemv scale linearly with size, fir takes more than half the time at half "
                  "size, gemm slightly under 2x at double size; DRAM traffic is the same for int5..int8 (vecadd "
                  "flat, gemv slightly rising), gemm and conv2d roughly linear in precision.", "",
              "![precision](pimsab_report/fig20_precision.png)"]
    text = "\n".join(L) + "\n"
    (out / "pimsab_report.md").write_text(text)
    (figs / "results.json").write_text(json.dumps(res, indent=1, default=str))
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="vadd, gemv, conv2d on the base configuration only")
    ap.add_argument("--out", default=None, help="folder for pimsab_report.md and its figures (default: docs/ with "
                    "--update-docs, else benchmarks/out/)")
    ap.add_argument("--from-json", help="re-render a saved results.json instead of simulating")
    ap.add_argument("--add-compiled", action="store_true",
                    help="with --from-json: also run the compiled DSL programs and add their cycles")
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = json.loads(Path(args.from_json).read_text()) if args.from_json else collect(args.quick)
    if args.from_json and args.add_compiled:
        add_compiled(res)
    out = Path(args.out) if args.out else docs_path(ROOT / "docs" / "pimsab_report.md").parent
    render(res, out)
    log(f"wrote {out / 'pimsab_report.md'} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
