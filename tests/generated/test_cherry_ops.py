"""Generated models (``modelgen``) for every operator Cherry lowers, against onnxruntime.

Cherry is a float machine: there is no integer reference, so a run must match onnxruntime within
the element format's error (fp32: relative error ≤ 1e-4 of the largest output; cherry18, the
truncated 18-bit format: ≤ 4 %).  The fast subset runs one seed per operator; the full sweep
(``-m slow``) runs eight seeds in both formats.  Refusals are allowed only when they name a
hardware limit; a crash is always a failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from generated.harness import run_generated
from generated.modelgen import GENERATORS, Generated, _G, _feature_input, generate

#: every generator whose operators Cherry lowers (all of them today)
OPS = sorted(GENERATORS)
TOL = {"fp32": 1e-4, "cherry18": 0.04}


def check(gen: Generated, fmt: str) -> None:
    out = run_generated("cherry", gen, element_format=fmt)
    assert out.kind == "ran", f"{gen}: {out.kind}: {out.message}"
    err = out.max_rel_error
    assert err is not None and np.isfinite(err) and err <= TOL[fmt], f"{gen}: max_rel_error {err} ({fmt})"


def gen_compare(rng, batch: int = 1):
    """Equal/Less/Greater (then sometimes Not) of an activation and a constant or another
    activation, used the way masks are: Cast to float and a product, or a Where select.
    Equal compares relu(x) with x or with 0, so both outcomes occur."""
    shape = _feature_input(rng, batch)
    g = _G(rng)
    op = str(rng.choice(["Equal", "Less", "Greater"]))
    form = str(rng.choice(["scalar", "const_full", "two_branches"]))
    r = g.op("Relu", ["x"])
    a, b = ("x", r) if form == "two_branches" else (r if op == "Equal" else "x", None)
    if b is None:
        b = g.const(0.0 if op == "Equal" or form == "scalar" else rng.normal(0, 0.5, shape[1:]))
    cond = g.op(op, [a, b])
    if rng.random() < 0.5:
        cond = g.op("Not", [cond])
    if rng.random() < 0.5:
        y = g.op("Mul", [g.op("Cast", [cond], to=TensorProto.FLOAT), g.op("Add", ["x", g.const(2.0)])])
    else:
        y = g.op("Where", [cond, "x", g.const(float(rng.normal(0, 1)))])
    return g.model(shape, [y]), f"{shape} {op} {form}"


def gen_resize(rng, batch: int = 1):
    """Linear (every coordinate mode the importer takes) or nearest Resize of an NCHW activation,
    by scales or by sizes, up or down."""
    shape = [batch, int(rng.integers(1, 24)), int(rng.integers(1, 12)), int(rng.integers(1, 12))]
    g = _G(rng)
    mode = str(rng.choice(["linear", "linear", "nearest"]))
    ctm = str(rng.choice(["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"]))
    if rng.random() < 0.5:
        scales = [1.0, 1.0] + [float(rng.choice([0.5, 1.5, 2.0, 3.0])) for _ in range(2)]
        ins = ["x", "", g.const(scales)]
        what = f"scales {scales[2:]}"
    else:
        sizes = shape[:2] + [int(rng.integers(1, 2 * d + 3)) for d in shape[2:]]
        ins = ["x", "", "", g.const(sizes, np.int64)]
        what = f"sizes {sizes[2:]}"
    y = g.op("Resize", ins, mode=mode, coordinate_transformation_mode=ctm)
    return g.model(shape, [y]), f"{shape} {mode} {ctm} {what}"


def gen_lrn(rng, batch: int = 1):
    """LRN (AlexNet/GoogLeNet) with odd channel counts, odd window sizes 1–7 (onnxruntime takes only odd ones) and random α, β, bias."""
    shape = [batch, int(rng.integers(1, 40)), int(rng.integers(1, 8)), int(rng.integers(1, 8))]
    g = _G(rng)
    a = {"size": int(rng.choice([1, 3, 5, 7])), "alpha": float(rng.uniform(1e-4, 0.5)), "beta": float(rng.uniform(0.5, 1)),
         "bias": float(rng.uniform(0.5, 2))}
    y = g.op("LRN", [g.op("Mul", ["x", g.const(2.0)])], **a)
    return g.model(shape, [y]), f"{shape} {a}"


LOCAL = {"Compare": gen_compare, "Resize": gen_resize, "LRN": gen_lrn}


def local(op: str, seed: int) -> Generated:
    rng = np.random.default_rng([seed, sum(map(ord, op))])
    model, desc = LOCAL[op](rng)
    return Generated(op, seed, model, desc)


@pytest.mark.parametrize("op", sorted(LOCAL))
def test_generated_local_fp32(op):
    for seed in range(3):
        check(local(op, seed), "fp32")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["fp32", "cherry18"])
@pytest.mark.parametrize("op", sorted(LOCAL))
def test_generated_local_sweep(op, fmt):
    for seed in range(3, 19):
        gen = local(op, seed)
        if fmt == "cherry18" and "const_full" in gen.desc:
            # a threshold at a random float: inputs rounded to 18 bits flip the comparisons of
            # elements within one cherry18 step of it (the format's, not the lowering's error)
            continue
        check(gen, fmt)


@pytest.mark.parametrize("op", OPS)
def test_generated_fp32(op):
    check(generate(op, 0), "fp32")


@pytest.mark.parametrize("op", ["Conv", "Softmax", "LayerNormalization", "Gelu", "Concat"])
def test_generated_cherry18(op):
    check(generate(op, 1), "cherry18")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["fp32", "cherry18"])
@pytest.mark.parametrize("op", OPS)
def test_generated_sweep(op, fmt):
    for seed in range(8):
        check(generate(op, seed), fmt)


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def test_two_input_gru_cell_with_state():
    """A torch GRU cell whose hidden state is a second model input (multi-input graphs)."""
    path = Path(__file__).resolve().parents[1] / "data" / "torch_exports" / "gru_cell_state.onnx"
    check(Generated("GRUCell", 0, onnx.load(path), "torch GRUCell, x and h inputs"), "fp32")


def test_softmax_and_reductions_on_every_axis():
    rng = np.random.default_rng(5)
    f = TensorProto.FLOAT
    for axis in range(4):
        shape = [1, 3, 5, 6]
        nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=axis),
                 helper.make_node("ReduceMax", ["x"], ["m"], axes=[axis], keepdims=1),
                 helper.make_node("Mul", ["s", "m"], ["y"])]
        m = _model(nodes, [helper.make_tensor_value_info("x", f, shape)], [helper.make_tensor_value_info("y", f, None)],
                   [])
        check(Generated("SoftmaxAxis", axis, m, f"{shape} axis {axis}"), "fp32")
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)]
    m = _model(nodes, [helper.make_tensor_value_info("x", f, [1, 4, 3, 5])],
               [helper.make_tensor_value_info("y", f, None)],
               [numpy_helper.from_array(np.array([1, 3], np.int64), "axes")])  # not contiguous: a host permute
    check(Generated("ReduceSum", 0, m, "axes 1, 3"), "fp32")
    del rng
