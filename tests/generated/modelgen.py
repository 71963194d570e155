"""Seeded random ONNX models, one operator (or a short pattern) each, with the shapes users bring.

Every generator takes a ``numpy.random.Generator`` and returns a :class:`Generated` (the model and a
one-line description of its shapes and attributes).  Shapes are drawn the way real networks
vary: odd channel counts (1–67), strides 1–3, asymmetric paddings, dilations, groups and
depthwise convolutions, ceil-mode pools, broadcasting constants.  The model has one float input
``x`` whose first axis is the batch (``batch``, 1 unless asked), and one or more outputs.

``GENERATORS`` maps the ONNX operator (or pattern) name to its generator; ``generate(op, seed)``
is the entry point.  The harness in :mod:`tests.generated.harness` runs a generated model on a
target and checks it against the integer reference (integer machines) or onnxruntime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


@dataclass
class Generated:
    """A generated model and what was drawn for it."""

    op: str
    seed: int
    model: onnx.ModelProto
    desc: str

    def __str__(self) -> str:
        return f"{self.op}[seed {self.seed}]: {self.desc}"


class _G:
    """Graph under construction: nodes, initializers, a counter for names."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.k = 0

    def const(self, v, dtype=np.float32) -> str:
        self.k += 1
        name = f"c{self.k}"
        self.inits.append(numpy_helper.from_array(np.asarray(v, dtype=dtype), name))
        return name

    def op(self, op: str, ins: list[str], n_out: int = 1, **attrs) -> str | list[str]:
        self.k += 1
        outs = [f"{op.lower()}{self.k}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{self.k}", **attrs))
        return outs[0] if n_out == 1 else outs

    def weights(self, shape, fan_in: int) -> str:
        return self.const(self.rng.normal(0, np.sqrt(2.0 / max(fan_in, 1)), shape))

    def model(self, in_shape: list[int], outputs: list[str], opset: int = OPSET) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, "generated",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        onnx.checker.check_model(m, full_check=True)
        return m


def _channels(rng, lo=1, hi=67) -> int:
    """Odd counts are likelier than in real models on purpose: they break lane/array assumptions."""
    return int(rng.integers(lo, hi + 1))


def _spatial(rng, need: int, hi: int = 20) -> int:
    return int(rng.integers(max(need, 1), max(need, hi) + 1))


