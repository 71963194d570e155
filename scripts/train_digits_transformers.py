"""One-off training of the bundled ``digits_bert`` and ``digits_vit`` models (not part of the package).

Needs torch and scikit-learn (see ``digits_training.py``).  Both use the digits split of the CNN:

* ``digits_vit``: a ViT-style model on the 8×8 image: 2×2 patch-embedding Conv (32 channels), class
  token, 2 pre-norm encoder layers (4 heads, FFN 64, tanh-approximated GELU), final LayerNorm, head.
* ``digits_bert``: a BERT-style encoder over the 16 2×2 patches of the image as tokens (each pixel
  in 3 levels: 81 token ids, plus [CLS] = 81, :func:`nnisa.frontend.models.digit_tokens`): token and
  positional embeddings, 2 post-norm encoder layers (2 heads, FFN 64, exact GELU), pooler, classifier.

The torch modules mirror :func:`nnisa.frontend.transformers.make_bert` / ``make_vit``, which write the
ONNX files from the trained weights (opset 17 as torch exports it: LayerNormalization nodes, GELU as
an Erf / Tanh subgraph); the script checks onnxruntime against torch on the test set.

Run: ``PYTHONPATH=src python scripts/train_digits_transformers.py`` (torch in the interpreter).
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from digits_training import OUT, SEED, accuracy, load_split, train
from nnisa.frontend.models import digit_tokens
from nnisa.frontend.transformers import make_bert, make_vit

HID, FFN = 32, 64


class Attention(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(HID, HID) for _ in range(4))

    def forward(self, x):
        b, s, _ = x.shape
        dh = HID // self.heads
        split = lambda t: t.reshape(b, s, self.heads, dh).transpose(1, 2)  # noqa: E731
        a = torch.softmax(split(self.q(x)) @ split(self.k(x)).transpose(-1, -2) / math.sqrt(dh), dim=-1)
        return self.o((a @ split(self.v(x))).transpose(1, 2).reshape(b, s, HID))


class Layer(nn.Module):
    def __init__(self, heads: int, pre_norm: bool, gelu: str):
        super().__init__()
        self.att, self.pre = Attention(heads), pre_norm
        self.ln1, self.ln2 = nn.LayerNorm(HID), nn.LayerNorm(HID)
        self.ff1, self.ff2, self.act = nn.Linear(HID, FFN), nn.Linear(FFN, HID), nn.GELU(approximate=gelu)

    def forward(self, x):
        ffn = lambda t: self.ff2(self.act(self.ff1(t)))  # noqa: E731
        if self.pre:
            x = x + self.att(self.ln1(x))
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.att(x))
        return self.ln2(x + ffn(x))


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(82, HID), nn.Parameter(torch.randn(17, HID) * 0.1)
        self.ln = nn.LayerNorm(HID)
        self.layers = nn.ModuleList(Layer(2, False, "none") for _ in range(2))
        self.pool, self.cls = nn.Linear(HID, HID), nn.Linear(HID, 10)

    def forward(self, ids):
        x = self.ln(self.tok(ids) + self.pos)
        for layer in self.layers:
            x = layer(x)
        return self.cls(torch.tanh(self.pool(x[:, 0])))


class Vit(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(1, HID, 2, stride=2)
        self.cls_tok, self.pos = nn.Parameter(torch.randn(1, 1, HID) * 0.1), nn.Parameter(torch.randn(17, HID) * 0.1)
        self.layers = nn.ModuleList(Layer(4, True, "tanh") for _ in range(2))
        self.ln, self.head = nn.LayerNorm(HID), nn.Linear(HID, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_tok.expand(len(t), 1, HID), t], 1) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x)[:, 0])


def _np(t) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


def _layer_weights(m, layers) -> dict:
    p = {}
    for i, lay in enumerate(layers):
        for k in "qkvo":
            lin = getattr(lay.att, k)
            p[f"l{i}.{k}.w"], p[f"l{i}.{k}.b"] = _np(lin.weight).T, _np(lin.bias)
        for k in ("ff1", "ff2"):
            lin = getattr(lay, k)
            p[f"l{i}.{k}.w"], p[f"l{i}.{k}.b"] = _np(lin.weight).T, _np(lin.bias)
        for k in ("ln1", "ln2"):
            ln = getattr(lay, k)
            p[f"l{i}.{k}.g"], p[f"l{i}.{k}.b"] = _np(ln.weight), _np(ln.bias)
    return p


def _check(model: onnx.ModelProto, net: nn.Module, x: np.ndarray) -> float:
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    got = np.concatenate([s.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    return float(np.abs(got - want).max())


def main() -> None:
    torch.manual_seed(SEED)
    x_tr, x_te, y_tr, y_te = load_split()
    t_tr, t_te = digit_tokens(x_tr), digit_tokens(x_te)
    bert = Bert()
    train(bert, t_tr, y_tr, epochs=80)
    p = {"tok": _np(bert.tok.weight), "pos": _np(bert.pos), "emb_ln.g": _np(bert.ln.weight),
         "emb_ln.b": _np(bert.ln.bias), **_layer_weights(bert, bert.layers), "pool.w": _np(bert.pool.weight).T,
         "pool.b": _np(bert.pool.bias), "cls.w": _np(bert.cls.weight).T, "cls.b": _np(bert.cls.bias)}
    m = make_bert(seq=17, hidden=HID, heads=2, layers=2, ffn=FFN, vocab=82, weights=p, name="digits_bert")
    onnx.save(m, OUT / "digits_bert.onnx")
    print(f"digits_bert: test accuracy {accuracy(bert, t_te, y_te):.4f}, |onnxruntime - torch| "
          f"{_check(m, bert, t_te):.2e}")
    torch.manual_seed(SEED)
    vit = Vit()
    train(vit, x_tr, y_tr, epochs=80)
    p = {"patch.w": _np(vit.patch.weight), "patch.b": _np(vit.patch.bias), "cls_tok": _np(vit.cls_tok),
         "pos": _np(vit.pos), **_layer_weights(vit, vit.layers), "ln.g": _np(vit.ln.weight), "ln.b": _np(vit.ln.bias),
         "head.w": _np(vit.head.weight).T, "head.b": _np(vit.head.bias)}
    m = make_vit(hidden=HID, heads=4, layers=2, ffn=FFN, gelu="tanh", weights=p, name="digits_vit")
    onnx.save(m, OUT / "digits_vit.onnx")
    print(f"digits_vit: test accuracy {accuracy(vit, x_te, y_te):.4f}, |onnxruntime - torch| "
          f"{_check(m, vit, x_te):.2e}")


if __name__ == "__main__":
    main()
