"""PIM lowering of the lookup-table activations and of the elementwise product of activations.

**Lookup tables (Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu; SiLU = Sigmoid · x).** The
frontend gives these ops an integer table ``lut`` over the input codes.  The ISA has no
indexed load and its ``vsigm``/``vtanh`` use one fixed-point format per core (spec D9), which
does not match per-tensor scales, so nnisa evaluates the table *exactly* as a sum of
clamped, floored linear pieces (:func:`lut_segments`)::

    lut(x) = Σ_j  floor((m_j · clamp(x, a_j − 1, b_j) + c_j) / 2^k)

The pieces are found at compile time by a greedy, count-optimal segmentation (every piece is
the longest run on which integers ``m_j, c_j`` exist; the first piece absorbs the constant);
pieces on which the table is flat cost nothing.  Every piece is ``vrsl``, ``vrsu`` (the
clamp, widening to ``W`` bits), ``vvmul`` by ``m_j``, ``vvadd`` of ``c_j``, ``vvsra`` by ``k``
and one ``vvadd`` into the accumulator — about six vector instructions per piece and chunk;
8-bit Sigmoid/Tanh/HardSwish tables need 9–22 pieces.  The result is bit-identical to the
table by construction (checked for every code at compile time).

**Add/Sub with a constant or a broadcast operand** (biases after a token-wise MatMul,
positional embeddings, ``x − c``) use the same operand gathering: each operand is widened by
``vvsll`` with its input rescale shift, then ``vvadd``/``vvsub`` and the same requantization.

**Mul of two activations** (SiLU, squeeze-excite gates): ``vvmul`` widening to ``W`` bits
(``|a·b| ≤ 2^14``), then the frontend's ``clip(rshift_round(a·b, s))`` with ``vvadd``/``vvsra``
(or a pre-clamped ``vvsll`` for left shifts) and ``vrsl``/``vrsu``.  A broadcast operand
(``(1,C,1,1)`` gates, scalars) is gathered into the output's layout; when its pattern repeats
(period ``C`` in HWC storage) it is built once per core and reused for every chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ....core.errors import UnsupportedError
from ....frontend.quant import QNode, qrange
from .emit import MAXLEN, CoreEmitter
from .graph import TensorRef, acc_width
from .lower_extra import ExtraLayer, emit_runs, logical_to_storage, runs, storage_to_logical
from .lower_vec import requant_tail, split
from .memory_plan import ConstPool, elem_bytes
from .schedule import Task

_K_CHOICES = (0, 2, 4, 6, 8, 10)
_CONST_BUDGET = 32 * 1024      # local bytes of constant vectors per LUT layer and core


def _where(layer) -> str:
    return f"node {layer.name} ({layer.op})"


# --------------------------------------------------------------------------- segmentation


def _greedy(lut: np.ndarray, x0: int, k: int) -> list[tuple[int, int, int, int]]:
    """Longest-first pieces ``(a, b, m, c)``: ``floor((m·t + c) / 2^k) == lut(t)`` on ``[a − 1, b]``."""
    L = np.asarray(lut, np.int64)
    n = L.size
    lo = L << k
    hi = lo + (1 << k) - 1
    t = np.arange(x0, x0 + n, dtype=np.int64)
    out = []
    i = 1
    while i < n:
        s0 = i - 1
        mlo, mhi = -(1 << 62), 1 << 62
        j = i
        while j < n:   # add point j: every pair (t, j) bounds the slope
            d = j - np.arange(s0, j, dtype=np.int64)
            nlo = max(mlo, int((-((hi[s0:j] - lo[j]) // d)).max()))    # ceil((lo_j - hi_t) / d)
            nhi = min(mhi, int(((hi[j] - lo[s0:j]) // d).min()))
            if nlo > nhi:
                break
            mlo, mhi = nlo, nhi
            j += 1
        b = j - 1
        m = 0 if mlo <= 0 <= mhi else (mlo if mlo > 0 else mhi)
        c = int((lo[s0:b + 1] - m * t[s0:b + 1]).max())
        out.append((int(t[i]), int(t[b]), m, c))
        i = b + 1
    return out


@njit(cache=True, nogil=True)
def _greedy_into(lo, hi, x0, out):
    """Compiled :func:`_greedy` (same pieces, same integer floor divisions) into ``out (n, 4)``;
    returns the number of pieces."""
    n = len(lo)
    cnt = 0
    i = 1
    while i < n:
        s0 = i - 1
        mlo, mhi = -(1 << 62), 1 << 62
        j = i
        while j < n:
            nlo, nhi = mlo, mhi
            for t in range(s0, j):
                d = j - t
                v = -((hi[t] - lo[j]) // d)
                if v > nlo:
                    nlo = v
                w = (hi[j] - lo[t]) // d
                if w < nhi:
                    nhi = w
            if nlo > nhi:
                break
            mlo, mhi = nlo, nhi
            j += 1
        b = j - 1
        m = 0 if mlo <= 0 <= mhi else (mlo if mlo > 0 else mhi)
        c = lo[s0] - m * (x0 + s0)
        for t in range(s0 + 1, b + 1):
            c = max(c, lo[t] - m * (x0 + t))
        out[cnt, 0], out[cnt, 1], out[cnt, 2], out[cnt, 3] = x0 + i, x0 + b, m, c
        cnt += 1
        i = b + 1
    return cnt


def _greedy_fast(lut: np.ndarray, x0: int, k: int) -> list[tuple[int, int, int, int]]:
    """:func:`_greedy` by one compiled loop (tables of 8- and 16-bit codes: O(n²) in the worst case)."""
    L = np.asarray(lut, np.int64)
    lo = L << k
    out = np.zeros((max(L.size, 1), 4), np.int64)
    cnt = _greedy_into(lo, lo + (1 << k) - 1, np.int64(x0), out)
    return [tuple(r) for r in out[:cnt].tolist()]


def lut_segments(lut: np.ndarray, x0: int, fast: bool = True) -> tuple[int, list[tuple[int, int, int, int]]]:
    """Exact piecewise decomposition of an integer table over the codes ``x0, x0+1, ...``.

    Returns
    -------
    (k, pieces)
        ``lut(x) = Σ floor((m·clamp(x, a−1, b) + c) / 2^k)`` over ``pieces = [(a, b, m, c)]``
        for every code ``x`` (flat pieces dropped, the constant folded into the first piece;
        an empty list means ``lut`` is constant — then ``pieces`` is ``[(x0+1, x0+1, 0, lut[0]·2^k)]``).
        ``fast``: the compiled search (:func:`_greedy_fast`); ``False``: the numpy reference.
    """
    L = np.asarray(lut, np.int64)
    best = None
    greedy = _greedy_fast if fast else _greedy
    for k in _K_CHOICES:
        segs = [s for s in greedy(L, x0, k) if s[2] != 0]
        if best is None or len(segs) < len(best[1]):
            best = (k, segs)
    k, segs = best
    # telescoping: lut(x) = lut(x0) + Σ_j (g_j(clamp(x, a_j−1, b_j)) − lut(a_j − 1))
    base = int(L[0]) - sum(int(L[a - 1 - x0]) for a, _, _, _ in segs)
    if not segs:
        return k, [(x0 + 1, x0 + 1, 0, int(L[0]) << k)]
    a, b, m, c = segs[0]
    segs[0] = (a, b, m, c + (base << k))
    x = np.arange(x0, x0 + L.size, dtype=np.int64)
    got = sum((m * np.clip(x, a - 1, b) + c) >> k for a, b, m, c in segs)
    if not np.array_equal(got, L):  # pragma: no cover - the construction is exact
        raise AssertionError("internal: piecewise table decomposition is not exact")
    return k, segs


# --------------------------------------------------------------------------- layers


@dataclass
class LutLayer(ExtraLayer):
    """``out = lut[x − x0]`` elementwise (storage order kept), as :func:`lut_segments` pieces."""

    k: int = 0
    pieces: list = None
    x0: int = -128
    width: int = 16

    def tasks(self, em, workers, consts, li=0, pick=None, image=0, ofs=0, states=None):
        return lut_tasks(self, em, workers, consts, li, pick, image, ofs, states)


@dataclass
class MulLayer(ExtraLayer):
    """``out = clip(rshift_round(a · b, shift))`` (``kind`` mul) or ``clip(rshift_round((a << k0) ±
    (b << k1), shift))`` (``kind`` add/sub); operands gathered into the output's storage."""

    maps: list = None         # per operand: storage positions per output position (None = identity)
    periods: list = None      # per operand: repeat period of the map (0 = none)
    const: np.ndarray = None  # constant operand values (its own C-order storage), or None
    const_pos: int = -1       # operand index of the constant (-1: none)
    shift: int = 0
    clamp: tuple[int, int] = (-128, 127)
    width: int = 16
    kind: str = "mul"
    in_shifts: tuple[int, int] = (0, 0)   # add/sub: left shifts of the operands to the common scale
    half: int = 0                         # rounding constant added before the right shift
    const_bits: int = 8                   # width of the stored constant (wide: a folded Add/Sub constant)

    def tasks(self, em, workers, consts, li=0, pick=None, image=0, ofs=0, states=None):
        return mul_tasks(self, em, workers, consts, li, pick, image, ofs, states)


