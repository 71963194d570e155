"""Benchmark: nnisa's PIMSAB simulator against the official simulator, run by run.

For every recorded official run (``nnisa.targets.pimsab.workloads.official``) it runs the nnisa
job that replays it and compares cycles and dynamic energy.  With ``--official PIM_simulator`` (a
build of aman26kbm/pim-simulator, branch ``new``; nnisa does not ship or build it) the official
binary is run too, in the same process tree, and its figures and times are compared live;
without it the recorded figures are used.  Rewrites the ``## PIMSAB vs the official simulator``
section of ``benchmarks/RESULTS.md``.

    python benchmarks/pimsab_official.py                                   # recorded figures
    python benchmarks/pimsab_official.py --official ~/pim-simulator/build/PIM_simulator --cases vadd,gemv_new
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import machine, today, update_section  # noqa: E402

from nnisa.targets.pimsab.config import preset  # noqa: E402
from nnisa.targets.pimsab.workloads.official import RUNS, OfficialRun  # noqa: E402
from nnisa.targets.pimsab.workloads.registry import run_workload  # noqa: E402

_TIME = re.compile(rb"current time: (\d+)")


def run_official(binary: Path, run: OfficialRun, timeout: float) -> dict:
    """Run the official simulator on one case from its build folder (its configs are ``../configs``):
    cycles (the last "current time"), dynamic energy, user CPU and wall seconds."""
    root = binary.resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="pimsim-") as tmp:
        cmd = [str(binary.resolve()), "-c", str(root / "configs" / run.config), "-m", run.workload,
               "-l", str(Path(tmp) / "run")]
        if run.param:
            cmd += ["-p", str(root / "params" / run.param)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=binary.resolve().parent, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        tail = b""
        deadline = time.monotonic() + timeout
        for chunk in iter(lambda: proc.stdout.read(1 << 16), b""):
            tail = (tail + chunk)[-4096:]
            if time.monotonic() > deadline:
                proc.kill()
                raise TimeoutError(f"official {run.case}: more than {timeout:.0f} s")
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        cycles = [int(x) for x in _TIME.findall(tail)]
        energy = None
        csv_path = Path(tmp) / "run.energy.csv"
        if csv_path.exists():
            rows = [{k.strip(): v for k, v in r.items()} for r in csv.DictReader(csv_path.open())]
            energy = float(rows[0]["Total_Dynamic_Energy"]) if rows else None
    if not cycles:
        raise RuntimeError(f"official {run.case}: no cycle count in its output (status {status})")
    return {"cycles": cycles[-1], "energy_j": energy, "cpu_s": usage.ru_utime, "wall_s": wall}


def run_nnisa(run: OfficialRun) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_workload(run.nnisa, preset(run.preset), **run.params).figures()
    return {"cycles": res["cycles"], "energy_j": res["energy_j"], "wall_s": time.perf_counter() - t0,
            "cpu_s": time.process_time() - c0}


def _pct(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "–"
    return "0" if a == b else f"{100 * (a / b - 1):+.4f} %"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--official", type=Path, help="the official simulator's binary (build/PIM_simulator)")
    ap.add_argument("--cases", help="comma-separated cases (default: all recorded runs)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per official run")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite benchmarks/RESULTS.md")
    args = ap.parse_args()
    runs = RUNS if not args.cases else [r for r in RUNS if r.case in args.cases.split(",")]
    load0 = os.getloadavg()[0]
    run_workload("vadd", preset("base"), n=65536)  # load the numba engine once
    rows, worst = [], 0.0
    for run in runs:
        mine = run_nnisa(run)
        live = run_official(args.official, run, args.timeout) if args.official else None
        ref = live or {"cycles": run.cycles, "energy_j": run.energy_j, "cpu_s": run.cpu_s}
        worst = max(worst, abs(mine["cycles"] / ref["cycles"] - 1))
        rows.append((run, mine, ref))
        print(f"{run.case:28s} nnisa {mine['cycles']:>9,} official {ref['cycles']:>9,} ({_pct(mine['cycles'], ref['cycles'])})"
              f"  energy {_pct(mine['energy_j'], ref['energy_j'])}  nnisa {mine['wall_s']:.2f} s"
              + (f", official {ref['wall_s']:.1f} s wall / {ref['cpu_s']:.1f} s CPU" if live else ""), flush=True)
    how = (f"the official binary run in the same job (`--official`), wall and user-CPU times" if args.official
           else "the recorded official runs of `nnisa.targets.pimsab.workloads.official` (user-CPU times measured "
                "when they were recorded)")
    lines = [f"Machine: {machine()}; date {today()}; `python benchmarks/pimsab_official.py"
             + (" --official ..." if args.official else "") + f"` (load average {load0:.1f} at the start).",
             f"Official simulator: aman26kbm/pim-simulator, branch `new` (1b56b9c), built and run here; figures from "
             f"{how}. nnisa: `nnisa bench -t pimsab WORKLOAD -O ...` (timing mode, warm process).", "",
             "| case | nnisa job | cycles (nnisa) | cycles (official) | difference | dynamic energy (nnisa) | "
             "energy difference | nnisa time | official time |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for run, mine, ref in rows:
        job = run.nnisa + "".join(f" {k}={v}" for k, v in run.params.items()) + \
            (f" ({run.preset})" if run.preset != "base" else "")
        off_t = ref.get("cpu_s")
        lines.append(f"| {run.case} | {job} | {mine['cycles']:,} | {ref['cycles']:,} | {_pct(mine['cycles'], ref['cycles'])} | "
                     f"{mine['energy_j'] * 1e3:.6g} mJ | {_pct(mine['energy_j'], ref['energy_j'])} | "
                     f"{mine['wall_s']:.2f} s | {'–' if off_t is None else f'{off_t:.1f} s CPU'} |")
    lines += ["", f"Largest cycle difference: {100 * worst:.4f} %."]
    if not args.no_results:
        update_section("PIMSAB vs the official simulator", "\n".join(lines))
    print("\n".join(lines[-1:]))
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
