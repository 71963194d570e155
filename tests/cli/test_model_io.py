"""``nnisa sim`` on a compiled folder takes and gives the model's own shapes on every target (issue 28 item 3).

The manifest records the model's input/output names and shapes; an array of exactly the model's
input shape is one sample, ``(N, *shape)`` (or ``(N, *shape[1:])`` for a batch-1 model) are N,
anything else is a one-line error naming the expected shapes; outputs are floats in the model's
output shapes, equal to what ``nnisa run`` computes for the same inputs.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.frontend.models import bundled_testset
from tests.cli_runner import run_cli

TARGETS = ["pim", "dais", "tensil", "cherry", "pimsab"]


def _npz(path) -> dict[str, np.ndarray]:
    with np.load(path) as d:
        return {k: d[k] for k in d.files}


def _compile(target, model, out, capsys):
    code, _, err = run_cli(["compile", "-t", target, str(model), "-o", str(out), "--json"], capsys)
    assert code == 0, err
    return json.loads((out / "manifest.json").read_text())["model"]


def _sim(target, folder, x, tmp_path, capsys) -> tuple[int, dict, str]:
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    out.unlink(missing_ok=True)
    code, _, err = run_cli(["sim", "-t", target, str(folder), "--inputs", str(tmp_path / "x.npy"), "--outputs",
                            str(out), "--json"], capsys)
    return code, (_npz(out) if code == 0 else {}), err


def _run(target, model, x, tmp_path, capsys) -> dict:
    np.save(tmp_path / "xr.npy", x)
    code, _, err = run_cli(["run", "-t", target, str(model), "--inputs", str(tmp_path / "xr.npy"), "--outputs",
                            str(tmp_path / "run.npz"), "--json"], capsys)
    assert code == 0, err
    return _npz(tmp_path / "run.npz")


@pytest.mark.parametrize("target", TARGETS)
def test_sim_folder_takes_the_model_shapes(target, tmp_path, capsys):
    """The bundled digits CNN (input [N, 1, 8, 8]): one sample, N samples in both forms, a wrong shape."""
    folder = tmp_path / "bundle"
    io = _compile(target, "digits_cnn", folder, capsys)
    assert io["inputs"] == [{"name": "input", "shape": [None, 1, 8, 8]}]
    assert io["outputs"] == [{"name": "logits", "shape": [None, 10]}]
    x, _ = bundled_testset("digits_cnn")
    ref = _run(target, "digits_cnn", x[:3], tmp_path, capsys)["logits"]
    for given, n in [(x[:1], 1), (x[:3], 3), (x[:3, None], 3)]:
        code, got, err = _sim(target, folder, given, tmp_path, capsys)
        assert code == 0, err
        assert got["logits"].shape == (n, 10) and got["logits"].dtype.kind == "f"
        np.testing.assert_allclose(got["logits"], ref[:n], rtol=1e-6, atol=1e-6)
    code, _, err = _sim(target, folder, x[0, 0], tmp_path, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "got shape (8, 8); expected (N, 1, 8, 8)" in err


def _dense_65x130(path) -> None:
    """The issue's case: a model whose input is [65, 130] (65 rows, fixed)."""
    r = np.random.default_rng(65)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [65, 130])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [65, 10])],
                          [numpy_helper.from_array((r.normal(size=(10, 130)) * 0.1).astype(np.float32), "w"),
                           numpy_helper.from_array((r.normal(size=10) * 0.1).astype(np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


@pytest.mark.parametrize("target", TARGETS)
def test_fixed_first_dimension_65x130(target, tmp_path, capsys):
    """A model input of shape [65, 130] given a (65, 130) array: one inference, outputs (65, 10), the
    same from ``run --inputs`` and from ``sim`` on the compiled folder; (64, 130) is refused in one line."""
    model = tmp_path / "dense.onnx"
    _dense_65x130(model)
    x = np.random.default_rng(0).uniform(-1, 1, (65, 130)).astype(np.float32)
    ref = _run(target, model, x, tmp_path, capsys)["y"]
    assert ref.shape == (65, 10)
    folder = tmp_path / "bundle"
    io = _compile(target, model, folder, capsys)
    assert io["inputs"] == [{"name": "x", "shape": [65, 130]}] and io["whole_batch"] is False
    code, got, err = _sim(target, folder, x, tmp_path, capsys)
    assert code == 0, err
    np.testing.assert_allclose(got["y"], ref, rtol=1e-6, atol=1e-6)
    code, _, err = _sim(target, folder, x[:64], tmp_path, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "expected (65, 130) (one inference) or (N, 65, 130) (N inferences)" in err
