"""One-off export of the models in ``tests/data/torch_exports/`` (not part of the package).

Models as a new user brings them: written in PyTorch and exported with ``torch.onnx.export``
(TorchScript exporter at opset 17, the dynamo exporter at opset 18 for ``encoder_float_18_dynamo``,
which keeps its weights in an external ``.data`` file).  Seeded (``torch.manual_seed(0)``); the
tests read the files, they never need torch.  ``--torchvision`` also writes torchvision CNNs
(ResNet-18, MobileNet-V2, SqueezeNet 1.1, ShuffleNet-V2, EfficientNet-B0 at 64x64 and 224x224),
too large to ship (1.4-45 MB), for trying by hand.

Needs torch (and torchvision for ``--torchvision``) installed by hand (see the machine notes:
``pip install torch==2.14.1 torchvision==0.29.1``) and onnxscript for the dynamo exporter.

Run: ``python scripts/export_torch_models.py [OUT_DIR] [--torchvision]``
"""

import sys

import torch
import torch.nn as nn

args = [a for a in sys.argv[1:] if not a.startswith("--")]
out = args[0] if args else "tests/data/torch_exports"
torch.manual_seed(0)

def export(name, model, args, opset=17, dynamo=False):
    model.eval()
    path = f"{out}/{name}.onnx"
    try:
        torch.onnx.export(model, args, path, opset_version=opset, dynamo=dynamo,
                          input_names=["input"] if not isinstance(args, tuple) or len(args) == 1 else None)
        print("ok", name, flush=True)
    except Exception as e:
        print("FAIL", name, type(e).__name__, str(e)[:200], flush=True)

if "--torchvision" in sys.argv:
    import torchvision.models as tvm
    x64 = torch.randn(1, 3, 64, 64)
    export("tv_resnet18_64", tvm.resnet18(num_classes=10), x64)
    export("tv_mobilenet_v2_64", tvm.mobilenet_v2(num_classes=10, width_mult=0.35), x64, opset=18)
    export("tv_squeezenet1_1_64", tvm.squeezenet1_1(num_classes=10), x64)
    export("tv_shufflenet_v2_x0_5_64", tvm.shufflenet_v2_x0_5(num_classes=10), x64, opset=19)
    export("tv_efficientnet_b0_64", tvm.efficientnet_b0(num_classes=10), x64, opset=17)
    export("tv_efficientnet_b0_224", tvm.efficientnet_b0(num_classes=10), torch.randn(1, 3, 224, 224), opset=17)

class ConvOdd(nn.Module):
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(13, 29, 3, stride=2, padding=1); self.fc = nn.Linear(29 * 8 * 8, 10)
    def forward(self, x):
        return self.fc(torch.relu(self.c(x)).flatten(1))
export("conv13to29_s2", ConvOdd(), torch.randn(1, 13, 16, 16))

class SoftmaxHead(nn.Module):
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(1, 8, 3); self.fc = nn.Linear(8 * 26 * 26, 10)
    def forward(self, x):
        return torch.softmax(self.fc(torch.relu(self.c(x)).flatten(1)), -1)
export("cnn_softmax", SoftmaxHead(), torch.randn(1, 1, 28, 28))

class GRUCell(nn.Module):
    def __init__(self):
        super().__init__(); self.g = nn.GRUCell(12, 16); self.fc = nn.Linear(16, 4)
    def forward(self, x, h):
        return self.fc(self.g(x, h))
export("gru_cell_state", GRUCell(), (torch.randn(1, 12), torch.randn(1, 16)))

class LSTMCls(nn.Module):
    def __init__(self):
        super().__init__(); self.l = nn.LSTM(8, 16, batch_first=True); self.fc = nn.Linear(16, 5)
    def forward(self, x):
        y, _ = self.l(x); return self.fc(y[:, -1])
export("lstm_cls", LSTMCls(), torch.randn(1, 10, 8))

class Encoder(nn.Module):
    def __init__(self, d=64, h=4, ff=128, seq=16, vocab=100, classes=4, gelu=True):
        super().__init__()
        self.emb = nn.Embedding(vocab, d); self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, activation="gelu" if gelu else "relu",
                                                batch_first=True)
        self.fc = nn.Linear(d, classes)
    def forward(self, ids):
        return self.fc(self.layer(self.emb(ids) + self.pos).mean(1))
export("bert_layer_ids", Encoder(), torch.randint(0, 100, (1, 16)))

