"""Generated-model matrix: every generator of tests/generated/modelgen.py on every target.

    python benchmarks/fuzz_ops.py [--targets a,b] [--ops A,B] [--seeds N] [--timeout S]

Prints one line per (target, op, seed) and a summary matrix (op × target: exact/ran/inexact/
refused/crash counts).  A crash is a defect; a refusal must name the operator or the limit.
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from generated.harness import Outcome, run_generated  # noqa: E402
from generated.modelgen import GENERATORS, generate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="pim,dais,tensil,pimsab,cherry")
    ap.add_argument("--ops", default=",".join(GENERATORS))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()

    def alarm(*_):
        raise TimeoutError("timeout")
    signal.signal(signal.SIGALRM, alarm)
    table: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for t in a.targets.split(","):
        for op in a.ops.split(","):
            for seed in range(a.seeds):
                gen = generate(op, seed)
                t0 = time.perf_counter()
                signal.alarm(a.timeout)
                try:
                    out = run_generated(t, gen)
                except TimeoutError:
                    out = Outcome("timeout", f"> {a.timeout} s")
                finally:
                    signal.alarm(0)
                table[(op, t)][out.kind] += 1
                err = f" rel {out.max_rel_error:.3g}" if out.max_rel_error is not None else ""
                print(f"{t:7s} {op:20s} {seed:3d} {out.kind:8s} {time.perf_counter() - t0:6.1f}s{err} "
                      f"{out.message[:200]} | {gen.desc}", flush=True)
    targets = a.targets.split(",")
    print("\n| op | " + " | ".join(targets) + " |\n| --- |" + " --- |" * len(targets))
    for op in a.ops.split(","):
        cells = [" ".join(f"{k}:{v}" for k, v in sorted(table[(op, t)].items())) for t in targets]
        print(f"| {op} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
