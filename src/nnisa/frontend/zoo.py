"""The model zoo: small, seeded-weight ONNX versions of the networks users bring.

Built with ``onnx.helper`` (no torch), at small input sizes, with the operators and layer
patterns of the originals as PyTorch exports them (opset 20, BatchNormalization, ReduceMean
global pooling in MobileNet/EfficientNet, Split/Concat/Transpose channel shuffles, SiLU and
squeeze-excite Mul, Softmax-free logits unless asked):

``lenet``, ``mlp``, ``vgg`` (small VGG-style CNN), ``resnet18`` (at 32×32), ``mobilenet_v2``,
``squeezenet`` (1.1 fire modules), ``efficientnet_b0`` (MBConv with SE and SiLU, reduced
widths), ``shufflenet_v2`` (channel split + shuffle), ``gru`` (a GRU classifier, time-major
GRU wrapped in transposes like torch's batch_first export).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .models import make_lenet, make_mlp, make_resnet18

OPSET = 20


class _B:
    """A tiny graph builder: seeded He-initialised weights, BN with random statistics."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.k = 0

    def name(self, base: str) -> str:
        self.k += 1
        return f"{base}{self.k}"

    def const(self, base: str, v) -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(v), n))
        return n

    def op(self, op: str, ins: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=self.name(op + "_"), **attrs))
        return out

    def ops(self, op: str, ins: list[str], n_out: int, **attrs) -> list[str]:
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.name(op + "_"), **attrs))
        return outs

    def conv(self, x: str, cin: int, cout: int, k: int = 3, s: int = 1, g: int = 1, bn: bool = True,
             act: str | None = "Relu") -> str:
        fan = cin // g * k * k
        w = self.rng.normal(0, np.sqrt(2.0 / fan), (cout, cin // g, k, k)).astype(np.float32)
        ins = [x, self.const("w", w)]
        if not bn:
            ins.append(self.const("b", self.rng.normal(0, 0.05, cout).astype(np.float32)))
        y = self.op("Conv", ins, kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=g)
        if bn:
            y = self.op("BatchNormalization", [y, self.const("g", self.rng.uniform(0.5, 1.5, cout).astype(np.float32)),
                                               self.const("be", self.rng.normal(0, 0.1, cout).astype(np.float32)),
                                               self.const("m", self.rng.normal(0, 0.1, cout).astype(np.float32)),
                                               self.const("v", self.rng.uniform(0.5, 1.5, cout).astype(np.float32))])
        return self.act(y, act)

    def act(self, y: str, act: str | None) -> str:
        if act == "SiLU":
            return self.op("Mul", [y, self.op("Sigmoid", [y])])
        if act == "Relu6":
            return self.op("Clip", [y, self.const("lo", np.float32(0)), self.const("hi", np.float32(6))])
        return self.op(act, [y]) if act else y

    def gemm(self, x: str, cin: int, cout: int) -> str:
        w = self.rng.normal(0, np.sqrt(1.0 / cin), (cout, cin)).astype(np.float32)
        return self.op("Gemm", [x, self.const("fw", w), self.const("fb", np.zeros(cout, np.float32))], transB=1)

    def gap(self, x: str) -> str:
        """torch's global average pooling: ReduceMean over (2, 3) keeping dims, then Flatten."""
        return self.op("Flatten", [self.op("ReduceMean", [x, self.const("ax", np.array([2, 3], np.int64))],
                                           keepdims=1)])

    def model(self, x_shape, y: str, name: str, classes: int) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, classes])], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nnisa-zoo")
        m.ir_version = 10
        onnx.checker.check_model(m)
        return m


