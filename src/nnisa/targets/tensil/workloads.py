"""Built-in workloads for ``nnisa bench -t tensil`` and the array-only cross-check programs.

:func:`fold_program` writes the weight-stationary schedule SCALE-Sim assumes for a conv layer:
per fold one LoadWeights of N+1 vectors (weights + bias) and one MatMul streaming the T output
pixels.  The detailed model in array-only mode must agree with the WS closed form within 2 %
when T ≥ 4N (spec §8.2.4).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...core.errors import UnsupportedError
from ...core.target import Stats
from .config import PRESETS, TensilArch
from .isa import LOADWEIGHTS, MATMUL
from .program import DTYPE, TensilProgram
from .sim.scalesim import INC5B, RESNET18, ConvLayer, layer_cycles, network_cycles


def fold_program(layers: list[ConvLayer], arch: TensilArch) -> TensilProgram:
    """LoadWeights + MatMul per WS fold of every layer (padded sizes, no data movement)."""
    N = arch.array_size
    rows = []
    for layer in layers:
        oh, ow = layer.ofmap
        T = oh * ow
        if T > arch.accumulator_depth or N + 1 + T > arch.local_depth:
            raise UnsupportedError(f"layer {layer.name}: {T} output pixels exceed this architecture's memories")
        K = layer.filter_h * layer.filter_w * layer.channels
        folds = -(-K // N) * -(-layer.filters // N)
        for _ in range(folds):
            rows.append((LOADWEIGHTS << 4, 0, 0, N, 0, 0, 0, 0, 0, 0, 0, 0))
            rows.append((MATMUL << 4, N + 1, 0, 0, 0, T - 1, 0, 0, 0, 0, 0, 0))
    return TensilProgram(arch, np.array(rows, dtype=DTYPE))


def crosscheck(layers: list[ConvLayer], arch: TensilArch) -> dict[str, Any]:
    """Detailed model (array only) against the SCALE-Sim WS closed form, per layer and in total."""
    from .sim.detailed import run_detailed
    per = {}
    for layer in layers:
        det = run_detailed(fold_program([layer], arch), array_only=True)["cycles"]
        ref = layer_cycles(layer, arch.array_size, arch.array_size, "ws")
        per[layer.name] = {"detailed_array_only": det, "scalesim_ws": ref, "ratio": det / ref}
    d = sum(v["detailed_array_only"] for v in per.values())
    s = sum(v["scalesim_ws"] for v in per.values())
    return {"layers": per, "detailed_array_only": d, "scalesim_ws": s, "ratio": d / s}


#: the ten CIFAR images of cifar_10x32.csv and their classes on every shipped build (spec §10.2)
RESNET20_CLASSES = [0, 9, 5, 7, 9, 8, 5, 7, 8, 6]
RESNET20_BASELINE_CYCLES = 293_590

WORKLOADS = {
    "resnet20-baseline": "Tensil's ResNet-20 build for zcu104 (../shared): 10 CIFAR images emulated bit-exactly, "
                         f"estimator cycles (Tensil: {RESNET20_BASELINE_CYCLES:,})",
    "scalesim-resnet18": "SCALE-Sim closed form, ResNet-18 on 32x32 (WS/OS/IS; reference 2,519,815 / "
                         "1,718,353 / 2,838,997)",
    "scalesim-test": "SCALE-Sim closed form, Inc5b 3x3 on 32x32 (reference 77,111 / 21,479 / 25,811)",
    "crosscheck-resnet18": "detailed model (array only) vs SCALE-Sim WS on ResNet-18 layers (zcu104_uram)",
}


def _resnet20() -> dict[str, Any]:
    from ...core.fileio import shared_dir
    from .formats.files import read_program
    from .formats.model import read_csv_vectors
    from .sim.simulate import simulate
    d = shared_dir() / "conformance" / "tensil"
    model = d / "baseline" / "resnet20v2_cifar_onnx_zcu104.tmodel"
    if not model.exists():
        raise UnsupportedError(f"workload needs the conformance data in {d} (the shared/ folder next to the "
                               "checkout, or NNISA_SHARED)")
    prog = read_program(model)
    images = read_csv_vectors(d / "cifar_10x32.csv", prog.arch.array_size)
    res = simulate(prog, inputs={"x": images}, runs=len(RESNET20_CLASSES))
    logits = next(iter(res.outputs.values())).reshape(len(RESNET20_CLASSES), -1)
    classes = [int(c) for c in logits[:, :10].argmax(1)]  # 10 CIFAR classes in a padded vector
    emu_s = res.stats.extra["emulation_s"]
    ok = classes == RESNET20_CLASSES
    return {"cycles": res.stats.cycles, "latency_ns": res.stats.latency_ns, "instructions": res.stats.instructions,
            "classes": classes, "classes_match": ok, "reference_cycles": RESNET20_BASELINE_CYCLES,
            "emulation_s_per_image": emu_s / len(classes), "timing_model": res.stats.extra["timing_model"],
            "summary": f"Tensil's ResNet-20 (zcu104): 10 CIFAR images classified "
                       f"{'as Tensil does' if ok else 'DIFFERENTLY from Tensil'}, {emu_s / len(classes) * 1e3:.0f} "
                       f"ms/image; estimator {res.stats.cycles:,} cycles (Tensil {RESNET20_BASELINE_CYCLES:,}"
                       f"{', exact' if res.stats.cycles == RESNET20_BASELINE_CYCLES else ''})"}


def run_workload(name: str) -> Stats:
    t0 = time.perf_counter()
    if name == "resnet20-baseline":
        out = _resnet20()
    elif name in ("scalesim-resnet18", "scalesim-test"):
        layers = RESNET18 if name == "scalesim-resnet18" else INC5B
        res = {df: network_cycles(layers, 32, 32, df)["cycles"] for df in ("ws", "os", "is")}
        out: dict[str, Any] = {"cycles": res["ws"], **{f"cycles_{k}": v for k, v in res.items()},
                               "timing_model": "scalesim closed form"}
    elif name == "crosscheck-resnet18":
        res = crosscheck(RESNET18[:-1], PRESETS["zcu104_uram"][0])
        out = {"cycles": res["detailed_array_only"], "scalesim_ws": res["scalesim_ws"], "ratio": res["ratio"],
               "timing_model": "tensil-detailed (array only)"}
    else:
        raise UnsupportedError(f"unknown workload {name!r}")
    out["wall_s"] = time.perf_counter() - t0
    return Stats.from_figures(out)
