"""Tensil compiler quality: ResNet-20v2 (CIFAR, seeded random weights, the shapes of Tensil's
shipped builds) compiled for zcu104 / zcu104_uram under the four strategies, against Tensil's own
builds (spec §10.2: estimator cycles and DRAM vectors), plus compile time (issue: ≤ 2 s).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import onnx

from _results import machine, today, update_section
from nnisa.frontend.models import make_resnet20v2
from nnisa.targets.tensil.compiler.output import compile_model

#: Tensil v1.0.15's builds (spec §8.2.4 / §10.2): arch, strategy → (estimator cycles, DRAM vectors)
TENSIL = {("zcu104", "local-isolated"): (293_590, 77_210), ("zcu104_uram", "local-isolated"): (291_904, 75_666),
          ("zcu104_uram", "local-vars"): (236_080, 19_842), ("zcu104_uram", "local-consts"): (273_087, 56_849),
          ("zcu104_uram", "local-vars-and-consts"): (217_263, 1_025)}
RUNS = [("zcu104", "local-isolated"), ("zcu104", "local-vars"), ("zcu104_uram", "local-isolated"),
        ("zcu104_uram", "local-vars"), ("zcu104_uram", "local-consts"), ("zcu104_uram", "local-vars-and-consts")]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="tensil_bench_"))
    path = tmp / "resnet20v2_cifar.onnx"
    onnx.save(make_resnet20v2(seed=0), path)
    lines = ["| arch | strategy | nnisa cycles | Tensil cycles | nnisa DRAM vectors | Tensil DRAM vectors | "
             "instructions | compile (s) |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for arch, strategy in RUNS:
        compile_model(path, config=arch, out_dir=tmp / "warm", strategy=strategy)  # imports, first-call costs
        t0 = time.perf_counter()
        rep = compile_model(path, config=arch, out_dir=tmp / f"{arch}_{strategy}", strategy=strategy).report
        dt = time.perf_counter() - t0
        ref = TENSIL.get((arch, strategy))
        rc, rd = (f"{ref[0]:,}", f"{ref[1]:,}") if ref else ("–", "–")
        lines.append(f"| {arch} | {strategy} | {rep['estimator_cycles']:,} | {rc} | {rep['dram_vectors']:,} | {rd} | "
                     f"{rep['instructions']:,} | {dt:.2f} |")
    body = (f"Machine: {machine()}; date {today()}; `python benchmarks/tensil_compile.py`. Model: "
            "`nnisa.frontend.models.make_resnet20v2(seed=0)` (Keras resnet_v2 depth 20, random weights), "
            f"true MACs {rep['true_macs']:,}. Cycles are Tensil's estimator on both sides; DRAM vectors = DRAM0 in "
            "+ out + DRAM1 in (64-byte vectors).\n\n" + "\n".join(lines))
    print(body)
    update_section("Tensil compiler (ResNet-20v2 vs Tensil's builds)", body)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
