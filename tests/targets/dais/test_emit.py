"""Issue 13 item 4: the numba paths of the DAIS compiler against their Python references.

* ``cmvm_emit.solve_fast`` (NAF terms, CSE-log replay with exact ranges, per-column accumulation)
  gives the reference's ops, dtypes, log and output terms, with row blocks, decomposition, budgets,
  depth limits, zero-width inputs and fractional dtypes, and falls back without int64 headroom;
* ``cmvm_emit.make_replay`` (a template at every position at once) equals one
  ``CMVMCompiler.instantiate`` per position, and a whole convolution network compiles to the same
  program either way;
* ``ProgramBuilder`` blocks read back like tuples; ``program_nb.depths`` equals the Python loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from nnisa.targets.dais import program as prog_mod
from nnisa.targets.dais.compiler import cmvm, cmvm_emit
from nnisa.targets.dais.program import Program, ProgramBuilder

from .helpers import random_template


def _spy(monkeypatch, name):
    """Record whether ``cmvm_emit.<name>`` took its fast path (returned non-None)."""
    orig, taken = getattr(cmvm_emit, name), []

    def spy(*a, **k):
        r = orig(*a, **k)
        taken.append(r is not None)
        return r
    monkeypatch.setattr(cmvm_emit, name, spy)
    return taken


def _solve(M, kifs, engine, decompose=False, decompose_depth=None, **kw):
    b = ProgramBuilder(len(M))
    ins = [(b.add_op(-1, j, -1, 0, kif), *kif) if sum(kif) > 0 else (-1, 0, 0, 0) for j, kif in enumerate(kifs)]
    comp = cmvm.CMVMCompiler(b, ins, engine=engine, **kw)
    res = comp.solve(M, decompose=decompose, decompose_depth=decompose_depth)
    return b.ops_array().tolist(), res, comp.log, comp.out_terms, comp.cse_info and {k: v for k, v in comp.cse_info.items()
                                                                      if k != "cse_s"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 12), st.integers(2, 9),
       st.sampled_from(["wmc", "mc", "dummy"]), st.sampled_from([0, 3, 5]), st.sampled_from([None, 4]),
       st.sampled_from([None, 8]), st.sampled_from([None, 40]), st.sampled_from([(False, None), (True, None),
                                                                               (True, 1)]))
def test_solve_fast_equals_reference(seed, n_in, n_out, bits, method, tiebreak, max_depth, block_rows, budget, dec):
    rng = np.random.default_rng(seed)
    W = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (n_in, n_out))
    W[rng.random(W.shape) < 0.3] = 0
    if n_out > 2:
        W[:, 1] = 2 * W[:, 0]  # a column its decomposition parent covers exactly (carries)
    kifs = [(0, 0, 0) if rng.random() < 0.15 else (int(rng.integers(0, 2)), int(rng.integers(0, 6)),
                                                   int(rng.integers(0, 4))) for _ in range(n_in)]
    kw = dict(method=method, tiebreak=tiebreak, max_depth=max_depth, block_rows=block_rows, cse_budget=budget,
              decompose=dec[0], decompose_depth=dec[1])
    with pytest.MonkeyPatch.context() as mp:
        taken = _spy(mp, "solve_fast")
        fast = _solve(W.tolist(), kifs, "numba", **kw)
    assert taken == [True]
    assert fast == _solve(W.tolist(), kifs, "python", **kw)


def test_solve_fast_falls_back_without_int64_headroom(monkeypatch):
    """Entries 2^45·m + 1 (m < 2^10) with 8-bit inputs: the accumulation's coefficients leave the kernel's
    headroom, so the reference finishes (same program)."""
    rng = np.random.default_rng(3)
    W = ((rng.integers(1, 1 << 10, (6, 3)) << 45) + 1).tolist()
    kifs = [(1, 7, 0)] * 6
    taken = _spy(monkeypatch, "solve_fast")
    kernel, ok = cmvm_emit.emit_kernel, []
    monkeypatch.setattr(cmvm_emit, "emit_kernel", lambda *a: ok.append(kernel(*a)[0]) or kernel(*a))
    got = _solve(W, kifs, "numba", method="dummy")
    assert taken == [True] and ok == [False]  # the kernel gave up; the fallback inside solve_fast finished
    assert got == _solve(W, kifs, "python", method="dummy")


@pytest.mark.parametrize("seed", range(6))
def test_replay_at_all_positions_equals_instantiate(seed):
    """Padding (zero-width inputs), per-input dtypes differing from the template's, negative and
    fractional inputs: every position's ops, dtypes and output terms equal the per-position
    reference's, appended between other ops."""
    rng = np.random.default_rng(seed)
    K, N, P = int(rng.integers(3, 20)), int(rng.integers(1, 8)), int(rng.integers(1, 12))
    tmpl = random_template(rng, K, N)
    kifs = np.zeros((P, K, 3), np.int64)
    for p in range(P):
        for j in range(K):
            if rng.random() > 0.25 or p == 0:
                kifs[p, j] = (int(rng.integers(0, 2)), int(rng.integers(-1, 5)), int(rng.integers(0, 4)))
    kifs[kifs.sum(axis=2) <= 0] = 0
    kifs[P // 2] = kifs[0]  # a repeated range pattern (bounds shared)
    out = {}
    for engine in ("fast", "reference"):
        b = ProgramBuilder(K)
        slots = np.array([[b.add_op(-1, j, -1, 0, tuple(kifs[p, j])) if kifs[p, j].sum() > 0 else -1
                           for j in range(K)] for p in range(P)])
        rep = cmvm_emit.make_replay(tmpl, slots, kifs) if engine == "fast" else None
        terms = []
        for p in range(P):
            if rep is not None:
                terms.append(rep.emit(p, b))
            else:
                ins = [(int(slots[p, j]), *map(int, kifs[p, j])) if slots[p, j] >= 0 else (-1, 0, 0, 0)
                       for j in range(K)]
                terms.append(cmvm.CMVMCompiler(b, ins, method="dummy", engine="python").instantiate(tmpl))
            b.add_op(5, -1, -1, p, (0, 5, 0))  # an op between positions (the network's requant ops)
        out[engine] = (terms, b.ops_array().tolist())
    assert out["fast"] == out["reference"]


def test_replay_needs_int64_headroom():
    scratch = ProgramBuilder(2)
    tmpl = cmvm.CMVMCompiler(scratch, [(scratch.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(2)])
    tmpl.solve([[3, 1 << 40], [5, 7]])
    assert cmvm_emit.make_replay(tmpl, np.zeros((1, 2), np.int64), np.array([[[1, 30, 0], [1, 30, 0]]])) is None
    assert cmvm_emit.make_replay(tmpl, np.zeros((1, 2), np.int64), np.array([[[1, 7, 0], [1, 7, 0]]])) is not None


def _conv_model(seed):
    rng = np.random.default_rng(seed)

    def init(name, shape):
        return numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], kernel_shape=[3, 3], strides=[2, 2], group=2),
             helper.make_node("Flatten", ["c2"], ["f"]), helper.make_node("Gemm", ["f", "W3", "B3"], ["y"], transB=1)]
    inits = [init("W1", (4, 2, 3, 3)), init("B1", (4,)), init("W2", (6, 2, 3, 3)), init("B2", (6,)),
             init("W3", (5, 6 * 3 * 3)), init("B3", (5,))]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_conv_network_same_program_with_and_without_fast_paths(monkeypatch, tmp_path):
    """A padded, strided, grouped convolution network: the fast paths and the references (per
    position replay, Python CMVM) give the same program."""
    import onnx

    from nnisa.targets.dais.compiler import compile_model, netcompile
    path = tmp_path / "conv.onnx"
    onnx.save(_conv_model(1), path)
    fast = compile_model(str(path)).program
    monkeypatch.setattr(netcompile, "make_replay", lambda *a: None)
    init = cmvm.CMVMCompiler.__init__
    monkeypatch.setattr(cmvm.CMVMCompiler, "__init__", lambda self, *a, **kw: init(self, *a, **{**kw, "engine": "python"}))
    ref = compile_model(str(path)).program
    assert fast == ref and fast.stats() == ref.stats()


