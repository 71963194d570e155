"""Per-layer figures of a compiled DAIS network (issue 28 item 5, :mod:`nnisa.core.layers`).

The network compiler appends each layer's ops as one contiguous range of the program; the ranges
travel with the program as ``meta["layers"]`` (``[node, op, first_op, ops]`` each) and in the
bundle's manifest (``layers``), so a compiled folder simulated later has them too.  From a range
and the program alone (everything is static: a DAIS program is combinational logic):

* ``cycles`` — adder levels the layer spans in the one-adder-per-cycle timing model (the design
  pipelined at ``latency_cutoff=1``, clock = ``adder_delay_ns``): from the level its first adder
  starts to the level its last adder completes (0 without adders: muxes and wiring take no level
  in this model); layers overlap, so rows are spans;
* ``energy_pj`` — the dynamic energy of its ops per input (:func:`..energy.op_energy_pj`, the run's
  table); ops of no layer (output alignment) are the ``other`` row, so the rows add up to the run;
* ``utilization`` — the layer's share of the design's logic (LUT6-equivalents);
* ``memory_bytes`` — the bits its results hold where another layer or the output reads them
  (the registers of a design pipelined at the layer boundary) plus its lookup tables' ROM bits;
  weights take no memory (constant multiplications are adders);
* ``extra``: ``adders``, ``adder_bits``, ``depth`` (adders the layer adds to the critical path),
  ``lut6``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.layers import LayerRow
from .program import Program

__all__ = ["UTILIZATION", "layer_spans", "program_layer_rows"]

#: what ``utilization`` measures on DAIS (``Target.layer_utilization``)
UTILIZATION = "LUT6-equivalents of the layer / LUT6-equivalents of the design"


def layer_spans(rows: list[dict]) -> list[list]:
    """The compiler's layer rows as ``[node, op, first_op, ops]`` ranges; rows of one node that
    follow each other (a layer reported in parts) are merged."""
    spans: list[list] = []
    for r in rows:
        if spans and spans[-1][0] == r["node"] and spans[-1][2] + spans[-1][3] == r["first_op"]:
            spans[-1][3] += int(r["ops"])
        else:
            spans.append([str(r["node"]), str(r["op"]), int(r["first_op"]), int(r["ops"])])
    return spans


def _operands(p: Program) -> tuple[np.ndarray, np.ndarray]:
    """``(reader, operand)`` pairs of every op reference (``id0``, ``id1``, a mux's key)."""
    from . import isa
    opc = p.opcode.astype(np.int64)
    ids = np.arange(p.n_ops, dtype=np.int64)
    pairs = []
    for used, col in ((isa.USES_ID0, p.id0), (isa.USES_ID1, p.id1)):
        m = np.isin(opc, sorted(used)) & (col >= 0)
        pairs.append((ids[m], col[m].astype(np.int64)))
    m = np.abs(opc) == 6
    pairs.append((ids[m], p.data_lo()[m].astype(np.int64)))
    return np.concatenate([a for a, _ in pairs]), np.concatenate([b for _, b in pairs])


def program_layer_rows(p: Program, config: Any = None) -> list[LayerRow] | None:
    """One :class:`LayerRow` per layer range in ``p.meta["layers"]`` (``None`` without ranges), plus
    an ``other`` row for the ops no layer owns when they cost energy."""
    from .energy import load_energy_config, op_energy_pj
    from .program import _depths
    spans = p.meta.get("layers")
    if not spans or not p.n_ops:
        return None
    cfg = load_energy_config(config)
    e, lut6, _ = op_energy_pj(p, cfg)
    total_lut6 = float(lut6.sum()) or 1.0
    w = p.width().astype(np.int64)
    opc = p.opcode
    add = (opc == 0) | (opc == 1)
    ad = _depths(p)[1].astype(np.int64)
    reader, operand = _operands(p)
    # the last op that reads each op's result (program outputs: read after every op)
    last_read = np.full(p.n_ops, -1, np.int64)
    np.maximum.at(last_read, operand, reader)
    outs = p.out_idxs[p.out_idxs >= 0].astype(np.int64)
    last_read[outs] = p.n_ops
    owned = np.zeros(p.n_ops, bool)
    rows = []
    for node, op, lo, n in spans:
        hi = lo + n
        owned[lo:hi] = True
        if n <= 0:  # pure wiring (a 1x1 pooling, a reshape reported as a layer): no logic, no level
            rows.append(LayerRow(layer=node, op=op, cycles=0, latency_ns=0.0, energy_pj=0.0, utilization=0.0,
                                 memory_bytes=0, instructions=0,
                                 extra={"adders": 0, "adder_bits": 0, "depth": 0, "lut6": 0.0}))
            continue
        end = int(ad[lo:hi].max())
        cycles = end - int(ad[lo:hi][add[lo:hi]].min()) + 1 if add[lo:hi].any() else 0
        d_in = int(ad[operand[(reader >= lo) & (reader < hi) & (operand < lo)]].max(initial=0))
        live = last_read[lo:hi] >= hi  # results read by a later layer or the output
        tables = {int(t) for t in p.data_lo()[lo:hi][opc[lo:hi] == 8]}
        rom_bits = sum(int(len(p.tables[t])) * int(w[lo:hi][opc[lo:hi] == 8].max()) for t in tables)
        rows.append(LayerRow(
            layer=node, op=op, cycles=cycles, latency_ns=cycles * cfg.adder_delay_ns,
            energy_pj=float(e[lo:hi].sum()), utilization=float(lut6[lo:hi].sum()) / total_lut6,
            memory_bytes=-(-(int(w[lo:hi][live].sum()) + rom_bits) // 8), instructions=int(n),
            extra={"adders": int(add[lo:hi].sum()), "adder_bits": int(w[lo:hi][add[lo:hi]].sum()),
                   "depth": max(end - d_in, 0), "lut6": float(lut6[lo:hi].sum())}))
    rest = ~owned
    if rest.any() and float(e[rest].sum()) > 0:
        cyc = int(ad[rest & add].max() - ad[rest & add].min()) + 1 if add[rest].any() else 0
        rows.append(LayerRow(
            layer="other", op="output alignment", cycles=cyc, latency_ns=cyc * cfg.adder_delay_ns,
            energy_pj=float(e[rest].sum()), utilization=float(lut6[rest].sum()) / total_lut6, memory_bytes=0,
            instructions=int(rest.sum()), extra={"adders": int(add[rest].sum()),
                                                  "adder_bits": int(w[rest][add[rest]].sum()), "depth": 0,
                                                  "lut6": float(lut6[rest].sum())}))
    return rows
