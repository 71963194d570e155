"""Issue 13 on DAIS: SiLU, Split/Concat, nearest Resize, ReduceMean, HardSwish, a host Softmax tail and
an unrolled GRU compile bit-exactly (against the frontend's integer model)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx import numpy_helper as nh

from nnisa.api import run_model
from nnisa.core.errors import UnsupportedError
from nnisa.frontend.zoo import make_gru

rng = np.random.default_rng(0)


def _f(name, a):
    return nh.from_array(np.asarray(a, np.float32), name)


def _model(nodes, inits, xin, yout):
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TP.FLOAT, xin)],
                          [helper.make_tensor_value_info("y", TP.FLOAT, yout)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 10
    return m


def _mixed():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("Split", ["m"], ["p0", "p1"], axis=1, num_outputs=2),
             helper.make_node("Concat", ["p1", "p0"], ["cc"], axis=1),
             helper.make_node("Resize", ["cc", "", "sc"], ["rs"], mode="nearest"),
             helper.make_node("MaxPool", ["rs"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("ReduceMean", ["mp", "ax"], ["rm"], keepdims=0),
             helper.make_node("Gemm", ["rm", "wg"], ["g"], transB=1),
             helper.make_node("HardSwish", ["g"], ["hs"]), helper.make_node("Softmax", ["hs"], ["y"])]
    inits = [_f("w", rng.normal(0, .5, (4, 2, 3, 3))), nh.from_array(np.array([2, 3], np.int64), "ax"),
             _f("wg", rng.normal(0, .5, (5, 4))), _f("sc", [1, 1, 2, 2])]
    return _model(nodes, inits, [1, 2, 4, 4], [1, 5])


@pytest.mark.parametrize("build", [_mixed, lambda: make_gru(0, seq=3, features=2, hidden=3, classes=3)],
                         ids=["silu_split_concat_resize_reducemean_softmax", "gru"])
def test_new_ops_bit_exact(build, tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(build(), p)
    r = run_model("dais", p, samples=8, cse_budget=50_000, calibration="mse")
    assert r["bit_exact"] is True
    assert r["top1_agreement"] >= 0.75 and r["max_rel_error"] < 0.2


def test_softmax_is_a_reported_host_tail(tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(_mixed(), p)
    r = run_model("dais", p, samples=2, cse_budget=50_000)
    assert "Softmax" in " ".join(r["compile_report"]["host_tail"]["nodes"])


def test_unsupported_nodes_reported_before_compiling(tmp_path):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    p = tmp_path / "m.onnx"
    onnx.save(_model(nodes, [_f("w", rng.normal(size=(3, 3)))], [1, 4, 3], [1, 4, 3]), p)
    with pytest.raises(UnsupportedError, match="export a Gemm"):
        run_model("dais", p)
