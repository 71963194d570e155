"""Cherry compiler against numpy and onnxruntime (spec §6, §8.1)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import onnx_reference, run_model
from nnisa.core.errors import ConfigError, UnsupportedError
from nnisa.core.target import get_target
from nnisa.frontend.models import bundled_model_path, bundled_testset
from nnisa.targets.cherry.compiler.builder import Builder
from nnisa.targets.cherry.compiler.kernels import concat, fuse, transfer, zero_fill
from nnisa.targets.cherry.layout import plain
from nnisa.targets.cherry.sim.runtime import Device
from nnisa.targets.cherry.config import CherryConfig
from nnisa.targets.cherry.sim.element import quantize


def run_builder(cfg, build, inputs):
    b = Builder(cfg)
    tids = {k: b.input(k, plain(v.shape)) for k, v in inputs.items()}
    out, shape = build(b, tids)
    b.output("y", out, plain(shape))
    dev = Device(b.plan, cfg)
    return dev.run([inputs])[0]["y"], dev


def matmul(cfg, x, w, ta=False, tb=False):
    m = x.shape[-1] if ta else x.shape[-2]
    n = w.shape[-2] if tb else w.shape[-1]
    batch = x.shape[:-2] or w.shape[:-2]
    y, _ = run_builder(cfg, lambda b, t: (b.matmul(t["x"], t["w"], ta, tb), batch + (m, n)), {"x": x, "w": w})
    return y


rng = np.random.default_rng(1337)


def rel_tol(k: int, sz: int, fmt: str) -> float:
    return 1e-5 if fmt == "fp32" else (-(-k // sz) + 2) * 2.0**-9


@pytest.mark.parametrize("sz", [4, 16, 32])
@pytest.mark.parametrize("fmt", ["fp32", "cherry18"])
def test_tinygrad_matmuls(sz, fmt):
    cfg = CherryConfig(sz=sz, element_format=fmt)

    def check(x, w, ta=False, tb=False):
        q = (lambda a: quantize(a, fmt))
        ref = (q(x).T if ta else q(x)) @ (q(w).T if tb else q(w))
        k = x.shape[0] if ta else x.shape[1]
        np.testing.assert_allclose(matmul(cfg, x, w, ta, tb), ref, rtol=rel_tol(k, sz, fmt), atol=1e-6)

    small = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)
    assert np.array_equal(matmul(cfg, small, -small), small @ -small)  # exact in both formats
    check(rng.random((47, 79), dtype=np.float32), rng.random((79, 42), dtype=np.float32))
    x, w = rng.random((33, 33), dtype=np.float32), rng.random((33, 33), dtype=np.float32)
    for ta in (False, True):
        for tb in (False, True):
            check(x, w, ta, tb)
    check(rng.random((47, 79), dtype=np.float32), rng.random((42, 79), dtype=np.float32), tb=True)
    check(rng.random((79, 47), dtype=np.float32), rng.random((79, 42), dtype=np.float32), ta=True)


@pytest.mark.slow
@pytest.mark.parametrize("sz", [4, 16, 32])
def test_matmul_256_even(sz):
    x, w = rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    np.testing.assert_allclose(matmul(CherryConfig(sz=sz, element_format="fp32"), x, w), x @ w, rtol=1e-5)


def test_matmul_256_even_sz32_fast():
    x, w = rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    np.testing.assert_allclose(matmul(CherryConfig(sz=32, element_format="fp32"), x, w), x @ w, rtol=1e-5)


def test_matmul_blocking_batches_and_tiny_cache():
    cfg = CherryConfig(element_format="fp32", cache_tiles=48)
    x, w = rng.random((3, 30, 21), dtype=np.float32), rng.random((21, 26), dtype=np.float32)
    y = matmul(cfg, x, w[None])
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)
    x2, w2 = rng.random((2, 9, 10), dtype=np.float32), rng.random((2, 13, 10), dtype=np.float32)
    np.testing.assert_allclose(matmul(cfg, x2, w2, tb=True), x2 @ w2.transpose(0, 2, 1), rtol=1e-5)


def test_matmul_equals_mulacc_decomposition():
    """§8.1 item 6: matmul == sum of rank-1 mulacc updates on broadcast tiles (exact at SZ 4)."""
    from nnisa.targets.cherry.formats.text import assemble
    from nnisa.targets.cherry.sim.machine import Machine
    a = np.arange(1, 17, dtype=np.float32).reshape(4, 4)
    m = Machine(CherryConfig(element_format="fp32"))
    m.cache[0], m.cache[1] = a, -a
    for l in range(4):
        m.cache[10 + l] = np.repeat(a[:, l:l + 1], 4, axis=1)  # column l broadcast over columns
        m.cache[20 + l] = np.repeat(-a[l:l + 1, :], 4, axis=0)  # row l broadcast over rows
    text = ".apu 0 = 0\n.apu 1 = 1\n.apu 2 = 10 + i\n.apu 3 = 20 + i\n.loop 0 iterations=4\n" \
           "load 0, INPUT\nload 1, WEIGHTS\nzero ACC\nmatmul\nstore 1, ACC\nzero ACC\n" \
           "start_loop 0\nload 2, INPUT\nload 3, WEIGHTS\nmulacc\nend_loop 0\n"
    m.run(assemble(text))
    assert np.array_equal(m.regs[3, 0, 0], m.cache[1, 0]) and np.array_equal(m.cache[1, 0], a @ -a)


@pytest.mark.parametrize("sz", [4, 16])
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 9, 17)])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reductions_over_every_axis(sz, shape, op):
    cfg = CherryConfig(sz=sz, element_format="fp32")
    x = rng.standard_normal(shape).astype(np.float32) - 2.0
    npf = np.sum if op == "sum" else np.max
    for axis in (-1, -2):
        y, _ = run_builder(cfg, lambda b, t: (b.reduce(t["x"], 1 if axis == -1 else 0, op),
                                              shape[:-1] + (1,) if axis == -1 else shape[:-2] + (1, shape[-1])),
                           {"x": x})
        np.testing.assert_allclose(y, npf(x, axis=axis, keepdims=True), rtol=1e-5, atol=1e-5)
    if len(shape) > 2:  # leading axes: elementwise accumulation / exact select
        fn = (lambda b, t: b.max_leading(t["x"])) if op == "max" else (lambda b, t: b.sum_leading(t["x"]))
        y, _ = run_builder(cfg, lambda b, t: (fn(b, t), shape[-2:]), {"x": x.reshape(-1, *shape[-2:])})
        np.testing.assert_allclose(y, npf(x.reshape(-1, *shape[-2:]), axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["relu", "exp", "log", "gtz", "add", "sub", "mul", "div", "pow"])
def test_elementwise_with_padding_fixups(op):
    cfg = CherryConfig(element_format="fp32")
    x = rng.random((2, 5, 7), dtype=np.float32) + 0.5
    w = rng.random((2, 5, 7), dtype=np.float32) + 0.5
    unary = op in ("relu", "exp", "log", "gtz")
    ins = {"x": x} if unary else {"x": x, "w": w}
    b = Builder(cfg)
    t = {k: b.input(k, plain(v.shape)) for k, v in ins.items()}
    out = b.elementwise(op, t["x"], None if unary else t["w"])
    b.output("y", out, plain(x.shape))
    dev = Device(b.plan, cfg)
    y = dev.run([ins])[0]["y"]
    ref = {"relu": np.maximum(x, 0), "exp": np.exp(x), "log": np.log2(x), "gtz": (x > 0).astype(np.float32),
           "add": x + w, "sub": x - w, "mul": x * w, "div": x / w, "pow": x ** w}[op]
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    raw = dev.machine.read_dram(b.plan.tensors[out]["base"], b.plan.tensors[out]["tiles"])
    assert np.count_nonzero(raw) == x.size  # the zero-padding invariant holds


def test_transpose_kernel():
    cfg = CherryConfig(element_format="fp32")
    x = rng.random((3, 10, 7), dtype=np.float32)
    y, _ = run_builder(cfg, lambda b, t: (b.transpose(t["x"]), (3, 7, 10)), {"x": x})
    assert np.array_equal(y, x.transpose(0, 2, 1))


def test_fusion_merges_formulas_and_respects_budgets():
    a, b = transfer(4, False, 100, 7, 1, 10, 10, 10), zero_fill(4, 100, 10)
    fused = concat([a, b])
    assert fused is not None and len(fused) == len(a) + len(b)
    # the two cache formulas share the constant 100 and merge into one (inactive loops give 0)
    assert sum(1 for f in fused.header.formulas if f[8] == 100) == 1
    assert len(fuse([zero_fill(4, 10 * k, 3) for k in range(12)])) == 2  # 8 loops per program


# ------------------------------------------------------------------ ONNX models
def _model(nodes, inputs, outputs, inits, path):
    g = helper.make_graph(nodes, "t", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, str(path))
    return path


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


@pytest.mark.parametrize("kind", ["general", "pointwise", "depthwise", "strided"])
def test_conv_variants_vs_onnxruntime(tmp_path, kind):
    c, m = (6, 6) if kind == "depthwise" else (3, 5)
    k = 1 if kind == "pointwise" else 3
    group = c if kind == "depthwise" else 1
    stride = 2 if kind == "strided" else 1
    pad = 0 if kind == "pointwise" else 1
    w = rng.standard_normal((m, c // group, k, k)).astype(np.float32)
    bias = rng.standard_normal(m).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[pad] * 4,
                              strides=[stride] * 2, group=group),
             helper.make_node("Relu", ["c"], ["y"])]
    hw = 9
    out = (hw + 2 * pad - k) // stride + 1
    if kind == "pointwise":  # a 1x1 conv after a 3x3 one runs on channels-last rows directly
        w0 = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
        nodes = [helper.make_node("Conv", ["x", "w0"], ["x1"], kernel_shape=[3, 3], pads=[1] * 4)] + \
                [helper.make_node("Conv", ["x1", "w", "b"], ["c"], kernel_shape=[1, 1]),
                 helper.make_node("Relu", ["c"], ["y"])]
    inits = {"w": w, "b": bias} | ({"w0": w0} if kind == "pointwise" else {})
    path = _model(nodes, [_vi("x", [1, c, hw, hw])], [_vi("y", [1, m, out, out])], inits, tmp_path / "m.onnx")
    x = rng.standard_normal((2, 1, c, hw, hw)).astype(np.float32)
    rep = run_model("cherry", path, inputs={"x": x[:, 0]}, element_format="fp32")
    assert rep["max_rel_error"] < 1e-5
    if kind == "pointwise":
        assert rep["compile_report"]["host_steps"] == 1  # only the first conv's im2col


def test_elementwise_broadcasting_transpose_pool_models(tmp_path):
    bias = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "s"], ["a"]), helper.make_node("Add", ["a", "bias"], ["b"]),
             helper.make_node("Sigmoid", ["b"], ["c"]),
             helper.make_node("MaxPool", ["c"], ["d"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["c"], ["e"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Sub", ["d", "e"], ["f"]),
             helper.make_node("Transpose", ["f"], ["g"], perm=[0, 1, 3, 2]),
             helper.make_node("GlobalAveragePool", ["g"], ["h"]), helper.make_node("Flatten", ["h"], ["y"])]
    path = _model(nodes, [_vi("x", [1, 4, 6, 6])], [_vi("y", [1, 4])],
                  {"s": np.float32([[[[0.5]]]]), "bias": bias}, tmp_path / "m.onnx")
    x = rng.standard_normal((3, 4, 6, 6)).astype(np.float32)
    rep = run_model("cherry", path, inputs={"x": x}, element_format="fp32")
    assert rep["max_abs_error"] < 1e-5


def test_matmul_model_with_activation_operands(tmp_path):
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["x", "xt"], ["y"])]
    path = _model(nodes, [_vi("x", [1, 2, 5, 7])], [_vi("y", [1, 2, 5, 5])], {}, tmp_path / "m.onnx")
    x = rng.standard_normal((2, 2, 5, 7)).astype(np.float32)  # two samples
    got = get_target("cherry")
    res = got.compile(path, config="element_format=fp32")
    out = got.run_compiled(res, {"x": x})[0]["y"]
    np.testing.assert_allclose(out, onnx_reference(path, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_unsupported_operator_is_one_line(tmp_path):
    """Cherry lowers every IR operator the frontend emits; what it refuses is named in one line."""
    path = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32)], [_vi("x", [1, 4, 2, 2])],
                  [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 4, 2, 2])], {}, tmp_path / "m.onnx")
    with pytest.raises(UnsupportedError, match=r"node .* \(Cast\): Cast to int32: Cherry holds floats only"):
        get_target("cherry").compile(path)


def test_every_frontend_operator_is_lowered():
    """The IR operators the frontend emits (every ``emit("Op"`` in its sources) all have a Cherry
    lowering: nothing a user's model imports to is refused by the operator check."""
    import re
    from pathlib import Path

    import nnisa.frontend
    from nnisa.targets.cherry.compiler.graph import LOWERINGS
    emitted = {m for f in Path(nnisa.frontend.__file__).parent.glob("*.py") for m in re.findall(r'emit\("([A-Za-z]+)"', f.read_text())}
    assert emitted and not emitted - set(LOWERINGS), sorted(emitted - set(LOWERINGS))


@pytest.mark.parametrize("sz", [4, 16])
def test_softmax_and_device_broadcasts(tmp_path, sz):
    """Row/column broadcasts of activations on the device (ONES tiles, §6.4) and Softmax."""
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=-1),
             helper.make_node("MatMul", ["x", "w"], ["col"]),        # (1, 5, 1): broadcast along columns
             helper.make_node("Sub", ["s", "col"], ["d"]),
             helper.make_node("MatMul", ["v", "x"], ["row"]),        # (1, 1, 9): broadcast along rows
             helper.make_node("Mul", ["row", "d"], ["y"])]
    inits = {"w": rng.standard_normal((9, 1)).astype(np.float32), "v": rng.standard_normal((1, 5)).astype(np.float32)}
    path = _model(nodes, [_vi("x", [1, 5, 9])], [_vi("y", [1, 5, 9])], inits, tmp_path / "m.onnx")
    x = rng.standard_normal((2, 1, 5, 9)).astype(np.float32)
    res = get_target("cherry").compile(path, config=f"sz={sz},element_format=fp32")
    assert res.report["host_steps"] == 0
    rep = run_model("cherry", path, inputs={"x": x[:, 0]}, config=f"sz={sz},element_format=fp32")
    assert rep["max_rel_error"] < 1e-5


