"""DAIS network compile time and memory (issue 13 item 4): LeNet-5 and the bundled digits models.

Each model compiles in a fresh child process (numba import and kernel cache loads included, as
for ``nnisa compile -t dais``), ``--repeat`` times; per run: wall and CPU (user + sys) of
``DaisTarget().compile``, the child's peak RSS, the 1-minute load average before the run, the
program size and a hash of the program (sha-256 of the op arrays and the v1 binary: the same
model must give the same program every run); the CPU time of the bundle's text and da4ml JSON
writers (reference and fast, checked equal); then the whole ``nnisa compile -t dais`` CLI in a
fresh process (wall, CPU, peak RSS).  Goals: LeNet-5 ≤ 5 s and ≤ 500 MB, digits CNN
≤ 3 s.  Writes the "DAIS compile (issue 13 item 4)" section of benchmarks/RESULTS.md.

    python benchmarks/dais_compile.py [--models lenet,digits_cnn,digits_mlp] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _results import machine, today, update_section  # noqa: E402

CHILD = r"""
import hashlib, json, resource, sys, tempfile, time
import numpy as np
name = sys.argv[1]
from nnisa.targets.dais.target import DaisTarget
if name.startswith("digits"):
    from nnisa.frontend.models import bundled_model_path
    path = str(bundled_model_path(name))
else:
    import onnx
    from nnisa.frontend.zoo import ZOO
    path = tempfile.mkdtemp() + f"/{name}.onnx"
    onnx.save(ZOO[name][0](), path)
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
res = DaisTarget().compile(path)
wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
p = res.program
h = hashlib.sha256()
for a in (p.inp_shifts, p.out_idxs, p.out_shifts, p.out_negs, p.ops_array(), *p.tables):
    h.update(np.ascontiguousarray(a).tobytes())
h.update(DaisTarget().encode(p))
from nnisa.targets.dais.formats import fastrender, jsonio, text
wr = {}
for key, ref, fast in (("text", text.disassemble, fastrender.disassemble_fast),
                       ("json", jsonio.to_da4ml_json, fastrender.to_da4ml_json_fast)):
    t0 = time.process_time(); a = ref(p); t1 = time.process_time(); b = fast(p); t2 = time.process_time()
    assert a == b, key
    wr[key] = (t1 - t0, t2 - t1)
print(json.dumps({"wall": wall, "cpu": r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime,
                  "rss": r1.ru_maxrss / 1024, "ops": int(p.n_ops), "adders": res.report["adders"],
                  "hash": h.hexdigest()[:16], "writers": wr, "path": path}))
"""


def _cli(model: str) -> dict:
    """``nnisa compile -t dais MODEL -o TMP`` in a child under ``/usr/bin/time``: wall, CPU (user +
    sys), the child's own peak RSS, load before."""
    import tempfile
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", sys.executable, "-m", "nnisa", "compile",
                            "-t", "dais", model, "-o", out], capture_output=True, text=True, check=True)
    wall, user, sys_, rss = (float(x) for x in r.stderr.strip().splitlines()[-1].split()[1:])
    return {"load": load, "wall": wall, "cpu": user + sys_, "rss": rss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="lenet,digits_cnn,digits_mlp")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rows = [("| model | run | load avg before | compile wall s | compile CPU s | peak MB | ops | adders | program hash "
             "| text ref / fast CPU s | da4ml JSON ref / fast CPU s | CLI load | CLI wall s | CLI CPU s | CLI peak MB |"),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in a.models.split(","):
        for run in range(a.repeat):
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            cli = _cli(r["path"])
            print(name, run, f"load {load:.1f}", r, cli, flush=True)
            (tr, tf), (jr, jf) = r["writers"]["text"], r["writers"]["json"]
            rows.append(f"| {name} | {run + 1} | {load:.1f} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['rss']:.0f} | "
                        f"{r['ops']:,} | {r['adders']:,} | `{r['hash']}` | {tr:.2f} / {tf:.2f} | {jr:.2f} / {jf:.2f} "
                        f"| {cli['load']:.1f} | {cli['wall']:.2f} | {cli['cpu']:.2f} | {cli['rss']:.0f} |")
    head = (f"Machine: {machine()}; date {today()}; 2 cores shared with other jobs.  `python benchmarks/dais_compile.py`: "
            "`DaisTarget().compile` in a fresh process per run (numba import and kernel cache loads included; warm "
            "kernel cache), default options (CSE budget 500,000 steps per layer, row blocks of 32).  Wall time "
            "depends on the load (2 cores, 5 users); CPU = user + sys of the compile.  Goals: LeNet-5 ≤ 5 s and "
            "≤ 500 MB; digits CNN ≤ 3 s.  Program hashes before the issue 13 item 4 fast paths (same models): "
            "LeNet-5 `a490ae8a2f739010`, digits CNN `f64b1ade662e728b`, digits MLP `2dd435459b3ea396`.  Writers: "
            "the bundle's text and da4ml JSON of the compiled program, reference Python renderers "
            "(`text.disassemble`, `jsonio.to_da4ml_json`) vs the row-kernel ones (`fastrender`), CPU s in the "
            "same child, outputs asserted equal.  CLI: `python -m nnisa compile -t dais MODEL -o DIR` in a "
            "fresh process right after, under `/usr/bin/time` (bundle written; its own peak RSS).\n\n")
    update_section("DAIS compile (issue 13 item 4)", head + "\n".join(rows))


if __name__ == "__main__":
    main()
