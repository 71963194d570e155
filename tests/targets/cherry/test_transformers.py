"""Encoders on Cherry (issue 27): matmul of activations, exp for softmax, erf/tanh GELU from exp and
div, layernorm by row reductions and ``pow``, embeddings as one-hot matmuls; checked against
onnxruntime (top-1 agreement on 16 samples, and the fp32 element format to 1e-4)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from nnisa.api import run_model
from nnisa.frontend import load_model
from nnisa.frontend.models import bundled_model_path, bundled_testset
from nnisa.frontend.transformers import make_bert, make_vit


def _run(tmp_path, model, fmt, samples=16):
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return run_model("cherry", path, samples=samples, element_format=fmt)


@pytest.mark.parametrize("fmt", ["cherry18", "fp32"])
def test_bert_with_mask(tmp_path, fmt):
    """11 tokens, 3 heads of 8, a padding-mask input, erf GELU, decomposed LayerNorm."""
    r = _run(tmp_path, make_bert(7, seq=11, hidden=24, heads=3, layers=1, mask=True, vocab=40, ln="decomposed"), fmt)
    assert r["top1_agreement"] >= 0.75
    assert r["max_rel_error"] < (1e-4 if fmt == "fp32" else 0.05)
    assert r["compile_report"]["host_steps"] > 0  # the mask broadcast and head moves are host steps


def test_vit_mean_pool_tanh_gelu(tmp_path):
    """10x10 image, 3x3 patches (the remainder dropped), 4 heads of 5, mean pooling, tanh GELU."""
    r = _run(tmp_path, make_vit(5, image=10, patch=3, hidden=20, heads=4, pool="mean", gelu="tanh", layers=2), "fp32")
    assert r["top1_agreement"] >= 0.75 and r["max_rel_error"] < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits_bert", "digits_vit"])
def test_bundled_transformers(name):
    x, _ = bundled_testset(name)
    inp = load_model(bundled_model_path(name)).inputs[0].name
    r = run_model("cherry", bundled_model_path(name), inputs={inp: x[:16]})
    assert r["top1_agreement"] >= 0.75
    assert r["max_rel_error"] < 0.05


def test_torch_attention_with_where_mask():
    """A torch export whose causal mask is ``Where(mask, -inf, scores)`` before the Softmax."""
    path = Path(__file__).resolve().parents[2] / "data" / "torch_exports" / "manual_attention.onnx"
    r = run_model("cherry", path, samples=8, element_format="fp32")
    assert r["top1_agreement"] == 1.0 and r["max_rel_error"] < 1e-4


#: encoders of other shapes than the bundled ones (issue 27 "done when"): heads of 1–16 lanes,
#: odd sequence lengths, masks, both LayerNorm and GELU spellings, cls and mean pooling
ENCODERS = [
    pytest.param("bert", 2, dict(seq=7, hidden=16, heads=1, layers=1, vocab=30), id="bert-seq7-h16x1"),
    pytest.param("vit", 6, dict(image=28, patch=7, hidden=64, heads=8, layers=1, gelu="tanh"), id="vit-28px-h64x8"),
    pytest.param("bert", 1, dict(seq=20, hidden=48, heads=6, layers=2, mask=True, vocab=100, ln="decomposed",
                                 gelu="tanh"), id="bert-seq20-h48x6-mask", marks=pytest.mark.slow),
    pytest.param("bert", 3, dict(seq=33, hidden=64, heads=4, layers=2, ffn=100, vocab=500, mask=True),
                 id="bert-seq33-h64x4-vocab500", marks=pytest.mark.slow),
    pytest.param("vit", 4, dict(image=16, channels=3, patch=4, hidden=36, heads=3, layers=2), id="vit-rgb16-h36x3",
                 marks=pytest.mark.slow),
    pytest.param("vit", 5, dict(image=13, patch=3, hidden=24, heads=2, layers=3, pool="mean", ln="decomposed"),
                 id="vit-13px-mean-3layers", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("kind,seed,shape", ENCODERS)
def test_encoders_of_other_shapes(tmp_path, kind, seed, shape):
    """cherry18 (the default format), 16 samples: top-1 ≥ 0.75 and within the format's error."""
    model = (make_bert if kind == "bert" else make_vit)(seed, **shape)
    r = _run(tmp_path, model, "cherry18")
    assert r["top1_agreement"] >= 0.75 and r["max_rel_error"] < 0.05