@pytest.mark.parametrize("model", ["digits_mlp", "digits_cnn"])
@pytest.mark.parametrize("fmt, bound", [("cherry18", 0.05), ("fp32", 1e-5)])
def test_bundled_models(model, fmt, bound):
    x, _ = bundled_testset(model)
    rep = run_model("cherry", bundled_model_path(model), inputs={"input": x[:16]}, element_format=fmt)
    assert rep["top1_agreement"] == 1.0
    assert rep["max_rel_error"] < bound
    assert rep["cycles"] > 0 and rep["timing_model"].startswith("cherrycore")


def test_padded_ceil_maxpool_and_leaky_clip(tmp_path):
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              ceil_mode=1),
             helper.make_node("LeakyRelu", ["p"], ["l"], alpha=0.1),
             helper.make_node("Clip", ["l", "lo", "hi"], ["y"])]
    path = _model(nodes, [_vi("x", [1, 3, 7, 7])], [_vi("y", [1, 3, 4, 4])],
                  {"lo": np.float32(0.0), "hi": np.float32(0.8)}, tmp_path / "m.onnx")
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32) - 0.5
    rep = run_model("cherry", path, inputs={"x": x}, element_format="fp32")
    assert rep["max_abs_error"] < 1e-6


def test_device_memory_is_reused_and_sz_is_picked(tmp_path):
    """Dead tensors give their tiles back; a model too large for the configured SZ is compiled at a
    larger one (and said so), or refused naming the figures when asked not to."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["b"]),
             helper.make_node("Tanh", ["b"], ["c"]), helper.make_node("Exp", ["c"], ["y"])]
    path = _model(nodes, [_vi("x", [1, 40, 40])], [_vi("y", [1, 40, 40])], {}, tmp_path / "m.onnx")
    t = get_target("cherry")
    roomy = t.compile(path, config="element_format=fp32")
    plan = roomy.program.plan
    assert roomy.report["dram_tiles"] < sum(t["tiles"] for t in plan.tensors)  # without reuse: the sum
    x = rng.standard_normal((2, 40, 40)).astype(np.float32)
    small = "element_format=fp32,dram_tiles=200"
    fitted = t.compile(path, config=small)
    assert fitted.report["sz"] == 16 and "compiled at SZ=16" in fitted.report["sz_note"]
    out = t.run_compiled(fitted, {"x": x})[0]["y"]
    np.testing.assert_allclose(out, onnx_reference(path, {"x": x})["y"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ConfigError, match=r"device-memory tiles at SZ=4.*--arch sz16"):
        t.compile(path, config=small, fit_sz=False)
    with pytest.raises(ConfigError, match=r"more device memory than Cherry has .*dram_tiles"):
        t.compile(path, config="dram_tiles=8")


def test_long_cherry18_accumulations_are_chunked(tmp_path):
    """cherry18 truncates the running sum at every matmul; a 5408-long Gemm (cnn_softmax's
    classifier) accumulated in one chain lost top-1 on 5 of 16 samples.  Chunks of ≈√k-tiles
    summed in the cache keep it within the format's error; -O split_k=false is the single chain."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "data" / "torch_exports" / "cnn_softmax.onnx"
    x = np.random.default_rng(0).uniform(-1, 1, (16, 1, 28, 28)).astype(np.float32)
    chunked = run_model("cherry", path, inputs={"input": x})
    chain = run_model("cherry", path, inputs={"input": x}, split_k=False)
    assert chunked["top1_agreement"] == 1.0 and chunked["max_rel_error"] < 0.02
    assert chain["max_rel_error"] > 5 * chunked["max_rel_error"]
    assert chunked["cycles"] < 1.1 * chain["cycles"]  # one add per chunk and output block


