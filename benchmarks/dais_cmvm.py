"""CMVM quality and solve time: nnisa's shift-add/CSE compiler vs da4ml 0.6.0's `cmvm.solve`.

Same random matrices (8×8 to 64×64, 4–8-bit weights, dense and sparse), int8 inputs.  Adders =
opcode 0/1 ops (summed over da4ml's pipeline stages).  Prints a Markdown table.
Usage: python benchmarks/dais_cmvm.py [--quick]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import captured, machine, today, update_section  # noqa: E402

CASES = [(8, 8, 4, 0.0), (8, 8, 8, 0.0), (16, 16, 4, 0.0), (16, 16, 6, 0.0), (16, 16, 8, 0.5),
         (32, 32, 4, 0.0), (32, 32, 8, 0.0), (32, 32, 6, 0.7), (48, 48, 6, 0.5), (64, 64, 4, 0.0),
         (64, 64, 8, 0.0), (64, 64, 8, 0.9)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from da4ml.cmvm import solve
    from da4ml.types import QInterval

    from nnisa.targets.dais.compiler.cmvm import compile_matrix, verify_linear
    cases = CASES[:6] if args.quick else CASES
    print(f"Machine: {machine()}; date {today()}; `python benchmarks/dais_cmvm.py` (adders, nnisa vs "
          "da4ml 0.6.0's `cmvm.solve` on the same random matrices, in the same run).\n")
    print("nnisa: `compile_matrix(W, (1,7,0), search=True)` (9 method/tie-break/decomposition variants, best kept); da4ml: `solve(W, method0='wmc', "
          "search_all_decompose_dc=False)` and the default `search_all_decompose_dc=True`.\n")
    print("| matrix | bits | sparsity | nnisa adders | da4ml adders | ratio | da4ml (search all) | ratio | "
          "nnisa bits | nnisa depth | nnisa time | da4ml time | da4ml search time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for n_in, n_out, bits, sp in cases:
        rng = np.random.default_rng(n_in * 1000 + bits * 10 + int(sp * 10))
        W = rng.integers(-2 ** (bits - 1), 2 ** (bits - 1), (n_in, n_out)).astype(np.float64)
        W[rng.random(W.shape) < sp] = 0
        t0 = time.perf_counter()
        p = compile_matrix(W, (1, 7, 0), search=True)
        tn = time.perf_counter() - t0
        assert verify_linear(p, W)
        st = p.stats()
        res = {}
        for sa in (False, True):
            t0 = time.perf_counter()
            pipe = solve(W.astype(np.float32), qintervals=[QInterval(-128.0, 127.0, 1.0)] * n_in, method0="wmc",
                         hard_dc=-1, search_all_decompose_dc=sa)
            res[sa] = (sum(int(np.isin([op.opcode for op in s.ops], [0, 1]).sum()) for s in pipe.solutions),
                       time.perf_counter() - t0)
        r0 = st["n_adders"] / res[False][0]
        r1 = st["n_adders"] / res[True][0]
        ratios.append((r0, r1))
        print(f"| {n_in}×{n_out} | {bits} | {sp:.0%} | {st['n_adders']} | {res[False][0]} | {r0:.3f} | "
              f"{res[True][0]} | {r1:.3f} | {st['adder_bits']} | {st['adder_depth']} | {tn:.2f} s | "
              f"{res[False][1]:.2f} s | {res[True][1]:.2f} s |")
    r = np.array(ratios)
    print(f"\nratio nnisa/da4ml: median {np.median(r[:, 0]):.3f}, worst {r[:, 0].max():.3f} "
          f"(vs search-all: median {np.median(r[:, 1]):.3f}, worst {r[:, 1].max():.3f})")


if __name__ == "__main__":
    with captured() as out:
        main()
    if "--quick" not in sys.argv:
        update_section("DAIS CMVM", out.text)