def test_builder_blocks_read_back_like_tuples():
    b = ProgramBuilder(2)
    b.add_op(-1, 0, -1, 0, (1, 7, 0))
    b.extend_ops(np.array([[-1, 1, -1, 0, 1, 7, 0], [0, 0, 1, 2, 1, 10, 0]], np.int64))
    b.add_op(1, 2, 0, -3, (1, 9, 0), qint=(-4, 4, 1))
    b.extend_ops([(0, 3, 3, 0, 1, 10, 0)])
    b.extend_ops(np.zeros((0, 7), np.int64))
    assert len(b) == 5 and b.op(2) == (0, 0, 1, 2, 1, 10, 0) and b.op(-1) == (0, 3, 3, 0, 1, 10, 0)
    assert b.op(3) == (1, 2, 0, -3, 1, 9, 0) and all(type(v) is int for v in b.op(1))
    assert b.ops_array().tolist()[1:3] == [[-1, 1, -1, 0, 1, 7, 0], [0, 0, 1, 2, 1, 10, 0]]
    assert b.ops_array(3).tolist() == [[1, 2, 0, -3, 1, 9, 0], [0, 3, 3, 0, 1, 10, 0]]
    b.set_outputs([4])
    p = b.build()
    assert p.meta["qint"] == [None, None, None, (-4.0, 4.0, 1.0), None] and p.n_ops == 5


def test_depth_kernel_equals_python_loops():
    from nnisa.targets.dais.compiler.cmvm import compile_matrix
    from nnisa.targets.dais.program_nb import depths, opcode_flags
    rng = np.random.default_rng(0)
    p = compile_matrix(rng.integers(-50, 50, (12, 6)).astype(float), (1, 6, 0))
    ops = p.ops_array()
    extra = [[5, -1, -1, 7, 0, 4, 0], [1, ops.shape[0] - 1, ops.shape[0], 0, 1, 12, 0],
             [6, ops.shape[0], 0, (3 << 32) | 1, 1, 12, 0], [8, 2, -1, 0, 0, 4, 0], [-1, 3, -1, 0, 1, 7, 0]]
    q = Program.from_arrays(inp_shifts=p.inp_shifts, out_idxs=[ops.shape[0] + 2], out_shifts=[0], out_negs=[0],
                            ops=np.vstack([ops, extra]), tables=[np.arange(16)])
    for prog in (p, q):
        assert np.array_equal(prog_mod._levels(prog), prog_mod._levels_py(prog))
        assert np.array_equal(prog_mod._adder_depth(prog), prog_mod._adder_depth_py(prog))
    bad = q.ops_array()
    bad[-4, 2] = len(bad) + 3  # a forward reference: only an unvalidated program holds one
    ok, _, _ = depths(bad[:, 0], bad[:, 1], bad[:, 2], bad[:, 3] & 0xFFFFFFFF, opcode_flags({0, 1, 6, 8}),
                      opcode_flags({0, 1, 6}))
    assert not ok
