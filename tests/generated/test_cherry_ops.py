"""Generated models (``modelgen``) for every operator Cherry lowers, against onnxruntime.

Cherry is a float machine: there is no integer reference, so a run must match onnxruntime within
the element format's error (fp32: relative error ≤ 1e-4 of the largest output; cherry18, the
truncated 18-bit format: ≤ 4 %).  The fast subset runs one seed per operator; the full sweep
(``-m slow``) runs eight seeds in both formats.  Refusals are allowed only when they name a
hardware limit; a crash is always a failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from generated.harness import run_generated
from generated.modelgen import GENERATORS, Generated, generate

#: every generator whose operators Cherry lowers (all of them today)
OPS = sorted(GENERATORS)
TOL = {"fp32": 1e-4, "cherry18": 0.04}


def check(gen: Generated, fmt: str) -> None:
    out = run_generated("cherry", gen, element_format=fmt)
    assert out.kind == "ran", f"{gen}: {out.kind}: {out.message}"
    err = out.max_rel_error
    assert err is not None and np.isfinite(err) and err <= TOL[fmt], f"{gen}: max_rel_error {err} ({fmt})"


@pytest.mark.parametrize("op", OPS)
def test_generated_fp32(op):
    check(generate(op, 0), "fp32")


@pytest.mark.parametrize("op", ["Conv", "Softmax", "LayerNormalization", "Gelu", "Concat"])
def test_generated_cherry18(op):
    check(generate(op, 1), "cherry18")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["fp32", "cherry18"])
@pytest.mark.parametrize("op", OPS)
def test_generated_sweep(op, fmt):
    for seed in range(8):
        check(generate(op, seed), fmt)


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def test_two_input_gru_cell_with_state():
    """A torch GRU cell whose hidden state is a second model input (multi-input graphs)."""
    path = Path(__file__).resolve().parents[1] / "data" / "torch_exports" / "gru_cell_state.onnx"
    check(Generated("GRUCell", 0, onnx.load(path), "torch GRUCell, x and h inputs"), "fp32")


def test_softmax_and_reductions_on_every_axis():
    rng = np.random.default_rng(5)
    f = TensorProto.FLOAT
    for axis in range(4):
        shape = [1, 3, 5, 6]
        nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=axis),
                 helper.make_node("ReduceMax", ["x"], ["m"], axes=[axis], keepdims=1),
                 helper.make_node("Mul", ["s", "m"], ["y"])]
        m = _model(nodes, [helper.make_tensor_value_info("x", f, shape)], [helper.make_tensor_value_info("y", f, None)],
                   [])
        check(Generated("SoftmaxAxis", axis, m, f"{shape} axis {axis}"), "fp32")
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)]
    m = _model(nodes, [helper.make_tensor_value_info("x", f, [1, 4, 3, 5])],
               [helper.make_tensor_value_info("y", f, None)],
               [numpy_helper.from_array(np.array([1, 3], np.int64), "axes")])  # not contiguous: a host permute
    check(Generated("ReduceSum", 0, m, "axes 1, 3"), "fp32")
    del rng
