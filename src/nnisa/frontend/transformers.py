"""Transformer models for tests and demos (issue 27): a BERT-style encoder and a ViT-style model.

Built with ``onnx.helper`` in the shape torch exports them (``MatMul`` + ``Add`` linear layers on
``(batch, sequence, hidden)`` tensors, the ``Reshape → Transpose`` head split of multi-head
attention, ``Div`` by ``sqrt(head size)``, ``Softmax`` on the last axis, ``LayerNormalization``
or its decomposed form, GELU as ``Erf``/``Tanh`` subgraphs or the opset-20 ``Gelu`` node), from
a weight dict: random weights drawn from a seed (:func:`bert_weights`, :func:`vit_weights`) or
trained ones (``scripts/train_digits_transformers.py`` builds the bundled ``digits_bert`` and
``digits_vit`` with these same functions).

Every size is a parameter, so tests generate encoders of any sequence length, hidden size, head
count, FFN width, depth and batch.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from .zoo import _B

#: LayerNorm spellings: one ``LayerNormalization`` node, or ReduceMean/Sub/Pow/Sqrt/Div (torch < opset 17)
LN_STYLES = ("fused", "decomposed")
#: GELU spellings: ``Erf`` subgraph (torch < opset 20), HF NewGELU ``Tanh`` subgraph, the ``Gelu`` node
GELU_STYLES = ("erf", "tanh", "op", "op_tanh")


def _f32(v) -> np.ndarray:
    return np.asarray(v, np.float32)


def _linear(b: _B, x: str, w: np.ndarray, bias: np.ndarray) -> str:
    """torch's ``nn.Linear`` on a rank-3 tensor: ``MatMul`` by the (in, out) weight, then ``Add``."""
    return b.op("Add", [b.op("MatMul", [x, b.const("w", _f32(w))]), b.const("b", _f32(bias))])


def _reduce_mean(b: _B, x: str, axes: list[int], keepdims: int) -> str:
    """ReduceMean with ``axes`` as an attribute (opset < 18) or an input (opset 18+)."""
    if b.opset < 18:
        return b.op("ReduceMean", [x], axes=axes, keepdims=keepdims)
    return b.op("ReduceMean", [x, b.const("ax", np.array(axes, np.int64))], keepdims=keepdims)


def _layernorm(b: _B, x: str, gamma, beta, style: str, eps: float = 1e-5) -> str:
    if style == "fused":
        return b.op("LayerNormalization", [x, b.const("g", _f32(gamma)), b.const("be", _f32(beta))], axis=-1,
                    epsilon=eps)
    d = b.op("Sub", [x, _reduce_mean(b, x, [-1], 1)])
    v = _reduce_mean(b, b.op("Pow", [d, b.const("two", np.float32(2.0))]), [-1], 1)
    s = b.op("Sqrt", [b.op("Add", [v, b.const("eps", np.float32(eps))])])
    y = b.op("Div", [d, s])
    return b.op("Add", [b.op("Mul", [y, b.const("g", _f32(gamma))]), b.const("be", _f32(beta))])


def _gelu(b: _B, x: str, style: str) -> str:
    if style == "op":
        return b.op("Gelu", [x])
    if style == "op_tanh":
        return b.op("Gelu", [x], approximate="tanh")
    one, half = b.const("one", np.float32(1.0)), b.const("half", np.float32(0.5))
    if style == "erf":  # torch: x * 0.5 * (1 + erf(x / sqrt(2)))
        e = b.op("Erf", [b.op("Div", [x, b.const("sqrt2", np.float32(math.sqrt(2.0)))])])
        return b.op("Mul", [b.op("Mul", [x, half]), b.op("Add", [e, one])])
    # HF NewGELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    cube = b.op("Mul", [b.const("c", np.float32(0.044715)), b.op("Pow", [x, b.const("three", np.float32(3.0))])])
    t = b.op("Tanh", [b.op("Mul", [b.const("k", np.float32(math.sqrt(2.0 / math.pi))), b.op("Add", [x, cube])])])
    return b.op("Mul", [b.op("Mul", [half, x]), b.op("Add", [one, t])])


def _attention(b: _B, x: str, p: dict, pre: str, seq: int, hidden: int, heads: int, mask: str | None) -> str:
    """Multi-head self-attention as torch/HF export it (batch first)."""
    dh = hidden // heads
    split = b.const("sh", np.array([1, seq, heads, dh], np.int64))

    def heads_of(name: str, perm) -> str:
        y = _linear(b, x, p[f"{pre}.{name}.w"], p[f"{pre}.{name}.b"])
        return b.op("Transpose", [b.op("Reshape", [y, split])], perm=perm)

    q = heads_of("q", [0, 2, 1, 3])                      # (1, heads, S, dh)
    k = heads_of("k", [0, 2, 3, 1])                      # (1, heads, dh, S)
    v = heads_of("v", [0, 2, 1, 3])
    s = b.op("Div", [b.op("MatMul", [q, k]), b.const("scale", np.float32(math.sqrt(dh)))])
    if mask is not None:
        s = b.op("Add", [s, mask])
    a = b.op("Softmax", [s], axis=-1)
    c = b.op("Transpose", [b.op("MatMul", [a, v])], perm=[0, 2, 1, 3])
    c = b.op("Reshape", [c, b.const("sh", np.array([1, seq, hidden], np.int64))])
    return _linear(b, c, p[f"{pre}.o.w"], p[f"{pre}.o.b"])


