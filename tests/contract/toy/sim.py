"""The toy simulator: values, cycles and energy (action counts × the table's energies)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nnisa.core.errors import FormatError
from nnisa.core.target import SimResult, Stats, check_mode
from nnisa.report.timeline import build_timeline

from .isa import ISA_TABLE

CYCLES = ISA_TABLE.fact_array("cycles")
ENERGY_PJ = ISA_TABLE.fact_array("energy_pj", 0.0, float)

CLOCK_GHZ = 1.0


def simulate(program: np.ndarray, *, inputs: dict[str, np.ndarray] | None = None, mode: str | None = None,
             timeline: bool = False, **_: Any) -> SimResult:
    """Run ``program``; ``inputs["r"]`` sets the four registers first."""
    mode = check_mode(mode)
    regs = np.zeros(4, np.int64)
    if inputs and "r" in inputs:
        r = np.asarray(inputs["r"]).reshape(-1)
        if r.size != 4:
            raise FormatError(f"input r: the toy machine has 4 registers, got {r.size} values")
        regs[:] = r
    out, start, end = [], [], []
    t = 0
    for row in program:
        op, rd, ra, rb, imm = (int(v) for v in row)
        if op == 1:
            regs[rd] = imm
        elif op in (2, 3):
            v = regs[ra] + regs[rb] if op == 2 else regs[ra] * regs[rb]
            regs[rd] = (v + 0x8000) % 0x10000 - 0x8000
        else:
            out.append(int(regs[ra]))
        start.append(t)
        t += int(CYCLES[op])
        end.append(t)
    ops = program["op"].astype(np.int64)
    energy = float(ENERGY_PJ[ops].sum())
    timed = mode != "functional"
    stats = Stats(cycles=t if timed else None, latency_ns=t / CLOCK_GHZ if timed else None,
                  energy_pj=energy if timed else None, instructions=len(program),
                  extra={"timing_model": "toy: table cycles per opcode", "mode": mode})
    outputs = {"out": np.array(out, np.int64)} if mode != "timing" else {}
    tl = None
    if timeline:
        names = tuple(s.mnemonic for s in ISA_TABLE.instrs)
        by_op = {s.opcode: i for i, s in enumerate(ISA_TABLE.instrs)}
        tl = build_timeline(["alu"], np.zeros(len(ops), np.int64), np.array(start, float), np.array(end, float),
                            label=np.array([by_op[int(o)] for o in ops], np.int32), pc=np.arange(len(ops)),
                            finish=[float(t)], units=("busy",), labels=names, time_unit="cycles",
                            ns_per_unit=1 / CLOCK_GHZ, title=f"toy: {len(ops)} instructions", process="toy")
    return SimResult(outputs, stats, timeline=tl)
