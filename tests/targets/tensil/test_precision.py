"""Fixed-point precision policies (compiler/precision.py) against onnxruntime: averages of large
windows (neither rounded away nor saturated) and the per-layer weight scale of layers whose
weights are a few ulps of the data type (with the warning when the range forbids it)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import run_model
from nnisa.targets.tensil.compiler import compile_model
from nnisa.targets.tensil.compiler.precision import PrecisionWarning, average_factors, weight_shift
from nnisa.targets.tensil.config import PRESETS


def _model(nodes, inits, in_shape, out="y", opset=17) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _errors(model, x, tmp_path, **options):
    p = tmp_path / "m.onnx"
    onnx.save(model, p)
    rep = run_model("tensil", p, inputs={"x": x}, **options)
    return rep


@pytest.mark.parametrize("k", list(range(1, 40)) + [49, 64, 169, 196, 256, 1000, 1024, 4096, 12544])
def test_average_factors_are_exact_within_the_type(k):
    g, pre, group, post = average_factors(k, 128.0)
    scale = pre * group * np.prod(post) * k
    assert abs(scale - 1) < 2e-3  # 2^s/k held in 8 fraction bits
    assert pre >= 2.0 ** -4 and (g >= k) == (group == 1.0) and g <= 128  # no value shifted past its bits
    assert k * pre * group * 16 <= 128.0  # the total stays in range while the mean is below 16
    assert min(g, k) * pre * 16 <= 128.0  # so does a group's sum
    assert all(f == 2.0 ** round(np.log2(f)) or 0.5 < f <= 1 for f in post)
    assert pre * group == 1.0 or k * pre * group * 32 > 128.0  # the least scaling: fraction bits kept
    assert average_factors(k, float("inf"))[1:3] == (1.0, 1.0)


@pytest.mark.parametrize("lo,hi", [(0.0, 0.5), (0.5, 1.0), (-1.0, 1.0), (2.0, 3.0)])
def test_global_average_of_a_large_window(lo, hi, tmp_path):
    """16x16 means: values under 0.5 used to round to 0 (x/256 < half an ulp), a mean over 0.5 to
    saturate (the sum passes 128)."""
    m = _model([helper.make_node("GlobalAveragePool", ["x"], ["g"]),
                helper.make_node("Flatten", ["g"], ["y"])], {}, [1, 5, 16, 16])
    x = np.random.default_rng(0).uniform(lo, hi, (4, 1, 5, 16, 16)).astype(np.float32)
    rep = _errors(m, x, tmp_path, samples=4)
    assert rep["max_abs_error"] < 0.01, rep["max_abs_error"]


def test_average_pool_odd_window(tmp_path):
    m = _model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[7, 7], strides=[3, 3])], {},
               [1, 3, 13, 13])
    x = np.random.default_rng(1).uniform(0.5, 1.5, (2, 1, 3, 13, 13)).astype(np.float32)
    assert _errors(m, x, tmp_path, samples=2)["max_abs_error"] < 0.01


def _small_linear(rng, k=5408, n=10, bias=None):
    bound = 1 / np.sqrt(k)  # torch's default Linear init: a few ulps of FP16BP8 at k = 5408
    w = rng.uniform(-bound, bound, (k, n))
    b = rng.uniform(-bound, bound, n) if bias is None else np.full(n, bias)
    return _model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
                  {"w": w, "b": b}, [1, k]), w


def test_small_weights_are_scaled_and_agree(tmp_path):
    rng = np.random.default_rng(2)
    m, w = _small_linear(rng)
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    res = compile_model(p, config="zcu104", out_dir=tmp_path / "b")
    (rec,) = res.report["weight_precision"]
    assert rec["shift"] >= 2 and rec["weights_rms_ulps"] >= 16
    x = rng.uniform(0, 1, (16, 1, 5408)).astype(np.float32)
    rep = run_model("tensil", p, inputs={"x": x})
    ref = np.concatenate([ort.InferenceSession(m.SerializeToString()).run(None, {"x": xi})[0] for xi in x])
    assert rep["top1_agreement"] >= 15 / 16 and rep["max_abs_error"] < 0.15 * np.abs(ref).max()
    # FLOAT32 (relative ulp) and large weights are left alone
    assert weight_shift(w, None, None, float("inf")) == (0, float("inf"))
    assert weight_shift(np.full((9, 4), 0.3), None, 1 / 256, 128.0)[0] == 0


def test_scale_with_fused_residual_and_activation(tmp_path):
    """conv(small weights) + shortcut → Relu: the 2^-p comes before the shortcut is accumulated."""
    rng = np.random.default_rng(3)
    w1 = rng.normal(0, 0.2, (16, 8, 3, 3))
    w2 = rng.uniform(-0.004, 0.004, (16, 16, 3, 3))
    m = _model([helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
                helper.make_node("Conv", ["a", "w2", "b2"], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("Add", ["c", "a"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
               {"w1": w1, "w2": w2, "b2": rng.uniform(-0.01, 0.01, 16)}, [1, 8, 6, 6])
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    res = compile_model(p, config="zcu104", out_dir=tmp_path / "b")
    assert [r["shift"] for r in res.report["weight_precision"]][-1] >= 2
    x = rng.uniform(-1, 1, (3, 1, 8, 6, 6)).astype(np.float32)
    rep = run_model("tensil", p, inputs={"x": x})
    assert rep["max_abs_error"] < 0.05, rep["max_abs_error"]


def test_coarse_weights_warn_naming_the_layer(tmp_path):
    """A bias near the range's quarter leaves no room to scale: the weights stay ~2 ulps."""
    m, _ = _small_linear(np.random.default_rng(4), bias=30.0)
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        res = compile_model(p, config="zcu104", out_dir=tmp_path / "b")
    msgs = [str(w.message) for w in got if issubclass(w.category, PrecisionWarning)]
    assert len(msgs) == 1 and "layer" in msgs[0] and "FP16BP8" in msgs[0] and "FP18BP10" in msgs[0], msgs
    assert res.report["weight_precision"][0]["shift"] == 0
    wide = PRESETS["zcu104"][0].with_(data_type="FP32BP16", name="wide")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)  # the finer type holds them: no warning
        compile_model(p, config=wide, out_dir=tmp_path / "w")


