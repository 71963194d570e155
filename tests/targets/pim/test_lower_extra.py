"""Issue 13 on PIM: Concat, Slice/Split, nearest Resize, channel shuffle, LUT activations (Sigmoid, Tanh,
SiLU, HardSigmoid, HardSwish) and Mul of two activations compile bit-exactly against the frontend's integer
reference, in both schedules (MatMul of two activations and LSTM/GRU: ``test_phases.py``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx import numpy_helper as nh

from nnisa.api import run_model
from nnisa.core.errors import UnsupportedError
from nnisa.frontend.quant import QNode, Requant
from nnisa.frontend.zoo import ZOO, make_gru
from nnisa.targets.pim.compiler.lower_extra import runs
from nnisa.targets.pim.compiler.lower_lut import lut_segments

from .compiler_helpers import one_input_model

rng = np.random.default_rng(1)


def _f(name, a):
    return nh.from_array(np.asarray(a, np.float32), name)


def _i(name, a):
    return nh.from_array(np.asarray(a, np.int64), name)


def _model(nodes, inits, xin, yout, opset=20):
    return one_input_model(nodes, inits, xin, yout, opset=opset, ir_version=10)


def _conv(x, y, cin, cout, name, k=3):
    w = _f(f"{name}.w", rng.normal(0, 0.4, (cout, cin, k, k)))
    return helper.make_node("Conv", [x, w.name], [y], pads=[k // 2] * 4, name=name), w


def _gates_split_concat():
    """Conv → Sigmoid·x (SiLU) → Split → Tanh / HardSwish → Concat (different scales) → Slice → Resize
    → squeeze-excite gate (GlobalAveragePool → Gemm-free Sigmoid → Mul broadcast) → Conv → Gemm."""
    c0, w0 = _conv("x", "c0", 3, 8, "c0")
    c1, w1 = _conv("gt", "c1", 6, 4, "c1")
    nodes = [c0, helper.make_node("Sigmoid", ["c0"], ["s0"]), helper.make_node("Mul", ["c0", "s0"], ["silu"]),
             helper.make_node("Split", ["silu", "sp"], ["a", "b"], axis=1),
             helper.make_node("Tanh", ["a"], ["ta"]), helper.make_node("HardSwish", ["b"], ["hb"]),
             helper.make_node("Concat", ["hb", "ta", "a"], ["cc"], axis=1),
             helper.make_node("Slice", ["cc", "st", "en", "axs"], ["sl"]),
             helper.make_node("Resize", ["sl", "", "sc"], ["rs"], mode="nearest"),
             helper.make_node("GlobalAveragePool", ["rs"], ["gp"]),
             helper.make_node("HardSigmoid", ["gp"], ["gs"]),
             helper.make_node("Mul", ["rs", "gs"], ["gt"]), c1,
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Flatten", ["r1"], ["fl"]),
             helper.make_node("Gemm", ["fl", "wg"], ["y"], transB=1)]
    inits = [w0, w1, _i("sp", [3, 5]), _i("st", [1, 0]), _i("en", [7, 5]), _i("axs", [1, 3]),
             _f("sc", [1, 1, 2, 2]), _f("wg", rng.normal(0, 0.1, (5, 4 * 12 * 10)))]
    return _model(nodes, inits, [1, 3, 6, 6], [1, 5])


def _channel_shuffle():
    """ShuffleNet's Reshape–Transpose–Reshape feeding a Conv (a relayout copy) and an Add."""
    c0, w0 = _conv("x", "c0", 2, 8, "c0")
    c1, w1 = _conv("sh", "c1", 8, 8, "c1", k=1)
    nodes = [c0, helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Reshape", ["r0", "s1"], ["v"]), helper.make_node("Transpose", ["v"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "s2"], ["sh"]), c1,
             helper.make_node("Add", ["c1", "sh"], ["ad"]),
             helper.make_node("Slice", ["ad", "st", "en", "axs"], ["sl"]),
             helper.make_node("Flatten", ["sl"], ["fl"]), helper.make_node("Gemm", ["fl", "wg"], ["y"], transB=1)]
    inits = [w0, w1, _i("s1", [1, 2, 4, 5, 5]), _i("s2", [1, 8, 5, 5]), _i("st", [4]), _i("en", [8]), _i("axs", [1]),
             _f("wg", rng.normal(0, 0.1, (3, 4 * 25)))]
    return _model(nodes, inits, [1, 2, 5, 5], [1, 3])


