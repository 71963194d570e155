"""DAIS interpreter throughput: nnisa's compiled engine vs da4ml 0.6.0's C++ interpreter, same run.

Prints Markdown tables: samples/s per batch size and threads, batch-1 latency.  Programs are
generated with da4ml (CMVM 256×256 `dummy` ≈94k ops, 64×64 `wmc`, an MLP 16-32-16-5).  nnisa is
timed twice: the pre-lowered engine (``Interpreter.run``) and the public API
(``nnisa.target("dais").simulate(program, inputs=...)``, repeated on the same program object:
steady state), plus the API's first call on a freshly read program (lowering and statistics
included).
Usage: python benchmarks/dais_interp.py [--quick]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import captured, machine, today, update_section  # noqa: E402


def _time(fn, min_s=0.5, max_reps=50):
    fn()  # warm-up (numba compile / caches)
    reps, t0 = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        dt = time.perf_counter() - t0
        if dt > min_s or reps >= max_reps:
            return dt / reps


def programs(quick):
    from da4ml.trace import FixedVariableArray, comb_trace
    from da4ml.trace.ops import relu
    rng = np.random.default_rng(0)
    out = {}
    n = 256
    W = rng.integers(-8, 8, (n, n)).astype(np.float32)
    x = FixedVariableArray.from_kif(np.ones(n, int), np.full(n, 7), np.zeros(n, int),
                                    solver_options={"search_all_decompose_dc": False, "method0": "dummy"})
    out["CMVM 256×256 s8/w4 dummy"] = comb_trace(x, x @ W).to_binary()
    W = rng.integers(-128, 128, (64, 64)).astype(np.float32)
    x = FixedVariableArray.from_kif(np.ones(64, int), np.full(64, 7), np.zeros(64, int),
                                    solver_options={"search_all_decompose_dc": False})
    out["CMVM 64×64 s8/w8 wmc"] = comb_trace(x, x @ W).to_binary()
    x = FixedVariableArray.from_kif(np.ones(16, int), np.full(16, 3), np.full(16, 2),
                                    solver_options={"search_all_decompose_dc": False})
    h = x
    for a, b in ((16, 32), (32, 16), (16, 5)):
        h = h @ (rng.integers(-8, 8, (a, b)).astype(np.float32) / 8)
        if b != 5:
            h = relu(h, i=np.full(b, 3), f=np.full(b, 2))
    out["MLP 16-32-16-5 ReLU"] = comb_trace(x, h).to_binary()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from da4ml._binary import dais_interp_run

    import nnisa
    from nnisa.targets.dais.formats.binary import read_binary
    from nnisa.targets.dais.sim.interp import Interpreter
    api = nnisa.target("dais")
    print(f"Machine: {machine()}; date {today()}; `python benchmarks/dais_interp.py` "
          "(samples/s, nnisa vs da4ml 0.6.0's C++ interpreter in the same run).\n")
    batches = (1, 100, 10000) if args.quick else (1, 10, 100, 1000, 10000)
    for name, b in programs(args.quick).items():
        p = read_binary(b)
        t0 = time.perf_counter()
        it = Interpreter(p)
        lower_ms = (time.perf_counter() - t0) * 1e3
        rng = np.random.default_rng(1)
        Xall = rng.integers(-128, 128, (max(batches), p.n_in)).astype(np.float64) / 4
        assert np.array_equal(it.run(Xall[:2000]), dais_interp_run(b, Xall[:2000], 1))  # bit-exact first
        print(f"### {name}: {p.n_ops} ops, {it._lowered.n_regs} registers, lowering {lower_ms:.0f} ms\n")
        print("| batch | da4ml 1 thr | da4ml 2 thr | nnisa 1 thr | nnisa 2 thr | nnisa API 1 thr | nnisa/da4ml (1 thr) "
              "| API/da4ml (1 thr) | nnisa 2 thr / da4ml 1 thr |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in batches:
            X = Xall[:n]
            r = {}
            for t in (1, 2):
                r["d", t] = n / _time(lambda: dais_interp_run(b, X, t))
                r["n", t] = n / _time(lambda: it.run(X, n_threads=t))
            r["a", 1] = n / _time(lambda: api.simulate(p, inputs={"x": X}))
            print(f"| {n:,} | {r['d', 1]:,.0f} | {r['d', 2]:,.0f} | {r['n', 1]:,.0f} | {r['n', 2]:,.0f} | "
                  f"{r['a', 1]:,.0f} | {r['n', 1] / r['d', 1]:.1f}× | {r['a', 1] / r['d', 1]:.1f}× | "
                  f"{r['n', 2] / r['d', 1]:.1f}× |")
        n = batches[-1]
        fresh = [read_binary(b) for _ in range(3)]
        t0 = time.perf_counter()
        for q in fresh:
            api.simulate(q, inputs={"x": Xall[:n]})
        first = (time.perf_counter() - t0) / len(fresh)
        print(f"\nAPI first call on a freshly read program, batch {n:,}: {first * 1e3:,.0f} ms "
              f"({n / first:,.0f} samples/s, lowering and statistics included)")
        lat_d = _time(lambda: dais_interp_run(b, Xall[:1], 1)) * 1e6
        lat_n = _time(lambda: it.run(Xall[:1])) * 1e6
        print(f"\nbatch-1 latency: da4ml {lat_d:,.0f} µs/call (re-parses the binary), nnisa {lat_n:,.0f} µs "
              f"(pre-lowered); op-evals/s at batch {batches[-1]:,} (nnisa 2 thr): "
              f"{p.n_ops * r['n', 2]:.2e}\n")


if __name__ == "__main__":
    with captured() as out:
        main()
    if "--quick" not in sys.argv:
        update_section("DAIS interpreter", out.text)