def _encoder_layer(b: _B, x: str, p: dict, i: int, seq: int, hidden: int, heads: int, *, pre_norm: bool,
                   ln: str, gelu: str, mask: str | None) -> str:
    pre = f"l{i}"
    norm1 = (lambda t: _layernorm(b, t, p[f"{pre}.ln1.g"], p[f"{pre}.ln1.b"], ln))
    norm2 = (lambda t: _layernorm(b, t, p[f"{pre}.ln2.g"], p[f"{pre}.ln2.b"], ln))

    def ffn(t: str) -> str:
        h = _gelu(b, _linear(b, t, p[f"{pre}.ff1.w"], p[f"{pre}.ff1.b"]), gelu)
        return _linear(b, h, p[f"{pre}.ff2.w"], p[f"{pre}.ff2.b"])

    if pre_norm:  # ViT: x + attn(LN(x)), then x + mlp(LN(x))
        x = b.op("Add", [x, _attention(b, norm1(x), p, pre, seq, hidden, heads, mask)])
        return b.op("Add", [x, ffn(norm2(x))])
    x = norm1(b.op("Add", [x, _attention(b, x, p, pre, seq, hidden, heads, mask)]))  # BERT: post-norm
    return norm2(b.op("Add", [x, ffn(x)]))


def _layer_weights(rng: np.random.Generator, p: dict, layers: int, hidden: int, ffn: int) -> None:
    def lin(name: str, i: int, o: int) -> None:
        p[f"{name}.w"] = rng.normal(0, 1 / math.sqrt(i), (i, o))
        p[f"{name}.b"] = rng.normal(0, 0.02, o)

    for i in range(layers):
        for k in "qkvo":
            lin(f"l{i}.{k}", hidden, hidden)
        lin(f"l{i}.ff1", hidden, ffn)
        lin(f"l{i}.ff2", ffn, hidden)
        for k in ("ln1", "ln2"):
            p[f"l{i}.{k}.g"] = 1 + rng.normal(0, 0.1, hidden)
            p[f"l{i}.{k}.b"] = rng.normal(0, 0.05, hidden)


def bert_weights(seed: int = 0, *, seq: int = 16, hidden: int = 32, layers: int = 2, ffn: int | None = None,
                 vocab: int = 32, classes: int = 10) -> dict[str, np.ndarray]:
    """Random weights of :func:`make_bert` (seeded)."""
    rng = np.random.default_rng(seed)
    p = {"tok": rng.normal(0, 1, (vocab, hidden)), "pos": rng.normal(0, 0.3, (seq, hidden)),
         "emb_ln.g": 1 + rng.normal(0, 0.1, hidden), "emb_ln.b": rng.normal(0, 0.05, hidden)}
    _layer_weights(rng, p, layers, hidden, ffn or 4 * hidden)
    p["pool.w"], p["pool.b"] = rng.normal(0, 1 / math.sqrt(hidden), (hidden, hidden)), np.zeros(hidden)
    p["cls.w"], p["cls.b"] = rng.normal(0, 1 / math.sqrt(hidden), (hidden, classes)), np.zeros(classes)
    return p


