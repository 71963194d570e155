"""Per-layer figures of a compiled PIM program from its timing simulation (issue 28 item 5).

A compiled program says where each layer's code starts on every core
(:attr:`PimProgram.layer_starts <nnisa.targets.pim.program.PimProgram>`).  Per layer, over its
instruction ranges on all cores:

* ``cycles``: from the first instruction's issue (S) to the last one's completion (R), in core
  cycles: a span (layers overlap on a pipelined schedule);
* ``energy_pj``: the dynamic energy of its instructions (matrix, vector, memories, NoC, and
  the core front end's fetch/decode/register/scalar energy spread over the core's instructions);
  what no layer owns (set-up code, and the few front-end events pimsim-nn does not charge) is
  the ``other`` row, so the rows add up to the run's dynamic energy;
* ``utilization``: crossbars holding the layer's weights / crossbars on the chip;
* ``memory_bytes``: its weights in the crossbars plus its output buffer in global memory;
* ``instructions``; and the extras ``cores`` (cores running its code) and ``crossbars``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def layer_spans(program, core: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per instruction of ``core`` (``n`` of them) its layer index (-1: none), and the starts."""
    owner = np.full(n, -1, dtype=np.int64)
    starts = sorted(program.layer_starts.get(core, []))
    for k, (pc, li) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else n
        owner[max(0, pc):min(n, end)] = li
    return owner, np.asarray(starts)


def layer_figures(program, times: dict[int, np.ndarray], inst_energy: dict[int, np.ndarray], period_ps: int,
                  dynamic_pj: float, chip_crossbars: int) -> list[dict[str, Any]]:
    """Rows (dicts with the :class:`~nnisa.core.layers.LayerRow` fields, ``extra`` flat) per layer.

    ``times``: core → structured array with ``S``/``R`` (ps) per instruction; ``inst_energy``:
    core → dynamic pJ per instruction; ``dynamic_pj``: the run's dynamic energy.
    """
    nl = len(program.layers)
    m = nl + 1  # index nl: the instructions no layer owns
    first = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.zeros(m, dtype=np.int64)
    energy = np.zeros(m)
    count = np.zeros(m, dtype=np.int64)
    cores = [set() for _ in range(m)]
    for c, tr in times.items():
        e = inst_energy[c]
        owner, _ = layer_spans(program, c, len(e))
        li = np.where(owner >= 0, owner, nl)
        energy += np.bincount(li, weights=e, minlength=m)[:m]
        count += np.bincount(li, minlength=m)[:m]
        np.minimum.at(first, li, tr["S"].astype(np.int64))
        np.maximum.at(last, li, tr["R"].astype(np.int64))
        for k in np.unique(li).tolist():
            cores[k].add(c)
    spans = [-(-int(last[k] - first[k]) // period_ps) if count[k] else 0 for k in range(m)]
    rows = []
    for k, info in enumerate(program.layers):
        rows.append({"layer": info["name"], "op": info["op"], "cycles": spans[k], "energy_pj": float(energy[k]),
                     "utilization": min(1.0, info["crossbars"] / max(1, chip_crossbars)),
                     "memory_bytes": int(info["memory_bytes"]), "instructions": int(count[k]),
                     "cores": len(cores[k]), "crossbars": int(info["crossbars"])})
    # set-up code, and the dynamic energy of no instruction (pimsim-nn's uncharged front-end events)
    rest = dynamic_pj - float(energy[:nl].sum())
    if count[nl] or abs(rest) > 1e-9 * max(1.0, dynamic_pj):
        rows.append({"layer": "other", "op": "set-up", "cycles": spans[nl], "energy_pj": max(rest, 0.0),
                     "utilization": 0.0, "memory_bytes": 0, "instructions": int(count[nl]),
                     "cores": len(cores[nl]), "crossbars": 0})
    return rows
