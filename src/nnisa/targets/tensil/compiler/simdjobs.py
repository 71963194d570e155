"""SIMD jobs built from Tensil's ALU ops alone (Move/Multiply/Add/Max/Min, one register R1).

``hard``: HardSigmoid ``min(max(α·x + β, 0), 1)`` and HardSwish ``x·HardSigmoid(x)`` (α = 1/6,
β = 1/2): per vector ``R1 = α``; ``R1 = x·R1``; ``R1 = R1 + β``; ``R1 = max(R1, 0)``; then
``O = min(R1, 1)`` (HardSigmoid) or ``R1 = min(R1, 1)``; ``O = x·R1`` (HardSwish).  The four
constants sit in accumulator rows 0–3, the vectors after them.
"""

from __future__ import annotations

from typing import Any


def hard_job(gen: Any, op: Any) -> None:
    x, y = op.inputs[0], op.y
    base = gen.scratch0
    nc = len(op.consts)
    for i, c in enumerate(op.consts):
        gen.move("acc_out", gen._load_const(c, base + i) if not gen.local_consts else c.addr, i, 1)
    lbase = base + (0 if gen.local_consts else nc)
    free = gen.arch.local_depth - lbase
    chunk = max(1, min(y.size, free // 2, gen.arch.accumulator_depth - nc))
    alpha, beta, zero, one = range(nc)
    swish = op.geom["swish"]
    for v0 in range(0, y.size, chunk):
        n = min(chunk, y.size - v0)
        gen.stages += 1
        gen.stage_in(x, v0, n, lbase, nc)
        for i in range(nc, nc + n):
            gen.simd("Move", "r", 1, r=alpha)
            gen.simd("Multiply", "r", 1, 0, 1, r=i)
            gen.simd("Add", "r", 1, 1, 0, r=beta)
            gen.simd("Max", "r", 1, 1, 0, r=zero)
            if swish:
                gen.simd("Min", "r", 1, 1, 0, r=one)
                gen.simd("Multiply", "rw", 0, 0, 1, w=i, r=i)
            else:
                gen.simd("Min", "rw", 0, 1, 0, w=i, r=one)
        gen._save(y, nc, n, v0, lbase + (0 if x.home == "local" else n))
