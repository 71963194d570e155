"""Phased PIM programs: models larger than the chip (time-multiplexed crossbars) and the nodes the
PIM ISA cannot compute (host steps).

The quantized graph is cut into **phases**, in topological order:

* a **device phase** is a run of nodes the PIM compiler lowers whose weights fit the chip's
  crossbars at once (one replica of every layer within ``fill`` of them); it is compiled by
  :func:`~.driver.compile_program` as a program of its own (own global-memory plan, own
  replication and mapping over the whole chip);
* a **host step** is a node the ISA has no instructions for: ``LayerNorm`` (an integer square
  root and a division per row), ``Softmax``/``MaskedSoftmax`` inside the graph (a division per
  row), embedding ``Gather`` of token ids and the exact mask arithmetic on raw integer inputs.  It
  runs :func:`nnisa.frontend.qeval.run_qnode` on the integers the previous phase wrote — bit-exact
  by construction — and is named in the report (``report["host_steps"]``), not in cycles/energy.

Between two device phases the crossbars are **reprogrammed** with the next phase's weights (the
ISA loads weights by the toolchain, spec D8): ``reload_ns = max(rows · xbar_row_write_ns,
weight_bytes · ns per global-memory byte)`` (every crossbar writes its rows in parallel; the
weights stream from global memory) and ``reload_pj = cells · xbar_cell_write_pj`` (config
``nnisa`` section).  The first phase's weights are programmed before the run, as for a
one-phase program.  A phased run's latency is the sum of its device phases' latencies and the
reloads; energy likewise.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ....core.lowering import OnHost
from ....core.target import Stats
from ....frontend.quant import QGraph, QNode
from .lowerings import LOWERINGS
from .mapping import MappingError
from .options import ChipShape

#: node kinds the PIM ISA cannot compute, run on the host between device phases
HOST_OPS = {
    "LayerNorm": "integer square root and one division per row: the PIM vector unit has neither",
    "Softmax": "one division per row (the reciprocal of the exponentials' sum): the PIM vector unit has none",
    "MaskedSoftmax": "one division per row (the reciprocal of the exponentials' sum): the PIM vector unit has none",
    "Gather": "embedding lookup by token ids: the PIM ISA has no indexed load",
}


#: the most elements one ``vavg`` averages (its 11-bit length field)
_VAVG_MAX = 2047


def is_host_node(n: QNode, qg: QGraph) -> bool:
    """True when ``n`` runs on the host (a :data:`HOST_OPS` kind, exact arithmetic on raw ids/masks,
    or a GlobalAveragePool over more positions than one ``vavg`` takes)."""
    if n.op == "GlobalAveragePool":
        shape = qg.tensors[n.inputs[0]].shape
        return int(np.prod(shape[2:])) > _VAVG_MAX
    return n.op in HOST_OPS or qg.tensors[n.outputs[0]].raw or isinstance(LOWERINGS.get(n.op), OnHost)


def node_xbars(n: QNode, hw: ChipShape) -> int:
    """Crossbars of one replica of a Conv/Gemm/MatMul-by-constant node (0 for other nodes)."""
    if n.op not in ("Conv", "Gemm", "MatMul") or n.weight is None:
        return 0
    w = np.shape(n.weight)
    if n.op == "Conv":
        k, m = w[1] * n.attrs.get("group", 1) * w[2] * w[3], w[0]
    else:
        k, m = w[-2], w[-1]
    wbar = -(-m // hw.cols)
    agp = -(-wbar // hw.xbars)
    per = -(-wbar // agp)
    cols = sum(-(-(min(m, (i + 1) * per * hw.cols) - i * per * hw.cols) // hw.cols)
               for i in range(agp) if i * per * hw.cols < m)
    return -(-k // hw.rows) * cols


@dataclass
class Phase:
    """One phase: ``kind`` ``device`` (``compiled``: its :class:`~.driver.Compiled`) or ``host``."""

    kind: str
    nodes: list[QNode]
    qgraph: QGraph | None = None
    compiled: Any = None
    xbars: int = 0
    reload_ns: float = 0.0
    reload_pj: float = 0.0


@dataclass
class PhasedProgram:
    """A model run as a sequence of device phases (each a :class:`~..program.PimProgram`) and host steps."""

    phases: list[Phase]
    qgraph: QGraph
    notes: list[str] = field(default_factory=list)

    @property
    def device(self) -> list[Phase]:
        return [p for p in self.phases if p.kind == "device"]

    def __len__(self) -> int:
        return sum(len(p.compiled.program) for p in self.device)

    def items(self):
        """(core, rows) of every device phase (the op counts of the whole run)."""
        for p in self.device:
            yield from p.compiled.program.items()


def plan_phases(qg: QGraph, hw: ChipShape, budget: int) -> list[Phase]:
    """Cut ``qg`` into host steps and device phases of at most ``budget`` crossbars each."""
    phases: list[Phase] = []
    for n in qg.nodes:
        host = is_host_node(n, qg)
        need = 0 if host else node_xbars(n, hw)
        if not host and need > hw.cores * hw.xbars:
            cores = -(-need // hw.xbars)
            raise MappingError(f"node {n.name} ({n.op}) needs {need} crossbars of {hw.rows}x{hw.cols} for one copy of "
                               f"its weights; the chip has {hw.cores * hw.xbars} ({hw.cores} cores x {hw.xbars}): use a "
                               f"config with at least {cores} cores, more crossbars per core or larger crossbars")
        kind = "host" if host else "device"
        last = phases[-1] if phases else None
        if last is not None and last.kind == kind and (host or last.xbars + need <= budget):
            last.nodes.append(n)
            last.xbars += need
        else:
            phases.append(Phase(kind, [n], xbars=need))
    return phases


def sub_graph(qg: QGraph, nodes: list[QNode], later: set[str]) -> QGraph:
    """The quantized graph of one phase: inputs = what it reads from earlier phases, outputs = what
    later phases or the model's outputs read."""
    made = {o for n in nodes for o in n.outputs}
    ins: list[str] = []
    for n in nodes:
        for i in n.inputs:
            if i not in made and i not in ins:
                ins.append(i)
    outs = [o for n in nodes for o in n.outputs if o in later]
    return replace(qg, inputs=[qg.tensors[i] for i in ins], outputs=[qg.tensors[o] for o in outs], nodes=list(nodes))


