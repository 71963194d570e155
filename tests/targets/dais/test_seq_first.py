"""Sequence-first attention and fixed-batch models on DAIS (issues 26/27).

torch lays attention out sequence first without ``batch_first`` (``nn.MultiheadAttention``:
``(L, N, E)``): axis 0 is the sequence, which the graph mixes.  The frontend gives such a model to
every compiler as one sample of the whole ``[L, ...]`` tensor (a unit batch axis in front,
``frontend/batch.py``); a model exported with a fixed batch whose rows are independent runs its rows
as samples.  DAIS compiles both as it compiles any batch-1 graph; these tests check real torch
exports (``scripts/export_torch_seq_first.py``) and generated seq-first attention bit-exact against
the integer reference and close to onnxruntime.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import run_model
from nnisa.cli import cli
from nnisa.frontend.ir import Graph

EXPORTS = Path(__file__).resolve().parents[2] / "data" / "torch_exports"

pytestmark = pytest.mark.skipif(
    "whole_batch" not in {f.name for f in dataclasses.fields(Graph)},
    reason="needs the frontend's fixed-first-dimension support (frontend/batch.py: Graph.whole_batch), "
           "which lands with engineer first-z's branch")


def _run(path, samples: int, inputs=None) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_model("dais", path, samples=samples, inputs=inputs)


@pytest.mark.parametrize("name,out_shape", [("mha_seq_first", (8, 1, 4)), ("encoder_seq_first", (1, 3))])
def test_torch_seq_first_attention_is_bit_exact(name, out_shape, tmp_path):
    """One inference is the model's whole ``(L, 1, E)`` input; 4 of them as ``(4, L, 1, E)``."""
    x = np.random.default_rng(3).uniform(-1, 1, (4, *_input_shape(EXPORTS / f"{name}.onnx"))).astype(np.float32)
    out = tmp_path / "y.npz"
    rep = run_model("dais", EXPORTS / f"{name}.onnx", inputs={"input": x}, save_outputs=str(out))
    assert rep["bit_exact"] is True and rep["samples"] == 4
    assert rep["top1_agreement"] >= 0.75 and rep["max_abs_error"] < 0.1
    y = next(iter(np.load(out).values()))
    assert y.shape == (4, *out_shape)


def test_fixed_batch_rows_are_samples():
    """A Linear-ReLU-Linear exported with a fixed batch of 4: 3 inferences = 12 independent rows."""
    x = np.random.default_rng(4).uniform(-1, 1, (3, 4, 12)).astype(np.float32)
    rep = _run(EXPORTS / "mlp_batch4.onnx", 3, {"input": x})
    assert rep["bit_exact"] is True and rep["top1_agreement"] >= 0.75


def test_compiled_seq_first_folder_takes_the_models_shape(tmp_path):
    """``nnisa sim`` on the compiled folder: an ``(L, 1, E)`` array is one inference."""
    model = EXPORTS / "mha_seq_first.onnx"
    res = CliRunner().invoke(cli, ["compile", "-t", "dais", str(model), "-o", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    x = np.random.default_rng(5).uniform(-1, 1, (8, 1, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    res = CliRunner().invoke(cli, ["sim", "-t", "dais", str(tmp_path / "c"), "--inputs", str(tmp_path / "x.npy"),
                                   "--outputs", str(tmp_path / "y.npy"), "--json"])
    assert res.exit_code == 0, res.output
    y = np.load(tmp_path / "y.npy").reshape(8, 1, 4)
    import onnxruntime as ort
    ref = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    assert np.abs(y - ref).max() < 0.1 and (y.argmax(-1) == ref.argmax(-1)).mean() >= 0.75
    assert json.loads(res.output.strip().splitlines()[-1])["layers"]


def _input_shape(path) -> tuple[int, ...]:
    return tuple(d.dim_value for d in onnx.load(path).graph.input[0].type.tensor_type.shape.dim)


def seq_first_attention(seq: int, dim: int, seed: int) -> onnx.ModelProto:
    """Single-head self-attention as a sequence-first export writes it: ``(L, 1, E)`` in,
    Transpose to batch-first, Q/K/V projections, scaled scores, Softmax, context, Transpose back."""
    rng = np.random.default_rng(seed)
    w = {k: numpy_helper.from_array((rng.standard_normal((dim, dim)) / np.sqrt(dim)).astype(np.float32), k)
         for k in ("wq", "wk", "wv", "wo")}
    scale = numpy_helper.from_array(np.array(1 / np.sqrt(dim), np.float32), "scale")
    nodes = [helper.make_node("Transpose", ["x"], ["xb"], perm=[1, 0, 2], name="to_batch_first"),
             *[helper.make_node("MatMul", ["xb", f"w{k}"], [k], name=f"proj_{k}") for k in "qkv"],
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="k_t"),
             helper.make_node("MatMul", ["q", "kt"], ["s0"], name="scores"),
             helper.make_node("Mul", ["s0", "scale"], ["s"], name="scaled"),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "v"], ["c"], name="context"),
             helper.make_node("Transpose", ["c"], ["cs"], perm=[1, 0, 2], name="to_seq_first"),
             helper.make_node("MatMul", ["cs", "wo"], ["y"], name="out_proj")]
    g = helper.make_graph(nodes, "seq_first_attention",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, 1, dim])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, 1, dim])],
                          [*w.values(), scale])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("seed", range(3))
def test_generated_seq_first_attention_is_bit_exact(seed, tmp_path):
    rng = np.random.default_rng([seed, 26])
    seq, dim = int(rng.integers(2, 9)), int(rng.integers(3, 13))
    path = tmp_path / f"att_{seq}x{dim}.onnx"
    onnx.save(seq_first_attention(seq, dim, seed), path)
    rep = _run(path, 3)
    assert rep["bit_exact"] is True, (seq, dim)
    assert rep["max_abs_error"] < 0.25, (seq, dim, rep["max_abs_error"])
