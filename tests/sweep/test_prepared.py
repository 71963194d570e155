"""A model travels once: ``compare`` imports, checks and quantizes it once for every target."""

from __future__ import annotations

import numpy as np

from nnisa.frontend import onnx_import, prepare
from nnisa.frontend.models import bundled_model_path
from nnisa.frontend.prepared import PreparedModel
from nnisa.sweep.compare import compare_model


def test_compare_imports_and_quantizes_once(monkeypatch):
    calls = {"import": 0, "quantize": 0}
    real_import, real_quantize = onnx_import.load_model, prepare.quantize

    def counted_import(*a, **kw):
        calls["import"] += 1
        return real_import(*a, **kw)

    def counted_quantize(*a, **kw):
        calls["quantize"] += 1
        return real_quantize(*a, **kw)

    monkeypatch.setattr(onnx_import, "load_model", counted_import)
    monkeypatch.setattr(prepare, "quantize", counted_quantize)
    rows = compare_model(bundled_model_path("digits_mlp"), ["pim", "dais", "cherry"], samples=2)
    assert [r["status"] for r in rows] == ["ok", "ok", "ok"]
    assert all(r["bit_exact"] in (True, None) for r in rows)
    # pim and dais quantize with the same settings: one import, one quantization for three targets
    assert calls == {"import": 1, "quantize": 1}


def test_prepared_model_hands_out_copies():
    pm = PreparedModel(bundled_model_path("digits_mlp"))
    a, b = pm.graph(), pm.graph()
    assert a is not b and a.nodes[0] is not b.nodes[0]
    name = next(iter(a.initializers))
    original = b.initializers[name].copy()
    assert np.any(original)
    a.initializers[name][...] = 0  # one target rewriting its copy changes no other's
    assert np.array_equal(pm.graph().initializers[name], original)
    assert str(pm) == str(bundled_model_path("digits_mlp")) and pm.inputs is None
