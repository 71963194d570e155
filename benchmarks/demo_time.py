"""Benchmark: ``nnisa demo`` wall and CPU time, this tree against a baseline tree, in the same run.

Each run is a fresh process (``python -m nnisa demo`` in a temporary folder, warm numba caches of
its tree, byte-compiled sources as after ``make install``), the two trees alternated ``--repeat``
times; CPU = user + sys of the demo and its worker process.  The baseline is a source tree given
with ``--before`` (e.g. ``git archive`` of the issue's start commit, warmed with
``python -m nnisa.warmup``).

Usage: python benchmarks/demo_time.py --before /path/to/base/src [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import captured, machine, today, update_section  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"


def run_demo(src: Path, env_extra: dict[str, str] | None = None) -> dict:
    # both trees read the same conformance data (a baseline unpacked elsewhere has no ../shared)
    shared = os.environ.get("NNISA_SHARED") or str(SRC.parents[1] / "shared")
    env = {**os.environ, "PYTHONPATH": str(src), "NNISA_SHARED": shared, **(env_extra or {})}
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as td:
        proc = subprocess.run([sys.executable, "-m", "nnisa", "demo"], cwd=td, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"demo failed ({src}): {proc.stderr.strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    pimsab = next((ln for ln in proc.stdout.splitlines() if ln.startswith("│ pimsab") and "digits_cnn" in ln), "")
    # the demo's own CPU split (this process, its worker process; older trees: "reference jobs'
    # process"): on an idle 2-core machine its wall time is about the larger of the two
    m = re.search(r"CPU: this process ([\d.]+) s(?:, (?:reference jobs'|worker) process ([\d.]+) s)?", proc.stdout)
    split = (float(m.group(1)), float(m.group(2)) if m.group(2) else None) if m else (None, None)
    return {"wall": wall, "cpu": cpu, "load": load, "pimsab_sim": pimsab.split("│")[-2].strip() if pimsab else "?",
            "main": split[0], "worker": split[1], "lines": len(proc.stdout.strip().splitlines()),
            "vit": "digits_vit" in proc.stdout}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True, help="baseline source tree (its src/ folder)")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    for src in (a.before, SRC):  # as after `make install` (PYTHONDONTWRITEBYTECODE would leave no .pyc)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    runs = {"before": [], "after": []}
    with captured() as out:
        print(f"Machine: {machine()}; date {today()}; `python benchmarks/demo_time.py --before <base>/src` "
              f"(*before* = the baseline tree given; *after* = this tree; fresh process per run, "
              f"warm numba caches, runs alternated; load = 1-minute load average before each run; the 2 cores "
              f"are shared with other engineers' jobs, so wall time is CPU time stretched by the load; the demo's "
              f"own split: a baseline that printed \"reference jobs' process\" counted that process's jobs only, "
              f"not its start; CPU, demo + worker counts everything).\n")
        print("| run | tree | wall (s) | CPU, demo + worker (s) | CPU: demo process / worker process (s) "
              "| transformer compare | story lines | PIMSAB digits-CNN sim column | load |")
        print("| ---: | --- | ---: | ---: | ---: | --- | ---: | --- | ---: |")
        for k in range(a.repeat):
            for name, src in (("before", a.before), ("after", SRC)):
                r = run_demo(src)
                runs[name].append(r)
                split = f"{r['main']} / {r['worker']}" if r["main"] is not None else "–"
                print(f"| {k + 1} | {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {split} | "
                      f"{'digits_vit' if r['vit'] else 'none'} | {r['lines']} | {r['pimsab_sim']} | {r['load']:.1f} |",
                      flush=True)
        best = {n: min(v, key=lambda r: r["cpu"]) for n, v in runs.items()}
        b = best["after"]
        if b["main"] is not None:
            print(f"\nThis tree, best run: demo process {b['main']:.1f} s CPU, worker process {b['worker'] or 0:.1f} s CPU: "
                  f"about {max(b['main'], b['worker'] or 0):.0f} s wall on this 2-core machine when idle (goal: under 15 s).")
        print(f"\nBest CPU: before {best['before']['cpu']:.1f} s, after {best['after']['cpu']:.1f} s "
              f"({best['before']['cpu'] / best['after']['cpu']:.1f}× less).  Goal: the demo under 15 s wall on this "
              f"2-core machine (idle).  The demo shares its jobs between two processes: on an idle machine its "
              f"wall time is about the larger of the two processes' CPU time.\n")
    update_section("Demo time", out.text)


if __name__ == "__main__":
    main()
