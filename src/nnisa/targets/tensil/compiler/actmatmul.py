"""MatMul of two activations (attention scores ``Q·Kᵀ``, context ``P·V``) on the systolic array by
loading one operand as the weights (issue 27).

Both operands are brought into the rows layout ``(batch, rows, features)`` (a lane move when they
are rank-4 NCHW tensors or broadcast over batch axes), then per batch item ``i`` the ``K`` rows of
``B_i`` are the weights, one ``N × N`` tile per (input block, output block), loaded vector by vector
from local memory with zero rows past ``K`` (so ``A``'s padding lanes never count), and ``A_i``'s
rows stream through them into the accumulators.  A rank-4 result is moved back into NCHW.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from .. import layout as L
from ..isa import LOADWEIGHTS
from .jobs import SimdOp, Var, _err
from .lanemove import lower_move


def lower_matmul_act(low: Any, n: Any) -> None:
    """``y = a @ b`` with numpy broadcasting of the batch axes; both operands activations."""
    g = low.g
    sa, sb = tuple(g.shape(n.inputs[0])), tuple(g.shape(n.inputs[1]))
    if len(sa) < 2 or len(sb) < 2:
        raise _err(n, "MatMul of a vector operand", "reshape the vector into a 1-row matrix")
    S, K, T = sa[-2], sa[-1], sb[-1]
    try:
        batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise _err(n, f"MatMul operands {sa} and {sb} do not broadcast") from None
    Bh = int(np.prod(batch)) if batch else 1
    rows = []
    for name, shape, tail in ((n.inputs[0], sa, (S, K)), (n.inputs[1], sb, (K, T))):
        v = low.var(name)
        if tuple(v.root.shape) == (Bh,) + tail and v.view_of is None:
            rows.append(low._use(v))
            continue
        out = (f"{n.name}.{name}.rows", (Bh,) + tail)
        rows.append(lower_move(low, n, "Rows", {"bshape": tuple(batch) + tail}, [name], out))
    y_shape = tuple(g.shape(n.outputs[0]))
    direct = len(y_shape) != 4 and int(np.prod(y_shape[:-1])) == Bh * S  # rows of T (every rank but NCHW)
    y = low._out(n, None) if direct else Var(f"{n.name}.rows", (Bh, S, T), L.vector_count((Bh, S, T), low.N),
                                            first=len(low.ops))
    if not direct:
        low.vars[y.name] = y
    for r in rows:
        r.root.last = max(r.root.last, len(low.ops))
    low.ops.append(SimdOp(n, "actmatmul", [r.root for r in rows], y, geom=dict(B=Bh, S=S, K=K, T=T)))
    if not direct:
        y.last = len(low.ops)
        lower_move(low, n, "Reshape", {}, [y.name])


def actmatmul_job(gen: Any, op: Any) -> None:
    """Per batch item: A_i and B_i rows into local, per (output block, input block) a weight tile
    from B_i's rows and the MatMuls of A_i's rows, the result rows saved like any job's."""
    N, arch = gen.N, gen.arch
    a, b = op.inputs
    y = op.y
    gm = op.geom
    S, K, T = gm["S"], gm["K"], gm["T"]
    KB, TB = L.blocks(K, N), L.blocks(T, N)
    na, nb, ny = S * KB, K * TB, S * TB
    base = gen.scratch0
    if na + nb + ny > arch.local_depth - base or ny > arch.accumulator_depth:
        raise UnsupportedError(f"one batch item of the product needs {na + nb + ny} local vectors and {ny} "
                               f"accumulators ({arch.local_depth - base} and {arch.accumulator_depth} available)",
                               where=f"node {op.node.name} ({op.node.op})",
                               hint="a larger local memory, or fewer tokens per head")
    for i in range(gm["B"]):
        gen.stages += 1
        addr = []
        at = base
        for v, size in ((a, na), (b, nb)):
            if v.home == "local":
                addr.append(v.addr + i * size)
            else:
                gen.move("dram0_in", at, v.addr + i * size, size)
                addr.append(at)
                at += size
        xa, xb = addr
        for tb in range(TB):
            for kb in range(KB):
                for k in reversed(range(N)):  # rows past K are zero: A's padding lanes never count
                    kk = kb * N + k
                    if kk < K:
                        gen._row(LOADWEIGHTS << 4, xb + kk * TB + tb, 0, 0, 0)
                    else:
                        gen._row(LOADWEIGHTS << 4 | 1, 0, 0, 0, 0)
                gen._row(LOADWEIGHTS << 4 | 1, 0, 0, 0, 0)  # zero bias
                gen._matmuls([(xa + s * KB + kb, s * TB + tb, False) for s in range(S)], accumulate=kb > 0)
        gen._save(y, 0, ny, i * ny, at)