def make_bert(seed: int = 0, *, seq: int = 16, hidden: int = 32, heads: int = 2, layers: int = 2,
              ffn: int | None = None, vocab: int = 32, classes: int = 10, mask: bool = False, ln: str = "fused",
              gelu: str = "erf", opset: int = 17, weights: dict | None = None, name: str = "bert") -> onnx.ModelProto:
    """A BERT-style encoder: token ids ``(1, seq)`` int64 → logits ``(1, classes)``.

    Token embedding ``Gather`` + positional embedding ``Add`` + LayerNorm, ``layers`` post-norm encoder
    layers (``heads`` heads, GELU FFN of width ``ffn``, default ``4·hidden``), the pooler
    (``Gemm`` + ``Tanh`` of the first token) and a ``Gemm`` classifier.  ``mask=True`` adds the int64
    attention-mask input ``(1, seq)`` (1 = attend) applied as HF does: ``(1 - mask) · -10000`` added
    to the scores.  ``ln``/``gelu`` pick the exporter's spelling (:data:`LN_STYLES`, :data:`GELU_STYLES`;
    ``gelu="op"`` needs ``opset >= 20``).
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    p = weights or bert_weights(seed, seq=seq, hidden=hidden, layers=layers, ffn=ffn, vocab=vocab, classes=classes)
    b = _B(seed)
    b.opset = opset
    x = b.op("Gather", [b.const("tok", _f32(p["tok"])), "input"])
    x = b.op("Add", [x, b.const("pos", _f32(p["pos"])[None])])
    x = _layernorm(b, x, p["emb_ln.g"], p["emb_ln.b"], ln)
    m = None
    if mask:
        m = b.op("Unsqueeze", ["mask", b.const("ax", np.array([1, 2], np.int64))])
        m = b.op("Sub", [b.const("one", np.float32(1.0)), b.op("Cast", [m], to=TensorProto.FLOAT)])
        m = b.op("Mul", [m, b.const("neg", np.float32(-10000.0))])
    for i in range(layers):
        x = _encoder_layer(b, x, p, i, seq, hidden, heads, pre_norm=False, ln=ln, gelu=gelu, mask=m)
    first = b.op("Gather", [x, b.const("zero", np.array(0, np.int64))], axis=1)       # (1, hidden)
    pooled = b.op("Tanh", [b.op("Gemm", [first, b.const("pw", _f32(p["pool.w"])), b.const("pb", _f32(p["pool.b"]))])])
    y = b.op("Gemm", [pooled, b.const("cw", _f32(p["cls.w"])), b.const("cb", _f32(p["cls.b"]))])
    ins = [helper.make_tensor_value_info("input", TensorProto.INT64, [1, seq])]
    if mask:
        ins.append(helper.make_tensor_value_info("mask", TensorProto.INT64, [1, seq]))
    return _model(b, ins, y, classes, name, opset)


def vit_weights(seed: int = 0, *, image: int = 8, channels: int = 1, patch: int = 2, hidden: int = 32,
                layers: int = 1, ffn: int | None = None, classes: int = 10, pool: str = "cls") -> dict[str, np.ndarray]:
    """Random weights of :func:`make_vit` (seeded)."""
    rng = np.random.default_rng(seed)
    tokens = (image // patch) ** 2 + (pool == "cls")
    fan = channels * patch * patch
    p = {"patch.w": rng.normal(0, 1 / math.sqrt(fan), (hidden, channels, patch, patch)),
         "patch.b": rng.normal(0, 0.02, hidden), "cls_tok": rng.normal(0, 0.5, (1, 1, hidden)),
         "pos": rng.normal(0, 0.3, (tokens, hidden)), "ln.g": 1 + rng.normal(0, 0.1, hidden),
         "ln.b": rng.normal(0, 0.05, hidden)}
    _layer_weights(rng, p, layers, hidden, ffn or 2 * hidden)
    p["head.w"], p["head.b"] = rng.normal(0, 1 / math.sqrt(hidden), (hidden, classes)), np.zeros(classes)
    return p


def make_vit(seed: int = 0, *, image: int = 8, channels: int = 1, patch: int = 2, hidden: int = 32, heads: int = 4,
             layers: int = 1, ffn: int | None = None, classes: int = 10, pool: str = "cls", ln: str = "fused",
             gelu: str = "erf", opset: int = 17, weights: dict | None = None, name: str = "vit") -> onnx.ModelProto:
    """A ViT-style model: image ``(1, channels, image, image)`` → logits ``(1, classes)``.

    Patch embedding ``Conv`` (kernel = stride = ``patch``), ``Reshape`` + ``Transpose`` to tokens, a
    class token (``Concat`` of a constant, ``pool="cls"``) or mean pooling (``ReduceMean``,
    ``pool="mean"``), positional embedding ``Add``, ``layers`` pre-norm encoder layers, a final
    LayerNorm and a ``Gemm`` head.  ``image`` need not be a multiple of ``patch`` (the Conv drops the
    remainder, like torch).
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    if pool not in ("cls", "mean"):
        raise ValueError(f"pool must be 'cls' or 'mean', not {pool!r}")
    p = weights or vit_weights(seed, image=image, channels=channels, patch=patch, hidden=hidden, layers=layers,
                               ffn=ffn, classes=classes, pool=pool)
    b = _B(seed)
    b.opset = opset
    side = image // patch
    x = b.op("Conv", ["input", b.const("pw", _f32(p["patch.w"])), b.const("pb", _f32(p["patch.b"]))],
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.op("Reshape", [x, b.const("sh", np.array([1, hidden, side * side], np.int64))])
    x = b.op("Transpose", [x], perm=[0, 2, 1])                                     # (1, tokens, hidden)
    if pool == "cls":
        x = b.op("Concat", [b.const("cls", _f32(p["cls_tok"])), x], axis=1)
    seq = side * side + (pool == "cls")
    x = b.op("Add", [x, b.const("pos", _f32(p["pos"])[None])])
    for i in range(layers):
        x = _encoder_layer(b, x, p, i, seq, hidden, heads, pre_norm=True, ln=ln, gelu=gelu, mask=None)
    x = _layernorm(b, x, p["ln.g"], p["ln.b"], ln)
    if pool == "cls":
        x = b.op("Gather", [x, b.const("zero", np.array(0, np.int64))], axis=1)
    else:
        x = _reduce_mean(b, x, [1], 0)
    y = b.op("Gemm", [x, b.const("hw", _f32(p["head.w"])), b.const("hb", _f32(p["head.b"]))])
    ins = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, image, image])]
    return _model(b, ins, y, classes, name, opset)


def _model(b: _B, inputs, y: str, classes: int, name: str, opset: int) -> onnx.ModelProto:
    g = helper.make_graph(b.nodes, name, inputs, [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, classes])],
                          b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="nnisa-transformers")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m
