"""One-off training of the bundled ``digits_mlp`` model (not part of the package).

A 64-32-10 ReLU MLP on scikit-learn's ``load_digits`` (UCI optdigits, CC BY 4.0), with the same
split as ``scripts/train_digits_cnn.py`` (360 stratified test images, ``random_state=0``), so the
held-out test set ``digits_cnn_test.npz`` is shared by both models.  The ONNX input is the same
``(batch, 1, 8, 8)`` image tensor, flattened by a ``Flatten`` node.  Writes
``src/nnisa/data/digits_mlp.onnx``.  It is the demo model of the DAIS target.

Run: ``.venv/bin/python scripts/train_digits_mlp.py``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from digits_training import OUT, SEED, accuracy, load_split, train


def export(model: nn.Sequential, path: Path) -> None:
    """Write the trained MLP as ONNX opset 17: Flatten → Gemm → Relu → Gemm."""
    l1, l2 = model[0], model[2]
    inits = [numpy_helper.from_array(t.detach().numpy().astype(np.float32), n) for n, t in
             (("fc1.weight", l1.weight), ("fc1.bias", l1.bias), ("fc2.weight", l2.weight), ("fc2.bias", l2.bias))]
    nodes = [
        helper.make_node("Flatten", ["input"], ["flat"], name="/Flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["h1"], name="/fc1/Gemm", transB=1),
        helper.make_node("Relu", ["h1"], ["relu1"], name="/Relu"),
        helper.make_node("Gemm", ["relu1", "fc2.weight", "fc2.bias"], ["logits"], name="/fc2/Gemm", transB=1),
    ]
    g = helper.make_graph(nodes, "digits_mlp",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="nnisa scripts/train_digits_mlp.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main() -> None:
    torch.manual_seed(SEED)
    xtr, xte, ytr, yte = load_split()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    train(model, xtr.reshape(len(xtr), -1), ytr, epochs=60)
    acc = accuracy(model, xte.reshape(len(xte), -1), yte)
    print(f"test accuracy (torch): {acc:.4f}")
    ref = np.load(OUT / "digits_cnn_test.npz")
    assert np.array_equal(ref["x"], xte) and np.array_equal(ref["y"], yte), "split differs from the CNN's"
    export(model, OUT / "digits_mlp.onnx")
    print("wrote", OUT / "digits_mlp.onnx")


if __name__ == "__main__":
    main()