@pytest.mark.parametrize("schedule", ["batch", "element"])
@pytest.mark.parametrize("build", [_gates_split_concat, _channel_shuffle], ids=["gates_split_concat", "shuffle"])
def test_new_ops_bit_exact(build, schedule, tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(build(), p)
    r = run_model("pim", p, samples=3, schedule=schedule)
    assert r["bit_exact"] is True
    assert r["top1_agreement"] >= 2 / 3


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet_v2", "efficientnet_b0"])
def test_zoo_models_bit_exact_on_pim(name, tmp_path):
    p = tmp_path / f"{name}.onnx"
    onnx.save(ZOO[name][0](), p)
    r = run_model("pim", p, samples=2)
    assert r["bit_exact"] is True
    assert r["top1_agreement"] == 1.0


# ----------------------------------------------------------------------------- pieces


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-128, 127), min_size=2, max_size=256), st.integers(-128, 0))
def test_lut_segments_reproduce_any_table(table, x0):
    lut = np.array(table, np.int64)
    k, pieces = lut_segments(lut, x0)
    x = np.arange(x0, x0 + lut.size)
    got = sum((m * np.clip(x, a - 1, b) + c) >> k for a, b, m, c in pieces)
    np.testing.assert_array_equal(got, lut)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-128, 127), min_size=1, max_size=256), st.integers(-300, 300),
       st.sampled_from([0, 2, 4, 6, 8, 10]))
def test_compiled_lut_search_equals_the_reference(table, x0, k):
    from nnisa.targets.pim.compiler.lower_lut import _greedy, _greedy_fast
    lut = np.array(table, np.int64)
    assert _greedy_fast(lut, x0, k) == _greedy(lut, x0, k)


def test_compiled_lut_search_on_real_tables():
    x = np.arange(-128, 128)
    for scale in (4, 16, 40):
        for lut in (127 / (1 + np.exp(-x / scale)), 127 * np.tanh(x / scale), x * np.clip(x / scale / 6 + 0.5, 0, 1)):
            lut = np.clip(np.round(lut), -128, 127).astype(np.int64)
            assert lut_segments(lut, -128) == lut_segments(lut, -128, fast=False)


def test_sigmoid_table_needs_few_pieces():
    x = np.arange(-128, 128)
    lut = np.clip(np.round(127 / (1 + np.exp(-x / 16))), -128, 127).astype(np.int64)
    k, pieces = lut_segments(lut, -128)
    assert len(pieces) <= 24


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=120))
def test_runs_cover_the_gather(pos):
    pos = np.array(pos, np.int64)
    got = np.full(pos.size, -1, np.int64)
    for d, s, n, stride in runs(pos):
        assert n >= 1 and (stride == 1 or n >= 3)
        got[d:d + n] = s + stride * np.arange(n)
    np.testing.assert_array_equal(got, pos)


def test_concat_rescale_must_be_pow2():
    from nnisa.targets.pim.compiler.lower_extra import copy_layer
    n = QNode("Concat", "cc", ["a", "b"], ["y"], {"axis": 1})
    n.input_requants = [Requant(np.array(3), np.array(1))]
    with pytest.raises(UnsupportedError, match="power of two"):
        copy_layer(n, [], lambda name: None)


@pytest.mark.parametrize("schedule", ["batch", "element", "throughput"])
@pytest.mark.parametrize("build", [_gates_split_concat, _channel_shuffle], ids=["gates_split_concat", "shuffle"])
def test_new_ops_bit_exact_in_image_streams(build, schedule, tmp_path):
    """Copy/LUT/Mul layers address every image of a stream (per-image buffers, shared per-core state)."""
    p = tmp_path / "m.onnx"
    onnx.save(build(), p)
    r = run_model("pim", p, samples=3, schedule=schedule, images=3)
    assert r["bit_exact"] is True
