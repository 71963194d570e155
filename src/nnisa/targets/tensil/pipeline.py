"""A segmented Tensil model (issue 27): device segments (Tensil programs) chained through host steps
(frontend float reference), as :mod:`.compiler.segments` compiles it and a bundle folder holds it.

:func:`simulate_pipeline` runs it: per step in order, a device segment's inputs are laid out in
Tensil's vectors, emulated (cycles and energy of its own program from the chosen cycle model) and
read back as float tensors; a host step evaluates its nodes with
:func:`nnisa.frontend.float_eval.run_node`.  The device figures are the sums over the segments (one
input runs them one after the other); the host steps are listed apart under ``extra["host_steps"]``
with their estimated operations and wall time, never counted as device cycles or energy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.errors import OptionError, SimError
from ...core.layers import LayerRow
from ...core.target import SimResult, Stats
from ...core.bundle import as_samples
from ...frontend.float_eval import bind_inputs, run_node
from ...frontend.ir import Graph
from .config import TensilArch
from .program import TensilProgram


@dataclass
class DeviceStep:
    """A device segment: its folder in the bundle, its program (with its ``.tmodel``), the tensors it
    reads and writes, the graph nodes it computes."""

    folder: str
    program: TensilProgram
    inputs: list[str]
    outputs: list[str]
    nodes: list[str] = field(default_factory=list)


@dataclass
class HostStep:
    """A host step: the names of the graph nodes it evaluates, its reads and writes, its estimated
    floating-point operations."""

    nodes: list[str]
    inputs: list[str]
    outputs: list[str]
    host_ops: int = 0


@dataclass
class TensilPipeline:
    """A segmented model: architecture, the float graph (host steps' nodes), steps in order and the
    graph's input and output names."""

    arch: TensilArch
    graph: Graph
    steps: list[Any]
    inputs: list[str]
    outputs: list[str]
    extensions: dict[str, Any] = field(default_factory=dict)

    @property
    def devices(self) -> list[DeviceStep]:
        return [s for s in self.steps if isinstance(s, DeviceStep)]

    def __len__(self) -> int:
        return sum(len(s.program) for s in self.devices)


def bind_model_inputs(graph: Graph, inputs: Any) -> dict[str, np.ndarray]:
    """The model's inputs as ``(N, *shape)``: N samples of the model's own shape (the one input
    convention, :func:`nnisa.core.bundle.as_samples`), each in its own dtype (token ids stay
    integers)."""
    names = [t.name for t in graph.inputs]
    if isinstance(inputs, dict) and len(inputs) == len(names) == 1 and names[0] not in inputs:
        inputs = next(iter(inputs.values()))  # one array (a .npy file) for the one input
    out = {}
    for k, v in bind_inputs(names, inputs).items():
        shape = tuple(graph.shape(k))
        a = as_samples(k, np.asarray(v), list(shape))
        a = a.reshape((-1, *shape))
        out[k] = a.astype(np.dtype(graph.tensors[k].dtype)) if np.dtype(graph.tensors[k].dtype).kind in "iub" \
            else a.astype(np.float32)
    return out


def host_layer_row(ops: list[str], host_ops: int, first_node: str) -> LayerRow:
    """A host step's row of the per-layer table: no device work (0 cycles, 0 pJ), its ops named."""
    return LayerRow("host", "+".join(ops), cycles=0, latency_ns=0.0, energy_pj=0.0, utilization=0.0, memory_bytes=0,
                    instructions=0, extra={"host_ops": host_ops, "first_node": first_node})


def _run_host(graph: Graph, step: HostStep, env: dict[str, np.ndarray], samples: int) -> None:
    """Evaluate a host step's nodes for every sample (``env`` arrays are ``(samples, *shape)``)."""
    nodes = {n.name: n for n in graph.nodes}
    for s in range(samples):
        local = {k: env[k][s] for k in step.inputs}
        for name in step.nodes:
            n = nodes[name]
            args = [local[i] if i in local else graph.initializers[i] for i in n.inputs]
            local[n.outputs[0]] = np.asarray(run_node(n, args, graph))
        for k in step.outputs:
            v = local[k]
            if s == 0:
                env[k] = np.empty((samples,) + v.shape, v.dtype)
            env[k][s] = v


def simulate_pipeline(pipe: TensilPipeline, *, inputs: dict[str, np.ndarray] | None = None, mode: str = "both",
                      timing: str = "estimator", raw_outputs: bool = False, timeline: bool = False,
                      csv: str | None = None, compare: str | None = None, **options: Any) -> SimResult:
    """Run a segmented model on float inputs in the model's shapes (``(N, *shape[1:])`` for N
    samples or the model's shape for one) → float outputs ``(N, *shape[1:])`` and the figures."""
    from .sim.simulate import simulate
    for flag, what in ((timeline, "a timeline (--gantt/--trace)"), (raw_outputs, "raw fixed-point outputs"),
                       (csv, "a Tensil output CSV"), (compare, "a compare CSV")):
        if flag:
            raise OptionError(f"{what} is per Tensil program; this model has {len(pipe.devices)} device segments "
                              "chained through host steps (simulate a segment's folder for it)")
    if mode == "timing" and not inputs:
        inputs = {k: np.zeros((1,) + tuple(pipe.graph.shape(k))[1:], np.dtype(pipe.graph.tensors[k].dtype))
                  for k in pipe.inputs}
    if not inputs:
        raise SimError(f"a segmented model needs its inputs ({', '.join(pipe.inputs)}): its host steps compute "
                       "on values")
    t0 = time.perf_counter()
    env = bind_model_inputs(pipe.graph, inputs)
    samples = len(next(iter(env.values())))
    stats = Stats(cycles=0, energy_pj=0.0, instructions=0)
    seg_rows: list[dict[str, Any]] = []
    host_rows: list[dict[str, Any]] = []
    dyn = stat = 0.0
    layers: list[LayerRow] = []
    inner = "both" if mode == "timing" else mode
    for step in pipe.steps:
        ts = time.perf_counter()
        if isinstance(step, HostStep):
            _run_host(pipe.graph, step, env, samples)
            host_rows.append({"ops": [n.op for n in pipe.graph.nodes if n.name in set(step.nodes)],
                              "nodes": len(step.nodes), "host_ops": step.host_ops * samples,
                              "wall_s": time.perf_counter() - ts})
            layers.append(host_layer_row(host_rows[-1]["ops"], step.host_ops, step.nodes[0]))
            continue
        lay = step.program.model.extensions["x_nnisa_input_shapes"]  # the segment's layout of each input
        res = simulate(step.program, inputs={k: env[k].reshape((-1, *lay[k][1:])) for k in step.inputs},
                       mode=inner, timing=timing,
                       shaped=True, **options)
        for k in step.outputs:
            env[k] = np.asarray(res.outputs[k], np.float32).reshape((samples, *pipe.graph.shape(k)))
        st, ex = res.stats, res.stats.extra
        layers += st.layers or []
        stats.cycles += st.cycles or 0
        stats.instructions += st.instructions or 0
        stats.energy_pj += st.energy_pj or 0.0
        dyn += ex.get("energy_dynamic_pj") or 0.0
        stat += ex.get("energy_static_pj") or 0.0
        if st.latency_ns is not None:
            stats.latency_ns = (stats.latency_ns or 0.0) + st.latency_ns
        seg_rows.append({"folder": step.folder, "cycles": st.cycles, "energy_pj": st.energy_pj,
                         "instructions": st.instructions, "timing_model": ex.get("timing_model"),
                         "wall_s": time.perf_counter() - ts})
        stats.extra.setdefault("timing_model", ex.get("timing_model"))
        stats.extra.setdefault("clock_mhz", ex.get("clock_mhz"))
        stats.extra.setdefault("energy_model", ex.get("energy_model"))
    h_ops = sum(r["host_ops"] for r in host_rows)
    macs = sum(int(s.program.model.extensions.get("x_nnisa_true_macs") or 0) for s in pipe.devices) * samples
    stats.extra.update(inputs=samples, runs=samples, energy_dynamic_pj=dyn, energy_static_pj=stat,
                       energy_per_input_pj=stats.energy_pj / samples, segments=seg_rows, host_steps=host_rows,
                       host_ops=h_ops, host_share=h_ops / (h_ops + macs) if h_ops + macs else 0.0,
                       host_s=sum(r["wall_s"] for r in host_rows),
                       figures="device segments only (cycles, energy); host steps listed apart")
    if mode == "timing":
        outputs: dict[str, np.ndarray] = {}
    else:
        outputs = {k: env[k].reshape((-1, *env[k].shape[2:])) for k in pipe.outputs}  # (N, *shape[1:])
    if mode == "functional":
        stats.cycles = stats.latency_ns = None
    other = [r for r in layers if r.layer == "other"]
    if len(other) > 1:  # one row for the instructions no layer owns, over all segments
        merged = LayerRow("other", "other", cycles=sum(r.cycles or 0 for r in other),
                          energy_pj=sum(r.energy_pj or 0.0 for r in other), memory_bytes=sum(r.memory_bytes or 0
                                                                                              for r in other),
                          instructions=sum(r.instructions or 0 for r in other), utilization=0.0)
        merged.latency_ns = other[0].latency_ns and merged.cycles * other[0].latency_ns / max(other[0].cycles, 1)
        layers = [r for r in layers if r.layer != "other"] + [merged]
    stats.layers = layers or None
    stats.wall_s = time.perf_counter() - t0
    return SimResult(outputs, stats)
