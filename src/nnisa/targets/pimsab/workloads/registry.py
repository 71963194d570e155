"""Named built-in workloads (``nnisa bench -t pimsab NAME``) and how to run one.

Composite workloads (``resnet18``: 17 conv layers, ``bert``: 30 GEMMs) run each distinct layer
once and add the results with the layers' multiplicities, as the artifact does.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import numpy as np

from ....core.errors import OptionError, SimError, UnsupportedError
from ....core.layers import LayerRow
from ....core.target import Stats
from ..config import PimsabConfig
from ..sim.simulate import check_values, simulate
from . import conv, matmul, vector
from .builder import Workload
from .paper import A100, GOLDEN


@dataclass(frozen=True)
class WorkloadDef:
    """A named workload: its generator, its parameters (``-O key=value``, with the official
    simulator's meanings) and their defaults, the size parameter ``scale`` multiplies (Fig. 20a)."""

    description: str
    make: Callable[..., Workload]
    params: dict[str, Any] = field(default_factory=dict)
    scaled: str | None = None
    functional: bool = False


def _conv2d(cfg, nap=False, batch=2, bits=8):
    return conv.conv2d(cfg, nap, batch, bits)


def _resnet18(cfg, nap=False, layer=None):
    return conv.resnet18(cfg, nap, layer)


_VADD = dict(n=vector.VADD_N, bits=8)
_GEMV = dict(m=61440, k=2048, bits=8, acc_bits=None)
_GEMM = dict(m=61440, k=2048, n=32, bits=4, acc_bits=None)
_TILED = dict(m=384, k=768, n=768)
#: name → definition; ``*_nap`` (Table 6: no adaptive precision) take the same parameters
WORKLOADS: dict[str, WorkloadDef] = {
    "vadd": WorkloadDef("Table 5 vecadd: 15,728,640 int8 additions (vadd replay; n, bits)",
                        lambda cfg, nap=False, seed=None, **kw: vector.vadd(cfg, seed=seed, **kw), _VADD, "n", True),
    "fir": WorkloadDef("Table 5 fir: 7,833,600 outputs, 32 int16 taps (fir_med_inp_256bit_loads replay; outputs, "
                       "bits)", lambda cfg, nap=False, seed=None, **kw: vector.fir(cfg, seed=seed, **kw),
                       dict(outputs=vector.FIR_OUTPUTS, bits=16), "outputs", True),
    "gemv": WorkloadDef("Table 5 gemv: 61440 x 2048 int8, int32 accumulation (gemv_new replay; m, k, bits, acc_bits)",
                        lambda cfg, nap=False, seed=None, **kw: vector.gemv(cfg, nap=nap, seed=seed, **kw), _GEMV,
                        "m", True),
    "gemm": WorkloadDef("Table 5 gemm: 61440 x 2048 x 32 int4, int16 accumulation (gemm_systolic replay; m, k, n, "
                        "bits, acc_bits)", lambda cfg, nap=False, **kw: matmul.gemm(cfg, nap=nap, **kw), _GEMM, "m"),
    "gemm_tiled": WorkloadDef("one int8 GEMM layer M x K x N, int32 accumulation (gemm_tiled replay, BERT's "
                              "layers; m, k, n)", lambda cfg, nap=False, **kw: matmul.gemm_tiled(cfg, nap=nap, **kw),
                              _TILED),
    "conv2d": WorkloadDef("Table 5 conv2d: 9x9x256 input, batch 2, 3x3x256x256 int8 (inputDup replay; batch, bits)",
                          _conv2d, dict(batch=2, bits=8), "batch"),
    "resnet18": WorkloadDef("ResNet-18 batch 1: the 17 conv layers (weightDup/inputDup replays; layer=NAME for one)",
                            _resnet18, dict(layer=None)),
    "bert": WorkloadDef("BERT-base encoder layer: 30 GEMMs (gemm_tiled replays) + the softmax charge",
                        lambda cfg, nap=False: matmul.bert(cfg, nap)),
}
for _name in ("gemv", "gemm", "gemm_tiled", "conv2d", "resnet18", "bert"):
    _d = WORKLOADS[_name]
    WORKLOADS[_name + "_nap"] = WorkloadDef(_d.description.split(":")[0].split(" (")[0]
                                            + " without adaptive precision (Table 6)",
                                            partial(_d.make, nap=True), _d.params, _d.scaled)
#: parameters ``nnisa bench`` takes for some workload (declared as target options)
PARAMS = ("n", "m", "k", "bits", "acc_bits", "outputs", "batch", "layer")
#: functionally meaningful replays (values checked when run with check=true)
FUNCTIONAL = tuple(k for k, v in WORKLOADS.items() if v.functional)


def workload_params(name: str, scale: float = 1.0, **given: Any) -> dict[str, Any]:
    """The generator arguments of a workload: its defaults, ``scale`` applied to its size parameter,
    then the given values (``None`` = not given).  A parameter the workload does not take is an
    :class:`OptionError`."""
    d = WORKLOADS[name]
    given = {k: v for k, v in given.items() if v is not None}
    extra = sorted(set(given) - set(d.params))
    if extra:
        takes = ", ".join(d.params) or "none"
        raise OptionError(f"workload {name!r} takes no option {extra[0]} (its parameters: {takes})")
    params = dict(d.params)
    if scale != 1.0:
        if d.scaled is None:
            raise OptionError(f"workload {name!r} has no size to scale")
        if d.scaled in given:
            raise OptionError(f"give either scale or {d.scaled} for workload {name!r}, not both")
        params[d.scaled] = max(1, round(params[d.scaled] * scale))
    params.update(given)
    return {k: v for k, v in params.items() if v is not None}


def generate(name: str, cfg: PimsabConfig, *, scale: float = 1.0, seed: int | None = None,
             **given: Any) -> Workload:
    """The workload's program for ``cfg`` (parameters as in :func:`workload_params`)."""
    if name not in WORKLOADS:
        raise UnsupportedError(f"target 'pimsab' has no workload {name!r} (workloads: {', '.join(WORKLOADS)})")
    params = workload_params(name, scale, **given)
    if seed is not None:
        if name not in FUNCTIONAL:
            raise UnsupportedError(f"workload {name!r} is a timing-faithful replay: values cannot be checked")
        params["seed"] = seed
    try:
        return WORKLOADS[name].make(cfg, **params)
    except ValueError as exc:
        raise UnsupportedError(f"workload {name!r}: {exc}") from None


def run_workload(name: str, cfg: PimsabConfig, *, scale: float = 1.0, check: bool = False, seed: int = 0,
                 engine: str = "fast", **given: Any) -> Stats:
    """Generate and simulate a workload; the figures of ``nnisa bench`` (``time_ns``/``energy_j`` repeat ``latency_ns``/``energy_pj`` in the paper's units).  ``given``:
    the workload's parameters (``n``, ``m``, ``k``, ``bits``, ...; ``None`` = default)."""
    t0 = time.perf_counter()
    w = generate(name, cfg, scale=scale, seed=seed if check else None, **given)
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
            # per-layer rows (core.layers): a part that repeats k times counts k times
            layers.append(LayerRow(part.name, "workload part", cycles=k * st.cycles,
                                   latency_ns=k * st.cycles / cfg.clock_ghz, energy_pj=k * ex["energy_j"] * 1e12,
                                   instructions=k * st.instructions,
                                   extra={"count": k, "cycles_each": st.cycles, "energy_j_each": ex["energy_j"]}))
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
    params = workload_params(name, scale, **given)
    paper_size = params == workload_params(name)
    if base in A100 and paper_size:
        ns, joules = A100[base]
        out["a100_time_ns"], out["a100_energy_j"] = ns, joules
        out["speedup_vs_a100"] = ns / out["time_ns"]
        out["energy_ratio_vs_a100"] = joules / out["energy_j"] if out["energy_j"] else math.inf
    out["meta"] = {k: v for k, v in w.meta.items() if isinstance(v, (int, float, str))}
    out["wall_s"] = time.perf_counter() - t0
    out["params"] = params
    out["summary"] = _summary(name, out, cfg, paper_size)
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
