"""Accuracy table (issue 13): float vs int8 vs onnxruntime for every model of the test suite.

For each model: nnisa's float evaluation and the exact integer reference (what PIM and DAIS
compute bit for bit) against onnxruntime on the same inputs, for three quantization settings
(pow2 scales, 8 bits): per-channel weights + max calibration (the default), per-channel + MSE
calibration, per-tensor + max.  Calibration is always the frontend's default set (64 samples
disjoint from the evaluation inputs).  Inputs: the bundled test set for the bundled models
(labels give accuracies too), else uniform [-1, 1) with seed 0 (``nnisa run``'s inputs).

    python benchmarks/model_accuracy.py [--samples N] [--models a,b]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parent))
from _results import machine, today, update_section  # noqa: E402

SETTINGS = (("per-channel, max", dict(per_channel=True, calibration="max")),
            ("per-channel, mse", dict(per_channel=True, calibration="mse")),
            ("per-tensor, max", dict(per_channel=False, calibration="max")))


def suite() -> dict:
    """name → (path-or-builder, description): the bundled models, ``frontend.models`` and the zoo."""
    from nnisa.frontend import models as M
    from nnisa.frontend.zoo import ZOO
    out = {"digits_cnn": (M.bundled_model_path("digits_cnn"), "bundled digits CNN"),
           "digits_mlp": (M.bundled_model_path("digits_mlp"), "bundled digits MLP"),
           "resnet_block": (lambda: M.make_resnet_block(0), "residual block 16×16×16"),
           "resnet20v2": (lambda: M.make_resnet20v2(0), "ResNet-20 v2 (CIFAR, Softmax)")}
    out.update({k: (v[0], v[1]) for k, v in ZOO.items()})
    return out


def _metrics(got: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    g = np.asarray(got, np.float64).reshape(len(ref), -1)
    r = np.asarray(ref, np.float64).reshape(len(ref), -1)
    rel = float(np.abs(g - r).max() / (np.abs(r).max() or 1.0))
    return float(np.mean(g.argmax(1) == r.argmax(1))), rel


def evaluate(name: str, src, samples: int) -> dict:
    from nnisa.api import default_inputs, onnx_reference
    from nnisa.frontend import evaluate_float, evaluate_quantized, load_model
    from nnisa.frontend.models import bundled_testset
    from nnisa.frontend.prepare import prepare_qgraph
    with tempfile.TemporaryDirectory() as d:
        path = Path(src) if isinstance(src, (str, Path)) else Path(d) / f"{name}.onnx"
        if not isinstance(src, (str, Path)):
            onnx.save(src(), path)
        labels = None
        if name.startswith("digits_"):
            x, labels = bundled_testset(name)
            feed = {load_model(path).inputs[0].name: x[:samples]}
            labels = labels[:samples]
        else:
            feed = default_inputs(path, samples)
        ort = onnx_reference(path, feed)
        key = next(iter(ort))
        g = load_model(path)
        fl = evaluate_float(g, feed)
        row = {"float": _metrics(fl[key], ort[key])}
        if labels is not None:
            row["acc"] = {"onnxruntime": float(np.mean(ort[key].reshape(len(labels), -1).argmax(1) == labels))}
        for label, opts in SETTINGS:
            t0 = time.perf_counter()
            try:
                qg = prepare_qgraph(path, "accuracy", **opts)
                q = evaluate_quantized(qg, feed, dequantize=True)
                row[label] = _metrics(q[key], ort[key])
                if labels is not None:
                    row["acc"][label] = float(np.mean(q[key].reshape(len(labels), -1).argmax(1) == labels))
            except Exception as e:  # noqa: BLE001 - the reason goes into the table
                row[label] = str(e).split(": ", 1)[-1][:100]
            row.setdefault("seconds", 0.0)
            row["seconds"] += time.perf_counter() - t0
        return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--models", default=None)
    a = ap.parse_args()
    models = suite()
    names = a.models.split(",") if a.models else list(models)

    def cell(v) -> str:
        return f"{v[0] * a.samples:.0f}/{a.samples} · {v[1]:.3f}" if isinstance(v, tuple) else f"no: {v}"

    rows = ["| model | float vs onnxruntime | " + " | ".join(f"int8 {s}" for s, _ in SETTINGS) + " | labels: ort / int8 |",
            "| --- | --- | " + " | ".join("---" for _ in SETTINGS) + " | --- |"]
    for name in names:
        src, desc = models[name]
        r = evaluate(name, src, a.samples)
        print(name, r, flush=True)
        acc = r.get("acc")
        accs = "" if acc is None else " / ".join(f"{v:.2f}" for v in acc.values())
        rows.append(f"| {name} ({desc}) | {cell(r['float'])} | " + " | ".join(cell(r[s]) for s, _ in SETTINGS)
                    + f" | {accs} |")
    text = (f"Machine: {machine()}; date {today()}; load avg {os.getloadavg()[0]:.1f}.  Each cell: top-1 agreement "
            f"with onnxruntime over {a.samples} samples · max error relative to onnxruntime's largest output.  "
            "int8 = the frontend's exact integer reference (PIM and DAIS reproduce it bit for bit), pow2 scales, "
            "calibrated on the default set (64 samples disjoint from these inputs).  Inputs: bundled test set "
            "(digits; last column: accuracy vs labels for onnxruntime / int8 per setting), else uniform [-1, 1) "
            "seed 0.  `python benchmarks/model_accuracy.py`.\n\n" + "\n".join(rows))
    update_section("Accuracy: float vs int8 vs onnxruntime (issue 13)", text)


if __name__ == "__main__":
    main()
