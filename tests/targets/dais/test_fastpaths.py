"""Fast paths of the DAIS compiler and formats against their references (issue 9).

* the CSE kernel's array heap (4-ary, rows of int64) pops like ``heapq``;
* the kernel (global + per-step local pattern tables) emits the Python reference's adders;
* ``CMVMCompiler.instantiate`` through one matrix product equals the per-adder reference;
* the da4ml JSON renderer writes exactly ``json.dumps``' text; the text and stats helpers.
"""

from __future__ import annotations

import heapq
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnisa.targets.dais.compiler import cmvm, cmvm_nb
from nnisa.targets.dais.program import ProgramBuilder

from .helpers import random_template


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(-3, 3), st.integers(0, 40)), max_size=300),
       st.lists(st.booleans(), max_size=400))
def test_array_heap_pops_like_heapq(items, pops):
    heap = np.empty((1, 3), np.int64)  # grows on push
    n = np.zeros(1, np.int64)
    ref: list = []
    it = iter(items)
    for pop in pops + [True] * len(items):
        if pop and ref:
            assert cmvm_nb.heap_pop(heap, n) == heapq.heappop(ref)
        elif not pop:
            x = next(it, None)
            if x is None:
                continue
            heap = cmvm_nb.heap_push(heap, n, *x)
            heapq.heappush(ref, x)
        assert n[0] == len(ref)


def _solve(W, engine, **kw):
    M, _ = cmvm._to_int_matrix(W)
    b = ProgramBuilder(W.shape[0])
    ins = [(b.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(W.shape[0])]
    res = cmvm.CMVMCompiler(b, ins, engine=engine, **kw).solve(M)
    return b.ops_array().tolist(), res


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(2, 24), st.integers(1, 12), st.integers(2, 8),
       st.sampled_from(["wmc", "mc"]), st.integers(0, 5), st.sampled_from([None, 3, 5]), st.floats(0, 0.8))
def test_cse_kernel_equals_python(seed, n_in, n_out, bits, method, tiebreak, max_depth, sparsity):
    rng = np.random.default_rng(seed)
    W = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (n_in, n_out)).astype(float)
    W[rng.random(W.shape) < sparsity] = 0
    kw = dict(method=method, tiebreak=tiebreak, max_depth=max_depth)
    assert _solve(W, "numba", **kw) == _solve(W, "python", **kw)


def test_cse_kernel_equals_python_large():
    """Big enough for the pattern tables and the heap to grow many times (and patterns of one step
    to reach counts ≥ 2 across several columns)."""
    W = np.random.default_rng(5).integers(-128, 128, (40, 24)).astype(float)
    W[:, 12:] = W[:, :12] * 2  # repeated columns: popular patterns
    assert _solve(W, "numba") == _solve(W, "python")


@pytest.mark.parametrize("seed", range(6))
def test_instantiate_fast_equals_reference(seed, monkeypatch):
    """The matrix-product replay gives the same ops, dtypes and output terms as the per-adder one,
    with padding (zero-width inputs), per-input dtypes differing from the template's, and negative
    and fractional inputs."""
    rng = np.random.default_rng(seed)
    K, N = int(rng.integers(3, 20)), int(rng.integers(1, 8))
    tmpl = random_template(rng, K, N)
    fast = cmvm.CMVMCompiler._instantiate_ranges
    used = []
    monkeypatch.setattr(cmvm.CMVMCompiler, "_instantiate_ranges",
                        lambda self, t: used.append(fast(self, t)) or used[-1])
    for _ in range(4):
        kifs = [(0, 0, 0) if rng.random() < 0.25 else (int(rng.integers(0, 2)), int(rng.integers(-1, 5)),
                                                       int(rng.integers(0, 4))) for _ in range(K)]
        got = {}
        for engine in ("numba", "python"):
            b = ProgramBuilder(K)
            ins = [(b.add_op(-1, j, -1, 0, kif), *kif) if sum(kif) > 0 else (-1, 0, 0, 0)
                   for j, kif in enumerate(kifs)]
            comp = cmvm.CMVMCompiler(b, ins, method="dummy", engine=engine)
            got[engine] = (comp.instantiate(tmpl), b.ops_array().tolist())
        assert got["numba"] == got["python"]
    assert len(used) == 4 and all(u is not None for u in used)


def test_da4ml_json_text_is_json_dumps():
    from nnisa.targets.dais.compiler.cmvm import compile_matrix
    from nnisa.targets.dais.formats.jsonio import from_da4ml_json, to_da4ml_json
    W = np.random.default_rng(2).integers(-100, 100, (12, 6)) / 8
    p = compile_matrix(W, (1, 5, 3))
    text = to_da4ml_json(p)
    assert json.dumps(json.loads(text), separators=(",", ":")) == text
    assert np.array_equal(from_da4ml_json(text).ops_array(), p.ops_array())


def test_simulate_lowers_once_per_program_and_semantics():
    """The public path reuses the lowered program (issue 9: it lowered and re-derived statistics on
    every call); results, statistics and errors are unchanged."""
    import pickle

    import nnisa
    from nnisa.targets.dais.sim.interp import interpreter_for
    p = cmvm.compile_matrix(np.array([[3., -5], [7, 2], [1, 4]]), (1, 5, 0))
    X = np.arange(12, dtype=float).reshape(4, 3) - 6
    t = nnisa.target("dais")
    r1 = t.simulate(p, inputs={"x": X})
    it = interpreter_for(p)
    assert interpreter_for(p) is it and interpreter_for(p, "da4ml-compat") is not it
    r2 = t.simulate(p, inputs={"x": X})
    assert np.array_equal(r1.outputs["y"], r2.outputs["y"]) and np.array_equal(r1.outputs["y"], X @ [[3, -5], [7, 2], [1, 4]])
    assert r1.stats.extra == r2.stats.extra
    st = p.stats()
    st["n_ops"] = -1
    st["opcodes"].clear()
    assert p.stats()["n_ops"] == p.n_ops and p.stats()["opcodes"]
    q = pickle.loads(pickle.dumps(p))
    assert q == p and "_interpreters" not in q.__dict__ and "_stats" not in q.__dict__


def test_non_finite_inputs_still_checked():
    import nnisa
    from nnisa.core.errors import NnisaError
    W = np.array([[3., -5], [0, 0], [1, 4]])  # input 1 is dead (no op reads it)
    p = cmvm.compile_matrix(W, (1, 5, 0))
    X = np.ones((2, 3))
    X[1, 1] = np.nan
    assert np.array_equal(nnisa.target("dais").simulate(p, inputs={"x": X}).outputs["y"], np.ones((2, 3)) @ W)
    X[0, 2] = np.inf
    with pytest.raises((ValueError, NnisaError), match="non-finite input inf at input 2, sample 0"):
        nnisa.target("dais").simulate(p, inputs={"x": X})
