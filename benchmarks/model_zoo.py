"""Model zoo benchmark (issue 13): every ``nnisa.frontend.zoo`` model through ``nnisa run`` on pim and dais.

Each (model, target) runs in its own child process with a wall-time cap (``--timeout``, default
600 s) so a slow compile is reported as such; the table gives compiles or not (with the reason),
bit-exactness, top-1 agreement with onnxruntime and the max relative error on 16 samples (seed 0),
compile and simulate time, and the child's peak memory.  Writes the "Model zoo" section of
benchmarks/RESULTS.md.

    python benchmarks/model_zoo.py [--timeout S] [--max-gb G] [--models a,b] [--targets pim,dais]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _results import machine, today, update_section  # noqa: E402

CHILD = r"""
import json, resource, sys, onnx
from nnisa.api import run_model
from nnisa.frontend.zoo import ZOO
name, target, path, max_gb = sys.argv[1:5]
cap = int(float(max_gb) * (1 << 30))   # address-space cap: the machine is shared
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
onnx.save(ZOO[name][0](), path)
try:
    r = run_model(target, path, samples=16, **({"cse_budget": 500_000} if target == "dais" else {}))
    out = {k: r[k] for k in ("bit_exact", "top1_agreement", "max_rel_error", "compile_s", "sim_s")}
except MemoryError:
    out = {"error": f"out of memory (address space capped at {max_gb} GB)"}
except Exception as e:  # the reason goes into the table
    out = {"error": str(e).split(": ", 1)[-1].replace(f" (target {target})", "")[:200]}
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_one(name: str, target: str, timeout: float, max_gb: float = 8.0) -> dict:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, name, target, str(Path(d) / f"{name}.onnx"), str(max_gb)],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish in {timeout:.0f} s"}
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        res = json.loads(lines[-1]) if lines else {"error": (p.stderr.strip().splitlines() or ["crashed"])[-1][:160]}
        res["wall_s"] = time.perf_counter() - t0
        return res


def _previous_rows() -> dict:
    """(model, target) → table row of the current "Model zoo" section of RESULTS.md."""
    from _results import RESULTS
    text = RESULTS.read_text() if RESULTS.exists() else ""
    start = text.find("## Model zoo (issue 13)")
    if start < 0:
        return {}
    end = text.find("\n## ", start + 5)
    out = {}
    for line in text[start:end if end > 0 else None].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 3 and cells[1] in ("pim", "dais"):
            out[(cells[0], cells[1])] = line
    return out


def main() -> None:
    import os

    from nnisa.frontend.zoo import ZOO
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--targets", default="pim,dais")
    ap.add_argument("--max-gb", type=float, default=8.0, help="address-space cap of each child (GB)")
    a = ap.parse_args()
    header = ["| model | target | compiles | bit-exact | top-1 vs onnxruntime | max rel. error | compile s | "
              "simulate s | peak MB | load avg |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    done = _previous_rows()          # rows of an earlier run that this run does not redo are kept
    head = (f"Machine: {machine()}; date {today()}; 2 cores shared with other jobs (load avg = 1-min load after "
            "the row).  16 samples uniform in [-1, 1) (seed 0), calibration on 64 disjoint samples (seed 1), pow2 "
            "per-channel int8, calibration=max; DAIS CSE budget 500,000 steps per layer (deterministic), row "
            "blocks of 32.  "
            "Each row runs in a child process with a wall cap (`--timeout`; a row that hits it says so).  Models: `nnisa.frontend.zoo` (seeded weights, small inputs).  "
            "DAIS before issue 13 (the issue's figures): LeNet-5 47 s and 2.5 GB, a small VGG 7 min 25 s and 7.4 GB, "
            "ResNet-18 and MobileNet-V2 at 32×32 not finished in 10 min (8 GB); goals: LeNet-5 ≤ 5 s and ≤ 500 MB, "
            "MobileNet-V2 ≤ 5 min and ≤ 4 GB.\n\n")
    for target in a.targets.split(","):          # all of one target first: the fast rows land early
        for name in a.models.split(","):
            r = run_one(name, target, a.timeout, a.max_gb)
            load = os.getloadavg()[0]
            print(name, target, r, f"load {load:.1f}", flush=True)
            if "error" in r:
                row = (f"| {name} | {target} | no: {r['error']} | | | | | | {r.get('rss_mb', 0):.0f} | "
                       f"{load:.1f} |")
            else:
                row = (f"| {name} | {target} | yes | {r['bit_exact']} | {r['top1_agreement'] * 16:.0f}/16 | "
                       f"{r['max_rel_error']:.3f} | {r['compile_s']:.1f} | {r['sim_s']:.1f} | {r['rss_mb']:.0f} | "
                       f"{load:.1f} |")
            done[(name, target)] = row
            known = [(m, t) for t in ("pim", "dais") for m in ZOO]
            rows = header + [done[k] for k in known if k in done] + [done[k] for k in sorted(set(done) - set(known))]
            update_section("Model zoo (issue 13)", head + "\n".join(rows))   # after every row: partial runs count


if __name__ == "__main__":
    main()