def lower_lut(n: QNode, x: TensorRef, new_tensor) -> LutLayer:
    out = new_tensor(n.outputs[0])
    out.perm, out.buf.hwc = x.perm, x.buf.hwc
    x0 = qrange(n.in_bits[0])[0]
    k, pieces = lut_segments(n.lut, x0)
    bound = max(abs(m) * (1 << (x.bits - 1)) + abs(c) for _, _, m, c in pieces)
    bound = max(bound, sum((bound >> k) + 1 for _ in pieces))
    try:
        width = max(16, acc_width(bound))
    except OverflowError:
        raise UnsupportedError("lookup-table pieces exceed 31 bits", where=f"node {n.name} ({n.op})") from None
    return LutLayer(n, [x], out, k=k, pieces=pieces, x0=x0, width=width)


def lower_mul(n: QNode, ins: list[TensorRef], new_tensor) -> MulLayer:
    where = f"node {n.name} ({n.op})"
    out = new_tensor(n.outputs[0])
    full = [t for t in ins if tuple(t.shape) == tuple(out.shape)]
    if full:  # keep the layout of a full-size operand: it is read as is
        out.perm, out.buf.hwc = full[0].perm, full[0].buf.hwc
    order = storage_to_logical(out)
    oshape = tuple(out.shape)
    maps, periods = [], []
    operands: list = list(ins)
    const = None
    if n.const is not None:
        const = np.asarray(n.const, np.int64)
        operands.insert(int(n.attrs.get("const_index", 1)), None)
    for t in operands:
        shape = tuple(const.shape) if t is None else tuple(t.shape)
        l2s = np.arange(int(np.prod(shape)), dtype=np.int64) if t is None else logical_to_storage(t)
        try:
            src = np.broadcast_to(l2s.reshape(shape), oshape).reshape(-1)[order]
        except ValueError:
            raise UnsupportedError(f"Mul operand of shape {shape} does not broadcast to {oshape}", where=where) from None
        ident = t is not None and np.array_equal(src, np.arange(src.size))
        maps.append(None if ident else src)
        periods.append(0 if ident else _period(src, out))
    r = n.requant
    if not r.is_pow2 or np.ndim(r.shift):
        raise UnsupportedError("Mul requant must be a per-tensor power of two", where=where)
    s = int(np.asarray(r.shift))
    ob = out.bits
    tmax = (1 << (ob - 1)) - 1
    bits = [8 if t is None else t.bits for t in operands]
    kind, shl = n.op.lower(), (0, 0)
    half = 1 << (s - 1) if s > 0 else 0
    cp = operands.index(None) if const is not None else -1
    const_bits = 8
    if kind == "mul":
        bound = (1 << (bits[0] - 1)) * (1 << (bits[1] - 1)) + half
    else:
        shl = tuple(_left_shift(r, where) for r in n.input_requants)
        bound = sum((1 << (b - 1)) << k for b, k in zip(bits, shl)) + half
        if cp >= 0 and s > 0:
            kind, shl, s, const = _fold_const(kind, shl, s, const, cp)
            half, const_bits = 0, 0
            bound = ((1 << (bits[1 - cp] - 1)) << shl[1 - cp]) + int(np.abs(const).max(initial=0))
    if s < 0:
        bound = max(bound, (tmax + 2) << -s)
    try:
        width = max(16, acc_width(bound))
    except OverflowError:
        raise UnsupportedError(f"{n.op} rescale by 2^{-s} does not fit a 31-bit vector", where=where) from None
    return MulLayer(n, list(ins), out, maps=maps, periods=periods, const=const, const_pos=cp, shift=s,
                    clamp=tuple(int(v) for v in n.clamp), width=width, kind=kind, in_shifts=shl, half=half,
                    const_bits=const_bits or width)


