"""Benchmark: PIMSAB functional simulation of compiled networks, batched vs the per-sample reference.

For each model (the bundled digits CNN and the model zoo's LeNet-5, compiled for the base
configuration): the compiled network's ``run_compiled`` with the batched functional machine
(all samples in one pass, :mod:`nnisa.targets.pimsab.sim.batch`) on ``--samples`` samples,
and the single-sample reference machine (the code before issue 30: one simulation per sample) on
``--ref-samples`` of them, alternating A/B ``--repeat`` times in the same process.  Both include
the one timing run of the first sample.  The outputs are compared sample by sample (and with the
frontend's integer reference: ``bit_exact``).  CPU = this process's CPU time (the figure that stays
comparable on the shared 2-core machine), wall = elapsed.

Usage: python benchmarks/pimsab_functional.py [--samples 32] [--ref-samples 4] [--repeat 2] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import captured, machine, peak_rss_mb, today, update_section  # noqa: E402

#: per-sample figures of issue 30 (before: the per-sample reference machine) and its goals
GOALS = {"lenet": 0.1, "digits_cnn": 0.05}


def _model(name: str, work: Path) -> Path:
    from nnisa.frontend.models import bundled_model_path, make_lenet
    if name == "lenet":
        import onnx
        path = work / "lenet.onnx"
        onnx.save(make_lenet(0), path)
        return path
    return bundled_model_path(name)


def _timed(fn):
    c, t = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - t


def bench_model(name: str, samples: int, ref_samples: int, repeat: int, work: Path) -> dict:
    import nnisa
    from nnisa.targets.pimsab.compiler.netcompile import run_compiled
    comp = nnisa.target("pimsab").compile(_model(name, work))
    t_in = comp.qgraph.inputs[0]
    x = np.random.default_rng(0).standard_normal((samples,) + tuple(t_in.shape[1:])).astype(np.float32)
    run_compiled(comp, {t_in.name: x[:2]})                      # kernel caches, first-call costs
    fast, ref = [], []
    for _ in range(repeat):                                     # A/B alternated in the same run
        (o1, s1, c1), cpu, wall = _timed(lambda: run_compiled(comp, {t_in.name: x}))
        fast.append((cpu / samples, wall / samples))
        (o2, s2, c2), cpu, wall = _timed(lambda: run_compiled(comp, {t_in.name: x[:ref_samples]}, batched=False))
        ref.append((cpu / ref_samples, wall / ref_samples))
    same = all(np.array_equal(o1[k][:ref_samples], o2[k]) for k in o1) and s1.cycles == s2.cycles
    return {"model": name, "instructions": int(comp.report["instructions"]), "cycles": int(s1.cycles),
            "bit_exact": bool(c1["bit_exact"] and c2["bit_exact"]), "same_outputs": same,
            "fast_cpu": min(f[0] for f in fast), "fast_wall": min(f[1] for f in fast),
            "ref_cpu": min(r[0] for r in ref), "ref_wall": min(r[1] for r in ref)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--ref-samples", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--models", default="digits_cnn,lenet")
    ap.add_argument("--quick", action="store_true", help="4 samples, reference on 1, one repeat; no RESULTS.md")
    a = ap.parse_args()
    if a.quick:
        a.samples, a.ref_samples, a.repeat = 4, 1, 1
    load0 = os.getloadavg()
    with captured() as out, tempfile.TemporaryDirectory() as td:
        print(f"Machine: {machine()}; date {today()}; `python benchmarks/pimsab_functional.py` "
              f"(load average {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start).\n")
        print(f"`run_compiled` of the compiled network (base configuration), values of {a.samples} samples in one "
              f"batched pass vs the per-sample reference machine (before issue 30) on {a.ref_samples} of them; "
              f"A/B alternated {a.repeat}× in one process, best run; both include the one timing run; "
              f"per-sample figures.\n")
        print("| model | instructions | cycles | bit-exact | batched = reference | reference CPU / sample | "
              "batched CPU / sample | speed-up (CPU) | reference wall / sample | batched wall / sample | "
              "goal (batched) |")
        print("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in a.models.split(","):
            r = bench_model(name, a.samples, a.ref_samples, a.repeat, Path(td))
            print(f"| {name} | {r['instructions']:,} | {r['cycles']:,} | {r['bit_exact']} | {r['same_outputs']} | "
                  f"{r['ref_cpu']:.3f} s | {r['fast_cpu']:.3f} s | {r['ref_cpu'] / r['fast_cpu']:.1f}× | "
                  f"{r['ref_wall']:.3f} s | {r['fast_wall']:.3f} s | ≤ {GOALS.get(name, float('nan')):.2f} s |",
                  flush=True)
        load1 = os.getloadavg()
        print(f"\nPeak memory of the process: {peak_rss_mb() / 1024:.2f} GB; load average {load1[0]:.1f} at the end "
              "(2 cores shared with other engineers' jobs: wall times include waiting for a core).")
    if not a.quick:
        update_section("PIMSAB functional simulation (batched)", out.text)


if __name__ == "__main__":
    main()
