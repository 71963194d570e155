"""Tensil's estimator (spec §8.1), exact: cycles and "energy" units per instruction, in order.

``prev`` is the opcode of the previous instruction of any kind (NoOp before the first).
MatMul costs ``size+1`` after a MatMul, ``size+1+N`` after a LoadWeights and ``size+1+2N``
otherwise; every other instruction costs its vector count (SIMD and NoOp 1, Configure 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..isa import CONFIGURE, DATAMOVE, DATAMOVE_KINDS, LOADLUT, LOADWEIGHTS, MATMUL, NOP, SIMD
from ..program import TensilProgram


def instruction_vectors(prog: TensilProgram) -> np.ndarray:
    """Vectors each instruction moves or computes (count; 1 for SIMD/NoOp; 0 for Configure)."""
    r = prog.rows
    op = r["hdr"].astype(np.int64) >> 4
    vec = np.zeros(len(r), np.int64)
    vec[(op == MATMUL) | (op == DATAMOVE)] = r["n"][(op == MATMUL) | (op == DATAMOVE)] + 1
    vec[op == LOADWEIGHTS] = r["a1"][op == LOADWEIGHTS] + 1
    vec[(op == SIMD) | (op == NOP)] = 1
    if prog.arch.lut is not None:
        vec[op == LOADLUT] = -(-prog.arch.lut[1] // prog.arch.array_size)
    return vec


def estimate_cycles(prog: TensilProgram) -> tuple[np.ndarray, np.ndarray]:
    """Per-instruction estimator cycles and energy units."""
    r = prog.rows
    N = prog.arch.array_size
    hdr = r["hdr"].astype(np.int64)
    op, flags = hdr >> 4, hdr & 0xF
    vec = instruction_vectors(prog)
    prev = np.concatenate([[NOP], op[:-1]]) if len(op) else op
    cyc = vec.copy()
    mm = op == MATMUL
    cyc[mm & (prev == LOADWEIGHTS)] += N
    cyc[mm & (prev != LOADWEIGHTS) & (prev != MATMUL)] += 2 * N
    cyc[op == CONFIGURE] = 0
    energy = np.zeros(len(r), np.int64)
    energy[mm] = vec[mm] * N * N
    energy[op == LOADWEIGHTS] = 10 * vec[op == LOADWEIGHTS]
    energy[op == SIMD] = N
    dm = op == DATAMOVE
    dram = dm & (flags <= 3)
    energy[dram] = 100 * vec[dram]
    energy[dm & (flags >= 0xC)] = 10 * vec[dm & (flags >= 0xC)]
    energy[op == LOADLUT] = 10 * vec[op == LOADLUT]
    return cyc, energy


def instruction_class(hdr: int) -> str:
    """Tensil's statistics mnemonic: ``MatMul``, ``DataMove(DRAM0ToLocal)``, ..."""
    op, flags = hdr >> 4, hdr & 0xF
    if op == DATAMOVE:
        return f"DataMove({DATAMOVE_KINDS[flags][0]})"
    return {NOP: "NoOp", MATMUL: "MatMul", LOADWEIGHTS: "LoadWeights", SIMD: "SIMD", CONFIGURE: "Configure",
            LOADLUT: "LoadLUT"}.get(op, "Raw")


def flag_names(hdr: int) -> str:
    op, flags = hdr >> 4, hdr & 0xF
    if op == MATMUL:
        return ",".join(n for b, n in ((1, "acc"), (2, "zeroes")) if flags & b)
    if op == LOADWEIGHTS:
        return "zeroes" if flags else ""
    if op == SIMD:
        return "".join(c for b, c in ((1, "r"), (2, "w"), (4, "a")) if flags & b)
    return ""


def estimate(prog: TensilProgram, true_macs: int | None = None) -> dict[str, Any]:
    """The estimator's totals and the per-class / per-flags breakdown of Tensil's summary."""
    cyc, energy = estimate_cycles(prog)
    vec = instruction_vectors(prog)
    hdr = prog.rows["hdr"].astype(np.int64)
    classes: dict[str, dict[str, int]] = {}
    by_flags: dict[str, dict[str, int]] = {}
    for h in np.unique(hdr).tolist():
        m = hdr == h
        row = {"instructions": int(m.sum()), "vectors": int(vec[m].sum()), "cycles": int(cyc[m].sum()),
               "energy": int(energy[m].sum())}
        name = instruction_class(h)
        agg = classes.setdefault(name, dict.fromkeys(row, 0))
        for k, v in row.items():
            agg[k] += v
        f = flag_names(h)
        by_flags[f"{name}({f})" if f else name] = row
    N = prog.arch.array_size
    total = int(cyc.sum())
    out: dict[str, Any] = {"cycles": total, "energy": int(energy.sum()), "instructions": len(prog),
                           "classes": classes, "by_flags": by_flags}
    dm = (hdr >> 4) == DATAMOVE
    dram = {}
    for kind, (name, mem, _) in DATAMOVE_KINDS.items():
        if mem.startswith("dram"):
            dram[name] = int(vec[dm & ((hdr & 0xF) == kind)].sum())
    out["dram_vectors"] = dram
    out["dram_vectors_total"] = sum(dram.values())
    if true_macs:
        out["true_macs"] = int(true_macs)
        out["mac_efficiency"] = true_macs / (N * N * total) if total else 0.0
    return out
