"""CMVM column decomposition (spec §8.3 step 5): NAF weights, the MST, exactness, search, budgets."""

import inspect

import numpy as np
import pytest

from nnisa.targets.dais.compiler.cmvm import SEARCH_SPACE, _add_term, column_tree, compile_matrix, csd, naf_weight, \
    verify_linear
from nnisa.targets.dais.sim.interp import run


def test_naf_weight_matches_csd():
    vals = list(range(-300, 301)) + [2**40 + 12345, -(2**52) + 7, 2**58 - 1]
    got = naf_weight(np.array(vals, np.int64))
    assert got.tolist() == [len(csd(v)) for v in vals]


def test_add_term_merges_and_cancels():
    t = {(3, 2): 1, (5, 0): -1}
    _add_term(t, 3, 2, 1)  # 2·x3·4 = x3·8, merged upwards
    assert t == {(3, 3): 1, (5, 0): -1}
    _add_term(t, 5, 0, 1)  # cancels
    assert t == {(3, 3): 1}
    _add_term(t, 7, 1, -1)
    assert t == {(3, 3): 1, (7, 1): -1}


def test_column_tree_duplicates_and_negations():
    u = np.array([7, 10, 3, -5])
    v = np.array([12, 6, 5, 1])
    A = np.stack([u, v, -u, u, v + 1, np.zeros(4, int)], axis=1)
    parent, sign, order = column_tree(A)
    assert order[0] == 5  # the zero column costs nothing and joins the root first
    assert parent[5] == -1
    assert (parent[2], sign[2]) == (0, -1) or (parent[0], sign[0]) == (2, -1)
    assert {parent[0], parent[3]} & {2, 3, 0}  # u, -u, u: two of them hang off the third
    assert parent[4] == 1 and sign[4] == 1  # v + 1 = v + [1, 1, 1, 1]
    pos = {c: i for i, c in enumerate(order)}
    assert all(p < 0 or pos[p] < pos[c] for c, p in enumerate(parent))
    # depth limit 1: no column's parent has a parent
    p1, _, _ = column_tree(A, max_tree_depth=1)
    assert all(p < 0 or p1[p] < 0 for p in p1)
    # nothing to share: random sparse columns stay at the root
    assert column_tree(np.eye(4, dtype=int) * 7) is None


@pytest.mark.parametrize("dd", [None, 1, 2])
@pytest.mark.parametrize("method", ["wmc", "mc", "dummy"])
def test_decomposed_programs_are_exact(method, dd):
    rng = np.random.default_rng(7)
    base = rng.integers(-32, 32, (12, 4))
    W = np.concatenate([base, base + rng.integers(-1, 2, (12, 4)), -base[:, :2], 4 * base[:, 1:2],
                        np.zeros((12, 1)), base[:, :1] / 8], axis=1).astype(float)
    W[3] = 0  # dead row
    inputs = [(1, 5, 2)] * 11 + [(0, 0, 0)]  # last input has zero width
    p = compile_matrix(W, inputs, method=method, decompose=True, decompose_depth=dd)
    Wl = W.copy()
    Wl[11] = 0
    assert verify_linear(p, Wl)
    X = np.floor(rng.uniform(-32, 32, (400, 12)) * 4) / 4
    X[:, 11] = 0
    X[:50] = -32
    assert np.array_equal(run(p, X, check=True), X @ Wl)
    plain = compile_matrix(W, inputs, method=method)
    assert p.stats()["n_adders"] < plain.stats()["n_adders"]  # near-duplicate columns are cheap now
    if dd is not None:
        assert p.stats()["adder_depth"] <= plain.stats()["adder_depth"] + 2 * dd


def test_decomposition_values_and_search():
    rng = np.random.default_rng(16 * 1000 + 6 * 10)  # the benchmark's 16×16 6-bit case
    W = rng.integers(-32, 32, (16, 16)).astype(float)
    W[rng.random(W.shape) < 0.0] = 0
    plain = compile_matrix(W, (1, 7, 0), method="mc").stats()["n_adders"]
    dec = compile_matrix(W, (1, 7, 0), method="mc", decompose=True, decompose_depth=1)
    assert verify_linear(dec, W)
    assert (plain, dec.stats()["n_adders"]) == (284, 288)  # after the requeue fix of the CSE heap
    assert any(dd for *_, dd in SEARCH_SPACE)
    best = compile_matrix(W, (1, 7, 0), search=True)
    assert best.stats()["n_adders"] <= 284 and verify_linear(best, W)
    # with a depth limit, search skips the decomposed variants and respects the limit
    lim = compile_matrix(W, (1, 7, 0), search=True, max_depth=6)
    assert verify_linear(lim, W) and lim.stats()["adder_depth"] <= 6


def test_default_cse_budget():
    from nnisa.targets.dais.compiler import DaisCompileOptions, netcompile
    assert netcompile.DEFAULT_CSE_BUDGET == 500_000
    assert inspect.signature(netcompile.compile_qgraph).parameters["cse_budget"].default == 500_000
    assert DaisCompileOptions().cse_budget == 500_000


def test_compile_model_reports_cut_short_layers():
    from onnx import TensorProto, helper, numpy_helper

    from nnisa.targets.dais.compiler import compile_model
    rng = np.random.default_rng(0)
    W = rng.normal(0, 0.5, (48, 40)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40])],
                          [numpy_helper.from_array(W, "W")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    calib = rng.uniform(-1, 1, (64, 48)).astype(np.float32)
    full = compile_model(model, calib=calib)
    assert full.report["cse_budget"] == 500_000 and full.report["cse_cut_short"] == []
    cut = compile_model(model, calib=calib, cse_budget=0)
    assert cut.report["cse_cut_short"] == [0]
    assert cut.report["layers"][0]["cse"]["complete"] is False
    assert cut.report["adders"] > full.report["adders"]  # exact, but the CSE stopped early
    free = compile_model(model, calib=calib, cse_budget=None)
    assert free.report["cse_budget"] is None and free.report["adders"] == full.report["adders"]


def test_cse_budget_is_deterministic_and_the_same_in_both_engines():
    """A budget counted in greedy steps: the same program every run, and the Python reference
    stops at the same step as the numba kernel (issue 13: budgets in work, not seconds)."""
    from nnisa.targets.dais.compiler.cmvm import CMVMCompiler
    from nnisa.targets.dais.program import ProgramBuilder
    rng = np.random.default_rng(3)
    M = rng.integers(-127, 128, (24, 12)).tolist()
    runs = []
    for engine in ("numba", "numba", "python"):
        b = ProgramBuilder(24)
        ins = [(b.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(24)]
        comp = CMVMCompiler(b, ins, cse_budget=150, engine=engine)
        cols = comp.solve(M)
        assert comp.cse_info == {**comp.cse_info, "complete": False, "cse_steps": 150}
        runs.append((comp.log, cols, b.ops_array().tolist()))
    assert runs[0] == runs[1] == runs[2]