def compile_phased(qg: QGraph, config, options, hw: ChipShape, fill: float) -> PhasedProgram:
    """Compile every device phase of ``qg`` (crossbar budget ``fill`` of the chip, lowered until
    the mapping fits); host steps keep their nodes."""
    from .driver import compile_program
    total = hw.cores * hw.xbars
    for frac in (fill, fill * 0.8, fill * 0.6, fill * 0.4):
        phases = plan_phases(qg, hw, max(1, int(total * frac)))
        try:
            for k, p in enumerate(phases):
                if p.kind != "device":
                    continue
                later = {i for q in phases[k + 1:] for n in q.nodes for i in n.inputs} | {t.name for t in qg.outputs}
                p.qgraph = sub_graph(qg, p.nodes, later)
                p.compiled = compile_program(p.qgraph, config, replace(options, images=1))
            break
        except MappingError:
            if frac == fill * 0.4:
                raise
    prog = PhasedProgram(phases, qg)
    first = True
    for p in prog.device:
        if not first:
            p.reload_ns, p.reload_pj = reload_cost(p.compiled)
        first = False
    return prog


def reload_cost(compiled) -> tuple[float, float]:
    """Time (ns) and energy (pJ) to program a phase's crossbars (see the module docstring)."""
    cfg = compiled.config
    nn = cfg.nnisa
    gm = cfg.chip_config.global_memory_config
    ns_per_byte = gm.period * gm.read_latency_cycle / max(1, gm.data_width)
    rows = max((w.shape[0] for w in compiled.weights.values()), default=0)
    cells = sum(int(w.size) for w in compiled.weights.values())
    nbytes = sum(int(w.nbytes) for w in compiled.weights.values())
    cell_precision = cfg.chip_config.core_config.matrix_config.cell_precision
    bits = max((w.dtype.itemsize * 8 for w in compiled.weights.values()), default=8)
    cells *= -(-min(bits, 8) // max(1, cell_precision))   # cells per weight
    return max(rows * nn.xbar_row_write_ns, nbytes * ns_per_byte), cells * nn.xbar_cell_write_pj


def host_steps(prog: PhasedProgram) -> list[str]:
    """``name (op)`` of every host node."""
    return [f"{n.name} ({n.op})" for p in prog.phases if p.kind == "host" for n in p.nodes]


def run_phased(simulate, prog: PhasedProgram, feed: dict[str, np.ndarray], timed: bool,
               sim_options: dict) -> tuple[dict[str, np.ndarray], Stats | None]:
    """Run ``prog`` on one sample (``feed``: quantized logical integers per model input) → the
    integer values of every tensor, and the summed statistics (when ``timed``)."""
    from ....frontend.qeval import run_qnode
    from .io import from_storage, input_segments
    from .output import _entry
    qg = prog.qgraph
    env = dict(feed)
    stats = Stats(cycles=0, latency_ns=0.0, energy_pj=0.0, instructions=0, extra={"phases": []}) if timed else None
    for p in prog.phases:
        if p.kind == "host":
            for n in p.nodes:
                env[n.outputs[0]] = run_qnode(n, [env[i] for i in n.inputs], qg)
            continue
        c = p.compiled
        segs: dict[int, bytes] = {}
        for t in c.lowered.inputs:
            segs.update(input_segments(t, np.asarray(env[t.name]).reshape(t.shape)))
        mode = sim_options.get("mode") if timed else "functional"
        res = simulate(c.program, config=c.config, weights=c.weights, gmem=c.gmem, inputs=segs,
                       outputs=[_entry(e) for e in c.outputs], mode=mode, lint=timed and sim_options.get("lint", True),
                       **{k: v for k, v in sim_options.items() if k in ("timing", "engine")})
        for t in c.lowered.outputs:
            env[t.name] = from_storage(t, np.asarray(res.outputs[t.name]))
        if timed and res.stats.latency_ns is not None:
            s = res.stats
            stats.cycles += int(s.cycles or 0)
            stats.latency_ns += float(s.latency_ns) + p.reload_ns
            stats.energy_pj += float(s.energy_pj or 0.0) + p.reload_pj * 1.0
            stats.instructions += int(s.instructions or 0)
            stats.extra["phases"].append({"nodes": len(p.nodes), "crossbars": p.xbars, "cycles": s.cycles,
                                          "latency_ns": s.latency_ns, "energy_pj": s.energy_pj,
                                          "reload_ns": p.reload_ns, "reload_pj": p.reload_pj})
    if timed:
        stats.extra["reload_ns"] = sum(p.reload_ns for p in prog.device)
        stats.extra["reload_pj"] = sum(p.reload_pj for p in prog.device)
        stats.extra["host_steps"] = host_steps(prog)
        stats.extra["timing_model"] = "pimsim-nn per device phase + crossbar reloads (nnisa)"
    return env, stats


def check_phased_options(options) -> None:
    """Options a phased program cannot honour."""
    if options.images > 1:
        raise UnsupportedError("a model run in phases (larger than the chip, or with host steps) runs one image "
                               "at a time: use -O images=1")
