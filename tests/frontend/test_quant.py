"""Quantization and the bit-exact integer evaluator."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from frontend_helpers import make_model
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from nnisa.core.errors import ConfigError, FormatError, UnsupportedError
from nnisa.frontend import (
    evaluate_float, evaluate_quantized, im2col, load_model, make_requant, quantize, rshift_round,
)
from nnisa.frontend.kernels import div_round_away, pool_counts
from nnisa.frontend.models import bundled_model_path, bundled_testset, make_lenet, make_mlp, make_resnet18, make_resnet_block

f32 = np.float32


@pytest.fixture(scope="module")
def digits():
    g = load_model(bundled_model_path("digits_cnn"))
    x, y = bundled_testset("digits_cnn")
    return g, x, y


@pytest.mark.parametrize("mode", ["pow2", "multiplier"])
@pytest.mark.parametrize("per_channel", [True, False])
def test_digits_quantized_accuracy(digits, mode, per_channel):
    g, x, y = digits
    fl = evaluate_float(g, x)["logits"].argmax(1)
    qg = quantize(g, x[:64], scale_mode=mode, per_channel=per_channel)
    q = evaluate_quantized(qg, x)["logits"]
    assert q.dtype == np.int64
    acc_f, acc_q = (fl == y).mean(), (q.argmax(1) == y).mean()
    assert acc_f > 0.95
    assert acc_q >= acc_f - 0.02, (acc_f, acc_q)
    assert (q.argmax(1) == fl).mean() >= 0.95


def test_pow2_mode_is_shift_only(digits):
    g, x, _ = digits
    qg = quantize(g, x[:32], scale_mode="pow2")
    for t in qg.tensors.values():
        assert t.exp is not None and t.scale == 2.0**t.exp
    n_req = 0
    for n in qg.nodes:
        for r in ([n.requant] if n.requant else []) + (n.input_requants or []):
            assert np.all(r.multiplier == 1)
            n_req += 1
        if n.w_scale is not None:
            e = np.log2(n.w_scale)
            assert np.all(e == np.round(e))
    assert n_req == 3  # two convs and the gemm


def test_multiplier_mode_ranges(digits):
    g, x, _ = digits
    qg = quantize(g, x[:32], scale_mode="multiplier", multiplier_bits=15)
    for n in qg.nodes:
        if n.requant is not None:
            assert np.all(n.requant.multiplier >= 2**14) and np.all(n.requant.multiplier <= 2**15)
            assert np.all(n.requant.shift >= 0)
            want = np.asarray(n.in_scales[0] * n.w_scale / n.out_scale)
            assert np.allclose(n.requant.ratio(), want, rtol=2.0**-14)


def _naive_conv_q(x, n):
    """Loop-level reference of a quantized Conv node (independent of im2col)."""
    N, C, H, W = x.shape
    M, cg, kh, kw = n.weight.shape
    sh, sw = n.attrs["strides"]
    pt, pl, pb, pr = n.attrs["pads"]
    g = n.attrs["group"]
    oh, ow = (H + pt + pb - kh) // sh + 1, (W + pl + pr - kw) // sw + 1
    out = np.zeros((N, M, oh, ow), np.int64)
    mult = np.broadcast_to(n.requant.multiplier, (M,))
    shift = np.broadcast_to(n.requant.shift, (M,))
    for b in range(N):
        for m in range(M):
            grp = m // (M // g)
            for i in range(oh):
                for j in range(ow):
                    acc = int(n.bias[m])
                    for c in range(cg):
                        for u in range(kh):
                            for v in range(kw):
                                yy, xx = i * sh - pt + u, j * sw - pl + v
                                if 0 <= yy < H and 0 <= xx < W:
                                    acc += int(x[b, grp * cg + c, yy, xx]) * int(n.weight[m, c, u, v])
                    p, s = acc * int(mult[m]), int(shift[m])
                    r = (p + (1 << (s - 1))) >> s if s > 0 else p << -s
                    out[b, m, i, j] = min(max(r, n.clamp[0]), n.clamp[1])
    return out


@pytest.mark.parametrize("mode", ["pow2", "multiplier"])
def test_quantized_conv_matches_loop_reference(mode, rng):
    w = rng.standard_normal((6, 2, 3, 3)).astype(f32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[2, 1], pads=[1, 0, 1, 2], group=2),
             helper.make_node("Relu", ["c"], ["y"])]
    m = make_model(nodes, [("x", (1, 4, 7, 6))], [("y", None)], {"w": w, "b": rng.standard_normal(6).astype(f32)})
    g = load_model(m)
    x = rng.standard_normal((3, 4, 7, 6)).astype(f32)
    qg = quantize(g, x, scale_mode=mode)
    (n,) = qg.nodes
    assert n.act == "relu" and n.clamp == (0, 127)
    xq = qg.quantize_input("x", x)
    got = evaluate_quantized(qg, xq)["y"]
    assert np.array_equal(got, _naive_conv_q(xq, n))
    # the matrix form compilers use gives the same accumulators
    cols = im2col(xq, n.attrs["kernel"], n.attrs["strides"], n.attrs["pads"], n.attrs["dilations"], 2)
    acc = np.einsum("ngpk,gkm->ngpm", cols, n.weight_matrix())
    order = n.patch_order()
    assert order.shape == (18, 3) and tuple(order[4]) == (0, 1, 1) and tuple(order[9]) == (1, 0, 0)
    acc = acc.transpose(0, 1, 3, 2).reshape(3, 6, *got.shape[2:]) + n.bias.reshape(1, -1, 1, 1)
    assert np.array_equal(np.clip(n.requant.apply(acc, axis=1), *n.clamp), got)


@given(st.integers(-(2**40), 2**40), st.integers(-8, 30))
@settings(max_examples=300, deadline=None)
def test_rshift_round_is_round_half_up(v, s):
    got = int(rshift_round(np.int64(v), np.int64(s)))
    if s >= 0:
        assert got == math.floor(Fraction(v, 2**s) + Fraction(1, 2))
    else:
        assert got == v * 2 ** (-s)


@given(st.integers(-(2**31), 2**31), st.integers(1, 1000))
@settings(max_examples=300, deadline=None)
def test_div_round_away(a, n):
    q = Fraction(a, n)
    want = int(math.floor(abs(q) + Fraction(1, 2))) * (1 if q >= 0 else -1)
    assert int(div_round_away(a, n)) == want


@given(st.floats(1e-6, 1e3), st.integers(8, 24))
@settings(max_examples=200, deadline=None)
def test_make_requant_precision(ratio, mbits):
    r = make_requant(ratio, "multiplier", mbits)
    assert abs(float(r.ratio()) / ratio - 1) <= 2.0 ** -(mbits - 1)
    p = make_requant(2.0 ** round(math.log2(ratio)), "pow2")
    assert int(p.multiplier) == 1 and float(p.ratio()) == 2.0 ** round(math.log2(ratio))


def test_avgpool_integer_semantics():
    attrs = dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=False, count_include_pad=False)
    counts = pool_counts(attrs, 4, 4)
    assert counts.tolist() == [[4, 6], [6, 9]]
    attrs["count_include_pad"] = True
    assert pool_counts(attrs, 4, 4).tolist() == [[9, 9], [9, 9]]
    assert div_round_away(np.array([5, -5, 7, -7, 4]), 2).tolist() == [3, -3, 4, -4, 2]
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])]
    g = load_model(make_model(nodes, [("x", (1, 1, 4, 4))], [("y", None)]))
    x = np.arange(16, dtype=f32).reshape(1, 1, 4, 4) - 6.0
    qg = quantize(g, x, scale_mode="pow2")
    xq = qg.quantize_input("x", x)
    got = evaluate_quantized(qg, xq)["y"][0, 0]
    # window sums over the unpadded 4×4 input divided by the counts above, ties away from 0
    sums = np.array([[xq[0, 0, :2, :2].sum(), xq[0, 0, :2, 1:4].sum()], [xq[0, 0, 1:4, :2].sum(), xq[0, 0, 1:4, 1:4].sum()]])
    assert got.tolist() == div_round_away(sums, counts).tolist()


@pytest.mark.parametrize("mode", ["pow2", "multiplier"])
def test_add_concat_and_lut_ops(mode, rng):
    nodes = [
        helper.make_node("Mul", ["x", "k"], ["a"]),  # a has a larger scale than x
        helper.make_node("Add", ["a", "x"], ["s"]),
        helper.make_node("Sigmoid", ["s"], ["sg"]),
        helper.make_node("Tanh", ["x"], ["th"]),
        helper.make_node("LeakyRelu", ["a"], ["lr"], alpha=0.1),
        helper.make_node("Concat", ["sg", "th", "lr"], ["y"], axis=1),
    ]
    m = make_model(nodes, [("x", (1, 4, 3, 3))], [("y", None)], {"k": np.array(6.0, f32)})
    g = load_model(m)
    x = rng.standard_normal((16, 4, 3, 3)).astype(f32)
    qg = quantize(g, x, scale_mode=mode)
    add = next(n for n in qg.nodes if n.op == "Add")
    if mode == "pow2":
        assert all(np.all(r.shift <= 0) for r in add.input_requants) and add.requant.shift >= 0
    assert next(n for n in qg.nodes if n.op == "Sigmoid").lut.shape == (256,)
    ref = evaluate_float(g, x)["y"]
    got = evaluate_quantized(qg, x, dequantize=True)["y"]
    assert np.abs(got - ref).max() < 0.08 * np.abs(ref).max()


def test_softmax_stays_float_at_the_end_and_is_integer_inside(rng):
    nodes = [helper.make_node("Gemm", ["x", "w"], ["l"]), helper.make_node("Softmax", ["l"], ["y"], axis=1)]
    m = make_model(nodes, [("x", (1, 6))], [("y", None)], {"w": rng.standard_normal((6, 4)).astype(f32)})
    g = load_model(m)
    x = rng.standard_normal((8, 6)).astype(f32)
    qg = quantize(g, x)
    out = evaluate_quantized(qg, x)["y"]
    assert out.dtype == np.float32 and np.allclose(out.sum(1), 1, atol=1e-5)
    assert np.abs(out - evaluate_float(g, x)["y"]).max() < 0.05
    nodes.append(helper.make_node("Relu", ["y"], ["z"]))  # inside the graph: the integer softmax (issue 27)
    g2 = load_model(make_model(nodes, [("x", (1, 6))], [("z", None)], {"w": rng.standard_normal((6, 4)).astype(f32)}))
    qg2 = quantize(g2, x)
    sm = next(n for n in qg2.nodes if n.op == "Softmax")
    assert sm.out_bits == 8 and sm.out_scale == 2.0 ** -7 and sm.lut.shape == (256,)
    got = evaluate_quantized(qg2, x, dequantize=True)["z"]
    assert np.abs(got - evaluate_float(g2, x)["z"]).max() < 0.05  # int8 logits dominate; see test_transformer_quant


def test_quantize_rejects_lrn_and_bad_settings(rng):
    m = make_model([helper.make_node("LRN", ["x"], ["y"], size=3, name="lrn1")], [("x", (1, 4, 2, 2))], [("y", None)])
    g = load_model(m)
    x = rng.standard_normal((1, 4, 2, 2)).astype(f32)
    with pytest.raises(UnsupportedError, match=r"node lrn1 \(LRN\)"):
        quantize(g, x)
    g2 = load_model(make_mlp())
    with pytest.raises(ConfigError):
        quantize(g2, np.zeros((1, 784), f32), scale_mode="float")
    with pytest.raises(ConfigError):
        quantize(g2, np.zeros((1, 784), f32), bits=1)


def test_integer_inputs_and_low_bit_widths(rng):
    g = load_model(make_lenet())
    x = rng.standard_normal((4, 1, 28, 28)).astype(f32)
    qg = quantize(g, x, bits=6, w_bits=4)
    xq = qg.quantize_input("input", x)
    assert xq.min() >= -32 and xq.max() <= 31
    a = evaluate_quantized(qg, xq)["logits"]
    assert np.array_equal(a, evaluate_quantized(qg, x)["logits"])
    for n in qg.nodes:
        if n.weight is not None:
            assert np.abs(n.weight).max() <= 7
    with pytest.raises(FormatError, match="range"):
        evaluate_quantized(qg, xq * 100)


@pytest.mark.parametrize("make", [make_lenet, make_mlp, make_resnet_block])
@pytest.mark.parametrize("mode", ["pow2", "multiplier"])
def test_generated_models_quantize_close_to_float(make, mode, rng):
    g = load_model(make())
    x = rng.standard_normal((8,) + g.inputs[0].shape[1:]).astype(f32)
    qg = quantize(g, x, scale_mode=mode)
    ref = evaluate_float(g, x)[g.outputs[0].name]
    got = evaluate_quantized(qg, x, dequantize=True)[g.outputs[0].name]
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()
    # quantization is deterministic: same graph, same calibration, same integers
    again = evaluate_quantized(quantize(g, x, scale_mode=mode), x)[g.outputs[0].name]
    assert np.array_equal(again, evaluate_quantized(qg, x)[g.outputs[0].name])


@pytest.mark.slow
def test_resnet18_quantized_is_fast_and_agrees(rng):
    import time

    g = load_model(make_resnet18())
    x = rng.standard_normal((2, 3, 224, 224)).astype(f32)
    qg = quantize(g, x[:1], scale_mode="pow2")
    t = time.perf_counter()
    q = evaluate_quantized(qg, x, dequantize=True)["logits"]
    assert time.perf_counter() - t < 20.0
    f = evaluate_float(g, x)["logits"]
    assert np.corrcoef(q.ravel(), f.ravel())[0, 1] > 0.98
