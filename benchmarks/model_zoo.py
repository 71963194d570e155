"""Model zoo benchmark (issues 13, 26 item 5): every zoo model on every target.

Models: the bundled ones (``nnisa models``), the real PyTorch exports in tests/data/torch_exports/
and the seeded builders of ``nnisa.frontend.zoo``.  Each (model, target) runs ``nnisa.api.run_model``
on 16 samples (the bundled test set for bundled models, else uniform [-1, 1), seed 0) in its own
child process with a wall cap (``--timeout``) and an address-space cap (``--max-gb``), niced.
A row gives compile s, simulate s, the child's peak MB, bit-exactness, top-1 agreement with
onnxruntime, cycles, latency and energy per input; or the one-line refusal (a target's
``NnisaError``), or ``traceback:`` with the exception when a compiler crashed (a bug).

Writes the "Model zoo: every model on every target" section of benchmarks/out/RESULTS.md
(benchmarks/RESULTS.md with --update-docs) after every row, so a partial run counts.

    python benchmarks/model_zoo.py [--timeout S] [--samples N] [--max-gb G] [--models a,b] [--targets pim,dais]
                                   [--jobs J] [--update-docs]

``--jobs J`` runs J children at once (rows keep the table's order; each child's wall cap and
memory cap are its own, so on a 2-core machine 2 jobs roughly halve the run).
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

sys.path.insert(0, str(Path(__file__).parent))
from _results import machine, today, update_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "tests" / "data" / "torch_exports"
SECTION = "Model zoo: every model on every target (issue 26 item 5)"

CHILD = r"""
import json, os, resource, sys, onnx
os.nice(10)
from nnisa.api import run_model
from nnisa.core.errors import NnisaError
kind, name, target, path, max_gb, samples = sys.argv[1:7]
cap = int(float(max_gb) * (1 << 30))   # address-space cap: the machine is shared
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
if kind == "zoo":
    from nnisa.frontend.zoo import ZOO
    onnx.save(ZOO[name][0](), path)
try:
    r = run_model(target, path, samples=int(samples), **({"cse_budget": 500_000} if target == "dais" else {}))
    out = {k: r.get(k) for k in ("bit_exact", "top1_agreement", "compile_s", "sim_s", "cycles", "latency_ns",
                                 "period_ns", "energy_pj", "energy_per_input_pj", "inputs")}
except MemoryError:
    out = {"error": f"out of memory (address space capped at {max_gb} GB)"}
except NnisaError as e:  # a refusal: its one line goes into the table
    out = {"error": " ".join(str(e).split())[:220]}
except Exception as e:  # a crash: a bug to fix
    out = {"error": "traceback: " + type(e).__name__ + ": " + " ".join(str(e).split())[:180], "crash": True}
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def zoo_models() -> list[tuple[str, str, str]]:
    """(kind, name, path or '') of every model: bundled, torch exports, zoo builders."""
    from nnisa.frontend.models import bundled_model_names, bundled_model_path
    from nnisa.frontend.zoo import ZOO
    out = [("bundled", n, str(bundled_model_path(n))) for n in bundled_model_names()]
    out += [("torch", p.stem, str(p)) for p in sorted(EXPORTS.glob("*.onnx"))]
    out += [("zoo", n, "") for n in ZOO]
    return out


def run_one(kind: str, name: str, path: str, target: str, timeout: float, max_gb: float, samples: int = 16) -> dict:
    with tempfile.TemporaryDirectory() as d:
        where = path or str(Path(d) / f"{name}.onnx")
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, kind, name, target, where, str(max_gb), str(samples)],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"not finished in {timeout:.0f} s (wall cap of this run)", "timeout": True}
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        res = json.loads(lines[-1]) if lines else {
            "error": "crashed: " + ((p.stderr.strip().splitlines() or ["no output"])[-1][:160]), "crash": True}
        res["wall_s"] = time.perf_counter() - t0
        return res


#: bit-exactness: n/a on machines with their own float/fixed-point arithmetic (tensil, cherry)
EXACT = {True: "yes", False: "NO", None: "n/a"}


def _num(v, fmt: str) -> str:
    return "–" if v is None else format(v, fmt)