class EncoderF(nn.Module):
    """Float-input encoder (embeddings done by the host): what an accelerator usually sees."""
    def __init__(self, d=48, h=3, ff=96, seq=12, classes=4, layers=2):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, activation="gelu",
                                                                    batch_first=True, norm_first=True), layers,
                                         enable_nested_tensor=False)
        self.fc = nn.Linear(d, classes)
    def forward(self, x):
        return self.fc(self.enc(x + self.pos)[:, 0])
export("encoder_float_17", EncoderF(), torch.randn(1, 12, 48), opset=17)
export("encoder_float_18_dynamo", EncoderF(), torch.randn(1, 12, 48), opset=18, dynamo=True)

class ViT(nn.Module):
    def __init__(self, d=32, h=2, patch=4, size=16, classes=10):
        super().__init__()
        self.pe = nn.Conv2d(3, d, patch, patch); n = (size // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02); self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.layer = nn.TransformerEncoderLayer(d, h, 2 * d, dropout=0.0, activation="gelu", batch_first=True,
                                                norm_first=True)
        self.norm = nn.LayerNorm(d); self.fc = nn.Linear(d, classes)
    def forward(self, x):
        t = self.pe(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], 1) + self.pos
        return self.fc(self.norm(self.layer(t))[:, 0])
export("vit_tiny_16", ViT(), torch.randn(1, 3, 16, 16), opset=17)

class ManualAttn(nn.Module):
    """Hand-written attention with a mask, decomposed LayerNorm and tanh-GELU: older exporter patterns."""
    def __init__(self, d=32, h=4, seq=8):
        super().__init__(); self.h = h; self.qkv = nn.Linear(d, 3 * d); self.o = nn.Linear(d, d)
        self.f1 = nn.Linear(d, 64); self.f2 = nn.Linear(64, d); self.fc = nn.Linear(d, 3)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))
    def ln(self, x):
        m = x.mean(-1, keepdim=True); v = ((x - m) ** 2).mean(-1, keepdim=True); return (x - m) / torch.sqrt(v + 1e-5)
    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, -1)
        sh = lambda t: t.view(b, s, self.h, d // self.h).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        a = (q @ k.transpose(-2, -1)) / (d // self.h) ** 0.5
        a = torch.where(self.mask == 0, torch.full_like(a, -1e4), a).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln(x + self.o(y))
        f = self.f2(nn.functional.gelu(self.f1(x), approximate="tanh"))
        return self.fc(self.ln(x + f).mean(1))
export("manual_attention", ManualAttn(), torch.randn(1, 8, 32), opset=17)

class MaskedAttn(nn.Module):
    """Hand-written attention with both mask kinds torch code writes: a causal ``masked_fill`` (a
    Where of a constant condition) and a padding mask from an integer input (Equal, Unsqueeze,
    Expand, Cast, arithmetic), added to the scores."""
    def __init__(self, d=24, h=2, seq=6):
        super().__init__(); self.h = h; self.q = nn.Linear(d, d); self.k = nn.Linear(d, d); self.v = nn.Linear(d, d)
        self.fc = nn.Linear(d, 4)
        self.register_buffer("causal", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))
    def forward(self, x, keep):
        b, s, d = x.shape
        sh = lambda t: t.view(b, s, self.h, d // self.h).transpose(1, 2)
        q, k, v = sh(self.q(x)), sh(self.k(x)), sh(self.v(x))
        a = (q @ k.transpose(-2, -1)) / (d // self.h) ** 0.5
        a = a.masked_fill(self.causal, float("-inf"))
        pad = (keep == 0)[:, None, None, :].expand(b, self.h, s, s).to(torch.float32)
        a = (a + pad * -1e4).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(b, s, d)
        return self.fc(y.mean(1))
export("masked_attention", MaskedAttn(), (torch.randn(1, 6, 24), torch.ones(1, 6, dtype=torch.int64)), opset=17)

# fixed batch sizes > 1 (issue 26): a CNN exported with a batch of 4 (its rows are independent), and a
# sequence-first encoder layer [L, N, E] (the default batch_first=False: the graph mixes axis 0)
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__(); self.c = nn.Conv2d(3, 8, 3, padding=1); self.fc = nn.Linear(8 * 4 * 4, 5)
    def forward(self, x):
        return self.fc(nn.functional.max_pool2d(torch.relu(self.c(x)), 2).flatten(1))
export("cnn_batch4", SmallCNN(), torch.randn(4, 3, 8, 8), opset=17)

class SeqFirst(nn.Module):
    def __init__(self, d=32, h=2, seq=8):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, h, 2 * d, dropout=0.0, activation="relu")
        self.fc = nn.Linear(d, 3)
    def forward(self, x):
        return self.fc(self.layer(x))
export("seqfirst_encoder", SeqFirst(), torch.randn(8, 1, 32), opset=17)
