"""Small ONNX models for the Tensil compiler tests (built with onnx.helper, seeded weights)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

XOR_W1 = np.array([[-0.82034087, 0.91108251], [0.82033938, -0.79797113]], np.float32)
XOR_B1 = np.array([-9.66e-6, -0.11309917], np.float32)
XOR_W2 = np.array([[1.20807767], [1.24325323]], np.float32)
XOR_B2 = np.array([0.00499281], np.float32)


def xor_model(opset: int = 10) -> onnx.ModelProto:
    """The 2-2-1 XOR MLP of Tensil's tests (MatMul + Add, ReLU on the hidden layer), batch 4."""
    inits = [numpy_helper.from_array(a, n) for a, n in ((XOR_W1, "W1"), (XOR_B1, "b1"), (XOR_W2, "W2"),
                                                        (XOR_B2, "b2"))]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    g = helper.make_graph(nodes, "xor", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


class _B:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.k = [], [], 0

    def t(self, base: str) -> str:
        self.k += 1
        return f"{base}{self.k}"

    def init(self, a) -> str:
        n = self.t("c")
        self.inits.append(numpy_helper.from_array(np.asarray(a, np.float32), n))
        return n

    def node(self, op: str, ins: list[str], **attrs) -> str:
        out = self.t(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=self.t("n_" + op.lower()), **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, pad=0, dil=1, group=1):
        w = self.rng.standard_normal((cout, cin // group, k, k)).astype(np.float32) * np.sqrt(1.0 / (cin // group * k * k))
        b = self.rng.standard_normal(cout).astype(np.float32) * 0.1
        return self.node("Conv", [x, self.init(w), self.init(b)], kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, dilations=[dil, dil], group=group)

    def bn(self, x, c):
        r = self.rng
        ps = [1 + 0.1 * r.standard_normal(c), 0.1 * r.standard_normal(c), 0.1 * r.standard_normal(c),
              1 + 0.2 * r.random(c)]
        return self.node("BatchNormalization", [x] + [self.init(p) for p in ps], epsilon=1e-5)

    def model(self, inp, shape, out, opset=13):
        outs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]
        g = helper.make_graph(self.nodes, "m", [helper.make_tensor_value_info(inp, TensorProto.FLOAT, list(shape))],
                              outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(m)
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            if vi.name == out and vi.type.tensor_type.HasField("shape"):
                m.graph.output[0].CopyFrom(vi)
        return m


def conv_model(seed: int = 0) -> onnx.ModelProto:
    """Conv (pad, stride, dilation) + ReLU, MaxPool with padding, grouped conv + BN + LeakyReLU, Clip,
    residual Add, AveragePool (count_include_pad), Flatten, Gemm."""
    b = _B(seed)
    h = b.node("Relu", [b.conv("x", 3, 8, 3, 1, 1)])  # 10x10
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 5x5
    d = b.conv(h, 8, 8, 3, 1, 2, dil=2)  # 5x5 dilated
    g = b.node("LeakyRelu", [b.bn(b.conv(d, 8, 8, 3, 1, 1, group=4), 8)], alpha=0.1)
    c = b.node("Clip", [b.conv(h, 8, 8, 1), b.init(np.float32(-1.0)), b.init(np.float32(2.0))])
    s = b.node("Add", [g, c])
    s = b.node("Mul", [s, b.init(np.linspace(0.5, 1.5, 8).reshape(1, 8, 1, 1))])
    p = b.node("AveragePool", [s], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], count_include_pad=1)
    f = b.node("Flatten", [p], axis=1)
    w = b.rng.standard_normal((8 * 3 * 3, 5)).astype(np.float32) * 0.2
    y = b.node("Gemm", [f, b.init(w), b.init(b.rng.standard_normal(5) * 0.1)])
    return b.model("x", (1, 3, 10, 10), y)


def stride_model(seed: int = 1) -> onnx.ModelProto:
    """Strided conv with 40 channels (not a multiple of N), depthwise conv, global average pool, Gemm."""
    b = _B(seed)
    h = b.node("Relu", [b.conv("x", 5, 40, 3, 2, 1)])  # 6x6
    h = b.node("Relu", [b.conv(h, 40, 40, 3, 1, 1, group=40)])
    h = b.node("GlobalAveragePool", [h])
    h = b.node("Flatten", [h], axis=1)
    w = b.rng.standard_normal((40, 7)).astype(np.float32) * 0.2
    y = b.node("Gemm", [h, b.init(w), b.init(np.zeros(7))])
    return b.model("x", (1, 5, 12, 12), y)


def smooth_model(seed: int = 5) -> onnx.ModelProto:
    """Conv → Sigmoid → Conv → Tanh (needs the LUT extension)."""
    b = _B(seed)
    h = b.node("Sigmoid", [b.conv("x", 3, 8, 3, 1, 1)])
    h = b.node("Tanh", [b.conv(h, 8, 8, 1)])
    return b.model("x", (1, 3, 6, 6), h)


def concat_model(seed: int = 7) -> onnx.ModelProto:
    """Two conv branches (32 and 20 channels) concatenated on channels, then a conv."""
    b = _B(seed)
    a = b.node("Relu", [b.conv("x", 4, 32, 3, 1, 1)])
    c = b.conv("x", 4, 20, 1)
    h = b.node("Concat", [a, c], axis=1)
    return b.model("x", (1, 4, 5, 5), b.conv(h, 52, 6, 1))


def resize_model(seed: int = 9) -> onnx.ModelProto:
    """Conv → nearest Resize ×2 (scales input, opset 13) → conv."""
    b = _B(seed)
    h = b.node("Relu", [b.conv("x", 3, 8, 3, 1, 1)])
    scales = b.init(np.array([1, 1, 2, 2], np.float32))
    roi = b.init(np.zeros(0, np.float32))
    h = b.node("Resize", [h, roi, scales], mode="nearest")
    return b.model("x", (1, 3, 4, 5), b.conv(h, 8, 4, 3, 1, 1))


def resize_linear_model(seed: int = 11) -> onnx.ModelProto:
    """Conv → bilinear Resize ×(1.5, 2) (half_pixel) → conv."""
    b = _B(seed)
    h = b.node("Relu", [b.conv("x", 3, 8, 3, 1, 1)])
    scales = b.init(np.array([1, 1, 1.5, 2], np.float32))
    h = b.node("Resize", [h, b.init(np.zeros(0, np.float32)), scales], mode="linear")
    return b.model("x", (1, 3, 4, 5), b.conv(h, 8, 4, 3, 1, 1))