def make_vgg(seed: int = 0, size: int = 16, classes: int = 10) -> onnx.ModelProto:
    """VGG-style: (conv-conv-maxpool) × 2 with 8/16 channels, then two Gemms."""
    b = _B(seed)
    x, c = "input", 3
    for cout in (8, 16):
        x = b.conv(b.conv(x, c, cout), cout, cout)
        x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        c = cout
    x = b.op("Flatten", [x])
    x = b.op("Relu", [b.gemm(x, c * (size // 4) ** 2, 32)])
    return b.model([1, 3, size, size], b.gemm(x, 32, classes), "vgg_small", classes)


def make_mobilenet_v2(seed: int = 0, size: int = 32, classes: int = 10, width: float = 0.25) -> onnx.ModelProto:
    """MobileNet-V2 (all 17 inverted residual blocks, width multiplier ``width``), ReLU6, ReduceMean."""
    b = _B(seed)
    ch = lambda c: max(8, int(c * width + 4) // 8 * 8)  # noqa: E731
    x, c = b.conv("input", 3, ch(32), 3, 2, act="Relu6"), ch(32)
    for t, cout, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                          (6, 320, 1, 1)):
        for i in range(n):
            co, hid = ch(cout), c * t
            y = x if t == 1 else b.conv(x, c, hid, 1, act="Relu6")
            y = b.conv(y, hid, hid, 3, s if i == 0 else 1, g=hid, act="Relu6")
            y = b.conv(y, hid, co, 1, act=None)
            x = b.op("Add", [x, y]) if (s == 1 or i > 0) and c == co else y
            c = co
    x = b.conv(x, c, ch(1280), 1, act="Relu6")
    return b.model([1, 3, size, size], b.gemm(b.gap(x), ch(1280), classes), "mobilenet_v2", classes)


def make_squeezenet(seed: int = 0, size: int = 32, classes: int = 10) -> onnx.ModelProto:
    """SqueezeNet 1.1 (fire modules: squeeze 1×1, expand 1×1 ‖ 3×3 via Concat), halved widths."""
    b = _B(seed)
    x = b.conv("input", 3, 32, 3, 2, bn=False)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    c = 32
    for k, (sq, ex) in enumerate(((8, 32), (8, 32), (16, 64), (16, 64), (24, 96), (24, 96))):
        s = b.conv(x, c, sq, 1, bn=False)
        x = b.op("Concat", [b.conv(s, sq, ex, 1, bn=False), b.conv(s, sq, ex, 3, bn=False)], axis=1)
        c = 2 * ex
        if k in (1, 3):
            x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    x = b.conv(x, c, classes, 1, bn=False)
    x = b.op("GlobalAveragePool", [x])
    return b.model([1, 3, size, size], b.op("Flatten", [x]), "squeezenet1_1", classes)


def make_efficientnet_b0(seed: int = 0, size: int = 32, classes: int = 10, width: float = 0.25) -> onnx.ModelProto:
    """EfficientNet-B0 stages (MBConv with squeeze-excite, SiLU), widths × ``width``, one block per stage."""
    b = _B(seed)
    ch = lambda c: max(8, int(c * width + 4) // 8 * 8)  # noqa: E731
    x, c = b.conv("input", 3, ch(32), 3, 2, act="SiLU"), ch(32)
    for t, cout, k, s in ((1, 16, 3, 1), (6, 24, 3, 2), (6, 40, 5, 2), (6, 80, 3, 2), (6, 112, 5, 1), (6, 192, 5, 2),
                          (6, 320, 3, 1)):
        co, hid = ch(cout), c * t
        y = x if t == 1 else b.conv(x, c, hid, 1, act="SiLU")
        y = b.conv(y, hid, hid, k, s, g=hid, act="SiLU")
        se = max(1, c // 4)  # squeeze-excite: GAP → 1×1 conv → SiLU → 1×1 conv → Sigmoid → Mul
        p = b.op("ReduceMean", [y, b.const("ax", np.array([2, 3], np.int64))], keepdims=1)
        p = b.conv(p, hid, se, 1, bn=False, act="SiLU")
        p = b.conv(p, se, hid, 1, bn=False, act="Sigmoid")
        y = b.op("Mul", [y, p])
        y = b.conv(y, hid, co, 1, act=None)
        x = b.op("Add", [x, y]) if s == 1 and c == co else y
        c = co
    x = b.conv(x, c, ch(1280), 1, act="SiLU")
    return b.model([1, 3, size, size], b.gemm(b.gap(x), ch(1280), classes), "efficientnet_b0", classes)


def make_shufflenet_v2(seed: int = 0, size: int = 32, classes: int = 10) -> onnx.ModelProto:
    """ShuffleNet-V2 0.5× layout (stages 4/8/4, channels 24/48/96/192 scaled ½): Split, Concat and
    the Reshape–Transpose–Reshape channel shuffle."""
    b = _B(seed)
    x = b.conv("input", 3, 12, 3, 2)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, hw = 12, size // 4

    def shuffle(y: str, cc: int, hw_: int) -> str:
        y = b.op("Reshape", [y, b.const("sh", np.array([1, 2, cc // 2, hw_, hw_], np.int64))])
        y = b.op("Transpose", [y], perm=[0, 2, 1, 3, 4])
        return b.op("Reshape", [y, b.const("sh", np.array([1, cc, hw_, hw_], np.int64))])

    for cout, reps in ((24, 4), (48, 8), (96, 4)):
        for i in range(reps):
            if i == 0:
                hw //= 2
                l = b.conv(b.conv(x, c, c, 3, 2, g=c, act=None), c, cout // 2, 1)
                r = b.conv(x, c, cout // 2, 1)
                r = b.conv(b.conv(r, cout // 2, cout // 2, 3, 2, g=cout // 2, act=None), cout // 2, cout // 2, 1)
            else:
                l, r = b.ops("Split", [x, b.const("sp", np.array([cout // 2] * 2, np.int64))], 2, axis=1)
                r = b.conv(r, cout // 2, cout // 2, 1)
                r = b.conv(b.conv(r, cout // 2, cout // 2, 3, 1, g=cout // 2, act=None), cout // 2, cout // 2, 1)
            x = shuffle(b.op("Concat", [l, r], axis=1), cout, hw)
            c = cout
    x = b.conv(x, c, 256, 1)
    return b.model([1, 3, size, size], b.gemm(b.gap(x), 256, classes), "shufflenet_v2", classes)


def make_gru(seed: int = 0, seq: int = 6, features: int = 4, hidden: int = 8, classes: int = 5) -> onnx.ModelProto:
    """A GRU sequence classifier as torch exports ``batch_first=True``: Transpose → GRU → last step → Gemm."""
    b = _B(seed)
    xt = b.op("Transpose", ["input"], perm=[1, 0, 2])
    s = 1 / np.sqrt(hidden)
    w = b.const("W", b.rng.uniform(-s, s, (1, 3 * hidden, features)).astype(np.float32))
    r = b.const("R", b.rng.uniform(-s, s, (1, 3 * hidden, hidden)).astype(np.float32))
    bb = b.const("B", b.rng.uniform(-s, s, (1, 6 * hidden)).astype(np.float32))
    _, yh = b.ops("GRU", [xt, w, r, bb], 2, hidden_size=hidden, linear_before_reset=1)
    h = b.op("Reshape", [yh, b.const("sh", np.array([1, hidden], np.int64))])
    return b.model([1, seq, features], b.gemm(h, hidden, classes), "gru_classifier", classes)


#: name → (builder, description); the zoo test and benchmark run every entry
ZOO = {
    "lenet": (lambda: make_lenet(0), "LeNet-5, 1×28×28"),
    "mlp": (lambda: make_mlp(0), "MLP 784-…-10"),
    "vgg": (lambda: make_vgg(0), "VGG-style CNN, 3×16×16"),
    "resnet18": (lambda: make_resnet18(0, num_classes=10, size=32), "ResNet-18, 3×32×32"),
    "mobilenet_v2": (lambda: make_mobilenet_v2(0), "MobileNet-V2 ×0.25, 3×32×32"),
    "squeezenet": (lambda: make_squeezenet(0), "SqueezeNet 1.1 (½ widths), 3×32×32"),
    "efficientnet_b0": (lambda: make_efficientnet_b0(0), "EfficientNet-B0 ×0.25 (1 block/stage), 3×32×32"),
    "shufflenet_v2": (lambda: make_shufflenet_v2(0), "ShuffleNet-V2 0.25×, 3×32×32"),
    "gru": (lambda: make_gru(0), "GRU classifier, 6×4 sequence"),
}
