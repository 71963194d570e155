"""Encoder layers on PIMSAB (issue 27 items 2 and 4): BERT- and ViT-style models of our own shapes,
compiled from ONNX, bit-exact against the frontend's integer reference, top-1 agreement with
onnxruntime; the projections and the attention GEMMs (Q·Kᵀ, P·V) are device GEMM programs, and
Softmax, LayerNorm and GELU the named host tail."""

from __future__ import annotations

import collections

import onnx
import pytest

from nnisa import api
from nnisa.frontend.models import bundled_model_path
from nnisa.frontend.transformers import make_bert, make_vit

#: ops an encoder layer leaves on the host (the report names each; docs/pimsab_compiler.md says why)
HOST_TAIL = {"Softmax", "MaskedSoftmax", "LayerNorm", "Gelu", "Tanh", "Gather", "Slice", "Reshape", "Transpose",
             "Concat", "Flatten", "Squeeze", "Unsqueeze", "ReduceMean", "Identity"}


def run(path, samples: int = 16) -> dict:
    rep = api.run_model("pimsab", path, samples=samples)
    host = collections.Counter(h["op"] for h in rep["compile_report"]["host_layers"])
    assert set(host) <= HOST_TAIL, f"unexpected host layers: {host}"
    progs = rep["compile_report"]["programs"]
    assert sum(p["op"] == "MatMul" and p["role"] == "gemm" for p in progs) >= 2
    assert rep["bit_exact"] is True
    assert rep["top1_agreement"] >= 0.75
    return rep


def _save(tmp_path, model: onnx.ModelProto, name: str):
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def test_small_bert_bit_exact(tmp_path):
    """A small version of the BERT benchmark's model (benchmarks/pimsab_bert.py): one post-norm layer."""
    m = make_bert(3, seq=12, hidden=24, heads=3, layers=1, vocab=20, classes=4)
    rep = run(_save(tmp_path, m, "bert"))
    assert rep["cycles"] > 0 and rep["energy_pj"] > 0


def test_small_vit_bit_exact(tmp_path):
    """A ViT of our own shape: odd image (the Conv drops the remainder), 2 heads, class token."""
    m = make_vit(5, image=9, channels=2, patch=3, hidden=16, heads=2, layers=1, classes=5)
    run(_save(tmp_path, m, "vit"))


@pytest.mark.slow
@pytest.mark.parametrize("kw", [dict(seq=20, hidden=48, heads=6, layers=2, mask=True, ln="decomposed"),
                                dict(seq=7, hidden=30, heads=5, layers=1, gelu="tanh")])
def test_bert_shapes(tmp_path, kw):
    run(_save(tmp_path, make_bert(11, vocab=24, classes=3, **kw), "bert"))


@pytest.mark.slow
@pytest.mark.parametrize("kw", [dict(image=12, patch=4, hidden=32, heads=4, layers=2, pool="mean"),
                                dict(image=8, patch=2, hidden=24, heads=3, layers=1)])
def test_vit_shapes(tmp_path, kw):
    run(_save(tmp_path, make_vit(7, classes=6, **kw), "vit"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits_bert", "digits_vit"])
def test_bundled_transformers(name):
    run(bundled_model_path(name))
