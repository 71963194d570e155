"""Issue 13 on PIM: every node PIM cannot compile is named at once, before any compile work."""

from __future__ import annotations

import time

import onnx
import pytest

from nnisa.api import run_model
from nnisa.core.errors import UnsupportedError
from nnisa.frontend.zoo import ZOO


@pytest.mark.parametrize("name, words", [("gru", ("LSTM/GRU", "(GRU)"))])
def test_unsupported_listed_up_front(name, words, tmp_path):
    p = tmp_path / f"{name}.onnx"
    onnx.save(ZOO[name][0](), p)
    t0 = time.perf_counter()
    with pytest.raises(UnsupportedError) as ei:
        run_model("pim", p)
    assert time.perf_counter() - t0 < 5.0
    msg = str(ei.value)
    assert str(p) in msg and "\n" not in msg and all(w in msg for w in words)


def test_reducemean_global_pooling_compiles(tmp_path):
    p = tmp_path / "mb.onnx"
    onnx.save(ZOO["mobilenet_v2"][0](), p)
    from nnisa.frontend import load_model
    g = load_model(p)
    assert "ReduceMean" not in g.op_counts() and "GlobalAveragePool" in g.op_counts()


def test_model_objects_take_the_real_calibration_path():
    """compile_model/quantize_model on a ModelProto go through frontend.prepare (the default calibration
    set disjoint from run's samples, per-channel weights), like a path through nnisa run."""
    from nnisa.frontend.prepare import prepare_qgraph
    from nnisa.targets.pim.compiler import quantize_model
    from nnisa.targets.pim.compiler.support import pim_check
    m = ZOO["lenet"][0]()
    a, b = quantize_model(m), prepare_qgraph(m, "pim", check=pim_check)
    assert [t.scale for t in a.tensors.values()] == [t.scale for t in b.tensors.values()]
    assert any(n.w_scale is not None and n.w_scale.size > 1 for n in a.nodes)   # per-channel by default


@pytest.mark.slow
def test_resnet18_top1_on_pim(tmp_path):
    """Issue 13 goal: ResNet-18 (32×32, seeded weights), 16 samples, ≥ 15/16 top-1 agreement with
    onnxruntime through the real calibration path, bit-exact (measured: 16/16)."""
    p = tmp_path / "r18.onnx"
    onnx.save(ZOO["resnet18"][0](), p)
    r = run_model("pim", p, samples=16)
    assert r["bit_exact"] is True and r["top1_agreement"] >= 15 / 16