def row_text(kind: str, name: str, target: str, r: dict, load: float, samples: int = 16) -> str:
    if "error" in r:
        return f"| {name} | {kind} | {target} | no: {r['error']} | | | | | | | | {load:.1f} |"
    e = r.get("energy_per_input_pj")
    energy = "– (no energy model)" if e is None else f"{e / 1e6:.3g} µJ"
    top1 = r.get("top1_agreement")
    return (f"| {name} | {kind} | {target} | {_num(r.get('compile_s'), '.1f')} | {_num(r.get('sim_s'), '.1f')} | "
            f"{r.get('rss_mb', 0):.0f} | {EXACT[r.get('bit_exact')]} | {'–' if top1 is None else f'{top1 * samples:.0f}/{samples}'} | "
            f"{_num(r.get('cycles'), ',.0f')} | {_num(r.get('latency_ns'), ',.0f')} | {energy} | {load:.1f} |")


def main() -> None:
    from nnisa.core.target import target_names
    models = zoo_models()
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--models", default=",".join(m[1] for m in models))
    ap.add_argument("--targets", default=",".join(target_names()))
    ap.add_argument("--max-gb", type=float, default=6.0, help="address-space cap of each child (GB)")
    ap.add_argument("--samples", type=int, default=16, help="inputs per (model, target)")
    ap.add_argument("--jobs", type=int, default=1, help="children run at once")
    a = ap.parse_args()
    chosen = [m for m in models if m[1] in a.models.split(",")]
    targets = a.targets.split(",")
    header = ["| model | kind | target | compile s | simulate s | peak MB | bit-exact | top-1 vs onnxruntime | "
              "cycles | latency ns | energy / input | load |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    start_load = os.getloadavg()
    head = (f"Machine: {machine()}; date {today()}; load average at the start {start_load[0]:.1f}, "
            f"{start_load[1]:.1f}, {start_load[2]:.1f} (2 cores shared with other sessions; `load` = 1-min load "
            f"after the row).  `python benchmarks/model_zoo.py --timeout {a.timeout:.0f} --samples {a.samples} --jobs {a.jobs}`: each "
            f"row is `nnisa.api.run_model` on {a.samples} samples (bundled models: the test set; others uniform [-1, 1), seed 0) "
            f"in a niced child process capped at {a.timeout:.0f} s wall and {a.max_gb:g} GB; DAIS CSE budget "
            "500,000.  kind: bundled (`nnisa models`), torch (tests/data/torch_exports, real PyTorch exports), zoo "
            "(`nnisa.frontend.zoo`, seeded builders).  `no:` is the target's one-line refusal; `traceback:` a "
            "compiler crash (a bug); a wall-cap row is a timing limit of this loaded run, not a refusal.  "
            "Latency: one input in → out; energy per input: `energy_per_input_pj`.\n\n")
    done: dict[int, str] = {}
    crashes = timeouts = ok = 0
    t0 = time.perf_counter()
    pairs = [(m, t) for m in chosen for t in targets]
    from concurrent.futures import ThreadPoolExecutor  # threads only wait: each row is its own child process
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = {pool.submit(run_one, kind, name, path, target, a.timeout, a.max_gb, a.samples): i
                   for i, ((kind, name, path), target) in enumerate(pairs)}
        from concurrent.futures import as_completed
        for fut in as_completed(futures):
            i = futures[fut]
            (kind, name, path), target = pairs[i]
            r = fut.result()
            load = os.getloadavg()[0]
            crashes += bool(r.get("crash"))
            timeouts += bool(r.get("timeout"))
            ok += "error" not in r
            print(f"[{len(done) + 1}/{len(pairs)}] {name} on {target}: {r.get('error') or 'ok'} "
                  f"({time.perf_counter() - t0:.0f} s, load {load:.1f})", flush=True)
            done[i] = row_text(kind, name, target, r, load, a.samples)
            rows = [done[k] for k in sorted(done)]
            summary = (f"\n\n{len(rows)} of {len(pairs)} pairs measured ({a.jobs} at a time): {ok} run, {crashes} "
                       f"crashed (traceback), {timeouts} at the wall cap, {len(rows) - ok - crashes - timeouts} "
                       f"refused; {time.perf_counter() - t0:.0f} s in all.")
            update_section(SECTION, head + "\n".join(header + rows) + summary)


if __name__ == "__main__":
    main()
