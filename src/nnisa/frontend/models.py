"""Models for tests and demos: bundled trained models and seeded random-weight generators.

Generators build ONNX (opset 17) with ``onnx.helper``; weights are He-initialised from a
fixed seed so activations stay in a sane range through deep stacks.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nnisa.core.errors import FormatError

OPSET = 17
_BUNDLED = {"digits_cnn": ("digits_cnn.onnx", "digits_cnn_test.npz"),
            "digits_mlp": ("digits_mlp.onnx", "digits_cnn_test.npz"),  # same test images
            "digits_vit": ("digits_vit.onnx", "digits_cnn_test.npz"),
            "digits_bert": ("digits_bert.onnx", "digits_cnn_test.npz")}  # the images as tokens: digit_tokens
#: one line per bundled model for ``nnisa models``
_DESCRIPTIONS = {"digits_cnn": "small CNN (conv-BN-ReLU-pool x2, Gemm), 8x8 digit images, 10 classes; 99.4 % float",
                 "digits_mlp": "MLP 64-32-10 (Flatten, Gemm/ReLU) on the same 8x8 digits; 96.9 % float",
                 "digits_vit": "ViT-style encoder (2x2 patches, 2 pre-norm layers, 4 heads) on the digits; 96.4 %",
                 "digits_bert": "BERT-style encoder over the digits as 17 tokens (int64 ids); 82.8 % float"}
#: the model ``nnisa run -t T`` runs when no model is given
DEFAULT_MODEL = "digits_cnn"
#: the [CLS] token id of ``digits_bert`` (patch tokens are 0 .. 80)
DIGIT_CLS = 81


def digit_tokens(x: np.ndarray) -> np.ndarray:
    """``digits_bert``'s input: each ``(1, 8, 8)`` image in [0, 1] as ``[CLS]`` + its 16 2×2 patches
    (row-major), a patch's id ``Σ_k level_k · 3^k`` over its 4 pixels (row-major) with
    ``level = round(2 · pixel)`` ∈ {0, 1, 2}; int64 ``(N, 17)``."""
    lv = np.clip(np.floor(np.asarray(x, np.float64).reshape(-1, 8, 8) * 2 + 0.5), 0, 2).astype(np.int64)
    p = lv.reshape(-1, 4, 2, 4, 2).transpose(0, 1, 3, 2, 4).reshape(-1, 16, 4)
    ids = (p * np.array([1, 3, 9, 27], np.int64)).sum(-1)
    return np.concatenate([np.full((len(ids), 1), DIGIT_CLS, np.int64), ids], axis=1)


def _data_dir() -> Path:
    return Path(str(resources.files("nnisa") / "data"))


def bundled_model_path(name: str) -> Path:
    """Path of a bundled ONNX model (``"digits_cnn"``).

    Raises
    ------
    FormatError
        Unknown name or the package data file is missing.
    """
    if name not in _BUNDLED:
        raise FormatError(f"no bundled model {name!r}; available: {sorted(_BUNDLED)}")
    p = _data_dir() / _BUNDLED[name][0]
    if not p.is_file():
        raise FormatError("bundled model file is missing from the installation", file=str(p))
    return p


def bundled_model_names() -> list[str]:
    """Names of the bundled models (``nnisa models``)."""
    return list(_BUNDLED)


def bundled_models() -> list[dict]:
    """One record per bundled model: ``name``, ``file``, ``inputs`` (name → shape, dtype),
    ``outputs`` (name → shape) and ``description``."""
    rows = []
    for name, (fname, _) in _BUNDLED.items():
        m = onnx.load(str(_data_dir() / fname), load_external_data=False)
        init = {t.name for t in m.graph.initializer}

        def shape(vi):
            return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]
        rows.append({"name": name, "file": str(_data_dir() / fname),
                     "inputs": {vi.name: {"shape": shape(vi), "dtype": str(np.dtype(
                         helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)))}
                         for vi in m.graph.input if vi.name not in init},
                     "outputs": {vi.name: shape(vi) for vi in m.graph.output},
                     "description": _DESCRIPTIONS.get(name, "")})
    return rows


def resolve_model(model: str | Path) -> str | Path:
    """A model argument as the user gave it: an existing file stays what it is; otherwise the name
    of a bundled model (``digits_cnn`` or ``digits_cnn.onnx``) becomes its installed path.  Anything
    else is returned unchanged (the reader names the missing file)."""
    if isinstance(model, (str, Path)) and not Path(model).exists():
        stem = Path(str(model)).name
        stem = stem[:-5] if stem.endswith(".onnx") else stem
        if stem in _BUNDLED and (str(model) in (stem, stem + ".onnx")):
            return bundled_model_path(stem)
    return model


def bundled_testset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Held-out test set ``(x, y)`` of a bundled model: float32 inputs and int64 labels."""
    if name not in _BUNDLED:
        raise FormatError(f"no bundled test set {name!r}; available: {sorted(_BUNDLED)}")
    p = _data_dir() / _BUNDLED[name][1]
    if not p.is_file():
        raise FormatError("bundled test set is missing from the installation", file=str(p))
    with np.load(p) as z:
        x, y = z["x"].astype(np.float32), z["y"].astype(np.int64)
    return (digit_tokens(x) if name == "digits_bert" else x), y


