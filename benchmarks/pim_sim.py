"""Benchmark: PIM simulator on the conformance program (spec §13) vs pimsim-nn.

Times, on ``shared/conformance/pim/resnet18_batch_8x8.json.gz`` with ``pimsim_config.json``:

* loading the program (``jsonio.read_json``),
* pimsim-mode timing (``simulate_timing``, best of ``--repeat`` runs),
* functional + timing (``run_functional`` with random weights, then timing), if the
  functional simulator is available (``--no-functional`` skips it),

each phase in its own subprocess so that peak memory (ru_maxrss) is per job.  Prints a Markdown
table next to pimsim-nn's figures (22.96 s simulated-time report, 25.6 s wall, 6.1 s load,
2.25 GB) and rewrites the ``## PIM simulator`` section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "targets" / "pim"))

from _results import machine, peak_rss_mb, today, update_section  # noqa: E402

SHARED = ROOT.parent / "shared" / "conformance" / "pim"
PROGRAM = SHARED / "resnet18_batch_8x8.json.gz"
CONFIG = SHARED / "pimsim_config.json"
PIMSIM = {"load_s": 6.10, "total_s": 22.96, "wall_s": 25.6, "kernel_s": 16.9, "peak_mb": 2.25 * 1024,
          "rate": 0.185e6}


def _load():
    try:
        from nnisa.targets.pim.formats.jsonio import read_json
    except ImportError:  # before the fast reader existed
        from pim_loader import read_program as read_json
    t = time.perf_counter()
    prog = read_json(PROGRAM)
    return prog, time.perf_counter() - t


def phase_timing(repeat: int) -> dict:
    from nnisa.targets.pim.config import load_config
    from nnisa.targets.pim.sim.timing import simulate_timing
    prog, t_load = _load()
    cfg = load_config(CONFIG)
    times = []
    res = None
    for _ in range(repeat):
        t = time.perf_counter()
        res = simulate_timing(prog, cfg, mode="pimsim")
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    simulate_timing(prog, cfg, mode="pimsim", trace=True)
    t_trace = time.perf_counter() - t
    return {"load_s": t_load, "timing_s": min(times), "timing_all": times, "trace_s": t_trace,
            "latency_ns": res.latency_ps / 1000, "instructions": len(prog), "peak_mb": peak_rss_mb()}


def phase_functional() -> dict:
    from nnisa.targets.pim.config import load_config
    from nnisa.targets.pim.sim.timing import simulate_timing
    try:
        from nnisa.targets.pim.sim.functional import run_functional
    except ImportError:
        return {"skipped": "nnisa.targets.pim.sim.functional not available"}
    prog, t_load = _load()
    cfg = load_config(CONFIG)
    t = time.perf_counter()
    fres = run_functional(prog, cfg, weights="random", global_address_mode="single32")
    t_func = time.perf_counter() - t
    t = time.perf_counter()
    simulate_timing(prog, cfg, mode="pimsim")
    t_tim = time.perf_counter() - t
    return {"load_s": t_load, "functional_s": t_func, "timing_s": t_tim,
            "instructions": fres.total_instructions, "peak_mb": peak_rss_mb()}


def run_phase(name: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--phase", name, *args], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase", choices=["timing", "functional"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-functional", action="store_true")
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    a = ap.parse_args()
    if a.phase == "timing":
        print(json.dumps(phase_timing(a.repeat)))
        return 0
    if a.phase == "functional":
        print(json.dumps(phase_functional()))
        return 0
    if not PROGRAM.exists():
        print(f"skipped: {PROGRAM} not found")
        return 0
    tm = run_phase("timing", "--repeat", str(a.repeat))
    if "error" in tm:
        print("timing phase failed:", tm["error"], file=sys.stderr)
        return 1
    fn = {"skipped": "--no-functional"} if a.no_functional else run_phase("functional")
    n = tm["instructions"]
    total = tm["load_s"] + tm["timing_s"]
    rows = [
        "| job | nnisa | pimsim-nn 3e3442b (spec §13) | ratio |",
        "| --- | ---: | ---: | ---: |",
        f"| load program (256 MB JSON) | {tm['load_s']:.2f} s | {PIMSIM['load_s']:.2f} s | "
        f"{PIMSIM['load_s'] / tm['load_s']:.1f}× faster |",
        f"| pimsim-mode timing (loaded program) | {tm['timing_s']:.2f} s | ≈{PIMSIM['kernel_s']:.1f} s kernel | "
        f"{PIMSIM['kernel_s'] / tm['timing_s']:.1f}× faster |",
        f"| load + timing | {total:.2f} s | {PIMSIM['total_s']:.2f} s (reported), {PIMSIM['wall_s']} s wall | "
        f"{PIMSIM['total_s'] / total:.1f}× faster |",
        f"| timing with per-instruction trace | {tm['trace_s']:.2f} s | – | |",
        f"| peak memory, load + timing | {tm['peak_mb'] / 1024:.2f} GB | {PIMSIM['peak_mb'] / 1024:.2f} GB | |",
        f"| timing rate | {n / tm['timing_s'] / 1e6:.2f} M instr/s | {PIMSIM['rate'] / 1e6:.3f} M instr/s | |",
    ]
    if "functional_s" in fn:
        ft = fn["functional_s"] + fn["timing_s"]
        rows.append(f"| functional + timing (random weights) | {ft:.2f} s "
                    f"({n / ft / 1e6:.3f} M instr/s) | timing only: {PIMSIM['kernel_s']:.1f} s "
                    f"({PIMSIM['rate'] / 1e6:.3f} M instr/s) | {(n / ft) / PIMSIM['rate']:.1f}× rate |")
        rows.append(f"| peak memory, load + functional + timing | {fn['peak_mb'] / 1024:.2f} GB | "
                    f"{PIMSIM['peak_mb'] / 1024:.2f} GB | |")
    else:
        rows.append(f"| functional + timing | not run ({fn.get('skipped') or fn.get('error')}) | – | |")
    table = "\n".join(rows)
    body = (f"Conformance program (ResNet-18 batch, 44 cores, {n:,} instructions), pimsim-nn config "
            f"`pimsim_config.json`; chip latency {tm['latency_ns']:,.0f} ns.\n"
            f"Machine: {machine()}; date {today()}; `python benchmarks/pim_sim.py` "
            f"(timing = best of {a.repeat}; each job in its own process, peak = ru_maxrss).\n\n{table}\n")
    print(body)
    if not a.no_write:
        update_section("PIM simulator", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
