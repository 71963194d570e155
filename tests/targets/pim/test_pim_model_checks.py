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