def bundled_inputs_for(model_path, samples: int = 1) -> dict[str, np.ndarray] | None:
    """First ``samples`` test-set inputs ``{input name: array}`` when ``model_path`` is a
    bundled model (matched by resolved path), else ``None``."""
    try:
        target = Path(model_path).resolve()
    except (OSError, TypeError):
        return None
    for name, (fname, _) in _BUNDLED.items():
        p = _data_dir() / fname
        if p.is_file() and p.resolve() == target:
            x, _ = bundled_testset(name)
            in_name = onnx.load(str(p), load_external_data=False).graph.input[0].name
            return {in_name: x[: max(int(samples), 1)]}
    return None


class _Builder:
    """Tiny helper to assemble an ONNX graph node by node."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.k = 0

    def name(self, base: str) -> str:
        self.k += 1
        return f"{base}{self.k}"

    def init(self, base: str, value: np.ndarray) -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower() + "_out")
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.name(op.lower()), **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int = 0, bias: bool = True, group: int = 1) -> str:
        fan_in = cin // group * k * k
        w = (self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        ins = [x, self.init("W", w)]
        if bias:
            ins.append(self.init("B", (self.rng.standard_normal(cout) * 0.05).astype(np.float32)))
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)

    def bn(self, x: str, c: int) -> str:
        r = self.rng
        params = [
            (1.0 + 0.1 * r.standard_normal(c)),  # scale
            0.1 * r.standard_normal(c),  # bias
            0.1 * r.standard_normal(c),  # mean
            (1.0 + 0.2 * r.random(c)),  # var
        ]
        names = [self.init(n, p.astype(np.float32)) for n, p in zip(("gamma", "beta", "mean", "var"), params)]
        return self.node("BatchNormalization", [x] + names, epsilon=1e-5)

    def gemm(self, x: str, k: int, n: int) -> str:
        w = (self.rng.standard_normal((n, k)) * np.sqrt(2.0 / k)).astype(np.float32)
        b = (self.rng.standard_normal(n) * 0.05).astype(np.float32)
        return self.node("Gemm", [x, self.init("W", w), self.init("B", b)], transB=1)

    def model(self, name: str, inp: str, in_shape, out: str, out_shape) -> onnx.ModelProto:
        g = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(inp, TensorProto.FLOAT, list(in_shape))],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(out_shape))],
            self.inits,
        )
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nnisa")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def _rename_output(b: _Builder, old: str, new: str) -> None:
    for n in b.nodes:
        for k, o in enumerate(n.output):
            if o == old:
                n.output[k] = new


def make_lenet(seed: int = 0) -> onnx.ModelProto:
    """LeNet-5 style CNN, input ``(1,1,28,28)`` → logits ``(1,10)``.

    conv5×5(6, pad 2)-relu-maxpool2 → conv5×5(16)-relu-maxpool2 → flatten →
    gemm 400→120-relu → gemm 120→84-relu → gemm 84→10.
    """
    b = _Builder(seed)
    x = "input"
    h = b.node("Relu", [b.conv(x, 1, 6, 5, pad=2)])
    h = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = b.node("Relu", [b.conv(h, 6, 16, 5)])
    h = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = b.node("Flatten", [h], axis=1)
    h = b.node("Relu", [b.gemm(h, 400, 120)])
    h = b.node("Relu", [b.gemm(h, 120, 84)])
    h = b.gemm(h, 84, 10)
    _rename_output(b, h, "logits")
    return b.model("lenet5", x, (1, 1, 28, 28), "logits", (1, 10))


def make_mlp(seed: int = 0, sizes: tuple[int, ...] = (784, 256, 128, 10)) -> onnx.ModelProto:
    """MLP ``(1, 784)`` → ``(1, 10)``: MatMul+Add layers with ReLU (the first is a Gemm)."""
    b = _Builder(seed)
    h = "input"
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:])):
        if k == 0:
            h = b.gemm(h, i, o)
        else:
            w = (b.rng.standard_normal((i, o)) * np.sqrt(2.0 / i)).astype(np.float32)
            h = b.node("MatMul", [h, b.init("W", w)])
            h = b.node("Add", [h, b.init("B", (b.rng.standard_normal(o) * 0.05).astype(np.float32))])
        if k < len(sizes) - 2:
            h = b.node("Relu", [h])
    _rename_output(b, h, "logits")
    return b.model("mlp", "input", (1, sizes[0]), "logits", (1, sizes[-1]))


def _basic_block(b: _Builder, x: str, cin: int, cout: int, stride: int, bn: bool) -> str:
    h = b.conv(x, cin, cout, 3, stride, 1, bias=not bn)
    h = b.node("Relu", [b.bn(h, cout) if bn else h])
    h = b.conv(h, cout, cout, 3, 1, 1, bias=not bn)
    h = b.bn(h, cout) if bn else h
    if stride != 1 or cin != cout:
        sc = b.conv(x, cin, cout, 1, stride, 0, bias=not bn)
        sc = b.bn(sc, cout) if bn else sc
    else:
        sc = x
    return b.node("Relu", [b.node("Add", [h, sc])])


def make_resnet_block(seed: int = 0, channels: int = 16, size: int = 16) -> onnx.ModelProto:
    """One ResNet basic block with BN nodes and the residual Add, ``(1,C,S,S)`` → same shape."""
    b = _Builder(seed)
    h = _basic_block(b, "input", channels, channels, 1, True)
    _rename_output(b, h, "output")
    shape = (1, channels, size, size)
    return b.model("resnet_block", "input", shape, "output", shape)


def make_resnet18(seed: int = 0, num_classes: int = 1000, size: int = 224, bn: bool = True) -> onnx.ModelProto:
    """ResNet-18 (random weights) ``(1,3,size,size)`` → logits ``(1,num_classes)``.

    With ``bn`` every conv is followed by a BatchNormalization node (folded at import).
    """
    b = _Builder(seed)
    h = b.conv("input", 3, 64, 7, 2, 3, bias=not bn)
    h = b.node("Relu", [b.bn(h, 64) if bn else h])
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for blk in range(2):
            stride = 2 if stage > 0 and blk == 0 else 1
            h = _basic_block(b, h, cin, cout, stride, bn)
            cin = cout
    h = b.node("GlobalAveragePool", [h])
    h = b.node("Flatten", [h], axis=1)
    h = b.gemm(h, 512, num_classes)
    _rename_output(b, h, "logits")
    return b.model("resnet18", "input", (1, 3, size, size), "logits", (1, num_classes))


def make_resnet20v2(seed: int = 0, num_classes: int = 10, softmax: bool = True) -> onnx.ModelProto:
    """ResNet-20 v2 for CIFAR-10 (random weights), ``(1,3,32,32)`` → ``(1,num_classes)``.

    The Keras ``resnet_v2(depth=20)`` shapes that Tensil's ResNet-20 builds were compiled from:
    conv3×3(16)-BN-ReLU, then three stages of two pre-activation bottleneck blocks
    (BN-ReLU-conv1×1, BN-ReLU-conv3×3, BN-ReLU-conv1×1; 16→64, 64→128, 128→256 channels, stride 2
    entering stages 2 and 3, a 1×1 projection on each stage's first block), BN-ReLU,
    AveragePool 8×8, Flatten, Dense (and Softmax).
    """
    b = _Builder(seed)

    def layer(x, cin, cout, k, stride=1, act=True, bn=True, conv_first=False):
        if conv_first:
            h = b.conv(x, cin, cout, k, stride, k // 2)
            h = b.bn(h, cout) if bn else h
            return b.node("Relu", [h]) if act else h
        h = b.bn(x, cin) if bn else x
        h = b.node("Relu", [h]) if act else h
        return b.conv(h, cin, cout, k, stride, k // 2)

    x = layer("input", 3, 16, 3, conv_first=True)
    cin = 16
    for stage in range(3):
        for blk in range(2):
            act = bn = True
            stride = 1
            if stage == 0:
                cout = cin * 4
                if blk == 0:
                    act = bn = False
            else:
                cout = cin * 2
                if blk == 0:
                    stride = 2
            y = layer(x, cin if blk == 0 else cout, cin, 1, stride, act, bn)
            y = layer(y, cin, cin, 3)
            y = layer(y, cin, cout, 1)
            if blk == 0:
                x = layer(x, cin if stage == 0 else cin, cout, 1, stride, act=False, bn=False, conv_first=True)
            x = b.node("Add", [x, y])
        cin = cout
    x = b.node("Relu", [b.bn(x, cin)])
    x = b.node("AveragePool", [x], kernel_shape=[8, 8], strides=[8, 8])
    x = b.node("Flatten", [x], axis=1)
    x = b.gemm(x, cin, num_classes)
    if softmax:
        x = b.node("Softmax", [x], axis=1)
    _rename_output(b, x, "logits")
    return b.model("resnet20v2", "input", (1, 3, 32, 32), "logits", (1, num_classes))
