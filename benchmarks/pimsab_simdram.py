"""PIMSAB SIMDRAM benchmark (spec §5.5, issue 15): binarized LeNet, VGG-13, VGG-16 on PIMSAB-S.

Every layer is a DSL program (``nnisa.targets.pimsab.compiler.binarized``) compiled for PIMSAB-S
(Table 4: one tile) and timed from an idle machine (timing only, `simulator` cycle mode); the
network figure is the sum over its programs (latency of one image, layers back to back through
DRAM).  LeNet is also run in the functional simulator on a random bit image and checked against
a NumPy ±1 network.  The spec gives only the paper's average speedup over SIMDRAM (3.88x, §6.1)
and no per-network SIMDRAM times, so no ratio is computed.

Writes the "PIMSAB SIMDRAM (binarized)" section of benchmarks/RESULTS.md.  ``--quick``: LeNet only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import machine, peak_rss_mb, today, update_section  # noqa: E402

from nnisa.targets.pimsab.compiler import binarized as B  # noqa: E402


def lenet_check(progs) -> str:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 2, (1, 32, 32))
    shapes = {"conv1": (6, 1, 5, 5), "conv2": (16, 6, 5, 5), "fc1": (400, 120), "fc2": (120, 84), "fc3": (84, 10)}
    W = {k: rng.integers(0, 2, s) for k, s in shapes.items()}
    t0 = time.process_time()
    out = B.run_network(progs, img, W)
    pm = lambda b: 2 * np.asarray(b, np.int64) - 1  # noqa: E731

    def conv(x, w):
        K = w.shape[2]
        E, F = x.shape[1] - K + 1, x.shape[2] - K + 1
        return sum(np.einsum("mc,cef->mef", w[:, :, r, s], x[:, r:r + E, s:s + F]) for r in range(K) for s in range(K))

    def pool(b):
        C, H, Wd = b.shape
        return b.reshape(C, H // 2, 2, Wd // 2, 2).max(axis=(2, 4))
    p1 = pool((conv(pm(img), pm(W["conv1"])) >= 0).astype(int))
    p2 = pool((conv(pm(p1), pm(W["conv2"])) >= 0).astype(int))
    f1 = (pm(p2.reshape(-1)) @ pm(W["fc1"]) >= 0).astype(int)
    f2 = (pm(f1) @ pm(W["fc2"]) >= 0).astype(int)
    ok = np.array_equal(out["scores"], pm(f2) @ pm(W["fc3"]))
    return (f"LeNet functional run (random bit image and weights, seed 0): scores {out['scores'].tolist()}, "
            f"{'bit-exact' if ok else 'MISMATCH'} vs the NumPy ±1 network ({time.process_time() - t0:.2f} s CPU).")


def network(name: str, lines: list[str]) -> dict:
    t0 = time.process_time()
    progs = B.compile_network(name)
    compile_s = time.process_time() - t0
    tm = B.time_network(progs)
    sim_s = sum(r["sim_cpu_s"] for r in tm["layers"])
    instr = sum(r["instructions"] for r in tm["layers"])
    lines += ["", f"### {name}", "",
              f"**{tm['cycles']:,} cycles** = {tm['time_us']:,.1f} µs at 1.5 GHz, {tm['energy_j'] * 1e3:.3f} mJ "
              f"dynamic; {len(progs)} programs, {instr:,} instructions; compile {compile_s:.1f} s CPU, "
              f"timing {sim_s:.1f} s CPU.", "",
              "| layer | kind | cycles | share | energy (mJ) | instructions | distribution |",
              "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in tm["layers"]:
        lines.append(f"| {r['layer']} | {r['kind']} | {r['cycles']:,} | {100 * r['cycles'] / tm['cycles']:.1f} % | "
                     f"{r['energy_j'] * 1e3:.3f} | {r['instructions']:,} | {r['distribution']} |")
    print("\n".join(lines[-len(tm["layers"]) - 6:]), flush=True)
    if name == "lenet":
        lines += ["", lenet_check(progs)]
    return {"cycles": tm["cycles"], "programs": len(progs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="LeNet only")
    args = ap.parse_args()
    load = os.getloadavg()
    lines = [f"Measured {today()} on {machine()} with `python benchmarks/pimsab_simdram.py` "
             f"(load average at start {load[0]:.2f}).", "",
             "Binarized networks of spec §5.5 compiled for PIMSAB-S (Table 4: 1 tile of 256 CRAMs) by the DSL "
             "compiler: `xor` + bit-serial add trees (growing accumulator, `reduce_tile`) for the popcounts, "
             "sign thresholds as a free shift of `popcount − n//2 − 1`, max pools as `max` reductions of bits. "
             "Cycles: nnisa's PIMSAB model (`simulator` cycle mode), one image, layer programs back to back "
             "from an idle machine. Layer sizes: LeNet as the spec; VGG sizes are nnisa's Decision (3x3 "
             "same convolutions on 224x224, the 3x3 pool with stride 3, see docs/pimsab_compiler.md).", "",
             "Paper target (spec §6.1): PIMSAB-S is **3.88x** faster than SIMDRAM on average over VGG-13, "
             "VGG-16 and LeNet (lowest on LeNet). The spec gives no per-network SIMDRAM times, so no ratio "
             "is computed here."]
    for name in (("lenet",) if args.quick else ("lenet", "vgg13", "vgg16")):
        network(name, lines)
    lines += ["", f"Peak memory {peak_rss_mb():.0f} MB."]
    update_section("PIMSAB SIMDRAM (binarized)", "\n".join(lines))
    print(lines[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
