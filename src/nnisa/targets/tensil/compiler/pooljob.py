"""Pooling jobs on the accumulators (spec §9.6 MaxPool/AvgPool, with nnisa's averaging of
:func:`~.precision.average_factors`), chunked by rows so any input size fits.

Per sample, output rows are taken in groups whose input rows (the windows' span) and outputs fit
the accumulators next to the constants; each group's input rows go local → accumulators, every
output vector is one SIMD chain over its window, and the group's outputs are saved.  A window
larger than the accumulators (a global average of EfficientNet-B0's 112×112×32 at 224 pixels:
12,544 vectors; zcu104 has 4,096) is taken in chunks of input rows: an average accumulates its
pre-scaled sum across chunks (flag ``a``) and applies the post factors after the last; a max pool
window that large is refused naming the accumulators it needs.
"""

from __future__ import annotations

from typing import Any

from ....core.errors import UnsupportedError
from .jobs import SimdOp


def pool_job(gen: Any, op: SimdOp) -> None:
    g = op.geom
    x, y = op.inputs[0].root, op.y
    _, C, H, W = x.shape
    B, _, OH, OW = y.shape
    CB = -(-C // gen.N)
    kh, kw = g["kernel"]
    sh, sw = g["strides"]
    pt, pl = g["pads"][0], g["pads"][1]
    dh, dw = g["dilations"]
    base = gen.scratch0
    nrec = len(op.consts)
    for i, c in enumerate(op.consts):
        gen.move("acc_out", gen._load_const(c, base + i) if not gen.local_consts else c.addr, i, 1)
    lbase = base + (0 if gen.local_consts else nrec)
    gen._r1 = None  # which constant row R1 holds
    row_in, row_out = W * CB, OW * CB
    # a chunk's input rows and the group's outputs take as many accumulators as local staging vectors
    free = min(gen.arch.accumulator_depth, gen._scratch_limit()) - nrec - 1  # - 1: a group sum's row

    def span(o0: int, o1: int) -> tuple[int, int]:
        """Input rows [lo, hi) that output rows [o0, o1) read."""
        return max(0, o0 * sh - pt), min(H, (o1 - 1) * sh - pt + (kh - 1) * dh + 1)

    for b in range(B):
        o0 = 0
        while o0 < OH:
            o1 = o0 + 1
            while o1 < OH and (span(o0, o1 + 1)[1] - span(o0, o1 + 1)[0]) * row_in + (o1 + 1 - o0) * row_out <= free:
                o1 += 1
            lo, hi = span(o0, o1)
            n_out = (o1 - o0) * row_out
            chunk = max(0, (free - n_out) // row_in)
            if chunk < hi - lo and (op.kind == "max_pool" or chunk == 0):
                need = (hi - lo) * row_in + n_out + nrec
                raise UnsupportedError(f"a pooling window's input ({(hi - lo) * row_in} vectors) and output do not fit "
                                       f"the accumulators ({need} needed, accumulator_depth "
                                       f"{gen.arch.accumulator_depth})", where=f"node {op.node.name} ({op.node.op})",
                                       hint=f"an architecture with accumulator_depth >= {need}")
            acc_out = nrec + min(chunk, hi - lo) * row_in
            gen._pool_tmp = acc_out + n_out  # a group sum's row (averages of more than g values)
            started: set[int] = set()
            for c0 in range(lo, hi, max(chunk, 1)):
                c1 = min(hi, c0 + chunk)
                gen.stages += 1
                n_in = (c1 - c0) * row_in
                src = x.addr + (b * H + c0) * row_in
                if x.home != "local":
                    gen.move("dram0_in", lbase, src, n_in)
                    src = lbase
                gen.move("acc_out", src, nrec, n_in)
                for oh in range(o0, o1):
                    for ow in range(OW):
                        elems = [(oh * sh - pt + i * dh, ow * sw - pl + j * dw) for i in range(kh) for j in range(kw)]
                        inside = [(h, w) for h, w in elems if 0 <= h < H and 0 <= w < W]
                        mine = [(h, w) for h, w in inside if c0 <= h < c1]
                        if not mine:
                            continue
                        last = max(h for h, _ in inside) < c1
                        for cb in range(CB):
                            rows = [nrec + ((h - c0) * W + w) * CB + cb for h, w in mine]
                            out = acc_out + ((oh - o0) * OW + ow) * CB + cb
                            _pool_vector(gen, op.kind, rows, out, g, oh, ow, out not in started, last)
                            started.add(out)
            staging = lbase + (0 if x.home == "local" else min(chunk, hi - lo) * row_in)
            gen._save(y, acc_out, n_out, (b * OH + o0) * row_out, staging)
            o0 = o1


def _pool_vector(gen: Any, kind: str, rows: list[int], out: int, g: dict, oh: int, ow: int, first: bool,
                 last: bool) -> None:
    """One output vector's chain over ``rows`` (its window's elements in this chunk)."""
    if kind == "max_pool":  # the whole window is in one chunk (pool_job)
        if len(rows) == 1:
            gen.simd("Move", "rw", 0, w=out, r=rows[0])
            return
        gen.simd("Max", "r", 1, r=rows[0])
        for r in rows[1:-1]:
            gen.simd("Max", "r", 1, 0, 1, r=r)
        gen.simd("Max", "rw", 0, 0, 1, w=out, r=rows[-1])
        return
    # average (precision.average_factors): acc[out] (+)= Σ e·pre, or per group of ≤ g elements
    # acc[tmp] = Σ e·pre, acc[out] (+)= acc[tmp]·group; after the window's last chunk acc[out] ·= post
    g_max, pre, group, post = g["avg_factors"][int(g["counts"][oh, ow])]
    for i0 in range(0, len(rows), g_max):
        if gen._r1 != pre:
            gen.simd("Move", "r", 1, r=pre)
            gen._r1 = pre
        dst = out if group is None else gen._pool_tmp
        for i, r in enumerate(rows[i0:i0 + g_max]):
            gen.simd("Multiply", "rw" if i == 0 and (group is not None or first and i0 == 0) else "rwa", 0, 0, 1,
                     w=dst, r=r)
        if group is not None:
            gen.simd("Move", "r", 1, r=group)
            gen.simd("Multiply", "rw" if first and i0 == 0 else "rwa", 0, 0, 1, w=out, r=dst)
            gen._r1 = group
    if last:
        for f in post:
            gen.simd("Move", "r", 1, r=f)
            gen.simd("Multiply", "rw", 0, 0, 1, w=out, r=out)
            gen._r1 = f
