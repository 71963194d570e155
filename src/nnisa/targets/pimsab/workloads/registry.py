"""Named built-in workloads (``nnisa bench -t pimsab NAME``) and how to run one.

Composite workloads (``resnet18``: 17 conv layers, ``bert``: 30 GEMMs) run each distinct layer
once and add the results with the layers' multiplicities, as the artifact does.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from ....core.errors import SimError, UnsupportedError
from ....core.target import Stats
from ..config import PimsabConfig
from ..sim.simulate import check_values, simulate
from . import conv, matmul, vector
from .builder import Workload
from .paper import A100, GOLDEN

#: name → (description, generator(cfg, scale, bits, seed) → Workload)
WORKLOADS: dict[str, tuple[str, Callable[..., Workload]]] = {
    "vadd": ("Table 5 vecadd: 15,728,640 int8 additions (vadd replay)",
             lambda cfg, scale=1.0, bits=8, seed=None: vector.vadd(cfg, int(vector.VADD_N * scale), bits, seed)),
    "fir": ("Table 5 fir: 7,833,600 outputs, 32 int16 taps (fir_med_inp_256bit_loads replay)",
            lambda cfg, scale=1.0, bits=16, seed=None: vector.fir(
                cfg, bits=bits, outputs=max(1, int(vector.FIR_OUTPUTS * scale)), seed=seed)),
    "gemv": ("Table 5 gemv: 61440 x 2048 int8, int32 accumulation (gemv_new replay)",
             lambda cfg, scale=1.0, bits=8, seed=None: vector.gemv(cfg, k=int(2048 * scale), bits=bits, seed=seed)),
    "gemm": ("Table 5 gemm: 61440 x 2048 x 32 int4, int16 accumulation (gemm_systolic replay)",
             lambda cfg, scale=1.0, bits=4, seed=None: matmul.gemm(cfg, m=int(61440 * scale), bits=bits)),
    "conv2d": ("Table 5 conv2d: 9x9x256 input, batch 2, 3x3x256x256 int8 (inputDup replay)",
               lambda cfg, scale=1.0, bits=8, seed=None: conv.conv2d(cfg, batch=max(1, round(2 * scale)), bits=bits)),
    "resnet18": ("ResNet-18 batch 1: the 17 conv layers (weightDup/inputDup replays)",
                 lambda cfg, scale=1.0, bits=8, seed=None: conv.resnet18(cfg)),
    "bert": ("BERT-base encoder layer: 30 GEMMs (gemm_tiled replays) + the softmax charge",
             lambda cfg, scale=1.0, bits=8, seed=None: matmul.bert(cfg)),
}
for _name in ("gemv", "gemm", "conv2d", "resnet18", "bert"):
    _desc = WORKLOADS[_name][0]
    _gens = {"gemv": lambda cfg, scale=1.0, bits=8, seed=None: vector.gemv(cfg, k=int(2048 * scale), bits=bits,
                                                                             nap=True),
             "gemm": lambda cfg, scale=1.0, bits=4, seed=None: matmul.gemm(cfg, m=int(61440 * scale), bits=bits,
                                                                            nap=True),
             "conv2d": lambda cfg, scale=1.0, bits=8, seed=None: conv.conv2d(cfg, True, max(1, round(2 * scale)),
                                                                              bits),
             "resnet18": lambda cfg, scale=1.0, bits=8, seed=None: conv.resnet18(cfg, True),
             "bert": lambda cfg, scale=1.0, bits=8, seed=None: matmul.bert(cfg, True)}
    WORKLOADS[_name + "_nap"] = (_desc.split(":")[0] + " without adaptive precision (Table 6)", _gens[_name])
#: functionally meaningful replays (values checked when run with check=true)
FUNCTIONAL = ("vadd", "gemv", "fir")


def generate(name: str, cfg: PimsabConfig, *, scale: float = 1.0, bits: int | None = None,
             seed: int | None = None) -> Workload:
    if name not in WORKLOADS:
        raise UnsupportedError(f"target 'pimsab' has no workload {name!r} (workloads: {', '.join(WORKLOADS)})")
    gen = WORKLOADS[name][1]
    kw: dict[str, Any] = {"scale": scale}
    if bits is not None:
        kw["bits"] = bits
    if seed is not None:
        if name not in FUNCTIONAL:
            raise UnsupportedError(f"workload {name!r} is a timing-faithful replay: values cannot be checked")
        kw["seed"] = seed
    try:
        return gen(cfg, **kw)
    except ValueError as exc:
        raise UnsupportedError(f"workload {name!r}: {exc}") from None


def run_workload(name: str, cfg: PimsabConfig, *, scale: float = 1.0, bits: int | None = None,
                 check: bool = False, seed: int = 0, engine: str = "fast") -> Stats:
    """Generate and simulate a workload; the figures of ``nnisa bench`` (``latency_ns`` is the
    replay's time, ``energy_pj`` its dynamic energy; ``time_ns``/``energy_j`` repeat them in the
    paper's units)."""
    t0 = time.perf_counter()
    w = generate(name, cfg, scale=scale, bits=bits, seed=seed if check else None)
    t_gen = time.perf_counter() - t0
    parts = w.parts or [w]
    weights = w.weights or [1]
    mode = "both" if check else "timing"
    run_cfg = cfg if check else cfg.replace(functional=False)
    total = dict(cycles=0, dram_read_bits=0, dram_write_bits=0, energy_j=0.0, static_energy_j=0.0, instructions=0)
    comp: dict[str, float] = {}
    brk: dict[str, float] = {}
    layers = []
    for part, k in zip(parts, weights):
        res = simulate(part.program, config=run_cfg, mode=mode, engine=engine)
        st = res.stats
        if check:
            bad = check_values(res.details, part.expected)
            if bad:
                raise SimError(f"workload {name}: values differ from the reference ({bad[0]})")
        ex = st.extra
        total["cycles"] += k * st.cycles
        total["dram_read_bits"] += k * ex["dram_read_bits"]
        total["dram_write_bits"] += k * ex["dram_write_bits"]
        total["energy_j"] += k * ex["energy_j"]
        total["static_energy_j"] += k * ex["static_energy_j"]
        total["instructions"] += k * st.instructions
        for c, v in ex["energy_by_component_j"].items():
            comp[c] = comp.get(c, 0.0) + k * v
        for c, v in ex["time_breakdown_cycles"].items():
            brk[c] = brk.get(c, 0.0) + k * v
        if w.parts:
            layers.append({"layer": part.name, "count": k, "cycles": st.cycles, "energy_j": ex["energy_j"]})
    total["cycles"] += w.extra_cycles
    brk["compute"] = brk.get("compute", 0.0) + w.extra_cycles
    out: dict[str, Any] = {"cycles": int(total["cycles"]), "time_ns": total["cycles"] / cfg.clock_ghz,
           "dram_read_bits": int(total["dram_read_bits"]), "dram_write_bits": int(total["dram_write_bits"]),
           "energy_j": total["energy_j"], "static_energy_j": total["static_energy_j"],
           "instructions": int(total["instructions"]), "energy_by_component_j": comp,
           "time_breakdown_cycles": brk, "values_checked": bool(check), "generate_s": t_gen}
    if w.extra_cycles:
        out["extra_cycles"] = w.extra_cycles
    if layers:
        out["layers"] = layers
    base = name.removesuffix("_nap")
    if base in A100 and scale == 1.0 and bits is None:
        ns, joules = A100[base]
        out["a100_time_ns"], out["a100_energy_j"] = ns, joules
        out["speedup_vs_a100"] = ns / out["time_ns"]
        out["energy_ratio_vs_a100"] = joules / out["energy_j"] if out["energy_j"] else math.inf
    out["meta"] = {k: v for k, v in w.meta.items() if isinstance(v, (int, float, str))}
    out["wall_s"] = time.perf_counter() - t0
    out["summary"] = _summary(name, out, cfg, scale == 1.0 and bits is None)
    out["latency_ns"], out["energy_pj"] = out["time_ns"], out["energy_j"] * 1e12
    return Stats.from_figures(out)


def _summary(name: str, r: dict[str, Any], cfg: PimsabConfig, paper_size: bool) -> str:
    """One line for ``nnisa demo``: cycles (vs the official simulator), time, energy, vs A100."""
    text = f"{name} replay: {r['cycles']:,} cycles"
    if paper_size and name in GOLDEN and cfg.sha256 == _base_sha():
        text += f" (official simulator {GOLDEN[name][0]:,})"
    text += f", {r['time_ns'] / 1000:.1f} µs, {r['energy_j'] * 1e3:.3f} mJ dynamic"
    if "speedup_vs_a100" in r:
        text += f", {r['speedup_vs_a100']:.2f}x faster than an A100"
    return text


def _base_sha() -> bytes:
    from ..config import preset
    return preset("base").sha256


def geomean(values: list[float]) -> float:
    v = np.asarray(values, float)
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")
