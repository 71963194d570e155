"""CMVM solutions for pipelined RTL (rtl/depth.py): fewest stages at a latency cutoff, exact."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.core.errors import OptionError
from nnisa.targets.dais.compiler.cmvm import compile_matrix, verify_linear
from nnisa.targets.dais.rtl.depth import compile_matrix_for_cutoff
from nnisa.targets.dais.rtl.netlist import build_netlist, chain_stages

from .rtl_programs import edge_inputs
from .test_rtl import cosim


def bench_matrix(n, bits, sparsity=0.0):
    """A problem of ``benchmarks/dais_cmvm.py`` (same seed rule)."""
    rng = np.random.default_rng(n * 1000 + bits * 10 + int(sparsity * 10))
    W = rng.integers(-2 ** (bits - 1), 2 ** (bits - 1), (n, n)).astype(np.float64)
    W[rng.random(W.shape) < sparsity] = 0
    return W


def stages(p, cut):
    return build_netlist(p, latency_cutoff=cut).n_stages


def test_fewer_stages_within_the_area_slack():
    W = bench_matrix(16, 4)  # unbounded: adder depth 7 → 4 stages at cutoff 2
    free = compile_matrix(W, (1, 7, 0), search=True)
    p = compile_matrix_for_cutoff(W, (1, 7, 0), 2, search=True)
    assert verify_linear(p, W)
    assert stages(free, 2) == 4 and stages(p, 2) == 3
    assert p.stats()["adder_depth"] <= p.meta["cse_max_depth"] == 6
    assert p.stats()["adder_bits"] <= 1.05 * free.stats()["adder_bits"]
    assert p == compile_matrix(W, (1, 7, 0), search=True, max_depth=6)  # deterministic: the bound's solution
    # no slack: the bounded solution (more adder bits) is refused
    strict = compile_matrix_for_cutoff(W, (1, 7, 0), 2, search=True, area_slack=0.0)
    assert strict == free and strict.meta["cse_max_depth"] is None


def test_unchanged_when_no_stage_can_be_saved():
    W = bench_matrix(16, 6)  # depth 6: already the minimum for its columns at cutoff 2
    free = compile_matrix(W, (1, 7, 0), search=True)
    p = compile_matrix_for_cutoff(W, (1, 7, 0), 2, search=True)
    assert p == free and p.meta["cse_max_depth"] is None


@pytest.mark.parametrize("cut", [0.5, 1, 1.5, 2, 3, 4.5])
def test_chain_stages_is_the_netlist_schedule(cut):
    for depth in range(0, 9):
        W = np.ones((2 ** depth, 1))  # one column of 2^depth terms: a balanced tree of that depth
        p = compile_matrix(W, (1, 3, 0), method="dummy")
        assert p.stats()["adder_depth"] == depth
        assert stages(p, cut) == chain_stages(depth, cut)


def test_bad_options():
    W = bench_matrix(8, 4)
    for cut in (0, -1, None):
        with pytest.raises(OptionError):
            compile_matrix_for_cutoff(W, (1, 7, 0), cut)
    with pytest.raises(OptionError):
        compile_matrix_for_cutoff(W, (1, 7, 0), 2, area_slack=-0.1)


def test_cosim_depth_bounded_pipeline():
    W = bench_matrix(8, 4)  # unbounded: 3 stages; bounded: 2
    p = compile_matrix_for_cutoff(W, (1, 7, 0), 2, search=True)
    assert stages(p, 2) == 2
    rng = np.random.default_rng(11)
    X = np.concatenate([rng.integers(-128, 128, (1000, 8)), np.full((1, 8), -128), np.full((1, 8), 127)])
    eng = cosim(p, X.astype(float), 2)  # bit for bit against the interpreter ...
    assert np.array_equal(eng.run(X.astype(float)), X @ W)  # ... and the exact product
    cosim(p, edge_inputs(p, 500, 11), 2)  # inputs off the integer grid (floored by the input quantizer)
