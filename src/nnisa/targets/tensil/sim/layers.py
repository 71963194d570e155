"""Per-layer figures of a compiled Tensil program (issue 28 item 5, :mod:`nnisa.core.layers`).

The compiler records each layer's instruction ranges (``x_nnisa_layer_spans`` in the model, the
manifest's ``layer_spans``: ``{"layer", "op", "ranges": [[first, end], ...], "memory_bytes"}``);
instructions no layer owns (the prologue that loads consts) form an ``"other"`` row.  Per layer:

* ``cycles``: the estimator's per-instruction cycles summed over its ranges (the layers partition
  the program, so the rows add up to the run's estimator cycles); with another cycle model the
  estimator's split is scaled to that model's total (``extra["cycles_split"]`` says so);
* ``energy_pj``: the dynamic energy model over its instructions (the rows add up to the run's
  ``energy_dynamic_pj`` per input);
* ``utilization``: MAC-array busy cycles (MatMul vectors: one per cycle through the array) / cycles;
* ``memory_bytes``: its constants (weights, biases, lane-move matrices) and output activations,
  all of which pass through local memory or the accumulators.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.layers import LayerRow
from ..isa import MATMUL
from ..program import TensilProgram
from .energy import program_energy
from .estimator import estimate_cycles, instruction_vectors

#: what ``utilization`` measures on Tensil
LAYER_UTILIZATION = "MAC-array busy cycles (MatMul vectors through the array) / layer cycles"


def layer_spans(low: Any, spans: list[tuple[int, int, int]], bits: int) -> list[dict[str, Any]]:
    """The compiler's per-layer records: ops of one graph node merged (a MatMul of activations is a
    lane move and an array job), ops of nodes the graph lacks (layout moves) under ``"other"``."""
    known = {n.name for n in low.g.nodes}
    acts = {"relu": "Relu", "leaky": "LeakyRelu", "clip": "Clip"}
    out: dict[str, dict[str, Any]] = {}
    for i, start, end in spans:
        op = low.ops[i]
        name = op.node.name if op.node.name in known else "other"
        kind = op.node.op if name != "other" else "other"
        act = getattr(op, "act", None)
        if act is not None and getattr(op, "kind", None) != "act" and act.kind in acts:
            kind += "+" + acts[act.kind]
        consts = [op.const] if hasattr(op, "const") else list(getattr(op, "consts", []))
        vectors = sum(c.size for c in consts) + (op.y.size if getattr(op, "y", None) is not None else 0)
        rec = out.setdefault(name, {"layer": name, "op": kind, "ranges": [], "memory_bytes": 0})
        if end > start:
            rec["ranges"].append([start, end])
        rec["memory_bytes"] += int(vectors * low.N * bits // 8)
    return list(out.values())


def layer_rows(prog: TensilProgram, spans: list[dict[str, Any]], *, cycles: int | None = None,
               clock_mhz: float = 100.0, model: str = "estimator") -> list[LayerRow]:
    """One :class:`LayerRow` per layer of ``prog`` (per run = per input), plus ``"other"`` for the
    instructions no layer owns; ``cycles`` is the run's total of the chosen cycle model (default:
    the estimator's)."""
    cyc, _ = estimate_cycles(prog)
    vec = instruction_vectors(prog)
    matmul = (prog.rows["hdr"].astype(np.int64) >> 4) == MATMUL
    total = int(cyc.sum())
    scale = 1.0 if cycles is None or total == 0 or model == "estimator" else cycles / total
    owned = np.zeros(len(prog), bool)
    rows: list[LayerRow] = []

    def row(name: str, op: str, idx: np.ndarray, memory: int) -> LayerRow:
        c = int(round(float(cyc[idx].sum()) * scale))
        busy = float(vec[idx & matmul].sum()) * scale
        sub = TensilProgram(prog.arch, prog.rows[idx])
        extra: dict[str, Any] = {"matmul_vectors": int(vec[idx & matmul].sum())}
        if scale != 1.0:
            extra["cycles_split"] = f"estimator's per-instruction split scaled to the {model} total"
        return LayerRow(name, op, cycles=c, latency_ns=c * 1000.0 / clock_mhz,
                        energy_pj=float(program_energy(sub)["energy_dynamic_pj"]),
                        utilization=min(1.0, busy / c) if c else 0.0, memory_bytes=memory,
                        instructions=int(idx.sum()), extra=extra)

    for sp in spans:
        if sp["layer"] == "other":  # its instructions join the unowned ones
            continue
        idx = np.zeros(len(prog), bool)
        for a, b in sp["ranges"]:
            idx[a:b] = True
        owned |= idx
        rows.append(row(sp["layer"], sp["op"], idx, int(sp["memory_bytes"])))
    rest = ~owned
    other_mem = sum(int(sp["memory_bytes"]) for sp in spans if sp["layer"] == "other")
    if rest.any() or other_mem:
        rows.append(row("other", "other", rest, other_mem))
    return rows
