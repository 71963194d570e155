"""The shared Python API: output comparison, default inputs, onnxruntime reference."""

import numpy as np
import pytest

import nnisa
from nnisa.api import compare_outputs, default_inputs, onnx_reference
from nnisa.core.errors import FormatError, UnsupportedError
from nnisa.frontend.models import bundled_model_path, bundled_testset


def test_compare_outputs_figures():
    ref = {"y": np.array([[0.0, 1.0, 0.5], [2.0, -1.0, 0.0]])}
    got = {"y": np.array([[0.0, 0.9, 0.5], [-1.0, 0.0, 3.0]])}
    c = compare_outputs(got, ref)
    assert c["max_abs_error"] == pytest.approx(3.0)
    assert c["max_rel_error"] == pytest.approx(1.5)
    assert c["top1_agreement"] == 0.5
    with pytest.raises(UnsupportedError):
        compare_outputs({"other": got["y"]}, ref)


def test_default_inputs_bundled_and_random(tmp_path):
    path = bundled_model_path("digits_cnn")
    x, _ = bundled_testset("digits_cnn")
    got = default_inputs(path, samples=5)
    (arr,) = got.values()
    assert np.array_equal(arr, x[:5])
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["a"], ["b"])], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3, 4])],
                          [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3, 4])])
    m = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), m)
    r = default_inputs(m, samples=2)
    assert r["a"].shape == (2, 3, 4) and r["a"].dtype == np.float32
    out = onnx_reference(m, r)
    assert np.array_equal(out["b"], np.maximum(r["a"], 0))


def test_onnx_reference_bad_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(FormatError):
        onnx_reference(bad, {"x": np.zeros((1, 1), np.float32)})


def test_top_level_read_write(tmp_path):
    prog = nnisa.target("pim").assemble(".core 0\nsetbw 8, 8\nsldi $r1, 5\n")
    nnisa.write("pim", prog, tmp_path / "p.nnpi")
    assert nnisa.read("pim", tmp_path / "p.nnpi").equals(prog)
    assert "pim" in nnisa.target_names()


@pytest.mark.parametrize("batch", [1, 3])
def test_onnx_reference_takes_a_fixed_batch_model_batch_at_a_time(tmp_path, batch):
    """A model exported with a fixed batch B runs B samples per onnxruntime call (7 samples: the
    last chunk is padded and its extra outputs dropped)."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    a = np.random.default_rng(0).standard_normal((7, 4)).astype(np.float32)
    got = onnx_reference(tmp_path / "m.onnx", {"x": a})["y"]
    assert got.shape == (7, 4) and np.array_equal(got, np.maximum(a, 0))
