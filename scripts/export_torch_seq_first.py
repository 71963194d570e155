"""One-off export of the sequence-first and fixed-batch models in ``tests/data/torch_exports/``
(issues 26/27: attention with the sequence on axis 0, as torch lays it out without
``batch_first``; a model exported with a fixed batch of 4).  Not part of the package: the tests
read the files and never need torch.

* ``mha_seq_first.onnx``: ``nn.MultiheadAttention(16, 2)`` (``batch_first=False``) on ``(L=8, N=1, E=16)``,
  residual, Linear 16 → 4 per position: axis 0 is the sequence, axis 1 the batch.
* ``encoder_seq_first.onnx``: ``nn.TransformerEncoderLayer(16, 2, 32)`` (ReLU, ``batch_first=False``)
  on ``(L=6, N=1, E=16)``, mean over the sequence, Linear 16 → 3.
* ``mlp_batch4.onnx``: Linear 12 → 16, ReLU, Linear 16 → 5 exported with a fixed batch of 4 (rows
  independent: four samples per onnxruntime call).

Seeded (``torch.manual_seed(1)``), TorchScript exporter, opset 17.
Run: ``python scripts/export_torch_seq_first.py [OUT_DIR]`` (torch 2.14.1).
"""

import sys

import torch
import torch.nn as nn

out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/torch_exports"
torch.manual_seed(1)


class MHASeqFirst(nn.Module):
    def __init__(self, d=16, h=2, classes=4):
        super().__init__()
        self.att = nn.MultiheadAttention(d, h)
        self.fc = nn.Linear(d, classes)

    def forward(self, x):  # (L, N, E)
        y, _ = self.att(x, x, x, need_weights=False)
        return self.fc(y + x)


class EncoderSeqFirst(nn.Module):
    def __init__(self, d=16, h=2, ff=32, classes=3):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0)  # batch_first=False
        self.fc = nn.Linear(d, classes)

    def forward(self, x):  # (L, N, E)
        return self.fc(self.layer(x).mean(0))


mlp = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
for name, model, x in (("mha_seq_first", MHASeqFirst(), torch.randn(8, 1, 16)),
                       ("encoder_seq_first", EncoderSeqFirst(), torch.randn(6, 1, 16)),
                       ("mlp_batch4", mlp, torch.randn(4, 12))):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, x, f"{out}/{name}.onnx", opset_version=17, dynamo=False, input_names=["input"])
    print("ok", name)
