"""Built-in workloads for ``nnisa bench -t dais``.

* ``cmvm-64``: a random 64 × 64 8-bit constant matrix compiled with CSE (adders, depth, solve time);
* ``cmvm-256``: a random 256 × 256 4-bit matrix as plain adder trees (≈94 k ops, the interpreter
  benchmark's program) and the interpreter's throughput at batch 10,000 on one thread;
* ``digits-mlp``: the bundled digits MLP compiled and run on its test set, bit-exact check.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...core.errors import UnsupportedError
from ...core.target import Stats

WORKLOADS = {
    "cmvm-64": "random 64x64 8-bit CMVM, CSE (wmc): adders, adder depth, solve time",
    "cmvm-256": "random 256x256 4-bit CMVM as adder trees (~94k ops): interpreter samples/s at batch 10,000",
    "digits-mlp": "bundled digits MLP: compile, run the 360-image test set, bit-exact vs the frontend",
}


def _throughput(prog, batch: int = 10_000, n_threads: int = 1) -> float:
    from .sim.interp import Interpreter
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (batch, prog.n_in)).astype(np.float64)
    it = Interpreter(prog)
    it.run(x[:10], n_threads=n_threads)  # JIT / lowering outside the timing
    t0 = time.perf_counter()
    it.run(x, n_threads=n_threads)
    return batch / (time.perf_counter() - t0)


def run_workload(name: str, config: Any = None) -> Stats:
    """Run one workload; its figures (``wall_s`` included)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    if name in ("cmvm-64", "cmvm-256"):
        from .compiler.cmvm import compile_matrix
        n, bits, method = (64, 8, "wmc") if name == "cmvm-64" else (256, 4, "dummy")
        W = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (n, n)).astype(np.float64)
        prog = compile_matrix(W, (1, 7, 0), method=method)
        t1 = time.perf_counter()
        st = prog.stats()
        out = {"instructions": st["n_ops"], "adders": st["n_adders"], "adder_bits": st["adder_bits"],
               "adder_depth": st["adder_depth"], "compile_s": t1 - t0}
        if name == "cmvm-256":
            out["samples_per_s"] = _throughput(prog)
            out["summary"] = (f"{n}x{n} CMVM as adder trees ({st['n_ops']:,} ops): interpreter "
                              f"{out['samples_per_s']:,.0f} samples/s at batch 10,000 on 1 thread "
                              "(da4ml's C++: ≈2,300)")
        else:
            out["summary"] = (f"{n}x{n} {bits}-bit CMVM with CSE: {st['n_adders']:,} adders, depth "
                              f"{st['adder_depth']}, solved in {t1 - t0:.1f} s")
    elif name == "digits-mlp":
        from ...core.target import run_samples, simulate_stacked
        from ...frontend.models import bundled_model_path, bundled_testset
        from .compiler import compile_model
        from .sim.simulate import simulate
        path = bundled_model_path("digits_mlp")
        x, labels = bundled_testset("digits_mlp")
        c = compile_model(path)
        t1 = time.perf_counter()
        outs, stats, checks = run_samples(lambda comp, samples, _first: simulate_stacked(simulate, comp, samples),
                                          c, {"input": x})
        y = next(iter(outs.values()))
        out = {"instructions": stats.instructions, "adders": c.report["adders"], "bit_exact": checks["bit_exact"],
               "accuracy": float((y.reshape(len(y), -1).argmax(1) == labels).mean()), "samples": len(x),
               "compile_s": t1 - t0, "sim_s": time.perf_counter() - t1}
    else:
        raise UnsupportedError(f"unknown workload {name!r}")
    out["wall_s"] = time.perf_counter() - t0
    return Stats.from_figures(out)
