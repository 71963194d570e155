"""Benchmark: PIMSAB functional simulation of compiled networks, batched vs the per-sample reference.

For each model (the bundled digits CNN and the model zoo's LeNet-5, compiled for the base
configuration): the compiled network's ``run_compiled`` with the batched functional machine
(all samples in one pass, :mod:`nnisa.targets.pimsab.sim.batch`) on ``--samples`` samples,
and the single-sample reference machine (the code before issue 30: one simulation per sample) on
``--ref-samples`` of them, alternating A/B ``--repeat`` times in the same process.  Both include
the one timing run of the first sample.  The outputs are compared sample by sample (and with the
frontend's integer reference: ``bit_exact``).  CPU = this process's CPU time (the figure that stays
comparable on the shared 2-core machine), wall = elapsed.

With ``--before DIR`` (a checkout of an earlier tree, e.g. ``git archive REV | tar -x -C DIR``) it
compares trees instead: child processes of both trees (``PYTHONPATH=DIR/src`` and this tree's
``src``), alternated ``--repeat`` times, each compiling the model, warming up on 2 samples and
timing ``run_compiled`` of ``--samples`` samples (the batched machine with its one timing run);
both trees calibrate on the same fixed set (so their quantized graphs are the same) and their
outputs are compared.  The table goes to the section "PIMSAB functional
simulation: A/B against an earlier tree".

Usage: python benchmarks/pimsab_functional.py [--samples 32] [--ref-samples 4] [--repeat 2] [--quick]
       python benchmarks/pimsab_functional.py --before /tmp/before-pimsab [--samples 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
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


CHILD = r"""
import json, sys, time, numpy as np, nnisa
from nnisa.targets.pimsab.compiler.netcompile import run_compiled
path, samples = sys.argv[1], int(sys.argv[2])
shape = tuple(nnisa.target("pimsab").compile(path).qgraph.inputs[0].shape[1:])
calib = np.random.default_rng(1).uniform(-1, 1, (64,) + shape).astype(np.float32)  # both trees quantize alike
comp = nnisa.target("pimsab").compile(path, calib=calib)
t_in = comp.qgraph.inputs[0]
x = np.random.default_rng(0).standard_normal((samples,) + tuple(t_in.shape[1:])).astype(np.float32)
run_compiled(comp, {t_in.name: x[:2]})
c, t = time.process_time(), time.perf_counter()
o, s, chk = run_compiled(comp, {t_in.name: x})
cpu, wall = time.process_time() - c, time.perf_counter() - t
print(json.dumps({"cpu": cpu / samples, "wall": wall / samples, "cycles": int(s.cycles),
                  "bit_exact": bool(chk["bit_exact"]), "out": {k: np.asarray(v).tolist() for k, v in o.items()}}))
"""


def _child(src: Path, model: Path, samples: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    p = subprocess.run([sys.executable, "-c", CHILD, str(model), str(samples)], capture_output=True, text=True,
                       env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"child of {src} failed: {(p.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(lines[-1])


def compare_trees(before: Path, models: list[str], samples: int, repeat: int) -> None:
    """The ``--before`` mode (module docstring)."""
    after = Path(__file__).resolve().parent.parent / "src"
    load0 = os.getloadavg()
    with captured() as out, tempfile.TemporaryDirectory() as td:
        print(f"Machine: {machine()}; date {today()}; `python benchmarks/pimsab_functional.py --before "
              f"{before}` (load average {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start).\n")
        print(f"`run_compiled` of {samples} samples (batched machine, its one timing run included), per sample; "
              f"child processes of the two trees alternated {repeat}× (before, after, before, ...), each after a "
              f"2-sample warm-up; best and worst run of each.\n")
        print("| model | cycles (before / after) | bit-exact | same outputs | CPU / sample before | "
              "CPU / sample after | speed-up (best CPU) | wall / sample before | wall / sample after | goal |")
        print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in models:
            path = _model(name, Path(td))
            runs: dict[str, list[dict]] = {"before": [], "after": []}
            for _ in range(repeat):
                runs["before"].append(_child(before / "src", path, samples))
                runs["after"].append(_child(after, path, samples))
            b, a = runs["before"], runs["after"]
            same = all(r["out"] == b[0]["out"] for r in b + a)

            def span(rs, k):
                v = sorted(r[k] for r in rs)
                return f"{v[0]:.3f}–{v[-1]:.3f} s"
            print(f"| {name} | {b[0]['cycles']:,} / {a[0]['cycles']:,} | "
                  f"{all(r['bit_exact'] for r in b + a)} | {same} | {span(b, 'cpu')} | {span(a, 'cpu')} | "
                  f"{min(r['cpu'] for r in b) / min(r['cpu'] for r in a):.2f}× | {span(b, 'wall')} | "
                  f"{span(a, 'wall')} | ≤ {GOALS.get(name, float('nan')):.2f} s |", flush=True)
        load1 = os.getloadavg()
        print(f"\nLoad average {load1[0]:.1f} at the end (2 cores shared with other engineers' jobs: wall times "
              "include waiting for a core; CPU is this process's own).")
    update_section("PIMSAB functional simulation: A/B against an earlier tree", out.text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, help="an earlier tree to compare with (see the module docstring)")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--ref-samples", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--models", default="digits_cnn,lenet")
    ap.add_argument("--quick", action="store_true", help="4 samples, reference on 1, one repeat; no RESULTS.md")
    a = ap.parse_args()
    if a.quick:
        a.samples, a.ref_samples, a.repeat = 4, 1, 1
    if a.before is not None:
        compare_trees(a.before, a.models.split(","), a.samples, a.repeat)
        return
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
