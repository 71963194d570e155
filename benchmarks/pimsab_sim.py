"""Benchmark: PIMSAB timing simulation of the paper's replays vs the official C++ simulator.

For vadd, gemv and gemm it times, in one warm process (numba compiled once before):

* generating the replay program (Python generators),
* lowering + the numba timing engine + energy (``simulate(mode="timing")``),
* the end-to-end ``nnisa bench`` job (generate + simulate + report),

best of ``--repeat`` runs, and rewrites the ``## PIMSAB simulator`` section of
``benchmarks/RESULTS.md``.  With ``--official PIM_simulator`` (a build of the official simulator,
see benchmarks/pimsab_official.py) each repeat also runs the official binary on the same workload,
alternating with nnisa, and the speed-up is measured in that run; without it, against the official
runtimes recorded in ``nnisa.targets.pimsab.workloads.official`` (user CPU on this machine).

    python benchmarks/pimsab_sim.py [--repeat 3] [--official ~/pim-simulator/build/PIM_simulator]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import machine, peak_rss_mb, today, update_section  # noqa: E402

from nnisa.targets.pimsab.config import preset  # noqa: E402
from nnisa.targets.pimsab.sim.simulate import simulate  # noqa: E402
from nnisa.targets.pimsab.workloads.official import OFFICIAL  # noqa: E402
from nnisa.targets.pimsab.workloads.registry import generate, run_workload  # noqa: E402
from pimsab_official import run_official  # noqa: E402

#: nnisa workload → the official run of the same program
CASES = {"vadd": "vadd", "gemv": "gemv_new", "gemm": "gemm_systolic"}


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--official", type=Path, help="the official simulator's binary: time it in this run")
    args = ap.parse_args()
    cfg = preset("base").replace(functional=False)
    load0 = os.getloadavg()[0]
    run_workload("vadd", preset("base"), scale=0.05)  # compile / load the numba engine once
    rows = []
    for name, case in CASES.items():
        t_gen, w = best(lambda: generate(name, cfg), args.repeat)
        t_sim, res = best(lambda: simulate(w.program, config=cfg, mode="timing"), args.repeat)
        t_all, off = [], []
        for _ in range(args.repeat):  # nnisa and the official binary alternate (A/B on a shared machine)
            t_all.append(best(lambda: run_workload(name, preset("base")), 1)[0])
            if args.official:
                off.append(run_official(args.official, OFFICIAL[case], 3600))
        ref = OFFICIAL[case]
        off_s = min(o["wall_s"] for o in off) if off else ref.cpu_s
        off_cycles = off[0]["cycles"] if off else ref.cycles
        rows.append((name, len(w.program), res.stats.cycles, off_cycles, t_gen, t_sim, min(t_all), off_s,
                     min(o["cpu_s"] for o in off) if off else None))
        print(f"{name}: {len(w.program):,} instructions, {res.stats.cycles:,} cycles (official {off_cycles:,}), "
              f"generate {t_gen:.2f} s, simulate {t_sim:.2f} s, bench {min(t_all):.2f} s, official {off_s:.1f} s",
              flush=True)
    load1 = os.getloadavg()[0]
    src = ("the official binary run in this job, alternating with nnisa (best wall time of "
           f"{args.repeat}; its user CPU in brackets)" if args.official else
           "the recorded official runs (user CPU on this machine, `workloads/official.py`)")
    lines = [f"Machine: {machine()}; date {today()}; `python benchmarks/pimsab_sim.py"
             + (" --official ..." if args.official else "") + f"` (best of {args.repeat} in one warm process; "
             f"load average {load0:.1f} at the start, {load1:.1f} at the end: the 2 cores are shared, times vary).",
             f"Timing mode (`functional=false`), base configuration; official simulator times: {src}.", "",
             "| workload | instructions | cycles (nnisa) | cycles (official) | generate | simulate | bench end-to-end "
             "| official | speed-up (end-to-end) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, n, cyc, gold, tg, ts, ta, ref, cpu in rows:
        off_txt = f"{ref:.1f} s" + (f" ({cpu:.1f} s CPU)" if cpu is not None else " CPU")
        lines.append(f"| {name} | {n:,} | {cyc:,} | {gold:,} | {tg:.2f} s | {ts:.2f} s | "
                     f"{ta:.2f} s | {off_txt} | **{ref / ta:.0f}×** |")
    lines += ["", f"Peak memory of the process: {peak_rss_mb() / 1024:.2f} GB."]
    update_section("PIMSAB simulator", "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