def _fold_const(kind: str, shl: tuple[int, int], s: int, const: np.ndarray, cp: int):
    """Fold the constant operand of an Add/Sub, its rescale and the rounding into one wide constant.

    ``floor((±x·2^kx + C + 2^(s−1)) / 2^s) = floor((±x·2^(kx−g) + q) / 2^(s−g))`` with ``g = min(kx, s)``
    and ``q = floor((C + 2^(s−1)) / 2^g)`` (the remainder below ``2^g`` never reaches the next
    multiple of ``2^(s−g)``): exact, and the activation is no longer shifted far left (a bias whose
    scale is much finer than the activation's would need ``x·2^23``, beyond 31 bits)."""
    a = 1 - cp
    g = min(shl[a], s)
    c = np.asarray(const, np.int64) << shl[cp]
    if kind == "sub" and cp == 1:      # x − C = x + (−C)
        c, kind = -c, "add"
    q = (c + (1 << (s - 1))) >> g
    new_shl = [0, 0]
    new_shl[a] = shl[a] - g
    return kind, tuple(new_shl), s - g, q


def _left_shift(r, where: str) -> int:
    """The left shift of a pow2 input rescale (to the common scale of an Add/Sub)."""
    s = int(np.asarray(r.shift))
    if not r.is_pow2 or np.ndim(r.shift) or s > 0:
        raise UnsupportedError("Add/Sub input rescale must be a per-tensor left shift", where=where)
    return -s


