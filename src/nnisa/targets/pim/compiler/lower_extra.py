"""PIM lowering of the data-movement operators: Concat, Slice/Split, nearest Resize, channel shuffle.

Every one of them is a *gather*: each byte of the output's storage comes from one byte of one
input's storage.  Their entries of the lowering table (:data:`.lowerings.LOWERINGS`) turn them into a
:class:`CopyLayer` holding that map (``which`` input, ``pos`` in its
storage), computed once with numpy from the logical semantics (the frontend's
``take_axes``/``concatenate``) and the storage permutations of the tensors — so a Slice of a
transposed tensor, a Split after a channel shuffle (Reshape–Transpose–Reshape, which stays a
free alias) or a Concat of differently laid-out inputs are all the same code.

The pre-pass :func:`.lowerings.prepare_inputs` *materialises* a permuted tensor in the standard HWC layout when a consumer
needs it (Conv, pooling, GlobalAveragePool, or the two operands of Add/Sub disagree): a
channel shuffle feeding a convolution costs one copy layer.

Code generation (:meth:`CopyLayer.tasks`): the output is cut into pieces (≤ 8 KiB, fewer when
the inputs' ranges are wide); per piece and input, either the few contiguous runs are loaded
straight into the output buffer (``ld`` per run), or the input range is loaded once and the
runs are copied locally: ``lmv`` for contiguous runs, ``vmv`` (strided gather) for runs of
single bytes whose source advances by a constant stride, so an interleave costs one
instruction per run.  Concat inputs whose scale differs from the output's are requantized on
the loaded range first (``vvsll``/``vvadd``/``vvsra``/``vrsl``/``vrsu``, exactly the frontend's
``clip(rshift_round(v, s))``).  One ``st`` per piece writes the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ....core.errors import UnsupportedError
from ....frontend.float_eval import take_axes
from ....frontend.quant import QNode, QTensor
from ..isa import OPCODE
from .emit import MAXLEN, CoreEmitter, pack_row
from .graph import Layer, TensorRef, acc_width
from .lower_vec import requant_tail, split
from .memory_plan import ConstPool, elem_bytes
from .schedule import Task

#: IR ops this module (and :mod:`.lower_lut`) lower
COPY_OPS = ("Slice", "Resize", "Concat")
#: ops whose (first) input must be stored in the standard HWC layout
NEEDS_HWC = ("Conv", "MaxPool", "AveragePool", "GlobalAveragePool")
_PIECE = 8192          # output bytes per copy task
_STAGE = 48 * 1024     # local bytes for the staged input ranges of one piece
_DIRECT_RUNS = 4       # an input with at most this many runs in a piece is loaded straight into place
_VMV = OPCODE["vmv"]


def _where(layer) -> str:
    return f"node {layer.name} ({layer.op})"


def storage_to_logical(t: TensorRef) -> np.ndarray:
    """Logical (C-order) flat index of every storage position of ``t``."""
    n = int(np.prod(t.shape, dtype=np.int64))
    return np.arange(n, dtype=np.int64) if t.perm is None else np.asarray(t.perm, np.int64)


def logical_to_storage(t: TensorRef) -> np.ndarray:
    """Storage position of every logical (C-order) flat index of ``t``."""
    s = storage_to_logical(t)
    inv = np.empty_like(s)
    inv[s] = np.arange(s.size, dtype=np.int64)
    return inv


class ExtraLayer(Layer):
    """A layer lowered by this module: it generates its own tasks."""

    def tasks(self, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool, li: int = 0,
              pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):  # pragma: no cover
        """Tasks of image ``image`` of a stream (its activations ``ofs`` bytes after image 0's);
        ``states`` (per core) is kept across images when the schedule shares per-unit state."""
        raise NotImplementedError


@dataclass
class CopyLayer(ExtraLayer):
    """``out.storage[j] = requant_k(inputs[which[j]].storage[pos[j]])``."""

    which: np.ndarray = None               # (n_out,) input index per output storage position
    pos: np.ndarray = None                 # (n_out,) storage position in that input
    shifts: list[int] = field(default_factory=list)   # per input: rshift_round amount (0 = plain copy)
    clamp: tuple[int, int] = (-128, 127)

    def tasks(self, em, workers, consts, li=0, pick=None, image=0, ofs=0, states=None):
        return copy_tasks(self, em, workers, consts, li, pick, image, ofs, states)


# --------------------------------------------------------------------------- lowering


def is_default_storage(t: TensorRef) -> bool:
    """True when ``t`` is stored as a fresh tensor of its shape would be (HWC for 4-D, else C order)."""
    if len(t.shape) == 4:
        return t.is_hwc
    return t.perm is None or bool(np.array_equal(t.perm, np.arange(np.asarray(t.perm).size)))


def same_storage(a: TensorRef, b: TensorRef) -> bool:
    """True when ``a`` and ``b`` hold their logical elements at the same storage positions."""
    return a.buf.hwc == b.buf.hwc and np.array_equal(storage_to_logical(a), storage_to_logical(b))


def relayout(n: QNode, x: TensorRef, new_tensor, layers: list[Layer]) -> TensorRef:
    """A copy of ``x`` in the standard storage of its shape (HWC for 4-D), for node ``n``."""
    qt = QTensor(f"{x.name}.hwc", tuple(x.shape), x.scale, x.bits, x.exp)
    out = new_tensor(qt.name, qt)
    node = QNode("Transpose", f"{n.name}.relayout", [x.name], [qt.name], {}, [x.scale], [x.bits], x.scale, x.bits)
    src = logical_to_storage(x)[storage_to_logical(out)]
    layers.append(CopyLayer(node, [x], out, which=np.zeros(src.size, np.int64), pos=src, shifts=[0],
                            clamp=(-(1 << (x.bits - 1)), (1 << (x.bits - 1)) - 1)))
    return out


def copy_layer(n: QNode, ins: list[TensorRef], new_tensor) -> CopyLayer:
    """The gather map of a Slice/Resize (one input) or Concat (inputs rescaled to the output)."""
    if n.op in ("Slice", "Resize"):
        x = ins[0]
        logical = take_axes(np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape), n.attrs["index"])
        src = logical_to_storage(x)[logical.reshape(-1)]
        which = np.zeros(src.size, np.int64)
        shifts = [0]
    else:  # Concat: (input index, logical index) along the axis
        shifts = []
        for r in n.input_requants:
            if not r.is_pow2 or np.ndim(r.shift):
                raise UnsupportedError("Concat input rescale must be a per-tensor power of two", where=_wn(n))
            shifts.append(int(np.asarray(r.shift)))
        parts_k, parts_p = [], []
        for k, x in enumerate(ins):
            size = int(np.prod(x.shape))
            parts_k.append(np.full(x.shape, k, np.int64))
            parts_p.append(logical_to_storage(x).reshape(x.shape) if size else np.zeros(x.shape, np.int64))
        ax = int(n.attrs["axis"])
        which = np.concatenate(parts_k, axis=ax).reshape(-1)
        src = np.concatenate(parts_p, axis=ax).reshape(-1)
    out = new_tensor(n.outputs[0])
    order = storage_to_logical(out)
    return CopyLayer(n, list(ins), out, which=which[order], pos=src[order], shifts=shifts,
                     clamp=tuple(int(v) for v in n.clamp))


def _wn(n: QNode) -> str:
    return f"node {n.name} ({n.op})"


# --------------------------------------------------------------------------- gather plans


def runs(pos: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Copy operations that place ``src[pos[i]]`` at ``dst[i]`` for all ``i``.

    Returns ``(dst_offset, src_offset, length, stride)`` tuples: stride 1 is a contiguous run
    (``lmv``/``ld``); any other stride (0 and negative included) a strided gather (``vmv``) of
    at least three elements.
    """
    n = int(pos.size)
    if n == 0:
        return []
    brk = np.flatnonzero(np.diff(pos) != 1) + 1
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk, [n]])
    out: list[tuple[int, int, int, int]] = []
    i = 0
    nr = len(starts)
    while i < nr:
        s, e = int(starts[i]), int(ends[i])
        if e - s > 1:
            out.append((s, int(pos[s]), e - s, 1))
            i += 1
            continue
        # a single byte: extend over following single bytes with a constant source stride
        j = i + 1
        if j < nr and ends[j] - starts[j] == 1:
            d = int(pos[starts[j]] - pos[s])
            while j < nr and ends[j] - starts[j] == 1 and int(pos[starts[j]] - pos[starts[j - 1]]) == d \
                    and j - i < MAXLEN:
                j += 1
        if j - i >= 3:
            out.append((s, int(pos[s]), j - i, int(pos[starts[i + 1]] - pos[s])))
        else:
            for q in range(i, j):
                out.append((int(starts[q]), int(pos[starts[q]]), 1, 1))
        i = j
    return out


