"""Tensil energy model: per-action energies (pJ) times the actions a program performs (issue 28).

Tensil's own estimator counts unitless "energy" (MatMul N² per vector, DRAM 100, ...; not
reported: it has no unit).  This model counts physical actions per instruction, in the same pass
over the program:

* MatMul: ``N²`` MACs per vector, a local read of the input vector (not for zero inputs), an
  accumulator write (and read when accumulating);
* LoadWeights: a local read per vector (not for zero vectors) and ``N`` weight-register writes per
  lane as the vector shifts down the array's ``N`` rows;
* DataMove: the local side and the other side (DRAM0/DRAM1 or the accumulators; an
  accumulate-move also reads the accumulator) per vector;
* SIMD: one ALU op per lane, an accumulator read/write per ``r``/``w``/``a`` flag;
* static: ``static_mw`` over the run's latency (mW × ns = pJ).

The table is :data:`DEFAULT_ENERGY` (sources in docs/tensil.md §Energy), overridden key by key
by an ``x_nnisa_energy`` object in the architecture file.  SRAM energies depend on the bank size:
Tensil's memories are banked per lane, so a bank holds ``depth × bits``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....core.errors import ConfigError
from ..isa import DATAMOVE, LOADLUT, LOADWEIGHTS, MATMUL, SIMD
from ..program import TensilProgram
from .estimator import instruction_vectors

#: per-action energies (pJ); see docs/tensil.md §Energy for where each comes from
DEFAULT_ENERGY: dict[str, float] = {
    "mult8_pj": 0.2,          # 8-bit integer multiply, 45 nm (Horowitz, ISSCC 2014); scales with bits²
    "add8_pj": 0.03,          # 8-bit integer add (same table); scales with bits
    "fp32_mac_pj": 4.6,       # FP32 multiply 3.7 + add 0.9 (same table), for data_type FLOAT32
    "sram_8kb_pj_per_bit": 0.156,   # 8 KB SRAM, 64-bit access 10 pJ (same table)
    "sram_32kb_pj_per_bit": 0.3125,  # 32 KB: 20 pJ
    "sram_1mb_pj_per_bit": 1.5625,   # 1 MB: 100 pJ
    "dram_pj_per_bit": 20.0,  # DRAM 1.3–2.6 nJ per 64-bit access (same table): the low end
    "register_pj_per_bit": 0.0,  # weight registers; 0 = one MAC per access per bit (Eyeriss: RF ≈ 1× MAC)
    "static_mw": 600.0,       # assumed device static power (set it from your Vivado/XPE report)
}
ENERGY_PARTS = ("mac", "weight_registers", "local", "accumulators", "dram", "simd")


def energy_table(arch: Any) -> dict[str, float]:
    """:data:`DEFAULT_ENERGY` updated by the architecture's ``x_nnisa_energy`` object."""
    table = dict(DEFAULT_ENERGY)
    over = arch.extension("x_nnisa_energy") or {}
    unknown = sorted(set(over) - set(table))
    if unknown or not all(isinstance(v, (int, float)) and v >= 0 for v in over.values()):
        raise ConfigError(f"x_nnisa_energy: keys must be among {', '.join(table)} with numbers >= 0"
                          + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    table.update({k: float(v) for k, v in over.items()})
    return table


def mac_pj(table: dict[str, float], arch: Any) -> float:
    """One multiply-accumulate at the architecture's data width."""
    if arch.is_float:
        return table["fp32_mac_pj"]
    r = arch.bits / 8
    return table["mult8_pj"] * r * r + table["add8_pj"] * r


def sram_pj_per_bit(table: dict[str, float], bank_bytes: float) -> float:
    """Access energy per bit of an SRAM bank: log-linear between the 8 KB, 32 KB and 1 MB points."""
    pts = [(8 << 10, table["sram_8kb_pj_per_bit"]), (32 << 10, table["sram_32kb_pj_per_bit"]),
           (1 << 20, table["sram_1mb_pj_per_bit"])]
    if bank_bytes <= pts[0][0]:
        return pts[0][1]
    for (s0, e0), (s1, e1) in zip(pts, pts[1:]):
        if bank_bytes <= s1:
            t = math.log(bank_bytes / s0) / math.log(s1 / s0)
            return e0 + t * (e1 - e0)
    return pts[-1][1]


def program_energy(prog: TensilProgram, *, runs: int = 1, latency_ns: float | None = None) -> dict[str, Any]:
    """Energy of ``runs`` runs of ``prog``: ``energy_pj`` = dynamic + static, both parts, the energy
    per input and the dynamic breakdown per action (pJ)."""
    arch = prog.arch
    table = energy_table(arch)
    N, bits = arch.array_size, arch.bits
    r = prog.rows
    hdr = r["hdr"].astype(np.int64)
    op, flags = hdr >> 4, hdr & 0xF
    vec = instruction_vectors(prog).astype(np.float64)
    lane_bits = N * bits  # one vector
    mac = mac_pj(table, arch)
    local = sram_pj_per_bit(table, arch.local_depth * bits / 8) * lane_bits
    acc = sram_pj_per_bit(table, arch.accumulator_depth * bits / 8) * lane_bits
    dram = table["dram_pj_per_bit"] * lane_bits
    reg = (table["register_pj_per_bit"] or mac / bits) * lane_bits
    mm, lw, dm, sd = op == MATMUL, op == LOADWEIGHTS, op == DATAMOVE, op == SIMD
    parts = dict.fromkeys(ENERGY_PARTS, 0.0)
    parts["mac"] = float(vec[mm].sum()) * N * N * mac
    parts["local"] += float(vec[mm & (flags & 2 == 0)].sum()) * local
    parts["accumulators"] += float(vec[mm].sum() + vec[mm & (flags & 1 == 1)].sum()) * acc
    parts["local"] += float(vec[lw & (flags & 1 == 0)].sum()) * local
    parts["weight_registers"] = float(vec[lw].sum()) * N * reg
    to_dram = dm & (flags <= 3)
    to_acc = dm & (flags >= 0xC)
    parts["local"] += float(vec[dm].sum()) * local
    parts["dram"] = float(vec[to_dram].sum()) * dram
    parts["accumulators"] += float(vec[to_acc].sum() + vec[dm & (flags == 0xF)].sum()) * acc
    parts["simd"] = float(sd.sum()) * N * mac
    n_rw = sum(int((sd & (flags & b != 0)).sum()) for b in (1, 2, 4))
    parts["accumulators"] += n_rw * acc
    parts["local"] += float(vec[op == LOADLUT].sum()) * local
    parts = {k: v * runs for k, v in parts.items()}
    dynamic = sum(parts.values())
    static = None if latency_ns is None else table["static_mw"] * latency_ns * runs  # mW × ns = pJ
    total = dynamic + (static or 0.0)
    return {"energy_pj": total, "energy_dynamic_pj": dynamic, "energy_static_pj": static, "inputs": runs,
            "energy_per_input_pj": total / runs, "energy_breakdown_pj": parts,
            "energy_model": f"nnisa per-action table ({bits}-bit, MAC {mac:.3g} pJ; docs/tensil.md §Energy)"}
