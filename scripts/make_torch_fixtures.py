"""One-off: the small torch-exported transformer fixtures of ``tests/frontend/fixtures`` (not package code).

Needs torch (2.x, with onnxscript for the dynamo exporter).  Each file is a tiny encoder exported
the way users export theirs, so the tests check nnisa against real exporter output (no torch
needed at test time):

* ``torch_hf_layer_op14.onnx``: an HF-style encoder layer (own attention, erf GELU) with the
  TorchScript exporter at opset 14: LayerNorm decomposed (ReduceMean/Sub/Pow/Sqrt/Div), GELU as
  Div/Erf/Add/Mul/Mul.
* ``torch_tanh_gelu_op17.onnx``: the same with ``GELU(approximate='tanh')`` at opset 17.
* ``torch_encoder_mask_op17.onnx``: ``nn.TransformerEncoderLayer`` (batch first) with a padding
  mask input, TorchScript exporter, opset 17 (Equal/Where/Expand mask, LayerNormalization).
* ``torch_encoder_mask_op18.onnx``: the same with the dynamo exporter, opset 18 (-inf mask fill).
* ``torch_vit_op19.onnx``: a ViT-style model (Conv patches, class token, mean of tokens) with the
  dynamo exporter at opset 19.

Run: ``python scripts/make_torch_fixtures.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "fixtures"
H, S = 16, 6


class HFLayer(nn.Module):
    """Self-attention (4 heads) + FFN, post-norm, as HuggingFace's BertLayer computes it."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(H, H) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(H, eps=1e-12), nn.LayerNorm(H, eps=1e-12)
        self.ff1, self.ff2, self.act = nn.Linear(H, 32), nn.Linear(32, H), nn.GELU(approximate=approximate)

    def forward(self, x):
        b, s, _ = x.shape
        split = lambda t: t.view(b, s, 4, H // 4).permute(0, 2, 1, 3)  # noqa: E731
        a = (split(self.q(x)) @ split(self.k(x)).transpose(-1, -2)) / math.sqrt(H // 4)
        c = (a.softmax(-1) @ split(self.v(x))).permute(0, 2, 1, 3).reshape(b, s, H)
        x = self.ln1(x + self.o(c))
        return self.ln2(x + self.ff2(self.act(self.ff1(x))))


class MaskedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, H)
        self.pos = nn.Parameter(torch.randn(1, S, H) * 0.1)
        self.layer = nn.TransformerEncoderLayer(H, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
        self.head = nn.Linear(H, 5)

    def forward(self, ids, mask):
        h = self.layer(self.emb(ids) + self.pos, src_key_padding_mask=mask == 0)
        return self.head(h[:, 0])


class Vit(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, H, 3, stride=3)
        self.cls = nn.Parameter(torch.randn(1, 1, H) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, 10, H) * 0.1)
        self.layer = HFLayer("tanh")
        self.head = nn.Linear(H, 4)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], 1, H), t], 1) + self.pos
        return self.head(self.layer(t).mean(1))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(1, S, H)
    ids, mask = torch.randint(0, 20, (1, S)), torch.tensor([[1, 1, 1, 1, 0, 0]])
    jobs = [("torch_hf_layer_op14", HFLayer(), (x,), ["x"], 14, False),
            ("torch_tanh_gelu_op17", HFLayer("tanh"), (x,), ["x"], 17, False),
            ("torch_encoder_mask_op17", MaskedEncoder(), (ids, mask), ["ids", "mask"], 17, False),
            ("torch_encoder_mask_op18", MaskedEncoder(), (ids, mask), ["ids", "mask"], 18, True),
            ("torch_vit_op19", Vit(), (torch.randn(1, 3, 9, 9),), ["x"], 19, True)]
    for name, model, args, names, opset, dynamo in jobs:
        model.eval()
        torch.onnx.export(model, args, str(OUT / f"{name}.onnx"), opset_version=opset, dynamo=dynamo,
                          input_names=names, output_names=["y"], external_data=False)
        print(name, (OUT / f"{name}.onnx").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
