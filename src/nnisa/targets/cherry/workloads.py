"""Built-in workloads for ``nnisa bench -t cherry`` (cycle-model figures of §4 on real kernels).

* ``fast_relu``: the fast ReLU of §7.1 over 128 tiles (328 cycles at SW = 16, §4.6);
* ``matmul1024``: a 1024 x 1024 x 1024 matmul compiled by nnisa, timing mode;
* ``resnet18_convs``: the 20 convolution layers of ResNet-18 (224 x 224, batch 1) as im2col
  matmuls, timing mode.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...core.layers import LayerRow
from ...core.target import Stats
from .compiler.builder import Builder
from .config import CherryConfig
from .formats.text import assemble
from .sim.machine import Machine
from .sim.run import make_timing, run_programs, stats_of

#: ResNet-18 conv layers: (name, output pixels E·F, C·R·S, M, count)
RESNET18_CONVS = [
    ("conv1 7x7/2", 112 * 112, 3 * 49, 64, 1),
    ("layer1 3x3", 56 * 56, 64 * 9, 64, 4),
    ("layer2.0 3x3/2", 28 * 28, 64 * 9, 128, 1),
    ("layer2 3x3", 28 * 28, 128 * 9, 128, 3),
    ("layer2 downsample 1x1/2", 28 * 28, 64, 128, 1),
    ("layer3.0 3x3/2", 14 * 14, 128 * 9, 256, 1),
    ("layer3 3x3", 14 * 14, 256 * 9, 256, 3),
    ("layer3 downsample 1x1/2", 14 * 14, 128, 256, 1),
    ("layer4.0 3x3/2", 7 * 7, 256 * 9, 512, 1),
    ("layer4 3x3", 7 * 7, 512 * 9, 512, 3),
    ("layer4 downsample 1x1/2", 7 * 7, 256, 512, 1),
]

FAST_RELU = """.loop 0 iterations=128
.apu 0 = i
.apu 1 = i
.apu 2 = i
start_independent_loop 0
    mem_read 0, 1
    load 0, INPUT
    relu
    store 0, OUTPUT
    mem_write 0, 2
end_loop 0
"""

WORKLOADS: dict[str, tuple[str, Any]] = {
    "fast_relu": ("the fast ReLU of spec §7.1 over 128 tiles (reference: 328 cycles at SW=16)", None),
    "matmul1024": ("1024x1024x1024 matmul compiled by nnisa, cycle model only (timing mode)", None),
    "resnet18_convs": ("ResNet-18's 20 conv layers as im2col matmuls, cycle model only", None),
}


def fast_relu_dram(tiles: int = 128, sz: int = 4) -> np.ndarray:
    """The device memory of spec §8.2's fast-ReLU example: tiles 16, 20, ..., 124 hold ±a
    (a = 120 + (i - 12)/4, negative every fourth), the rest 0; ``(tiles, sz, sz)`` float32."""
    d = np.zeros((tiles, sz, sz), np.float32)
    for i in range(16, min(tiles, 125), 4):
        a = 120 + (i - 12) // 4
        d[i] = -a if i % 16 == 0 else a
    return d


def matmul_timing(cfg: CherryConfig, m: int, k: int, n: int) -> dict[str, Any]:
    """Compile an m x k @ k x n matmul and run the cycle model; returns the figures."""
    t0 = time.perf_counter()
    b = Builder(cfg)
    x = b.tensor(1, m, k)
    w = b.tensor(1, k, n)
    b.matmul(x, w)
    t1 = time.perf_counter()
    machine = Machine(cfg)
    tm = make_timing(cfg)
    run_programs(machine, b.plan.programs, mode="timing", timing=tm)
    st = stats_of(machine, tm, b.plan.programs, time.perf_counter() - t1)
    return {"m": m, "k": k, "n": n, "cycles": st.cycles, "programs": len(b.plan.programs),
            "ipc": st.extra["ipc"], "ar_utilization": st.extra["ar_utilization"],
            "matmul_utilization": st.extra["matmul_utilization"], "ls_utilization": st.extra["ls_utilization"],
            "ram_utilization": st.extra["ram_utilization"], "gflops": st.extra["gflops"],
            **_energy(st), "compile_s": t1 - t0, "sim_s": time.perf_counter() - t1}


def _energy(st: Stats) -> dict[str, Any]:
    """The time and energy figures of a run, in the shared vocabulary."""
    return {"latency_ns": st.latency_ns, "energy_pj": st.energy_pj,
            **{k: st.extra[k] for k in ("dynamic_energy_pj", "static_energy_pj", "energy_per_input_pj")}}


def run_workload(name: str, cfg: CherryConfig) -> Stats:
    """Run a built-in workload with ``cfg``; its figures."""
    return Stats.from_figures(_figures(name, cfg))


def _figures(name: str, cfg: CherryConfig) -> dict[str, Any]:
    t0 = time.perf_counter()
    if name == "fast_relu":
        machine = Machine(cfg)
        tm = make_timing(cfg)
        prog = assemble(FAST_RELU, sz=cfg.sz)
        run_programs(machine, [prog], mode="timing", timing=tm)
        st = stats_of(machine, tm, [prog], time.perf_counter() - t0)
        ref = "" if cfg.superscalar_width != 16 else (" = the reference" if st.cycles == 328 else
                                                        " (reference 328)")
        return {"sz": cfg.sz, "cycles": st.cycles, "reference_cycles_sw16": 328, "ipc": st.extra["ipc"], **_energy(st),
                "summary": f"fast ReLU of spec §7.1 over 128 tiles: {st.cycles} cycles{ref}, IPC "
                           f"{st.extra['ipc']:.2f}",
                "wall_s": time.perf_counter() - t0}
    if name == "matmul1024":
        res = matmul_timing(cfg, 1024, 1024, 1024)
        res.update(sz=cfg.sz, wall_s=time.perf_counter() - t0)
        res["summary"] = (f"1024^3 matmul at SZ {cfg.sz}: {res['cycles']:,} cycles, matmul unit "
                          f"{res['matmul_utilization']:.1%} busy (bound by the one load/store unit), "
                          f"simulated in {res['wall_s']:.2f} s")
        return res
    layers = []
    cycles = busy = 0
    energy = {"energy_pj": 0.0, "dynamic_energy_pj": 0.0, "static_energy_pj": 0.0}
    for lname, pix, kdim, m, count in RESNET18_CONVS:
        r = matmul_timing(cfg, pix, kdim, m)
        # one row per conv shape on the per-layer contract: its `count` instances back to back
        span = r["cycles"] * count
        layers.append(LayerRow(lname, "Conv", cycles=span, latency_ns=span / cfg.clock_ghz,
                               energy_pj=r["dynamic_energy_pj"] * count, utilization=r["matmul_utilization"],
                               extra={"count": count, "M": pix, "K": kdim, "N": m, "cycles_each": r["cycles"],
                                      "ipc": r["ipc"]}))
        cycles += r["cycles"] * count
        busy += r["matmul_utilization"] * r["cycles"] * count
        for k in energy:
            energy[k] += r[k] * count
    return {"sz": cfg.sz, "cycles": cycles, "latency_ns": cycles / cfg.clock_ghz, **energy,
            "energy_per_input_pj": energy["energy_pj"], "matmul_utilization": busy / cycles, "layers": layers,
            "wall_s": time.perf_counter() - t0}
