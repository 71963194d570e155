"""Benchmark: ``nnisa run``'s simulation of many samples per target, this tree against a baseline
tree, in the same run (issue 30: one batched pass, or timing once, where a target replays one
program per sample).

For each target: ``api.run_model(target, digits_cnn, samples=N)`` in a fresh process per tree
(warm numba caches), the trees alternated ``--repeat`` times; the figure is the CPU time of the
``run_compiled`` call (simulation of all samples, checks included; compile excluded) and the
result must be bit-exact on both sides.

Usage: python benchmarks/run_batch_ab.py --before /path/to/base/src [--samples 32] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import captured, machine, today, update_section  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"
CHILD = r"""
import json, sys, time
import numpy as np
import nnisa
from nnisa.core.target import get_target
from nnisa.frontend.models import bundled_model_path, bundled_testset
name, n = sys.argv[1], int(sys.argv[2])
t = get_target(name)
comp = t.compile(bundled_model_path("digits_cnn"))
x, _ = bundled_testset("digits_cnn")
from nnisa.frontend import load_model
inp = {load_model(bundled_model_path("digits_cnn")).inputs[0].name: x[:n]}
t.run_compiled(comp, {k: v[:1] for k, v in inp.items()})      # first-call costs (kernel cache loads)
c, w = time.process_time(), time.perf_counter()
outs, stats, checks = t.run_compiled(comp, inp)
print(json.dumps({"cpu": time.process_time() - c, "wall": time.perf_counter() - w,
                  "bit_exact": checks.get("bit_exact"), "cycles": stats.cycles}))
"""


def child(src: Path, target: str, n: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    p = subprocess.run([sys.executable, "-c", CHILD, target, str(n)], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{target} ({src}) failed: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--targets", default="pimsab,pim,cherry")
    a = ap.parse_args()
    with captured() as out:
        print(f"Machine: {machine()}; date {today()}; `python benchmarks/run_batch_ab.py --before <base>/src` "
              f"(*before* = the tree at the issue's start, f6c766f; *after* = this tree; bundled digits CNN, "
              f"{a.samples} test images; CPU time of `run_compiled` in a fresh process per run, compile "
              f"excluded, warm numba caches; trees alternated {a.repeat}×, best run; load = 1-minute load "
              f"average before the row).\n")
        print("| target | what changed | before CPU (s) | after CPU (s) | speed-up | per sample after | cycles "
              "before = after | bit-exact (before / after) | load |")
        print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: |")
        what = {"pimsab": "one batched functional pass for all samples (was: one simulation per sample)",
                "pim": "timing, energy and lint on the first simulation only",
                "cherry": "cycle model on the first sample only"}
        for target in a.targets.split(","):
            load = os.getloadavg()[0]
            res = {"before": [], "after": []}
            for _ in range(a.repeat):
                res["before"].append(child(a.before, target, a.samples))
                res["after"].append(child(SRC, target, a.samples))
            b = min(res["before"], key=lambda r: r["cpu"])
            f = min(res["after"], key=lambda r: r["cpu"])
            print(f"| {target} | {what.get(target, '')} | {b['cpu']:.2f} | {f['cpu']:.2f} | {b['cpu'] / f['cpu']:.1f}× | "
                  f"{f['cpu'] / a.samples * 1e3:.0f} ms | {b['cycles'] == f['cycles']} | {b['bit_exact']} / "
                  f"{f['bit_exact']} | {load:.1f} |", flush=True)
    update_section("Many samples per run (issue 30)", out.text)


if __name__ == "__main__":
    main()
