"""PIM lowering of ReduceMean over any axes (the spatial case imports as GlobalAveragePool).

Every output element averages ``count`` input elements.  The map from each output storage
position to the storage positions of its ``count`` inputs is computed once with numpy (so any
axes, any storage permutation of the input).  Per task (a piece of consecutive output
positions): the input range is loaded once and gathered into ``[outputs][count]`` contiguous
rows (:func:`.lower_lut._gather`: ``lmv``/``vmv`` runs), then one ``vavg`` (stride 1,
``len = count``) per output element — ``vavg`` rounds half away from zero, exactly the
frontend's ``div_round_away`` — and one ``st``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....core.errors import UnsupportedError
from ....frontend.quant import QNode
from .emit import MAXLEN, CoreEmitter
from .graph import TensorRef
from .lower_extra import ExtraLayer, logical_to_storage, storage_to_logical
from .lower_lut import _gather
from .lower_vec import split
from .memory_plan import ConstPool
from .schedule import Task

_PIECE_IN = 16 * 1024    # gathered input bytes per task
_RANGE = 48 * 1024       # loaded input range per task


@dataclass
class ReduceLayer(ExtraLayer):
    """``out.storage[j] = div_round_away(Σ_k x.storage[groups[j, k]], count)``."""

    groups: np.ndarray = None   # (n_out, count) input storage positions per output storage position

    def tasks(self, em, workers, consts, li=0, pick=None, image=0, ofs=0, states=None):
        return reduce_tasks(self, em, workers, consts, li, pick, image, ofs, states)


def lower_reduce(n: QNode, x: TensorRef, new_tensor) -> ReduceLayer:
    where = f"node {n.name} ({n.op})"
    if n.op != "ReduceMean":
        raise UnsupportedError(f"{n.op} is not lowered on PIM (ReduceMean is)", where=where)
    axes = [int(a) % len(x.shape) for a in n.attrs["axes"]]
    if 0 in axes:
        raise UnsupportedError("ReduceMean over the batch axis", where=where)
    logical = np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)
    moved = np.moveaxis(logical, axes, list(range(-len(axes), 0)))
    count = int(np.prod([x.shape[a] for a in axes]))
    if count > MAXLEN:
        raise UnsupportedError(f"ReduceMean over {count} elements (vavg takes at most {MAXLEN})", where=where)
    groups = logical_to_storage(x)[moved.reshape(-1, count)]
    out = new_tensor(n.outputs[0])
    return ReduceLayer(n, [x], out, groups=groups[storage_to_logical(out)])


def _pieces(layer: ReduceLayer) -> list[tuple[int, int]]:
    n_out, count = layer.groups.shape
    out, p = [], 0
    while p < n_out:
        q = min(n_out, p + max(1, _PIECE_IN // count))
        while q - p > 1:
            g = layer.groups[p:q]
            if int(g.max()) - int(g.min()) < _RANGE:
                break
            q = p + (q - p) // 2
        out.append((p, q))
        p = q
    return out


def reduce_tasks(layer: ReduceLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool,
                 li: int = 0, pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):
    """One task per piece of output positions (pieces split into contiguous ranges over the workers)."""
    x, bits = layer.inputs[0], layer.out.bits
    if bits > 8 or x.bits != bits:
        raise UnsupportedError("ReduceMean of > 8-bit tensors", where=f"node {layer.name} ({layer.op})")
    count = layer.groups.shape[1]
    xa, outa = x.buf.addr + ofs, layer.out.buf.addr + ofs
    pieces = _pieces(layer)
    for core0, (i0, i1) in zip(workers, split(len(pieces), len(workers))):
        for p, q in pieces[i0:i1]:
            g = layer.groups[p:q]
            reads = [(xa + int(g.min()), xa + int(g.max()) + 1)]
            core = pick(reads, core0) if pick else core0

            def run(core=core, p=p, q=q, g=g) -> None:
                e = em[core]
                top = e.tarena.top
                buf = e.tarena.alloc((q - p) * count)
                obuf = e.tarena.alloc(q - p)
                _gather(e, buf, xa, g.reshape(-1), e.tarena)
                e.setbw(bits, bits)
                for j in range(q - p):
                    e.vavg(obuf + j, buf + j * count, 1, count, 0)
                e.st(outa + p, obuf, q - p)
                e.tarena.top = top   # scratch released: the next task reuses it

            yield Task(li, [core], [core], reads, [(outa + p, outa + q)], core, run,
                       f"node {layer.name} ({layer.op})", image=image)