def vmv(e: CoreEmitter, dst: int, src: int, n: int, stride: int) -> None:
    """``dst[i] = src[i·stride]`` for ``n`` elements at the current input width (one ``vmv``)."""
    rd, rs = e.lreg(dst), e.lreg(src)
    e._set(5, stride)
    e.rows.append(pack_row(_VMV, rd, rs, 5, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))


def emit_runs(e: CoreEmitter, dst: int, src: int, ops: list[tuple[int, int, int, int]]) -> None:
    """Local copies of :func:`runs` (``src`` = local address of position ``0`` of the source)."""
    strided = [op for op in ops if op[3] != 1]
    if strided:
        e.setbw(8, 8)
    for d, s, n, stride in ops:
        if stride == 1:
            e.lmv(dst + d, src + s, n)
        else:
            vmv(e, dst + d, src + s, n, stride)


@dataclass
class _Piece:
    """One copy task: output ``[p, q)`` and, per input, how its bytes get there."""

    p: int
    q: int
    parts: list[tuple[int, int, int, list]]   # (input, lo, hi, runs relative to lo); runs None = direct


def _plan_pieces(layer: CopyLayer) -> list[_Piece]:
    total = layer.which.size
    out: list[_Piece] = []
    p = 0
    while p < total:
        size = min(_PIECE, total - p)
        while True:
            q = p + size
            parts, staged = _piece_parts(layer, p, q)
            if staged <= _STAGE or size == 1:
                break
            size = max(1, size // 2)
        out.append(_Piece(p, q, parts))
        p = q
    return out


def _piece_parts(layer: CopyLayer, p: int, q: int):
    w, pos = layer.which[p:q], layer.pos[p:q]
    parts, staged = [], 0
    for k in np.unique(w):
        k = int(k)
        sel = np.flatnonzero(w == k)
        kp = pos[sel]
        lo, hi = int(kp.min()), int(kp.max()) + 1
        # output offsets of input k's bytes: contiguous runs in the output and in the input
        brk = np.flatnonzero((np.diff(sel) != 1) | (np.diff(kp) != 1)) + 1
        nruns = len(brk) + 1
        if nruns <= _DIRECT_RUNS and layer.shifts[k] == 0 and _no_clamp(layer, k):
            starts = np.concatenate([[0], brk])
            ends = np.concatenate([brk, [sel.size]])
            direct = [(int(sel[a]), int(kp[a]), int(b - a)) for a, b in zip(starts, ends)]
            parts.append((k, lo, hi, direct, True))
        else:
            full = np.full(q - p, -1, np.int64)
            full[sel] = kp - lo
            parts.append((k, lo, hi, full, False))
            staged += hi - lo
    return parts, staged


def _no_clamp(layer: CopyLayer, k: int) -> bool:
    b = layer.inputs[k].bits
    return layer.clamp[0] <= -(1 << (b - 1)) and layer.clamp[1] >= (1 << (b - 1)) - 1


def _piece_ops(parts, n_out: int):
    """Per staged input: runs over the output positions it owns (gaps skipped)."""
    done = []
    for k, lo, hi, data, direct in parts:
        if direct:
            done.append((k, lo, hi, data, True))
            continue
        own = np.flatnonzero(data >= 0)
        # runs are computed per maximal block of consecutive owned output positions
        ops = []
        brk = np.flatnonzero(np.diff(own) != 1) + 1
        for blk in np.split(own, brk):
            if blk.size:
                ops.extend((int(blk[0]) + d, s, n, st) for d, s, n, st in runs(data[blk]))
        done.append((k, lo, hi, ops, False))
    return done


# --------------------------------------------------------------------------- requantization


def requant_range(e: CoreEmitter, buf: int, wide: int, n: int, shift: int, clamp: tuple[int, int], bits: int,
                  kv: dict) -> None:
    """In place: ``buf[i] = clip(rshift_round(buf[i], shift), *clamp)`` for ``n`` ``bits``-bit elements,
    through the ``W``-bit scratch ``wide`` (``kv``: the local constant vectors of :func:`requant_consts`)."""
    acc = kv["acc"]
    done = 0
    while done < n:
        m = min(MAXLEN, n - done, kv["n"])
        e.setbw(bits, acc)
        e.vv("vvsll", wide, buf + done, kv["kl"], m)      # widen (and left-shift when shift < 0)
        if shift > 0:
            e.setbw(acc, acc)
        requant_tail(e, wide, buf + done, m, acc, bits, clamp, half=kv["kh"] if shift > 0 else None,
                     shr=kv["kr"] if shift > 0 else None)
        done += m


def requant_consts(e: CoreEmitter, consts: ConstPool, shift: int, bits: int, n0: int, where: str) -> dict:
    """Allocate (in ``e.arena``) and load the constant vectors of :func:`requant_range`."""
    left = max(-shift, 0)
    bound = max((1 << (bits - 1)) << left, (1 << (bits - 1)) + (1 << max(shift - 1, 0)))
    try:
        acc = acc_width(bound)
    except OverflowError:
        raise UnsupportedError(f"rescale by 2^{-shift} does not fit a 31-bit vector", where=where) from None
    ab = elem_bytes(acc)
    u = min(n0, 64)
    kv = {"acc": acc, "n": n0, "kl": e.arena.alloc(n0)}
    e.ld_rep(kv["kl"], consts.add(np.full(u, left), 8), u, n0)
    if shift > 0:
        kv["kh"], kv["kr"] = e.arena.alloc(n0 * ab), e.arena.alloc(n0 * ab)
        e.ld_rep(kv["kh"], consts.add(np.full(u, 1 << (shift - 1)), acc), u * ab, n0 * ab)
        e.ld_rep(kv["kr"], consts.add(np.full(u, shift), acc), u * ab, n0 * ab)
    return kv


# --------------------------------------------------------------------------- code generation


def copy_tasks(layer: CopyLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool, li: int = 0,
               pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):
    """One task per output piece (pieces split into contiguous ranges over the workers)."""
    if layer.out.bits > 8 or any(t.bits != layer.out.bits for t in layer.inputs):
        raise UnsupportedError("data movement of > 8-bit or mixed-width tensors", where=_where(layer))
    pieces = [(pc, _piece_ops(pc.parts, pc.q - pc.p)) for pc in _plan_pieces(layer)]
    outa, bits = layer.out.buf.addr + ofs, layer.out.bits
    max_out = max((pc.q - pc.p for pc, _ in pieces), default=1)
    max_in = max((hi - lo for _, ops in pieces for _, lo, hi, _, direct in ops if not direct), default=0)
    rq = {k for _, ops in pieces for k, _, _, _, direct in ops
          if not direct and (layer.shifts[k] or not _no_clamp(layer, k))}
    n0 = min(MAXLEN, max(max_in, 1))
    states = {} if states is None else states

    def setup(e: CoreEmitter, st: dict) -> None:
        if not st:  # per-core constants (e.arena: kept for the layer, or the run when interleaved)
            for k in sorted(rq):
                st[("rq", k)] = requant_consts(e, consts, layer.shifts[k], bits, n0, _where(layer))
        st["obuf"] = e.tarena.alloc(max_out)
        st["ibuf"] = e.tarena.alloc(max_in) if max_in else 0
        st["wide"] = e.tarena.alloc(n0 * 4) if rq else 0

    for core0, (i0, i1) in zip(workers, split(len(pieces), len(workers))):
        for pc, ops in pieces[i0:i1]:
            reads = [(layer.inputs[k].buf.addr + ofs + lo, layer.inputs[k].buf.addr + ofs + hi)
                     for k, lo, hi, _, _ in ops]
            core = pick(reads, core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, pc=pc, ops=ops) -> None:
                e = em[core]
                if "obuf" not in st or e.per_task:
                    setup(e, st)
                obuf, ibuf = st["obuf"], st["ibuf"]
                for k, lo, hi, rr, direct in ops:
                    src = layer.inputs[k].buf.addr + ofs
                    if direct:
                        for d, s, m in rr:
                            e.ld(obuf + d, src + s, m)
                        continue
                    e.ld(ibuf, src + lo, hi - lo)
                    if k in rq:
                        requant_range(e, ibuf, st["wide"], hi - lo, layer.shifts[k], layer.clamp, bits, st[("rq", k)])
                    emit_runs(e, obuf, ibuf, rr)
                e.st(outa + pc.p, obuf, pc.q - pc.p)

            yield Task(li, [core], [core], reads, [(outa + pc.p, outa + pc.q)], core, run, _where(layer),
                       image=image)