@pytest.mark.parametrize("shape,op", [((1, 32, 112, 112), "GlobalAveragePool"), ((1, 40, 70, 70), "AveragePool")])
def test_pooling_larger_than_the_accumulators(shape, op, tmp_path):
    """EfficientNet-B0 at 224 pixels: a 112×112×32 global average is 12,544 vectors, zcu104 has 4,096
    accumulators: the window's rows are taken in chunks, the pre-scaled sum accumulated across them."""
    attrs = {"kernel_shape": [35, 35], "strides": [35, 35]} if op == "AveragePool" else {}
    m = _model([helper.make_node(op, ["x"], ["y"], **attrs)], {}, list(shape))
    x = np.random.default_rng(5).uniform(-0.5, 1.5, (1,) + shape).astype(np.float32)
    assert _errors(m, x, tmp_path, samples=1)["max_abs_error"] < 0.01


def test_max_pool_window_larger_than_the_accumulators_is_refused(tmp_path):
    m = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[112, 112])], {}, [1, 32, 112, 112])
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    with pytest.raises(Exception, match="accumulator_depth >= ") as exc:
        compile_model(p, config="zcu104", out_dir=tmp_path / "b")
    assert "\n" not in str(exc.value)


def test_vanishing_outputs_warn_in_one_line(tmp_path):
    """Weights of 1e-5 (an untrained export whose activations die out): the shift stops at the type's
    8 fraction bits (2^-8 must be a constant), the outputs are 0, and the run says why."""
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": np.full((4, 3), 1e-5)}, [1, 4])
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        rep = run_model("tensil", p, samples=2)
    assert rep["compile_report"]["weight_precision"][0]["shift"] == 8
    msgs = [str(w.message) for w in got if "0 for every sample" in str(w.message)]
    assert len(msgs) == 1 and "FP16BP8" in msgs[0] and "\n" not in msgs[0], [str(w.message) for w in got]
    assert any(issubclass(w.category, PrecisionWarning) and "layer" in str(w.message) for w in got)
