"""Shared helpers of the frontend tests: tiny ONNX builders and onnxruntime comparison.

(A plain module, not conftest.py: several test folders import helpers by module name.)
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], outputs: list[str] | None = None) -> list[np.ndarray]:
    """Run ``model`` on onnxruntime's CPU provider."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    # onnxruntime's PadFusion folds a zero-valued Pad into MaxPool, which changes the result
    # (padding 0 can win a max); the unoptimised graph is the ONNX-specified reference.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(outputs, feeds)


def assert_close(out: np.ndarray, ref: np.ndarray) -> None:
    """The frontend's float tolerance: rtol 1e-4, atol 1e-5·max|ref|."""
    out = np.asarray(out).reshape(np.shape(ref))
    atol = 1e-5 * float(np.abs(ref).max(initial=0.0))
    assert np.allclose(out, ref, rtol=1e-4, atol=atol), f"max abs diff {np.abs(out - ref).max()} (atol {atol})"


def make_model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    """Model from nodes; ``inputs``/``outputs`` are ``(name, shape)``, ``inits`` name → array."""
    g = helper.make_graph(
        nodes, "t",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s) if s is not None else None) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # fills in output shapes given as None
    return onnx.shape_inference.infer_shapes(m)

