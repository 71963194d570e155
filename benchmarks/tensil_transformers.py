"""Transformer encoders on Tensil (issue 27): device segments + host steps, against onnxruntime.

usage: python benchmarks/tensil_transformers.py [--samples 16]

Runs the bundled encoders and encoders of other shapes (``make_bert``/``make_vit``) through
``nnisa.api.run_model`` and prints one Markdown row per model: segments, host steps, top-1
agreement, estimator cycles per input, energy per input, host share of the work, wall time.  The
table goes to stdout and ``benchmarks/out/tensil_transformers.md``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import onnx

from nnisa.api import run_model
from nnisa.frontend.transformers import make_bert, make_vit

GENERATED = {
    "bert s9 h24 3 heads": (make_bert, dict(seed=1, seq=9, hidden=24, heads=3, layers=1)),
    "bert s12 h48 4 heads mask": (make_bert, dict(seed=2, seq=12, hidden=48, heads=4, layers=2, ln="decomposed",
                                                  gelu="tanh", mask=True)),
    "bert s33 h40 5 heads": (make_bert, dict(seed=4, seq=33, hidden=40, heads=5, layers=1, gelu="op", opset=20)),
    "vit 8x8x3 p2 h32": (make_vit, dict(seed=5, image=8, channels=3, patch=2, hidden=32, heads=4, layers=1)),
    "vit 12x12x2 p4 h36": (make_vit, dict(seed=7, image=12, channels=2, patch=4, hidden=36, heads=3, layers=1)),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=16)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    models = {"digits_bert": "digits_bert", "digits_vit": "digits_vit"}
    for label, (make, kw) in GENERATED.items():
        p = tmp / f"{label.replace(' ', '_')}.onnx"
        onnx.save(make(**kw), p)
        models[label] = str(p)
    lines = ["| model | segments | host steps | top-1 | cycles per input | energy per input (µJ) | host share | wall s |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for label, m in models.items():
        t0 = time.perf_counter()
        r = run_model("tensil", m, samples=a.samples)
        ops = Counter("+".join(h["ops"]) for h in r["host_steps"])
        host = ", ".join(f"{n}× {k}" if n > 1 else k for k, n in ops.items())
        lines.append(f"| {label} | {len(r['segments'])} | {host} | {r['top1_agreement']:.3f} | {r['cycles']:,} | "
                     f"{r['energy_per_input_pj'] / 1e6:.1f} | {100 * r['host_share']:.1f} % | "
                     f"{time.perf_counter() - t0:.1f} |")
        print(lines[-1], flush=True)
    out = Path(__file__).parent / "out"
    os.makedirs(out, exist_ok=True)
    (out / "tensil_transformers.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
