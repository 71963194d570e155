"""ONNX import and float evaluation against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, make_model, ort_run
from onnx import helper

from nnisa.core.errors import FormatError, UnsupportedError
from nnisa.frontend import evaluate_float, load_model
from nnisa.frontend.models import bundled_model_path, bundled_testset, make_lenet, make_mlp, make_resnet18, make_resnet_block

f32 = np.float32


def _check_vs_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    g = load_model(model)
    out = evaluate_float(g, feeds)
    refs = ort_run(model, feeds)
    assert len(out) == len(refs)
    for o, r in zip(g.outputs, refs):
        assert_close(out[o.name], r)
    return g


def test_bundled_digits_matches_ort_batched():
    path = bundled_model_path("digits_cnn")
    x, y = bundled_testset("digits_cnn")
    assert x.shape == (360, 1, 8, 8) and y.shape == (360,)
    g = load_model(path)
    out = evaluate_float(g, x)["logits"]
    ref = ort_run(onnx.load(path), {"input": x})[0]
    assert_close(out, ref)
    assert (out.argmax(1) == y).mean() > 0.95


def test_pytorch_style_flatten_chain_is_folded():
    g = load_model(bundled_model_path("digits_cnn"))
    ops = g.op_counts()
    assert not {"Shape", "Gather", "Unsqueeze", "Concat", "BatchNormalization"} & set(ops)
    assert ops == {"Conv": 2, "Relu": 2, "MaxPool": 2, "Reshape": 1, "Gemm": 1}
    assert g.nodes[-2].attrs["shape"] == (1, 128)


@pytest.mark.parametrize("make", [make_lenet, make_mlp, make_resnet_block])
def test_generated_models_match_ort(make, rng):
    m = make()
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    x = rng.standard_normal(shape).astype(f32)
    g = _check_vs_ort(m, {"input": x})
    assert "BatchNormalization" not in g.op_counts()


@pytest.mark.slow
def test_resnet18_matches_ort(rng):
    m = make_resnet18()
    g = _check_vs_ort(m, {"input": rng.standard_normal((1, 3, 224, 224)).astype(f32)})
    assert g.op_counts()["Conv"] == 20 and g.op_counts()["Add"] == 8


def test_unsupported_op_names_node_op_and_file(tmp_path):
    m = make_model([helper.make_node("Relu", ["x"], ["r"], name="r0"), helper.make_node("Hardmax", ["r"], ["y"], name="weird_hardmax")],
                   [("x", (1, 4))], [("y", (1, 4))])
    p = tmp_path / "hardmax.onnx"
    onnx.save(m, p)
    with pytest.raises(UnsupportedError) as ei:
        load_model(p)
    msg = str(ei.value)
    assert "weird_hardmax" in msg and "Hardmax" in msg and str(p) in msg
    assert ei.value.where == "node weird_hardmax (Hardmax)" and ei.value.file == str(p)


def test_malformed_and_missing_files(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf\xff\xff\xff")
    with pytest.raises(FormatError) as ei:
        load_model(bad)
    assert str(bad) in str(ei.value)
    with pytest.raises(FormatError):
        load_model(tmp_path / "missing.onnx")
    # valid protobuf, invalid model: node input never defined
    m = make_model([helper.make_node("Relu", ["nope"], ["y"])], [("x", (1, 2))], [("y", (1, 2))])
    with pytest.raises(FormatError):
        load_model(m)


def _lenet_like(opset: int, rng):
    """Conv → Relu → Unsqueeze/Squeeze round trip → Flatten → Gemm → Softmax in ``opset``."""
    w = rng.standard_normal((4, 1, 3, 3)).astype(f32)
    fc = rng.standard_normal((64 * 4, 5)).astype(f32)
    axes_attr = opset < 13
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Unsqueeze", ["r"] if axes_attr else ["r", "ax"], ["u"], **({"axes": [0]} if axes_attr else {})),
        helper.make_node("Squeeze", ["u"] if axes_attr else ["u", "ax"], ["s"], **({"axes": [0]} if axes_attr else {})),
        helper.make_node("Flatten", ["s"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc"], ["g"]),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    inits = {"w": w, "fc": fc}
    if not axes_attr:
        inits["ax"] = np.array([0], np.int64)
    return make_model(nodes, [("x", (1, 1, 8, 8))], [("y", (1, 5))], inits, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
def test_old_opset_is_converted(opset, rng):
    m = _lenet_like(opset, rng)
    onnx.checker.check_model(m)
    x = rng.standard_normal((1, 1, 8, 8)).astype(f32)
    g = _check_vs_ort(m, {"x": x})
    assert g.op_counts()["Softmax"] == 1


def _bn_params(rng, c):
    return [(1 + 0.1 * rng.standard_normal(c)).astype(f32), rng.standard_normal(c).astype(f32),
            rng.standard_normal(c).astype(f32), (0.5 + rng.random(c)).astype(f32)]


def test_batchnorm_folding_into_conv_and_gemm(rng):
    c = 6
    inits = {"w": rng.standard_normal((c, 3, 3, 3)).astype(f32), "fw": rng.standard_normal((c * 16, 7)).astype(f32)}
    for k, name in enumerate(["s", "b", "m", "v"]):
        inits[name] = _bn_params(rng, c)[k]
        inits["g" + name] = _bn_params(rng, 7)[k]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], epsilon=1e-3),
        helper.make_node("Flatten", ["bn"], ["f"]),
        helper.make_node("MatMul", ["f", "fw"], ["mm"]),
        helper.make_node("BatchNormalization", ["mm", "gs", "gb", "gm", "gv"], ["y"]),
    ]
    m = make_model(nodes, [("x", (1, 3, 8, 8))], [("y", (1, 7))], inits)
    g = _check_vs_ort(m, {"x": rng.standard_normal((1, 3, 8, 8)).astype(f32)})
    assert g.op_counts() == {"Conv": 1, "Flatten": 1, "Gemm": 1}


def test_batchnorm_without_producer_becomes_depthwise_conv(rng):
    c = 5
    inits = dict(zip(["s", "b", "m", "v"], _bn_params(rng, c)))
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("BatchNormalization", ["r", "s", "b", "m", "v"], ["y"])]
    m = make_model(nodes, [("x", (2, c, 4, 4))], [("y", (2, c, 4, 4))], inits)
    g = _check_vs_ort(m, {"x": rng.standard_normal((2, c, 4, 4)).astype(f32)})
    conv = [n for n in g.nodes if n.op == "Conv"]
    assert len(conv) == 1 and conv[0].attrs["group"] == c and conv[0].attrs["kernel"] == (1, 1)


@pytest.mark.parametrize(
    "consumer, value, folds",
    [
        ("Conv", 0.0, True),
        ("Conv", 0.5, False),
        ("MaxPool", float("-inf"), True),
        ("MaxPool", 0.0, False),
        ("AveragePool", 0.0, True),
    ],
)
def test_pad_folding(consumer, value, folds, rng):
    pads = np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)
    inits = {"p": pads, "v": np.array(value, f32), "w": rng.standard_normal((3, 2, 3, 3)).astype(f32)}
    if consumer == "Conv":
        cons = helper.make_node("Conv", ["xp", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 0, 0, 1])
    else:
        cons = helper.make_node(consumer, ["xp"], ["y"], kernel_shape=[3, 3], strides=[2, 2])
    nodes = [helper.make_node("Pad", ["x", "p", "v"], ["xp"], mode="constant"), cons]
    m = make_model(nodes, [("x", (1, 2, 7, 6))], [("y", None)], inits)
    g = _check_vs_ort(m, {"x": rng.standard_normal((1, 2, 7, 6)).astype(f32)})
    assert ("Pad" not in g.op_counts()) == folds


def test_constant_subgraph_and_identity_removal(rng):
    """Constant nodes, Shape→Gather→Unsqueeze→Concat→Reshape, Dropout and Identity all vanish."""
    nodes = [
        helper.make_node("Constant", [], ["two"], value=helper.make_tensor("t", onnx.TensorProto.FLOAT, [], [2.0])),
        helper.make_node("Mul", ["x", "two"], ["m"]),
        helper.make_node("Dropout", ["m"], ["d"]),
        helper.make_node("Shape", ["d"], ["sh"]),
        helper.make_node("Gather", ["sh", "i0"], ["n"], axis=0),
        helper.make_node("Gather", ["sh", "i1"], ["ch"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        helper.make_node("Unsqueeze", ["ch", "ax"], ["c1"]),
        helper.make_node("Concat", ["n1", "c1", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["d", "shape"], ["r"]),
        helper.make_node("Identity", ["r"], ["y"]),
    ]
    inits = {"i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "ax": np.array([0], np.int64), "m1": np.array([-1], np.int64)}
    m = make_model(nodes, [("x", (1, 3, 4, 4))], [("y", (1, 3, 16))], inits)
    g = _check_vs_ort(m, {"x": rng.standard_normal((1, 3, 4, 4)).astype(f32)})
    assert g.op_counts() == {"Mul": 1, "Reshape": 1}
    assert g.outputs[0].name == "y" and g.nodes[-1].outputs == ["y"]


def _single(op, attrs, x_shape, extra_inputs=(), inits=None, n_out=None):
    inits = dict(inits or {})
    node = helper.make_node(op, ["x", *extra_inputs], ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", n_out)], inits)


_W = np.random.default_rng(7).standard_normal((8, 2, 3, 3)).astype(f32)
SINGLE_OPS = {
    "conv_stride_dil": ("Conv", dict(kernel_shape=[3, 3], strides=[2, 1], dilations=[2, 1], pads=[1, 2, 0, 1]), (1, 2, 9, 8), ["w"], {"w": _W}),
    "conv_group": ("Conv", dict(kernel_shape=[3, 3], group=2, pads=[1, 1, 1, 1]), (1, 4, 6, 6), ["w", "b"], {"w": _W, "b": np.arange(8, dtype=f32)}),
    "conv_depthwise_same": ("Conv", dict(kernel_shape=[3, 3], group=4, strides=[2, 2], auto_pad="SAME_UPPER"), (1, 4, 7, 7), ["w"], {"w": _W[:4, :1]}),
    "conv_same_lower": ("Conv", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER"), (1, 2, 6, 6), ["w"], {"w": _W}),
    "gemm_all": ("Gemm", dict(alpha=0.5, beta=2.0, transA=1, transB=1), (6, 2), ["w", "c"], {"w": np.ones((3, 6), f32) * 0.3, "c": np.arange(3, dtype=f32)}),
    "gemm_full_c": ("Gemm", dict(beta=0.5), (2, 6), ["w", "c"], {"w": np.ones((6, 3), f32), "c": np.arange(6, dtype=f32).reshape(2, 3)}),
    "maxpool_ceil": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, pads=[1, 1, 0, 0]), (1, 2, 8, 7), [], {}),
    "maxpool_dil": ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2]), (1, 2, 7, 7), [], {}),
    "avgpool_excl": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (1, 2, 7, 8), [], {}),
    "avgpool_incl_ceil": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1, ceil_mode=1), (1, 2, 8, 8), [], {}),
    "avgpool_excl_ceil": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1), (1, 2, 7, 5), [], {}),
    "avgpool_same": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"), (1, 2, 7, 8), [], {}),
    "gap": ("GlobalAveragePool", {}, (2, 3, 5, 4), [], {}),
    "gmp": ("GlobalMaxPool", {}, (2, 3, 5, 4), [], {}),
    "leaky": ("LeakyRelu", dict(alpha=0.2), (2, 5), [], {}),
    "sigmoid": ("Sigmoid", {}, (2, 5), [], {}),
    "tanh": ("Tanh", {}, (2, 5), [], {}),
    "clip": ("Clip", {}, (2, 5), ["lo", "hi"], {"lo": np.array(-0.5, f32), "hi": np.array(0.7, f32)}),
    "clip_min_only": ("Clip", {}, (2, 5), ["lo"], {"lo": np.array(-0.5, f32)}),
    "sub_bcast": ("Sub", {}, (2, 3, 4), ["c"], {"c": np.arange(4, dtype=f32)}),
    "mul_bcast": ("Mul", {}, (2, 3, 4), ["c"], {"c": np.arange(3, dtype=f32).reshape(3, 1)}),
    "div_const": ("Div", {}, (2, 3), ["c"], {"c": np.array([2.0, 4.0, 0.5], f32)}),
    "transpose": ("Transpose", dict(perm=[0, 2, 3, 1]), (1, 2, 3, 4), [], {}),
    "softmax_axis": ("Softmax", dict(axis=-2), (2, 3, 4), [], {}),
    "flatten2": ("Flatten", dict(axis=2), (2, 3, 4, 5), [], {}),
    "lrn": ("LRN", dict(size=3, alpha=1e-3, beta=0.75, bias=2.0), (1, 5, 3, 3), [], {}),
    "pad_neg": ("Pad", dict(mode="constant"), (1, 2, 5, 5), ["p"], {"p": np.array([0, 0, -1, 2, 0, 0, 1, -2], np.int64)}),
}


@pytest.mark.parametrize("case", sorted(SINGLE_OPS))
def test_single_op_matches_ort(case, rng):
    op, attrs, shape, extra, inits = SINGLE_OPS[case]
    m = _single(op, attrs, shape, extra, inits)
    g = _check_vs_ort(m, {"x": rng.standard_normal(shape).astype(f32)})
    assert g.nodes, "graph must keep at least one node"


def test_binary_and_concat_of_activations(rng):
    nodes = [
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Sum", ["ra", "b", "a"], ["s"]),
        helper.make_node("Mul", ["s", "b"], ["m"]),
        helper.make_node("Concat", ["m", "ra"], ["c"], axis=-1),
        helper.make_node("MatMul", ["c", "c2"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "t",
        [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2, 3, 4]), helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [1, 3, 4]),
         helper.make_tensor_value_info("c2", onnx.TensorProto.FLOAT, [2, 8, 5])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
    )
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    m.ir_version = 8
    feeds = {"a": rng.standard_normal((2, 3, 4)).astype(f32), "b": rng.standard_normal((1, 3, 4)).astype(f32),
             "c2": rng.standard_normal((2, 8, 5)).astype(f32)}
    g2 = _check_vs_ort(m, feeds)
    assert g2.op_counts()["Add"] == 2 and g2.op_counts()["MatMul"] == 1


def test_symbolic_batch_and_wrong_input_shape():
    g = load_model(bundled_model_path("digits_cnn"))
    assert g.inputs[0].shape == (1, 1, 8, 8)
    with pytest.raises(FormatError):
        evaluate_float(g, np.zeros((1, 1, 7, 8), f32))
    with pytest.raises(FormatError):
        evaluate_float(g, {"wrong": np.zeros((1, 1, 8, 8), f32)})


def test_bundled_inputs_for_and_unknown_names(tmp_path):
    from nnisa.frontend.models import bundled_inputs_for

    d = bundled_inputs_for(bundled_model_path("digits_cnn"), 5)
    x, _ = bundled_testset("digits_cnn")
    assert list(d) == ["input"] and np.array_equal(d["input"], x[:5])
    assert bundled_inputs_for(tmp_path / "other.onnx") is None
    with pytest.raises(FormatError, match="digits_cnn"):
        bundled_model_path("nope")
