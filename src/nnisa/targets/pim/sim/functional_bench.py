"""Synthetic PIMCOMP-NN-shaped programs and a throughput benchmark of the functional simulator.

``python -m nnisa.targets.pim.sim.functional_bench [instructions] [--reference]`` prints
instructions/second of the fast (and optionally the reference) interpreter.

The synthetic program mirrors the op mix of the conformance program (spec §12.3): per
operation one ``sldi`` per register operand (2/3 of all instructions), 20 % ``lmv`` of 1–128
bytes, and mvmul / vvadd / ld / st / vrelu / lldi in their measured proportions, all with
8-bit elements and in-bounds addresses.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..isa import build_isa
from ..program import PimProgram

#: (mnemonic, share among non-sldi instructions) — conformance mix without sldi/send/recv
MIX = [("lmv", 0.6229), ("mvmul", 0.1314), ("vvadd", 0.1014), ("ld", 0.0828), ("st", 0.0300),
       ("vrelu", 0.0207), ("lldi", 0.0084)]


def synthetic_program(n_instr: int, cores: int = 2, seed: int = 0, groups: int = 4) -> PimProgram:
    """A weightless program of about ``n_instr`` instructions over ``cores`` cores.

    Each core: ``setbw 8, 8`` then ``(sldi ...)*k + op`` blocks; mvmul uses ``groups`` groups of
    one 128 × 128 crossbar each.  Global addresses use the single-register convention
    (run with ``global_address_mode="single32"``).
    """
    isa = build_isa(64, True)
    rng = np.random.default_rng(seed)
    names = [m for m, _ in MIX]
    probs = np.array([p for _, p in MIX])
    probs /= probs.sum()
    prog = PimProgram(extended=True)
    per_core = max(1, n_instr // cores)
    R = isa.row
    for c in range(cores):
        rows = [R("setbw", ibiw=8, obiw=8)]
        while len(rows) < per_core:
            m = names[rng.choice(len(names), p=probs)]
            a, b = int(rng.integers(0, 60000)), int(rng.integers(0, 60000))
            n = int(rng.integers(1, 129))
            if m == "lmv":
                rows += [R("sldi", rd=0, imm=a), R("sldi", rd=1, imm=b), R("lmv", rd=0, rs1=1, len=n)]
            elif m == "mvmul":
                rows += [R("sldi", rd=0, imm=a), R("sldi", rd=1, imm=b),
                         R("mvmul", rd=0, rs1=1, mbiw=8, group=int(rng.integers(0, groups)))]
            elif m in ("vvadd",):
                rows += [R("sldi", rd=0, imm=a), R("sldi", rd=1, imm=b), R("sldi", rd=2, imm=n * 7),
                         R("vvadd", rd=0, rs1=1, rs2=2, len=int(rng.integers(64, 1001)))]
            elif m == "vrelu":
                rows += [R("sldi", rd=0, imm=a), R("sldi", rd=1, imm=b), R("vrelu", rd=0, rs1=1, len=256)]
            elif m == "ld":
                rows += [R("sldi", rd=0, imm=a), R("sldi", rd=1, imm=b * 8), R("ld", rd=0, rs1=1, len=n * 4)]
            elif m == "st":
                rows += [R("sldi", rd=0, imm=b * 8), R("sldi", rd=1, imm=a), R("st", rd=0, rs1=1, len=n * 4)]
            else:
                rows += [R("sldi", rd=0, imm=a), R("lldi", rd=0, imm=0, len=n)]
        prog.cores[c] = isa.rows(rows)
        prog.array_group_map[c] = [1] * groups
    prog.config_extra["xbar_size"] = [128, 128]
    return prog


def bench(n_instr: int = 1_000_000, engine: str = "fast", weights: str = "random") -> tuple[int, float]:
    """Run :func:`synthetic_program` and return (instructions, seconds)."""
    from .functional import run_functional
    prog = synthetic_program(n_instr)
    t0 = time.perf_counter()
    res = run_functional(prog, weights=weights, global_address_mode="single32", engine=engine)
    return res.total_instructions, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instructions", type=int, nargs="?", default=1_000_000)
    ap.add_argument("--reference", action="store_true", help="also time the reference path (slow)")
    ap.add_argument("--weights", default="random", choices=["random", "zeros"])
    args = ap.parse_args(argv)
    paths = ["fast"] + (["reference"] if args.reference else [])
    for path in paths:
        n, s = bench(args.instructions if path == "fast" else min(args.instructions, 20_000), path, args.weights)
        print(f"{path:9s} {n:>10,} instructions  {s:7.2f} s  {n / s / 1e6:6.3f} M instr/s")


if __name__ == "__main__":
    main()
