"""Benchmark: cold starts — numba compile time of every JIT kernel, and `nnisa compile -t dais` on the
bundled digits CNN with an empty and with a warmed kernel cache (issue 9).

1. In a fresh process with an empty ``NUMBA_CACHE_DIR``, runs every target's ``warm_up`` (the jobs
   ``make install`` runs) and records each numba compilation: the kernel's own compile time and the
   time including the kernels and numba helpers it pulls in (first-level kernels only in the table;
   numba's library helpers are summed into their callers' inclusive time).
2. Times ``nnisa compile -t dais src/nnisa/data/digits_cnn.onnx`` (the CLI, its own process,
   wall and user CPU) with an empty cache and after the warm-up, ``--repeat`` times each
   (medians; the cores are shared).
3. ``--fresh-clone DIR`` also clones this checkout into DIR (next to ``../shared``), runs
   ``make install`` there (venv, pip, warm-up) and times the same command in the clone.

Rewrites the "JIT kernels and cold starts" section of RESULTS.md.

Usage: python benchmarks/jit_cold.py [--repeat 3] [--fresh-clone ../fresh-speed] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _results import machine, today, update_section  # noqa: E402

MODEL = "src/nnisa/data/digits_cnn.onnx"

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from _jitrec import record_compiles
t0 = time.perf_counter()
with record_compiles() as rec:
    from nnisa.warmup import warm_up
    per_target = warm_up(echo=None)
print(json.dumps({"total": time.perf_counter() - t0, "targets": per_target, "compiles": rec}))
"""


def _cli_compile(root: Path, env: dict, out: Path) -> tuple[float, float]:
    """(wall s, user CPU s) of the CLI compile in its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([str(root / ".venv" / "bin" / "nnisa"), "compile", "-t", "dais", str(root / MODEL), "-o",
                    str(out)], cwd=root, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime


def _median_runs(root: Path, env_for_run, repeat: int, tmp: Path) -> tuple[float, float]:
    walls, users = [], []
    for r in range(repeat):
        w, u = _cli_compile(root, env_for_run(r), tmp / f"out{r}")
        walls.append(w)
        users.append(u)
    return statistics.median(walls), statistics.median(users)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fresh-clone", type=Path, help="clone this checkout there, make install, time the compile")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    load_avg = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "cache"))
        res = json.loads(subprocess.run([sys.executable, "-c", _CHILD, str(HERE)], env=env, check=True,
                                        capture_output=True, text=True).stdout.strip().splitlines()[-1])
        print(f"warm-up with an empty cache: {res['total']:.1f} s {res['targets']}", flush=True)
        cold = _median_runs(ROOT, lambda r: dict(os.environ, NUMBA_CACHE_DIR=str(tmp / f"empty{r}")),
                            args.repeat, tmp)
        print(f"CLI compile, empty cache: {cold[0]:.2f} s wall, {cold[1]:.2f} s user", flush=True)
        warm = _median_runs(ROOT, lambda r: env, args.repeat, tmp)
        print(f"CLI compile, warmed cache: {warm[0]:.2f} s wall, {warm[1]:.2f} s user", flush=True)
        fresh = None
        if args.fresh_clone:
            dest = args.fresh_clone.resolve()
            if dest.exists():
                shutil.rmtree(dest)
            branch = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=ROOT, check=True,
                                    capture_output=True, text=True).stdout.strip()
            subprocess.run(["git", "clone", "-q", "-b", branch, str(ROOT), str(dest)], check=True)
            t0 = time.perf_counter()
            subprocess.run(["make", "install"], cwd=dest, check=True, capture_output=True)
            install_s = time.perf_counter() - t0
            clean = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
            first = _cli_compile(dest, clean, tmp / "fresh0")
            rest = _median_runs(dest, lambda r: clean, args.repeat, tmp)
            fresh = (install_s, first, rest)
            print(f"fresh clone: make install {install_s:.0f} s; first compile {first[0]:.2f} s wall "
                  f"({first[1]:.2f} s user); median {rest[0]:.2f} s", flush=True)
    kernels: dict[str, list[float]] = {}
    for name, incl, own, depth in res["compiles"]:
        if not name.startswith("nnisa."):
            continue
        k = kernels.setdefault(name.removeprefix("nnisa.targets."), [0.0, 0.0, 0, depth])
        k[0] += incl
        k[1] += own
        k[2] += 1
        k[3] = min(k[3], depth)
    rows = sorted(kernels.items(), key=lambda kv: -kv[1][0])
    lines = [
        f"{today()} — {machine()}; load average {load_avg:.1f} at the start (2 shared cores: the times "
        "below are wall times of a loaded machine; `user` is the process's CPU time).",
        "`python benchmarks/jit_cold.py" + (" --fresh-clone …" if fresh else "") + "`: every target's "
        "`warm_up` (what `make install` runs) in a fresh process with an empty `NUMBA_CACHE_DIR`; each "
        "numba compilation recorded (`numba:compile` events).",
        "",
        f"Warm-up with an empty cache: **{res['total']:.1f} s** "
        f"({', '.join(f'{t} {s:.1f} s' for t, s in res['targets'].items())}).",
        "",
        "| kernel | signatures | cold compile incl. callees and numba helpers (s) | own (s) |",
        "| --- | ---: | ---: | ---: |",
        *[f"| `{name}`{' (called by the kernels above)' if v[3] > 0 else ''} | {v[2]} | {v[0]:.2f} | {v[1]:.2f} |"
          for name, v in rows],
        "",
        f"`nnisa compile -t dais {MODEL}` (the CLI, own process, median of {args.repeat}):",
        "",
        "| kernel cache | wall (s) | user CPU (s) |",
        "| --- | ---: | ---: |",
        f"| empty (numba compiles the kernels it needs) | {cold[0]:.2f} | {cold[1]:.2f} |",
        f"| warmed (`python -m nnisa.warmup`) | {warm[0]:.2f} | {warm[1]:.2f} |",
    ]
    if fresh:
        install_s, first, rest = fresh
        lines += [f"| fresh clone after `make install` ({install_s:.0f} s), first run | {first[0]:.2f} | "
                  f"{first[1]:.2f} |",
                  f"| fresh clone, median of the next {args.repeat} | {rest[0]:.2f} | {rest[1]:.2f} |"]
    lines.append("")
    table = "\n".join(lines)
    print()
    print(table)
    if not args.no_write:
        update_section("JIT kernels and cold starts", table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