@pytest.mark.parametrize("seed", range(3))
def test_chunked_accumulation_on_odd_shapes(tmp_path, seed):
    """The chunked path on generated shapes: K of 130-900 (33-225 k-tiles, chunks not dividing
    them), odd M and N, with and without a bias, a tiny cache (blocks
    smaller than a chunk) — within cherry18's error of onnxruntime."""
    r = np.random.default_rng([seed, 77])
    m, k, n = int(r.integers(1, 40)), int(r.integers(130, 900)), int(r.integers(1, 37))
    inits = {"w": r.normal(0, 1 / np.sqrt(k), (k, n)).astype(np.float32)}
    if seed % 2:
        inits["b"] = r.normal(0, 1, n).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y" if not seed % 2 else "p"])]
    if seed % 2:
        nodes.append(helper.make_node("Add", ["p", "b"], ["y"]))
    path = _model(nodes, [_vi("x", [1, m, k])], [_vi("y", [1, m, n])], inits, tmp_path / "g.onnx")
    x = r.uniform(-1, 1, (1, m, k)).astype(np.float32)
    cfg = "cache_tiles=64" if seed == 2 else None
    got = run_model("cherry", path, inputs={"x": x}, config=cfg)
    assert got["max_rel_error"] < 0.02, (m, k, n, got["max_rel_error"])


def test_same_shape_operands_with_unit_axes_are_not_spread(tmp_path):
    """Two activations of one shape (N, C, 1, 1) (ResNet's last residual adds) are added as they
    are: the device broadcast is for a (.., R, 1) / (.., 1, C) operand against a larger one only.
    It used to spread one operand over "1 column" per channel: C matrices of 3 programs each (a
    third of ResNet-18's compile time, 86k of its 310k cycles)."""
    c = 40
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["a"]), helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["b"]), helper.make_node("Add", ["a", "b"], ["y"])]
    path = _model(nodes, [_vi("x", [1, c, 3, 3])], [_vi("y", [1, c, 1, 1])], {}, tmp_path / "m.onnx")
    res = get_target("cherry").compile(path, config="element_format=fp32")
    add = [r for r in res.layer_table if r.op == "Add"]
    assert len(add) == 1 and add[0].extra["programs"] == 1 and add[0].extra["host_steps"] == 0
    x = rng.standard_normal((2, c, 3, 3)).astype(np.float32)
    rep = run_model("cherry", path, inputs={"x": x}, element_format="fp32")
    assert rep["max_abs_error"] < 1e-6
