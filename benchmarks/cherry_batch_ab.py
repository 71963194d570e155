"""Cherry before/after in one run (issues 26, 30): ``nnisa.api.run_model`` of zoo models on N samples
from two source trees, alternated (A, B, A, B, ...), each in its own niced child process.

    python benchmarks/cherry_batch_ab.py --before /tmp/before-cherry [--after .] [--models resnet18]
                                         [--samples 16] [--rounds 1] [--timeout 900]

``--before`` is a tree of an older commit (``git archive <rev> | tar -x -C DIR``).  Each row gives
compile s, simulate s, wall s of the child, cycles, top-1 agreement with onnxruntime and the
1-minute load average when the child ended; the last lines give the speed-ups of the medians.
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
from statistics import median

CHILD = r"""
import json, os, sys, time, onnx
os.nice(10)
t0 = time.perf_counter()
from nnisa.api import run_model
from nnisa.frontend.zoo import ZOO
name, path, samples = sys.argv[1], sys.argv[2], int(sys.argv[3])
onnx.save(ZOO[name][0](), path)
r = run_model("cherry", path, samples=samples)
print(json.dumps({"compile_s": r["compile_s"], "sim_s": r["sim_s"], "cycles": r.get("cycles"),
                  "top1": r.get("top1_agreement"), "wall_s": time.perf_counter() - t0}))
"""


def run_child(tree: Path, name: str, samples: int, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, name, str(Path(d) / f"{name}.onnx"), str(samples)],
                               capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"not finished in {timeout:.0f} s", "load": os.getloadavg()[0]}
        if p.returncode:
            return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:160], "load": os.getloadavg()[0]}
        out = json.loads(p.stdout.strip().splitlines()[-1])
        out["child_s"] = time.perf_counter() - t0
        out["load"] = os.getloadavg()[0]
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, type=Path)
    ap.add_argument("--after", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument("--models", default="resnet18")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    a = ap.parse_args()
    print(f"load at the start: {os.getloadavg()[0]:.1f}; {a.samples} samples; before = {a.before}, after = {a.after}")
    print("| model | tree | round | compile s | simulate s | child wall s | cycles | top-1 | load |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows: dict[tuple[str, str], list[dict]] = {}
    for name in a.models.split(","):
        for rnd in range(a.rounds):
            for label, tree in (("before", a.before), ("after", a.after)):
                r = run_child(tree, name, a.samples, a.timeout)
                rows.setdefault((name, label), []).append(r)
                if "error" in r:
                    print(f"| {name} | {label} | {rnd + 1} | {r['error']} | | | | | {r['load']:.1f} |", flush=True)
                    continue
                print(f"| {name} | {label} | {rnd + 1} | {r['compile_s']:.1f} | {r['sim_s']:.1f} | {r['child_s']:.1f} | "
                      f"{r['cycles']:,} | {r['top1']:.2f} | {r['load']:.1f} |", flush=True)
    for name in a.models.split(","):
        ok = {k: [r for r in rows.get((name, k), []) if "error" not in r] for k in ("before", "after")}
        if ok["before"] and ok["after"]:
            for key in ("compile_s", "sim_s", "child_s"):
                b, f = median(r[key] for r in ok["before"]), median(r[key] for r in ok["after"])
                print(f"{name} {key}: before {b:.1f}, after {f:.1f} ({b / f:.1f}x)")


if __name__ == "__main__":
    main()
