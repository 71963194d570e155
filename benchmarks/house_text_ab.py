"""A/B of the PIM text paths between two source trees, alternated in the same run (issue 24: the
one core assembler must keep the PIM text assembler as fast).

``nnisa convert -t pim`` of ResNet-18 (``../shared/conformance/pim/resnet18_batch_8x8.json.gz``,
3.1 M instructions): JSON → ``.s`` (disassembler) and ``.s`` → ``.json.gz`` (the assembler: the
numba scanner, with the core assembler as its fallback), plus the Python assembler alone on the
first 400,000 lines (``assemble_text(fast=False)``: the path every non-canonical line takes).

    python benchmarks/house_text_ab.py A=/work/main/src B=src --runs 3

Prints wall and CPU seconds (user + sys of the child) per tree, min and median.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "pim" / "resnet18_batch_8x8.json.gz"
PY_ONLY = """
import sys, time
from nnisa.targets.pim.formats.text import assemble_text
text = open(sys.argv[1]).read()
sub = "\\n".join(text.splitlines()[:400000]) + "\\n"
t0 = time.process_time(); assemble_text(sub, fast=False); print(time.process_time() - t0)
"""


def _child(tree: str, args: list[str]) -> tuple[float, float, str]:
    env = dict(os.environ, PYTHONPATH=tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        raise SystemExit(f"{tree}: {' '.join(args)} failed: {r.stderr[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs=2, help="NAME=path/to/src")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    trees = [t.split("=", 1) for t in a.trees]
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        text, ext = Path(d) / "r.s", Path(d) / "ext.s"
        _child(trees[0][1], ["-m", "nnisa", "convert", "-t", "pim", str(SRC), str(text)])
        # the JSON's strict text cannot hold group ids > 15: assemble it as extended
        ext.write_text(text.read_text().replace(".encoding strict", ".encoding extended", 1))
        for _ in range(a.runs):
            for name, tree in trees:
                convert = ["-m", "nnisa", "convert", "-t", "pim"]
                jobs = {"json→.s": [*convert, str(SRC), str(Path(d) / f"{name}.s")],
                        ".s→json.gz": [*convert, str(ext), str(Path(d) / f"{name}.json.gz")],
                        "python asm 400k lines": ["-c", PY_ONLY, str(ext)]}
                for job, args in jobs.items():
                    wall, cpu, stdout = _child(tree, args)
                    if job.startswith("python"):
                        wall = cpu = float(stdout)  # the assembler's own CPU time (no import)
                    out.setdefault((job, name), []).append((wall, cpu))
        same = (Path(d) / f"{trees[0][0]}.s").read_bytes() == (Path(d) / f"{trees[1][0]}.s").read_bytes()
    print(f"load: {os.getloadavg()}; texts identical: {same}")
    print("| job | tree | wall s min / median | CPU s min / median |")
    print("| --- | --- | ---: | ---: |")
    for (job, name), v in out.items():
        w, c = [x[0] for x in v], [x[1] for x in v]
        print(f"| {job} | {name} | {min(w):.2f} / {statistics.median(w):.2f} | "
              f"{min(c):.2f} / {statistics.median(c):.2f} |")


if __name__ == "__main__":
    main()