# ---------------------------------------------------------------------------------- generators
def gen_conv(rng, batch: int = 1) -> tuple[onnx.ModelProto, str]:
    k = int(rng.choice([1, 2, 3, 3, 5]))
    dil = int(rng.choice([1, 1, 2])) if k > 1 else 1
    stride = int(rng.integers(1, 4))
    kind = rng.choice(["dense", "dense", "depthwise", "grouped"])
    cin = _channels(rng)
    if kind == "depthwise":
        group, cout = cin, cin * int(rng.choice([1, 1, 2]))
    elif kind == "grouped":
        group = int(rng.choice([d for d in range(1, cin + 1) if cin % d == 0]))
        cout = group * int(rng.integers(1, max(2, 68 // group)))
    else:
        group, cout = 1, _channels(rng)
    keff = dil * (k - 1) + 1
    pads = [int(rng.integers(0, k)) for _ in range(4)]
    h = _spatial(rng, max(1, keff - pads[0] - pads[2]), 18)
    w = _spatial(rng, max(1, keff - pads[1] - pads[3]), 18)
    g = _G(rng)
    ins = ["x", g.weights((cout, cin // group, k, k), cin // group * k * k)]
    if rng.random() < 0.7:
        ins.append(g.const(rng.normal(0, 0.1, cout)))
    y = g.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=pads, dilations=[dil, dil], group=group)
    act = rng.choice(["none", "Relu"])
    if act != "none":
        y = g.op(str(act), [y])
    desc = f"{batch}x{cin}x{h}x{w} -> {cout}, k{k} s{stride} d{dil} pads{pads} group {group} ({kind}) then {act}"
    return g.model([batch, cin, h, w], [y]), desc


def gen_gemm(rng, batch: int = 1):
    k, n = _channels(rng, 1, 300), _channels(rng)
    g = _G(rng)
    trans = bool(rng.random() < 0.5)
    w = g.weights((n, k) if trans else (k, n), k)
    ins = ["x", w] + ([g.const(rng.normal(0, 0.1, n))] if rng.random() < 0.8 else [])
    y = g.op("Gemm", ins, transB=int(trans), alpha=1.0, beta=1.0)
    return g.model([batch, k], [y]), f"{batch}x{k} -> {n}, transB={int(trans)}, bias={len(ins) == 3}"


def gen_matmul(rng, batch: int = 1):
    """Token-wise MatMul of a rank-3 activation by a constant (a transformer's projections)."""
    s, k, n = int(rng.integers(1, 20)), _channels(rng), _channels(rng)
    g = _G(rng)
    y = g.op("MatMul", ["x", g.weights((k, n), k)])
    if rng.random() < 0.5:
        y = g.op("Add", [y, g.const(rng.normal(0, 0.1, n))])
    return g.model([batch, s, k], [y]), f"{batch}x{s}x{k} @ {k}x{n}"


def _pool(rng, op: str, batch: int):
    k = int(rng.integers(1, 4))
    stride = int(rng.integers(1, 4))
    pads = [int(rng.integers(0, k)) if k > 1 else 0 for _ in range(4)]
    ceil = int(rng.random() < 0.3)
    c = _channels(rng)
    dil = int(rng.choice([1, 1, 2])) if (op == "MaxPool" and k > 1) else 1
    keff = dil * (k - 1) + 1
    h, w = _spatial(rng, keff, 16), _spatial(rng, keff, 16)
    g = _G(rng)
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=pads, ceil_mode=ceil)
    if op == "MaxPool":
        attrs["dilations"] = [dil, dil]
    else:
        attrs["count_include_pad"] = int(rng.random() < 0.5)
    y = g.op(op, ["x"], **attrs)
    return g.model([batch, c, h, w], [y]), f"{batch}x{c}x{h}x{w}, {attrs}"


def gen_maxpool(rng, batch: int = 1):
    return _pool(rng, "MaxPool", batch)


def gen_averagepool(rng, batch: int = 1):
    return _pool(rng, "AveragePool", batch)


def gen_globalaveragepool(rng, batch: int = 1):
    c, h, w = _channels(rng), int(rng.integers(1, 15)), int(rng.integers(1, 15))
    g = _G(rng)
    y = g.op("Flatten", [g.op("GlobalAveragePool", ["x"])])
    return g.model([batch, c, h, w], [y]), f"{batch}x{c}x{h}x{w}"


def _feature_input(rng, batch: int) -> list[int]:
    """A rank-2 or rank-4 activation shape."""
    if rng.random() < 0.5:
        return [batch, _channels(rng, 1, 100)]
    return [batch, _channels(rng), int(rng.integers(1, 9)), int(rng.integers(1, 9))]


def _unary(op: str, **attrs):
    def gen(rng, batch: int = 1):
        shape = _feature_input(rng, batch)
        g = _G(rng)
        x = "x"
        if op == "Log":   # a positive argument
            x = g.op("Add", [g.op("Mul", ["x", "x"]), g.const(0.25)])
        a = {k: (v(rng) if callable(v) else v) for k, v in attrs.items()}
        y = g.op(op, [x], **a)
        return g.model(shape, [y]), f"{shape} {a}"
    return gen


def gen_clip(rng, batch: int = 1):
    shape = _feature_input(rng, batch)
    g = _G(rng)
    lo = float(rng.uniform(-1, 0))
    hi = float(rng.uniform(0.05, 1))
    y = g.op("Clip", ["x", g.const(lo), g.const(hi)])
    return g.model(shape, [y]), f"{shape} [{lo:.3f}, {hi:.3f}]"


def gen_silu(rng, batch: int = 1):
    shape = _feature_input(rng, batch)
    g = _G(rng)
    y = g.op("Mul", ["x", g.op("Sigmoid", ["x"])])
    return g.model(shape, [y]), f"{shape} x*sigmoid(x)"


def gen_softmax(rng, batch: int = 1):
    rank = int(rng.integers(2, 5))
    shape = [batch] + [int(rng.integers(1, 17)) for _ in range(rank - 1)]
    axis = int(rng.integers(-rank + 1, rank))
    g = _G(rng)
    y = g.op("Softmax", [g.op("Mul", ["x", g.const(float(rng.uniform(1, 4)))])], axis=axis)
    return g.model(shape, [y]), f"{shape} axis {axis}"


def _binary(op: str):
    def gen(rng, batch: int = 1):
        shape = _feature_input(rng, batch)
        g = _G(rng)
        form = rng.choice(["const_full", "const_channel", "scalar", "two_branches"])
        if form == "const_full":
            other = g.const(rng.normal(0, 0.5, shape[1:]))
        elif form == "const_channel":
            other = g.const(rng.normal(0, 0.5, [shape[1]] + [1] * (len(shape) - 2)))
        elif form == "scalar":
            other = g.const(float(rng.normal(0, 0.5)))
        else:   # an activation with itself through another path
            other = g.op("Relu", ["x"])
        y = g.op(op, ["x", other])
        return g.model(shape, [y]), f"{shape} {op} {form}"
    return gen


def gen_concat(rng, batch: int = 1):
    """Two or three branches with odd channel counts (1x1 convolutions of the input), concatenated."""
    cin, h, w = _channels(rng), int(rng.integers(1, 10)), int(rng.integers(1, 10))
    g = _G(rng)
    branches, chans = [], []
    for _ in range(int(rng.integers(2, 4))):
        c = _channels(rng, 1, 40)
        chans.append(c)
        branches.append(g.op("Conv", ["x", g.weights((c, cin, 1, 1), cin)], kernel_shape=[1, 1]))
    y = g.op("Concat", branches, axis=1)
    return g.model([batch, cin, h, w], [y]), f"{batch}x{cin}x{h}x{w} -> concat of {chans}"


def gen_slice(rng, batch: int = 1):
    shape = _feature_input(rng, batch)
    axes, starts, ends, steps = [], [], [], []
    for ax in range(1, len(shape)):
        if rng.random() < 0.6 or ax == 1:
            n = shape[ax]
            step = int(rng.choice([1, 1, 2])) if n > 2 else 1
            s = int(rng.integers(0, n))
            e = int(rng.integers(s + 1, n + 1))
            axes.append(ax), starts.append(s), ends.append(e), steps.append(step)
    g = _G(rng)
    y = g.op("Slice", ["x", g.const(starts, np.int64), g.const(ends, np.int64), g.const(axes, np.int64),
                       g.const(steps, np.int64)])
    return g.model(shape, [y]), f"{shape} axes {axes} starts {starts} ends {ends} steps {steps}"


def gen_split(rng, batch: int = 1):
    shape = _feature_input(rng, batch)
    while shape[1] < 2:
        shape = _feature_input(rng, batch)
    n = shape[1]
    parts = int(rng.integers(2, min(4, n) + 1))
    cuts = sorted(rng.choice(np.arange(1, n), parts - 1, replace=False).tolist())
    sizes = np.diff([0] + cuts + [n]).tolist()
    g = _G(rng)
    outs = g.op("Split", ["x", g.const(sizes, np.int64)], n_out=parts, axis=1)
    # each part through its own function so the split outputs are all used
    ys = [g.op("Relu", [o]) if i % 2 == 0 else g.op("Mul", [o, g.const(0.5)]) for i, o in enumerate(outs)]
    return g.model(shape, ys), f"{shape} split {sizes} on axis 1"


def gen_gather(rng, batch: int = 1):
    shape = _feature_input(rng, batch)
    n = shape[1]
    idx = rng.integers(0, n, int(rng.integers(1, n + 2))).astype(np.int64)
    g = _G(rng)
    y = g.op("Gather", ["x", g.const(idx, np.int64)], axis=1)
    return g.model(shape, [y]), f"{shape} gather {idx.tolist()} on axis 1"


def gen_transpose(rng, batch: int = 1):
    rank = int(rng.integers(3, 5))
    shape = [batch] + [int(rng.integers(1, 9)) for _ in range(rank - 1)]
    perm = [0] + (1 + rng.permutation(rank - 1)).tolist()
    g = _G(rng)
    y = g.op("Transpose", ["x"], perm=perm)
    return g.model(shape, [y]), f"{shape} perm {perm}"


def gen_reshape_gemm(rng, batch: int = 1):
    """Flatten/Reshape of a feature map into a classifier (the CNN→FC boundary)."""
    c, h, w = _channels(rng, 1, 20), int(rng.integers(1, 7)), int(rng.integers(1, 7))
    n = _channels(rng, 1, 20)
    g = _G(rng)
    if rng.random() < 0.5:
        f = g.op("Flatten", ["x"], axis=1)
    else:
        f = g.op("Reshape", ["x", g.const([batch, -1], np.int64)])
    y = g.op("Gemm", [f, g.weights((n, c * h * w), c * h * w)], transB=1)
    return g.model([batch, c, h, w], [y]), f"{batch}x{c}x{h}x{w} -> {n}"


def gen_pad(rng, batch: int = 1):
    c, h, w = _channels(rng), int(rng.integers(1, 10)), int(rng.integers(1, 10))
    pads = [0, 0] + [int(rng.integers(0, 3)) for _ in range(2)] + [0, 0] + [int(rng.integers(0, 3)) for _ in range(2)]
    g = _G(rng)
    y = g.op("Pad", ["x", g.const(pads, np.int64), g.const(float(rng.choice([0.0, 0.5])))], mode="constant")
    return g.model([batch, c, h, w], [y]), f"{batch}x{c}x{h}x{w} pads {pads}"


def gen_batchnorm(rng, batch: int = 1):
    c, h, w = _channels(rng), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    g = _G(rng)
    y = g.op("BatchNormalization", ["x", g.const(rng.uniform(0.5, 1.5, c)), g.const(rng.normal(0, 0.1, c)),
                                    g.const(rng.normal(0, 0.1, c)), g.const(rng.uniform(0.5, 1.5, c))])
    return g.model([batch, c, h, w], [y]), f"{batch}x{c}x{h}x{w}"


def gen_reducemean(rng, batch: int = 1):
    c, h, w = _channels(rng), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    axes = sorted(rng.choice([1, 2, 3], int(rng.integers(1, 4)), replace=False).tolist())
    keep = int(rng.random() < 0.5)
    g = _G(rng)
    y = g.op("ReduceMean", ["x"], axes=axes, keepdims=keep)   # attribute form: opset 17
    return g.model([batch, c, h, w], [y]), f"{batch}x{c}x{h}x{w} axes {axes} keepdims {keep}"


def gen_layernorm(rng, batch: int = 1):
    s, d = int(rng.integers(1, 17)), _channels(rng, 2, 96)
    g = _G(rng)
    y = g.op("LayerNormalization", ["x", g.const(rng.uniform(0.5, 1.5, d)), g.const(rng.normal(0, 0.1, d))],
             axis=-1, epsilon=1e-5)
    return g.model([batch, s, d], [y]), f"{batch}x{s}x{d}"


def gen_matmul_act(rng, batch: int = 1):
    """Activation × activation (attention scores): x·xᵀ over heads."""
    h, s, d = int(rng.integers(1, 5)), int(rng.integers(1, 13)), int(rng.integers(1, 17))
    g = _G(rng)
    y = g.op("MatMul", ["x", g.op("Transpose", ["x"], perm=[0, 1, 3, 2])])
    return g.model([batch, h, s, d], [y]), f"{batch}x{h}x{s}x{d} @ its transpose"


def gen_gelu(rng, batch: int = 1):
    """Exact-erf GELU as torch exports it before opset 20: x·0.5·(1 + erf(x/√2))."""
    shape = _feature_input(rng, batch)
    g = _G(rng)
    e = g.op("Erf", [g.op("Div", ["x", g.const(np.sqrt(2.0))])])
    y = g.op("Mul", [g.op("Mul", ["x", g.op("Add", [e, g.const(1.0)])]), g.const(0.5)])
    return g.model(shape, [y]), f"{shape}"


GENERATORS: dict[str, Callable] = {
    "Conv": gen_conv,
    "Gemm": gen_gemm,
    "MatMul": gen_matmul,
    "MaxPool": gen_maxpool,
    "AveragePool": gen_averagepool,
    "GlobalAveragePool": gen_globalaveragepool,
    "Relu": _unary("Relu"),
    "LeakyRelu": _unary("LeakyRelu", alpha=lambda r: float(r.uniform(0.01, 0.3))),
    "Sigmoid": _unary("Sigmoid"),
    "Tanh": _unary("Tanh"),
    "HardSigmoid": _unary("HardSigmoid"),
    "HardSwish": _unary("HardSwish"),
    "Exp": _unary("Exp"),
    "Log": _unary("Log"),
    "Erf": _unary("Erf"),
    "Clip": gen_clip,
    "SiLU": gen_silu,
    "Gelu": gen_gelu,
    "Softmax": gen_softmax,
    "Add": _binary("Add"),
    "Mul": _binary("Mul"),
    "Sub": _binary("Sub"),
    "Concat": gen_concat,
    "Slice": gen_slice,
    "Split": gen_split,
    "Gather": gen_gather,
    "Transpose": gen_transpose,
    "Reshape": gen_reshape_gemm,
    "Pad": gen_pad,
    "BatchNormalization": gen_batchnorm,
    "ReduceMean": gen_reducemean,
    "LayerNormalization": gen_layernorm,
    "MatMulActivations": gen_matmul_act,
}


def generate(op: str, seed: int, batch: int = 1) -> Generated:
    """The model of generator ``op`` for ``seed`` (same seed, same model)."""
    rng = np.random.default_rng([seed, sum(map(ord, op))])
    model, desc = GENERATORS[op](rng, batch)
    return Generated(op, seed, model, desc)
