"""Benchmark: PIMSAB timing simulation of the paper's replays vs the official C++ simulator.

For vadd, gemv and gemm (the three workloads with a reference runtime in the issue: 7.95 s, 26.1 s
and 33.2 s on a 2-core machine) it times, in one warm process (numba compiled once before):

* generating the replay program (Python generators),
* lowering + the numba timing engine + energy (``simulate(mode="timing")``),
* the end-to-end ``nnisa bench`` job (generate + simulate + report),

best of ``--repeat`` runs, and rewrites the ``## PIMSAB simulator`` section of
``benchmarks/RESULTS.md``.
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
from nnisa.targets.pimsab.workloads.paper import GOLDEN, OFFICIAL_WALL_S  # noqa: E402
from nnisa.targets.pimsab.workloads.registry import generate, run_workload  # noqa: E402


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
    args = ap.parse_args()
    cfg = preset("base").replace(functional=False)
    load0 = os.getloadavg()[0]
    run_workload("vadd", preset("base"), scale=0.05)  # compile / load the numba engine once
    rows = []
    for name in ("vadd", "gemv", "gemm"):
        t_gen, w = best(lambda: generate(name, cfg), args.repeat)
        t_sim, res = best(lambda: simulate(w.program, config=cfg, mode="timing"), args.repeat)
        t_all, rep = best(lambda: run_workload(name, preset("base")).to_dict(), args.repeat)
        ref = OFFICIAL_WALL_S[name]
        rows.append((name, len(w.program), res.stats.cycles, GOLDEN.get(name, (None,))[0], t_gen, t_sim, t_all, ref))
        print(f"{name}: {len(w.program):,} instructions, {res.stats.cycles:,} cycles, generate {t_gen:.2f} s, "
              f"simulate {t_sim:.2f} s, bench {t_all:.2f} s (official {ref} s)", flush=True)
    lines = [f"Machine: {machine()}; date {today()}; `python benchmarks/pimsab_sim.py` (best of {args.repeat} in one "
             f"warm process; load average {load0:.1f} at the start: the 2 cores are shared, times vary).",
             "Timing mode (`functional=false`), base configuration; official C++ simulator runtimes from the issue "
             "(2-core machine).", "",
             "| workload | instructions | cycles (nnisa) | cycles (official) | generate | simulate | bench end-to-end "
             "| official | speed-up (end-to-end) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, n, cyc, gold, tg, ts, ta, ref in rows:
        lines.append(f"| {name} | {n:,} | {cyc:,} | {gold and f'{gold:,}' or '–'} | {tg:.2f} s | {ts:.2f} s | "
                     f"{ta:.2f} s | {ref} s | **{ref / ta:.0f}×** |")
    lines += ["", f"Peak memory of the process: {peak_rss_mb() / 1024:.2f} GB."]
    update_section("PIMSAB simulator", "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
