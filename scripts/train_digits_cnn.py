"""One-off training of the bundled ``digits_cnn`` model (not part of the package).

Needs scikit-learn (for its bundled ``load_digits`` data, UCI optdigits, CC BY 4.0) and torch,
installed by hand in the venv.  Writes ``src/nnisa/data/digits_cnn.onnx`` and the held-out
test set ``src/nnisa/data/digits_cnn_test.npz``.  The ONNX graph is written with onnx.helper
in the shape of a PyTorch export (BatchNormalization nodes and a Shape/Gather/Unsqueeze/
Concat → Reshape flatten) so the frontend's folding passes are exercised by a real model.

Run: ``.venv/bin/python scripts/train_digits_cnn.py``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from digits_training import OUT, SEED, accuracy, load_split, train


class DigitsCNN(nn.Module):
    """conv3×3(16)-BN-relu-maxpool2 → conv3×3(32)-BN-relu-maxpool2 → flatten → linear(128→10)."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.b1(self.c1(x))), 2)
        x = torch.max_pool2d(torch.relu(self.b2(self.c2(x))), 2)
        return self.fc(x.reshape(x.size(0), -1))


def export(model: DigitsCNN, path: Path) -> None:
    """Write the trained model as ONNX opset 17 in PyTorch-export style."""
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items() if v.dtype == torch.float32}
    inits = [numpy_helper.from_array(v, k) for k, v in sd.items()]
    inits.append(numpy_helper.from_array(np.array(0, np.int64), "zero"))
    inits.append(numpy_helper.from_array(np.array([-1], np.int64), "minus_one"))
    nodes = []
    h = "input"
    for i, (c, b) in enumerate((("c1", "b1"), ("c2", "b2")), start=1):
        nodes += [
            helper.make_node("Conv", [h, f"{c}.weight", f"{c}.bias"], [f"conv{i}"], name=f"/conv{i}/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", [f"conv{i}", f"{b}.weight", f"{b}.bias", f"{b}.running_mean", f"{b}.running_var"], [f"bn{i}"], name=f"/bn{i}/BatchNormalization", epsilon=1e-5),
            helper.make_node("Relu", [f"bn{i}"], [f"relu{i}"], name=f"/Relu_{i}"),
            helper.make_node("MaxPool", [f"relu{i}"], [f"pool{i}"], name=f"/MaxPool_{i}", kernel_shape=[2, 2], strides=[2, 2]),
        ]
        h = f"pool{i}"
    nodes += [
        helper.make_node("Shape", [h], ["shape"], name="/Shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="/Gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", "zero_axes"], ["batch1"], name="/Unsqueeze"),
        helper.make_node("Concat", ["batch1", "minus_one"], ["new_shape"], name="/Concat", axis=0),
        helper.make_node("Reshape", [h, "new_shape"], ["flat"], name="/Reshape"),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1),
    ]
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "zero_axes"))
    g = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="nnisa scripts/train_digits_cnn.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main() -> None:
    torch.manual_seed(SEED)
    xtr, xte, ytr, yte = load_split()
    model = DigitsCNN()
    train(model, xtr, ytr, epochs=40)
    acc = accuracy(model, xte, yte)
    print(f"test accuracy (torch): {acc:.4f}")
    OUT.mkdir(parents=True, exist_ok=True)
    export(model, OUT / "digits_cnn.onnx")
    np.savez_compressed(OUT / "digits_cnn_test.npz", x=xte, y=yte)
    print("wrote", OUT / "digits_cnn.onnx", OUT / "digits_cnn_test.npz")


if __name__ == "__main__":
    main()
