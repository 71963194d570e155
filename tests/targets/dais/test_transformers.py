"""Encoder layers on DAIS (issue 27): each lowering bit-exact against the frontend's integer reference.

LayerNorm (square root and division unrolled in DAIS ops), Softmax inside the graph and with a
constant (causal) mask, GELU/Erf tables, token-wise MatMul by constants, activation products,
embeddings by lookup; whole BERT- and ViT-style encoders with top-1 agreement with onnxruntime.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import run_model
from nnisa.frontend.transformers import make_bert, make_vit
from nnisa.targets.dais.compiler.netcompile import _Net
from nnisa.targets.dais.sim.interp import run


def _net(bits: int) -> _Net:
    t = SimpleNamespace(name="x", shape=(1, 1), bits=bits, raw=False)
    return _Net(SimpleNamespace(inputs=[t], nodes=[], source=None), "wmc", None, None)


def _program(net: _Net, act):
    net.b.set_outputs([act.slot], [-act.e], [0])
    return net.b.build(adder_size=1, carry_size=-1)


def test_isqrt_digit_by_digit_exhaustive():
    net = _net(17)
    x = net.env["x"].reshape(-1)[0]
    w = net.Act(x.slot, x.e, 0, x.hi, x.f)  # the non-negative half of a 17-bit input
    p = _program(net, net._isqrt(None, w))
    v = np.arange(0, 1 << 16)
    got = run(p, v[:, None].astype(np.float64))[:, 0]
    assert np.array_equal(got, [math.isqrt(int(i)) for i in v])


@pytest.mark.parametrize("P", [12, 20])
def test_reciprocal_restoring_division(P):
    net = _net(12)
    x = net.env["x"].reshape(-1)[0]
    d = net.Act(x.slot, x.e, 1, x.hi, x.f)
    p = _program(net, net._recip(None, d, P))
    v = np.arange(1, 1 << 11)
    got = run(p, v[:, None].astype(np.float64))[:, 0]
    assert np.array_equal(got, (1 << P) // v)


def _run(tmp_path, model, name, samples=16, **opts):
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_model("dais", path, samples=samples, **opts)


def _attention_with_mask(seed: int, s: int, d: int) -> onnx.ModelProto:
    """Scores x·xᵀ/√d with a causal mask, Softmax inside the graph (its result multiplies x again)."""
    rng = np.random.default_rng(seed)
    mask = np.triu(np.full((s, s), -10000.0, np.float32), 1)
    inits = [numpy_helper.from_array(np.float32([1 / math.sqrt(d)]), "sc"), numpy_helper.from_array(mask, "m"),
             numpy_helper.from_array(rng.normal(0, 0.5, (d, 3)).astype(np.float32), "w")]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "xt"], ["s0"]), helper.make_node("Mul", ["s0", "sc"], ["s1"]),
             helper.make_node("Add", ["s1", "m"], ["s2"]), helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "x"], ["o"]), helper.make_node("MatMul", ["o", "w"], ["y"])]
    g = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, s, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_softmax_in_graph_with_causal_mask(tmp_path):
    r = _run(tmp_path, _attention_with_mask(0, 5, 4), "attn", samples=4)
    ops = {row["op"] for row in r["compile_report"]["layers"]}
    assert r["bit_exact"] is True and "MaskedSoftmax" in ops and "host_tail" not in r["compile_report"]


def test_small_bert_decomposed_ln_tanh_gelu(tmp_path):
    """Embedding lookups, decomposed LayerNorm, tanh-GELU table, attention, pooler and classifier."""
    r = _run(tmp_path, make_bert(3, seq=5, hidden=12, heads=3, layers=1, vocab=12, ln="decomposed", gelu="tanh"),
             "bert")
    ops = {row["op"] for row in r["compile_report"]["layers"]}
    assert {"Gather", "LayerNorm", "Softmax", "Gelu", "MatMul"} <= ops
    assert r["bit_exact"] is True and r["top1_agreement"] >= 0.75


def test_small_vit_mean_pool(tmp_path):
    r = _run(tmp_path, make_vit(2, image=5, patch=2, hidden=12, heads=3, layers=1, pool="mean"), "vit")
    assert r["bit_exact"] is True and r["top1_agreement"] >= 0.75


@pytest.mark.slow
@pytest.mark.parametrize("name,build", [
    ("bert_erf", lambda: make_bert(1, seq=8, hidden=16, heads=2, layers=1, vocab=20)),
    ("bert_2layers", lambda: make_bert(4, seq=6, hidden=8, heads=2, layers=2, vocab=10, ffn=12)),
    ("vit_cls", lambda: make_vit(1, image=6, patch=2, hidden=16, heads=2, layers=1)),
])
def test_encoders(tmp_path, name, build):
    r = _run(tmp_path, build(), name)
    assert r["bit_exact"] is True and r["top1_agreement"] >= 0.75


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits_vit", "digits_bert"])
def test_bundled_encoders(name):
    """The bundled encoders (≈ 318 k MACs, ≈ 0.6 M DAIS ops; minutes of compile time)."""
    from nnisa.frontend.models import bundled_model_path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = run_model("dais", bundled_model_path(name), samples=16)
    assert r["bit_exact"] is True and r["top1_agreement"] >= 0.75


def test_mask_input_runs_and_other_values_refused_in_one_line(tmp_path):
    """A padding mask computed from an integer input (HF style, ``(1 - mask) · -10000``) is live
    logic: masks run bit-exact; an id beyond the signed 8-bit mask input is one line."""
    from nnisa.core.errors import NnisaError
    path = tmp_path / "bert_mask.onnx"
    onnx.save(make_bert(2, seq=4, hidden=8, heads=2, layers=1, vocab=8, mask=True), path)
    ids = np.random.default_rng(1).integers(0, 8, (6, 4)).astype(np.int64)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0], [0, 1, 1, 1]], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = run_model("dais", path, inputs={"input": ids, "mask": mask})
        assert r["bit_exact"] is True and r["samples"] == 6
        with pytest.raises(NnisaError) as e:
            run_model("dais", path, inputs={"input": ids[:1], "mask": np.array([[1, 300, 1, 1]], np.int64)})
    assert "takes values -128..127" in str(e.value) and "\n" not in str(e.value)
