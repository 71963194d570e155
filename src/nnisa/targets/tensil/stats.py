"""Static statistics of a Tensil program: instruction mix, the estimator's figures, field ranges."""

from __future__ import annotations

from typing import Any

import numpy as np

from .isa import RAW, Layout
from .program import TensilProgram
from .sim.energy import program_energy
from .sim.estimator import estimate


def program_stats(prog: TensilProgram) -> dict[str, Any]:
    """Instruction counts per class and flags, estimator cycles, DRAM traffic, address ranges."""
    est = estimate(prog, prog.model.extensions.get("x_nnisa_true_macs") if prog.model is not None else None)
    energy = program_energy(prog)  # one run; static energy needs a latency (nnisa sim)
    rows = prog.rows
    L = Layout.from_arch(prog.arch)
    out: dict[str, Any] = {
        "architecture": prog.arch.name or "custom", "array_size": prog.arch.array_size,
        "data_type": prog.arch.data_type, "instruction_bytes": L.instruction_bytes,
        "instructions": len(prog), "raw_words": int((rows["hdr"] == RAW).sum()),
        "estimator_cycles": est["cycles"], "energy_dynamic_pj": energy["energy_dynamic_pj"],
        "energy_model": energy["energy_model"],
        "dram_vectors": est["dram_vectors_total"],
        "classes": {k: v["instructions"] for k, v in est["classes"].items()},
        "by_flags": est["by_flags"],
    }
    if "mac_efficiency" in est:
        out["mac_efficiency"] = est["mac_efficiency"]
    for col, what in (("a0", "operand0_address"), ("a1", "operand1_address"), ("n", "size")):
        if len(rows):
            out[f"max_{what}"] = int(np.max(rows[col]))
    return out
