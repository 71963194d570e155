"""PIM lowering of the MatMul of two activations (attention's ``Q·Kᵀ`` and ``P·V``) on the vector unit.

Crossbar weights are programmed by the toolchain (spec D8), so a product whose both operands
are computed by the graph runs on the vector unit: ``vvdmul`` is a dot product (``d =
Σ a[i]·b[i]``, one element at the output width).  Per batch/head index and chunk of output rows:

* the rows of ``A`` (``[rows][K]``) and the columns of ``B`` as rows (``Bᵀ``: ``[N][K]``) are
  gathered into local memory (one ``ld`` of each operand's range, then ``lmv``/``vmv`` runs; any
  storage layout and numpy broadcasting of the batch axes, from the logical index maps);
* one ``vvdmul`` of length ``K`` per output element, into a ``W``-bit vector (``W`` = the smallest
  of 16/24/31 bits that holds ``K·2^14`` plus the rounding);
* the frontend's requantization ``clip(rshift_round(acc, s))`` (``vvadd``/``vvsra``, or the
  pre-clamped ``vvsll`` of a left shift, then ``vrsl``/``vrsu``) and one ``st`` of the rows
  (the output is stored in C order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core.errors import UnsupportedError
from ....frontend.quant import QNode
from .emit import MAXLEN, CoreEmitter
from .graph import TensorRef, acc_width
from .lower_extra import ExtraLayer, logical_to_storage
from .lower_lut import _gather
from .lower_vec import requant_tail, split
from .memory_plan import ConstPool, elem_bytes
from .schedule import Task

_LOCAL = 96 * 1024     # local bytes of one task's operands and products


@dataclass
class ActMatMulLayer(ExtraLayer):
    """``out[b] = clip(rshift_round(A[b] @ B[b], shift))`` with ``A``/``B`` gathered per batch index."""

    a_rows: np.ndarray = None    # (nb, M, K) storage positions of A
    b_cols: np.ndarray = None    # (nb, N, K) storage positions of B (its columns as rows)
    shift: int = 0
    clamp: tuple[int, int] = (-128, 127)
    width: int = 16

    def tasks(self, em, workers, consts, li=0, pick=None, image=0, ofs=0, states=None):
        return act_matmul_tasks(self, em, workers, consts, li, pick, image, ofs)


def lower_act_matmul(n: QNode, ins: list[TensorRef], new_tensor) -> ActMatMulLayer:
    where = f"node {n.name} ({n.op})"
    a, b = ins
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise UnsupportedError("MatMul of activations needs operands of rank >= 2", where=where)
    r = n.requant
    if not r.is_pow2 or np.ndim(r.shift):
        raise UnsupportedError("MatMul requant must be a per-tensor power of two", where=where)
    out = new_tensor(n.outputs[0])
    out.perm = None
    (m, k), nn = a.shape[-2:], b.shape[-1]
    batch = tuple(out.shape[:-2])
    la = logical_to_storage(a).reshape(a.shape)
    lb = logical_to_storage(b).reshape(b.shape)
    a_rows = np.broadcast_to(la, batch + (m, k)).reshape(-1, m, k)
    b_cols = np.swapaxes(np.broadcast_to(lb, batch + (k, nn)).reshape(-1, k, nn), 1, 2)
    s = int(np.asarray(r.shift))
    tmax = (1 << (out.bits - 1)) - 1
    bound = k * (1 << (a.bits - 1)) * (1 << (b.bits - 1)) + (1 << max(s - 1, 0))
    if s < 0:
        bound = max(bound, (tmax + 2) << -s)
    if k > MAXLEN:
        raise UnsupportedError(f"MatMul of activations over {k} > {MAXLEN} elements (vvdmul length)", where=where)
    try:
        width = max(16, acc_width(bound))
    except OverflowError:
        raise UnsupportedError("MatMul of activations does not fit a 31-bit accumulator", where=where) from None
    return ActMatMulLayer(n, [a, b], out, a_rows=a_rows, b_cols=np.ascontiguousarray(b_cols), shift=s,
                          clamp=tuple(int(v) for v in n.clamp), width=width)


def act_matmul_tasks(layer: ActMatMulLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool,
                     li: int = 0, pick=None, image: int = 0, ofs: int = 0):
    """One task per (batch index, chunk of output rows), spread over the workers."""
    a, b = layer.inputs
    if max(a.bits, b.bits, layer.out.bits) > 8:
        raise UnsupportedError("MatMul of > 8-bit activations", where=f"node {layer.name} ({layer.op})")
    nb, m, k = layer.a_rows.shape
    nn = layer.b_cols.shape[1]
    W, s, ob = layer.width, layer.shift, layer.out.bits
    wb = elem_bytes(W)
    rows = max(1, min(m, MAXLEN // nn, (_LOCAL - nn * k) // max(1, k + nn * wb + nn)))
    pieces = [(bi, r0, min(m, r0 + rows)) for bi in range(nb) for r0 in range(0, m, rows)]
    aa, ba, outa = a.buf.addr + ofs, b.buf.addr + ofs, layer.out.buf.addr + ofs
    n0 = rows * nn
    where = f"node {layer.name} ({layer.op})"
    for core0, (i0, i1) in zip(workers, split(len(pieces), len(workers))):
        for bi, r0, r1 in pieces[i0:i1]:
            pa, pb = layer.a_rows[bi, r0:r1].reshape(-1), layer.b_cols[bi].reshape(-1)
            reads = [(aa + int(pa.min()), aa + int(pa.max()) + 1), (ba + int(pb.min()), ba + int(pb.max()) + 1)]
            core = pick(reads, core0) if pick else core0
            o0 = (bi * m + r0) * nn

            def run(core=core, bi=bi, r0=r0, r1=r1, pa=pa, pb=pb, o0=o0) -> None:
                e = em[core]
                top = e.tarena.top
                u = min(n0, 64)
                kv = {}
                if s > 0:
                    kv["half"], kv["shr"] = e.tarena.alloc(n0 * wb), e.tarena.alloc(n0 * wb)
                    e.ld_rep(kv["half"], consts.add(np.full(u, 1 << (s - 1)), W), u * wb, n0 * wb)
                    e.ld_rep(kv["shr"], consts.add(np.full(u, s), W), u * wb, n0 * wb)
                elif s < 0:
                    kv["left"] = e.tarena.alloc(n0 * wb)
                    e.ld_rep(kv["left"], consts.add(np.full(u, -s), W), u * wb, n0 * wb)
                abuf = e.tarena.alloc((r1 - r0) * k)
                bbuf = e.tarena.alloc(nn * k)
                acc = e.tarena.alloc((r1 - r0) * nn * wb)
                ybuf = e.tarena.alloc((r1 - r0) * nn)
                _gather(e, abuf, aa, pa, e.tarena)
                _gather(e, bbuf, ba, pb, e.tarena)
                e.setbw(8, W)
                for i in range(r1 - r0):
                    for j in range(nn):
                        e.vv("vvdmul", acc + (i * nn + j) * wb, abuf + i * k, bbuf + j * k, k)
                cnt = (r1 - r0) * nn
                e.setbw(W, W)
                requant_tail(e, acc, ybuf, cnt, W, ob, layer.clamp, **kv)
                e.st(outa + o0, ybuf, cnt)
                e.tarena.top = top   # scratch released for the next task

            yield Task(li, [core], [core], reads, [(outa + o0, outa + o0 + (r1 - r0) * nn)], core, run, where,
                       image=image)
