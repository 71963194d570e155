"""PIM lowering of elementwise Max/Min of two activations (the vector unit's ``vvmax``).

The frontend's integer semantics (``frontend.qeval``): each operand is brought to the output
scale and clipped, ``u = clip(rshift_round(a, s_a), lo, hi)``, ``v`` likewise, then
``max(u, v)`` or ``min(u, v)``.  Per chunk of at most 2047 elements, at an accumulator width
``acc`` that holds every intermediate value:

* widen each operand with ``vvsll`` (its left shift, or 0), and for a right shift add the
  rounding constant and ``vvsra`` (round half up, as ``rshift_round``);
* clip to ``[lo, hi]`` with ``vrsl``/``vrsu``;
* Max: ``vvmax``.  Min (the ISA has no ``vvmin``): ``min(u, v) = u + min(v - u, 0)`` with
  ``vvsub``, ``vrsu`` (bound 0) and ``vvadd`` — exact, as ``|v - u| < 2^ob`` fits ``acc``;
* narrow to the output width (``vrsl`` at ``setbw acc, ob``: the values are in range already).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core.errors import UnsupportedError
from ....frontend.quant import QNode
from .emit import MAXLEN, CoreEmitter
from .graph import LowerContext, TensorRef, acc_width
from .lower_extra import ExtraLayer
from .lower_vec import _chunks
from .memory_plan import ConstPool, elem_bytes
from .schedule import Task


@dataclass
class MaxMinLayer(ExtraLayer):
    """``max``/``min`` of ``clip(rshift_round(a, shifts[0]))`` and ``clip(rshift_round(b, shifts[1]))``."""

    kind: str = "max"
    shifts: tuple[int, int] = (0, 0)       # per input: rshift_round amount (negative: a left shift)
    clamp: tuple[int, int] = (-128, 127)
    acc_bits: int = 16

    def tasks(self, em, workers, consts, li=0, pick=None, image=0, ofs=0, states=None):
        return maxmin_tasks(self, em, workers, consts, li, pick, image, ofs, states)


def _where(n: QNode) -> str:
    return f"node {n.name} ({n.op})"


def lower_maxmin(cx: LowerContext, n: QNode, ins: list[TensorRef]) -> None:
    """The lowering-table entry of Max and Min (two activations of one shape and storage)."""
    if n.const is not None or len(ins) != 2:
        raise UnsupportedError(f"{n.op} with a constant operand is not supported on the PIM target", where=_where(n))
    a, b = ins
    if tuple(a.shape) != tuple(b.shape) or a.buf.hwc != b.buf.hwc:
        raise UnsupportedError(f"{n.op} operands must have the same shape (no broadcasting on PIM)", where=_where(n))
    if max(a.bits, b.bits, n.out_bits) > 8:
        raise UnsupportedError(f"{n.op} on > 8-bit tensors", where=_where(n))
    shifts = []
    for r in n.input_requants:
        if not r.is_pow2 or np.ndim(r.shift):
            raise UnsupportedError(f"{n.op} input rescale must be a per-tensor shift", where=_where(n))
        shifts.append(int(np.asarray(r.shift)))
    out = cx.new_tensor(n.outputs[0])
    out.perm = a.perm
    out.buf.hwc = a.buf.hwc
    # widened operands (after a left shift) and the Min's difference of two clipped values
    bound = max([(1 << (t.bits - 1)) << max(-s, 0) for t, s in zip(ins, shifts)] + [1 << n.out_bits])
    cx.layers.append(MaxMinLayer(n, [a, b], out, kind=n.op.lower(), shifts=(shifts[0], shifts[1]),
                                 clamp=tuple(int(v) for v in n.clamp), acc_bits=acc_width(bound)))


def _consts(e: CoreEmitter, consts: ConstPool, n0: int, shifts: tuple[int, int], acc: int) -> dict[str, int]:
    """Per-core constant vectors of ``n0`` elements: per input its left shift (8-bit) and, for a
    right shift, the rounding constant and the amount (``acc`` bits)."""
    accb = elem_bytes(acc)
    u = min(n0, 64)
    st = {}
    for k, s in enumerate(shifts):
        st[f"kl{k}"] = e.arena.alloc(n0)
        e.ld_rep(st[f"kl{k}"], consts.add(np.full(u, max(-s, 0)), 8), u, n0)
        if s > 0:
            for key, v in ((f"kh{k}", 1 << (s - 1)), (f"ks{k}", s)):
                st[key] = e.arena.alloc(n0 * accb)
                e.ld_rep(st[key], consts.add(np.full(u, v), acc), u * accb, n0 * accb)
    return st


def maxmin_arith(e: CoreEmitter, k: dict[str, int], layer: MaxMinLayer, out: int, srcs: tuple[int, int],
                 accs: tuple[int, int], n: int) -> None:
    """``out ← max/min(clip(rshift_round(src_i, s_i)))`` of ``n`` elements (``accs``: scratch at acc width)."""
    acc, ob = layer.acc_bits, layer.out.bits
    lo, hi = layer.clamp
    for i, src in enumerate(srcs):
        A = accs[i]
        e.setbw(8, acc)  # (int8 storage; shift amounts are 8-bit constants)
        e.vv("vvsll", A, src, k[f"kl{i}"], n)
        e.setbw(acc, acc)
        if layer.shifts[i] > 0:
            e.vv("vvadd", A, A, k[f"kh{i}"], n)
            e.vv("vvsra", A, A, k[f"ks{i}"], n)
        e.vrs("vrsl", A, A, lo, n)
        e.vrs("vrsu", A, A, hi, n)
    A, B = accs
    if layer.kind == "max":
        e.vv("vvmax", A, A, B, n)
    else:
        e.vv("vvsub", B, B, A, n)
        e.vrs("vrsu", B, B, 0, n)
        e.vv("vvadd", A, A, B, n)
    e.setbw(acc, ob)
    e.vrs("vrsl", out, A, lo, n)


def maxmin_tasks(layer: MaxMinLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool, li: int = 0,
                 pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):
    """Per worker: constants once, then one task per chunk of <= 2047 elements."""
    a, b = layer.inputs
    accb = elem_bytes(layer.acc_bits)
    h, w, c = layer.out.buf.hwc
    total = h * w * c
    chunk = min(MAXLEN, total)
    outa = layer.out.buf.addr + ofs
    aa, ba = a.buf.addr + ofs, b.buf.addr + ofs
    states = {} if states is None else states

    def talloc(core, st, n0) -> None:
        e = em[core]
        st["abuf"], st["bbuf"], st["obuf"] = e.tarena.alloc(n0), e.tarena.alloc(n0), e.tarena.alloc(n0)
        st["A"], st["B"] = e.tarena.alloc(n0 * accb), e.tarena.alloc(n0 * accb)

    for core0, pieces in _chunks(total, workers, chunk):
        for p, q in pieces:
            reads = [(aa + p, aa + q), (ba + p, ba + q)]
            core = pick(reads, core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, p=p, q=q, n0=chunk if pick else pieces[0][1] - pieces[0][0]) -> None:
                e = em[core]
                if not st:
                    talloc(core, st, n0)
                    st.update(_consts(e, consts, n0, layer.shifts, layer.acc_bits))
                elif e.per_task:
                    talloc(core, st, n0)
                n = q - p
                e.ld(st["abuf"], aa + p, n)
                e.ld(st["bbuf"], ba + p, n)
                maxmin_arith(e, st, layer, st["obuf"], (st["abuf"], st["bbuf"]), (st["A"], st["B"]), n)
                e.st(outa + p, st["obuf"], n)

            yield Task(li, [core], [core], reads, [(outa + p, outa + q)], core, run, _where(layer.node),
                       image=image)
