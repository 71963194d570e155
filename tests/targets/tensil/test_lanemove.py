"""Lane moves through the array are exact: data movement returns the very fixed-point inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.targets.tensil import layout as L
from nnisa.targets.tensil.compiler import compile_model
from nnisa.targets.tensil.compiler.lanemove import index_map, plan_move
from nnisa.targets.tensil.sim.simulate import simulate


def _model(nodes, in_shape, out, inits=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _run(model, x, tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    res = compile_model(path, config="zcu104", out_dir=tmp_path / "b")
    run = simulate(res.program, inputs={k: v[None] for k, v in res.encode_inputs({"x": x}).items()},
                   **res.sim_options)
    return next(iter(res.decode_outputs({k: np.asarray(v) for k, v in run.outputs.items()}).values()))


def _grid(shape, seed=0):
    """Values on FP16BP8's grid (multiples of 2^-8 in ±4): every move must return them exactly."""
    return (np.random.default_rng(seed).integers(-1024, 1024, shape) / 256.0).astype(np.float32)


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 3, 1, 2), (0, 1, 3, 2)])
def test_transpose_is_exact(perm, tmp_path):
    x = _grid((1, 37, 3, 5))
    y = _run(_model([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], list(x.shape), "y"), x, tmp_path)
    assert np.array_equal(np.asarray(y).reshape(-1), x.transpose(perm).reshape(-1))


def test_concat_of_odd_channel_counts_is_exact(tmp_path):
    x = _grid((1, 45, 2, 3))
    starts = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("s0", [0]), ("e0", [21]), ("s1", [21]), ("e1", [45]), ("ax", [1]))]
    nodes = [helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["a"]),
             helper.make_node("Slice", ["x", "s1", "e1", "ax"], ["b"]),
             helper.make_node("Concat", ["b", "a", "b"], ["y"], axis=1)]
    y = _run(_model(nodes, list(x.shape), "y", starts), x, tmp_path)
    ref = np.concatenate([x[:, 21:], x[:, :21], x[:, 21:]], axis=1)
    assert np.array_equal(np.asarray(y).reshape(ref.shape), ref)


def test_plan_groups_share_matrices():
    """A channel slice by a whole block moves lanes identically for every pixel: one matrix."""
    N = 8
    shape, out = (1, 16, 4, 4), (1, 5, 4, 4)
    ids = [np.arange(int(np.prod(shape))).reshape(shape)]
    src = index_map("Slice", {"index": (None, tuple(range(3, 8)), None, None)}, ids, out)
    plan = plan_move(out, [shape], src, N, fill=False)
    assert len(plan.matrices) == 1 and len(plan.groups) == 16 and plan.out_vectors == L.vector_count(out, N)
    m = plan.matrices[0]
    assert m.sum() == 5 and all(m[3 + j, j] == 1 for j in range(5))


@pytest.mark.parametrize("heads", [1, 3])
def test_attention_products_on_the_array(heads, tmp_path):
    """Multi-head attention without its softmax: Q/K/V projections (token-wise MatMul), the head
    split (Reshape → Transpose), Q·Kᵀ and scores·V (activation × activation) and the head merge,
    against onnxruntime within FP16BP8's resolution."""
    import onnxruntime as ort
    rng = np.random.default_rng(heads)
    S, D = 7, 6 * heads
    d = D // heads
    inits = [numpy_helper.from_array((rng.normal(0, 0.3, (D, D))).astype(np.float32), f"w{k}") for k in "qkv"]
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("split", [1, S, heads, d]), ("merge", [1, S, D]))]
    nodes = []
    for k in "qkv":
        nodes += [helper.make_node("MatMul", ["x", f"w{k}"], [f"{k}0"]),
                  helper.make_node("Reshape", [f"{k}0", "split"], [f"{k}1"]),
                  helper.make_node("Transpose", [f"{k}1"], [f"{k}h"], perm=[0, 2, 1, 3])]
    nodes += [helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["qh", "kt"], ["scores"]),
              helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
              helper.make_node("MatMul", ["scaled", "vh"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ctx1"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ctx1", "merge"], ["y"])]
    inits.append(numpy_helper.from_array(np.array(1 / np.sqrt(d), np.float32), "scale"))
    model = _model(nodes, [1, S, D], "y", inits)
    x = rng.uniform(-1, 1, (1, S, D)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    y = np.asarray(_run(model, x, tmp_path)).reshape(ref.shape)
    assert np.abs(y - ref).max() <= 0.05 * max(1.0, np.abs(ref).max())