def _period(src: np.ndarray, out: TensorRef) -> int:
    """Smallest candidate period (1, channels, a row) after which ``src`` repeats, else 0."""
    h, w, c = out.buf.hwc
    for p in (1, c, w * c):
        if 0 < p <= MAXLEN and src.size % p == 0 and np.array_equal(src[p:], src[:-p]):
            return p
    return 0


# --------------------------------------------------------------------------- code generation


def _chunks(total: int, n0: int, workers: list[int]):
    pieces = [(p, min(total, p + n0)) for p in range(0, total, n0)]
    for core, (i0, i1) in zip(workers, split(len(pieces), len(workers))):
        yield core, pieces[i0:i1]


def lut_tasks(layer: LutLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool, li: int = 0,
              pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):
    """Per worker: the pieces' constant vectors once, then one task per chunk of elements."""
    x = layer.inputs[0]
    ib, ob, W = x.bits, layer.out.bits, layer.width
    if max(ib, ob) > 8:
        raise UnsupportedError("lookup table on > 8-bit tensors", where=_where(layer))
    wb = elem_bytes(W)
    total = int(np.prod(x.shape))
    mvals = sorted({m for _, _, m, _ in layer.pieces if m != 1})
    cvals = sorted({c for _, _, _, c in layer.pieces if c != 0})
    nvec = len(mvals) + len(cvals) + (1 if layer.k else 0)
    n0 = max(64, min(MAXLEN, total, _CONST_BUDGET // max(1, nvec * wb)))
    xhi = layer.x0 + (1 << ib) - 1
    xa, outa = x.buf.addr + ofs, layer.out.buf.addr + ofs
    states = {} if states is None else states

    def setup(e: CoreEmitter, st: dict) -> None:
        if not st:
            u = min(n0, 64)
            for key, vals in (("m", mvals), ("c", cvals), ("k", [layer.k] if layer.k else [])):
                for v in vals:
                    a = e.arena.alloc(n0 * wb)
                    e.ld_rep(a, consts.add(np.full(u, v), W), u * wb, n0 * wb)
                    st[(key, v)] = a
        st["x"] = e.tarena.alloc(n0)
        st["t"] = e.tarena.alloc(n0 * wb)
        st["acc"] = e.tarena.alloc(n0 * wb)
        st["y"] = e.tarena.alloc(n0)

    for core0, pieces in _chunks(total, n0, workers):
        for p, q in pieces:
            core = pick([(xa + p, xa + q)], core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, p=p, q=q) -> None:
                e = em[core]
                if "x" not in st or e.per_task:
                    setup(e, st)
                n = q - p
                xb, tb, acc, yb = st["x"], st["t"], st["acc"], st["y"]
                e.ld(xb, xa + p, n)
                for j, (a, b, m, c) in enumerate(layer.pieces):
                    t = acc if j == 0 else tb
                    e.setbw(ib, W)
                    if a - 1 > layer.x0:
                        e.vrs("vrsl", t, xb, a - 1, n)
                        if b < xhi:
                            e.setbw(W, W)
                            e.vrs("vrsu", t, t, b, n)
                    else:
                        e.vrs("vrsu", t, xb, min(b, xhi), n)
                    e.setbw(W, W)
                    if m != 1:
                        e.vv("vvmul", t, t, st[("m", m)], n)
                    if c:
                        e.vv("vvadd", t, t, st[("c", c)], n)
                    if layer.k:
                        e.vv("vvsra", t, t, st[("k", layer.k)], n)
                    if j:
                        e.vv("vvadd", acc, acc, t, n)
                e.setbw(W, ob)
                e.vrs("vrsl", yb, acc, qrange(ob)[0], n)
                e.st(outa + p, yb, n)

            yield Task(li, [core], [core], [(xa + p, xa + q)], [(outa + p, outa + q)], core, run, _where(layer),
                       image=image)


def mul_tasks(layer: MulLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool, li: int = 0,
              pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):
    """Per worker: per-operand set-up (constants, repeated gates) once, then one task per chunk."""
    ob, W, s = layer.out.bits, layer.width, layer.shift
    wb = elem_bytes(W)
    total = int(np.prod(layer.out.shape))
    ops: list = []   # per operand: (gmem base, bits, map, period)
    act = iter(layer.inputs)
    cb = elem_bytes(layer.const_bits)
    for i, (mp, per) in enumerate(zip(layer.maps, layer.periods)):
        if i == layer.const_pos:
            if cb > 1:    # a wide constant: its byte positions
                mp = (mp[:, None] * cb + np.arange(cb)).reshape(-1)
            ops.append((consts.add(layer.const.reshape(-1), layer.const_bits), layer.const_bits, mp, per))
        else:
            t = next(act)
            if t.bits > 8:
                raise UnsupportedError("Mul of > 8-bit tensors", where=_where(layer))
            ops.append((t.buf.addr + ofs, t.bits, mp, per))
    n0 = min(MAXLEN, total)
    pers = [per for _, _, mp, per in ops if mp is not None and per]
    for per in pers:   # chunks start on a period boundary: a repeated operand is the same every chunk
        n0 = max(per, n0 // per * per)
    outa = layer.out.buf.addr + ofs
    states = {} if states is None else states

    def setup(e: CoreEmitter, st: dict) -> None:
        if not st:
            u = min(n0, 64)
            if s > 0:
                st["kh"], st["kr"] = e.arena.alloc(n0 * wb), e.arena.alloc(n0 * wb)
                e.ld_rep(st["kh"], consts.add(np.full(u, layer.half), W), u * wb, n0 * wb)
                e.ld_rep(st["kr"], consts.add(np.full(u, s), W), u * wb, n0 * wb)
            elif s < 0:
                st["kl"] = e.arena.alloc(n0 * wb)
                e.ld_rep(st["kl"], consts.add(np.full(u, -s), W), u * wb, n0 * wb)
            if layer.kind != "mul":
                for i in (0, 1):
                    st[("ks", i)] = e.arena.alloc(n0)
                    e.ld_rep(st[("ks", i)], consts.add(np.full(u, layer.in_shifts[i]), 8), u, n0)
            for i, (base, b, mp, per) in enumerate(ops):
                if mp is not None and per:   # built once: one period gathered, then doubled
                    nb = n0 * elem_bytes(b)
                    a = st[("rep", i)] = e.arena.alloc(nb)
                    _gather(e, a, base, mp[:per * elem_bytes(b)], e.tarena)
                    have = per * elem_bytes(b)
                    while have < nb:
                        k = min(have, nb - have)
                        e.lmv(a + have, a, k)
                        have += k
        for i in range(2):
            st[("op", i)] = e.tarena.alloc(n0 * elem_bytes(ops[i][1]))
        st["p"] = e.tarena.alloc(n0 * wb)
        st["q"] = e.tarena.alloc(n0 * wb) if layer.kind != "mul" else 0
        st["y"] = e.tarena.alloc(n0)

    for core0, pieces in _chunks(total, n0, workers):
        for p, q in pieces:
            reads = []
            for base, b, mp, per in ops:
                eb = elem_bytes(b)
                if mp is None:
                    reads.append((base + p, base + q))
                else:
                    sub = mp[:per * eb] if per else mp[p * eb:q * eb]
                    reads.append((base + int(sub.min()), base + int(sub.max()) + 1))
            core = pick(reads, core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, p=p, q=q) -> None:
                e = em[core]
                if ("op", 0) not in st or e.per_task:
                    setup(e, st)
                n = q - p
                bufs = []
                for i, (base, b, mp, per) in enumerate(ops):
                    eb = elem_bytes(b)
                    if mp is None:
                        e.ld(st[("op", i)], base + p, n)
                        bufs.append(st[("op", i)])
                    elif per:
                        bufs.append(st[("rep", i)])
                    else:
                        _gather(e, st[("op", i)], base, mp[p * eb:q * eb], e.tarena)
                        bufs.append(st[("op", i)])
                P, y = st["p"], st["y"]
                e.setbw(8, W)
                if layer.kind == "mul":
                    e.vv("vvmul", P, bufs[0], bufs[1], n)
                    if s:
                        e.setbw(W, W)
                else:
                    terms = [P, st["q"]]
                    for i in (0, 1):
                        if ops[i][1] > 8:    # a wide (folded) constant is already at W bits
                            terms[i] = bufs[i]
                        else:
                            e.vv("vvsll", terms[i], bufs[i], st[("ks", i)], n)
                    e.setbw(W, W)
                    e.vv("vvadd" if layer.kind == "add" else "vvsub", P, terms[0], terms[1], n)
                requant_tail(e, P, y, n, W, ob, layer.clamp, half=st.get("kh"), shr=st.get("kr"),
                             left=st.get("kl"))
                e.st(outa + p, y, n)

            yield Task(li, [core], [core], reads, [(outa + p, outa + q)], core, run, _where(layer),
                       image=image)


def _gather(e: CoreEmitter, dst: int, base: int, pos: np.ndarray, arena) -> None:
    """``dst[i] = GMem[base + pos[i]]``: the range loaded once into scratch, then local copies."""
    lo, hi = int(pos.min()), int(pos.max()) + 1
    rr = runs(pos - lo)
    if len(rr) <= 4 and all(st == 1 for _, _, _, st in rr):
        for d, s, n, _ in rr:
            e.ld(dst + d, base + lo + s, n)
        return
    top = arena.top
    tmp = arena.alloc(hi - lo)
    e.ld(tmp, base + lo, hi - lo)
    emit_runs(e, dst, tmp, rr)
    arena.top = top   # scratch released (the copies above have been emitted)
