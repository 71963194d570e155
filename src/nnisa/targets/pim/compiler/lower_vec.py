"""Code generation of the vector layers: MaxPool/AveragePool, GlobalAveragePool, Add/Sub, Relu/Clip.

Work is split into contiguous pieces (output rows, channel ranges or element chunks) spread
over the *worker* cores (the cores that hold array groups), so the vector unit of every core
is used.  All data is int8 in HWC order in global memory.

* MaxPool: the input rows of one output row are loaded once; each output pixel is a chain of
  ``vvmax`` over its valid taps (padding never contributes), with the tap address taken as a
  per-tap base register plus an element offset ``ox·sw·C`` (no address set-up per tap).
* AveragePool: the counted part of each window is gathered into a contiguous buffer
  ``[ny][nx][C]`` (zeros by ``lldi`` where padding counts), then one ``vavg`` per channel with
  stride ``C`` and ``len = count``; ``vavg`` rounds half away from zero, exactly the frontend's
  ``div_round_away``.
* GlobalAveragePool: one ``vavg`` per channel over ``H·W`` elements with stride ``C``.
* Add/Sub: ``vvsll`` widens each input to the accumulator width while applying its rescale
  shift, ``vvadd``/``vvsub``, rounding constant, ``vvsra``, ``vrsl``/``vrsu`` saturation.
* Relu/Clip: ``vrsl``/``vrsu`` at 8 bits.
"""

from __future__ import annotations

import numpy as np

from ....core.errors import UnsupportedError
from .emit import MAXLEN, CoreEmitter
from .graph import ClampLayer, EltLayer, GapLayer, PoolLayer
from .memory_plan import ConstPool, elem_bytes
from .schedule import Task


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` items in at most ``parts`` contiguous, balanced, non-empty ranges."""
    parts = max(1, min(parts, n))
    base, extra = divmod(n, parts)
    out, p = [], 0
    for i in range(parts):
        q = p + base + (1 if i < extra else 0)
        out.append((p, q))
        p = q
    return out


def _where(layer) -> str:
    return f"node {layer.name} ({layer.op})"


def emit_pool(layer: PoolLayer, em: dict[int, CoreEmitter], workers: list[int], ofs: int = 0) -> None:
    for t in pool_tasks(layer, em, workers, ofs=ofs):
        t.run()


def pool_tasks(layer: PoolLayer, em: dict[int, CoreEmitter], workers: list[int], li: int = 0, pick=None,
               image: int = 0, ofs: int = 0, states: dict | None = None):
    """One task per output row (rows split into contiguous ranges over the workers; with
    ``pick(reads, core)``, the element schedule moves a row to the core that produced its input).

    ``ofs``: the image's activation offset (streams); ``states``: per-core state kept across the
    images of a stream."""
    h, w, c = layer.in_hwc
    oh, ow = layer.out_hw
    kh, kw = layer.kernel
    sh, sw = layer.strides
    dh, dw = layer.dilations
    pt, pl = layer.pads[0], layer.pads[1]
    bits = layer.out.bits
    if bits > 8:
        raise UnsupportedError("pooling of > 8-bit tensors", where=_where(layer))
    ina, outa = layer.inputs[0].buf.addr + ofs, layer.out.buf.addr + ofs
    rowb = w * c
    span = (kh - 1) * dh + 1
    states = {} if states is None else states
    for core0, (r0, r1) in zip(workers, split(oh, len(workers))):

        def setup(core, st) -> None:
            e = em[core]
            st["inbuf"] = e.tarena.alloc(span * rowb)
            st["obuf"] = e.tarena.alloc(ow * c)
            st["gbuf"] = e.tarena.alloc(kh * kw * c) if layer.kind == "avg" else None
            st["down"] = e.tarena.alloc(rowb) if layer.kind == "max" else None
            e.setbw(bits, bits)

        for oy in range(r0, r1):
            y0 = oy * sh - pt
            ya, yb = max(0, y0), min(h, y0 + span)

            reads = [(ina + ya * rowb, ina + yb * rowb)] if ya < yb else []
            core = pick(reads, core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, setup=setup, oy=oy, y0=y0, ya=ya, yb=yb) -> None:
                if not st or em[core].per_task:
                    setup(core, st)
                e = em[core]
                inbuf, obuf, gbuf = st["inbuf"], st["obuf"], st["gbuf"]
                if ya < yb:
                    e.ld(inbuf + (ya - y0) * rowb, ina + ya * rowb, (yb - ya) * rowb)
                if layer.kind == "max":
                    max_pool_row(e, layer, lambda iy: inbuf + (iy - y0) * rowb, y0, st["down"], rowb, 0, obuf,
                                 range(ow))
                else:
                    for ox in range(ow):
                        _avg_pixel(e, layer, inbuf, gbuf, obuf, y0, ox * sw - pl, oy, ox)
                e.st(outa + oy * ow * c, obuf, ow * c)

            yield Task(li, [core], [core], reads, [(outa + oy * ow * c, outa + (oy + 1) * ow * c)], core, run,
                       _where(layer), image=image)


def max_pool_row(e: CoreEmitter, layer: PoolLayer, row_addr, y0: int, down: int, width: int, col0: int,
                 obuf: int, oxs) -> None:
    """Max-pooled pixels ``oxs`` of the output row whose window starts at input row ``y0``,
    computed separably (max is associative, so the values are those of a per-pixel chain): a
    ``vvmax`` chain down the valid input rows into ``down`` (``row_addr(iy)``: the local address
    of input row ``iy``, ``width`` bytes from input column ``col0``), then per pixel a chain
    across its valid columns of that row, with tap address = per-tap base register + element
    offset ``ox·sw·C``; pixel ``ox`` goes to ``obuf + ox·C``.  A 3×3 window: 2 ``vvmax`` per pixel
    and 2 per row instead of 8 per pixel."""
    h, w, c = layer.in_hwc
    kh, kw = layer.kernel
    dh, dw = layer.dilations
    sw, pl = layer.strides[1], layer.pads[1]
    rows = [row_addr(iy) for iy in (y0 + ky * dh for ky in range(kh)) if 0 <= iy < h]
    if not rows:
        raise UnsupportedError("max-pool window without any input element", where=_where(layer))
    src = rows[0]
    if len(rows) > 1:
        e.vv("vvmax", down, rows[0], rows[1], width)
        for a in rows[2:]:
            e.vv("vvmax", down, down, a, width)
        src = down
    base = src - col0 * c
    for ox in oxs:
        x0, o = ox * sw - pl, ox * sw * c
        taps = [base + (kx * dw - pl) * c for kx in range(kw) if 0 <= x0 + kx * dw < w]
        if not taps:
            raise UnsupportedError("max-pool window without any input element", where=_where(layer))
        d = obuf + ox * c
        if len(taps) == 1:
            e.lmv(d, taps[0] + o, c)
            continue
        e.lreg(d)
        r0, r1 = e.lreg(taps[0]), e.lreg(taps[1])
        rd = e.lreg(d)
        e.vv_ofs("vvmax", rd, r0, r1, c, 6, o)
        for b in taps[2:]:
            rb = e.lreg(b)
            rd = e.lreg(d)
            e.vv_ofs("vvmax", rd, rd, rb, c, 4, o)


def _avg_pixel(e: CoreEmitter, layer: PoolLayer, inbuf: int, gbuf: int, obuf: int, y0: int, x0: int,
               oy: int, ox: int) -> None:
    h, w, c = layer.in_hwc
    kh, kw = layer.kernel
    pt, pl, pb, pr = layer.pads
    if layer.count_include_pad:
        ylo, yhi, xlo, xhi = -pt, h + pb, -pl, w + pr
    else:
        ylo, yhi, xlo, xhi = 0, h, 0, w
    if layer.dilations != (1, 1):
        _avg_pixel_dilated(e, layer, inbuf, gbuf, obuf, y0, x0, oy, ox, (ylo, yhi, xlo, xhi))
        return
    ya, yb = max(y0, ylo), min(y0 + kh, yhi)
    xa, xb = max(x0, xlo), min(x0 + kw, xhi)
    ny, nx = yb - ya, xb - xa
    count = ny * nx
    if count != int(layer.counts[oy, ox]):
        raise UnsupportedError("AveragePool divisor layout not supported (ceil_mode overhang)", where=_where(layer))
    if count > MAXLEN:
        raise UnsupportedError("AveragePool window larger than 2047 elements", where=_where(layer))
    rowb = w * c
    for i, iy in enumerate(range(ya, yb)):
        dst = gbuf + i * nx * c
        if not 0 <= iy < h:
            e.lldi(dst, 0, nx * c)
            continue
        ia, ib = max(xa, 0), min(xb, w)
        if ia > xa:
            e.lldi(dst, 0, (ia - xa) * c)
        if ib > ia:
            e.lmv(dst + (ia - xa) * c, inbuf + (iy - y0) * rowb + ia * c, (ib - ia) * c)
        if xb > ib:
            e.lldi(dst + (ib - xa) * c, 0, (xb - ib) * c)
    for ch in range(c):
        e.vavg(obuf + ox * c + ch, gbuf, c, count, ch)


def _avg_pixel_dilated(e: CoreEmitter, layer: PoolLayer, inbuf: int, gbuf: int, obuf: int, y0: int, x0: int,
                       oy: int, ox: int, counted: tuple[int, int, int, int]) -> None:
    """A dilated window: its counted taps gathered one by one (``C`` bytes each, ``lldi 0`` for a
    counted padding tap) into ``[count][C]``, then ``vavg`` per channel."""
    h, w, c = layer.in_hwc
    ylo, yhi, xlo, xhi = counted
    (kh, kw), (dh, dw) = layer.kernel, layer.dilations
    ys = [y0 + ky * dh for ky in range(kh) if ylo <= y0 + ky * dh < yhi]
    xs = [x0 + kx * dw for kx in range(kw) if xlo <= x0 + kx * dw < xhi]
    count = len(ys) * len(xs)
    if count != int(layer.counts[oy, ox]) or count > MAXLEN:
        raise UnsupportedError(f"AveragePool window of {count} taps (divisor {int(layer.counts[oy, ox])}, at most "
                               f"{MAXLEN})", where=_where(layer))
    dst = gbuf
    for iy in ys:
        for ix in xs:
            if 0 <= iy < h and 0 <= ix < w:
                e.lmv(dst, inbuf + (iy - y0) * w * c + ix * c, c)
            else:
                e.lldi(dst, 0, c)
            dst += c
    for ch in range(c):
        e.vavg(obuf + ox * c + ch, gbuf, c, count, ch)


def emit_gap(layer: GapLayer, em: dict[int, CoreEmitter], workers: list[int], ofs: int = 0) -> None:
    for t in gap_tasks(layer, em, workers, ofs=ofs):
        t.run()


def gap_tasks(layer: GapLayer, em: dict[int, CoreEmitter], workers: list[int], li: int = 0, image: int = 0,
              ofs: int = 0):
    h, w, c = layer.in_hwc
    n = h * w
    if n > MAXLEN:
        raise UnsupportedError(f"GlobalAveragePool over {n} > 2047 positions", where=_where(layer))
    bits = layer.out.bits
    ina, outa = layer.inputs[0].buf.addr + ofs, layer.out.buf.addr + ofs
    for core, (c0, c1) in zip(workers, split(c, max(1, min(len(workers), c // 32 or 1)))):
        def run(core=core, c0=c0, c1=c1) -> None:
            e = em[core]
            inbuf = e.tarena.alloc(n * c)
            obuf = e.tarena.alloc(c1 - c0)
            e.ld(inbuf, ina, n * c)
            e.setbw(bits, bits)
            for ch in range(c0, c1):
                e.vavg(obuf + ch - c0, inbuf, c, n, ch)
            e.st(outa + c0, obuf, c1 - c0)

        yield Task(li, [core], [core], [(ina, ina + n * c)], [(outa + c0, outa + c1)], core, run, _where(layer),
                   image=image)


def _chunks(total: int, workers: list[int], chunk: int):
    pieces = [(p, min(total, p + chunk)) for p in range(0, total, chunk)]
    per = split(len(pieces), len(workers))
    for core, (i0, i1) in zip(workers, per):
        yield core, pieces[i0:i1]


def emit_elt(layer: EltLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool,
             ofs: int = 0) -> None:
    for t in elt_tasks(layer, em, workers, consts, ofs=ofs):
        t.run()


def elt_tasks(layer: EltLayer, em: dict[int, CoreEmitter], workers: list[int], consts: ConstPool, li: int = 0,
              pick=None, image: int = 0, ofs: int = 0, states: dict | None = None):
    """Per worker: constants once, then one task per chunk of <= 2047 elements."""
    a, b = layer.inputs
    ab, bb, ob, acc = a.bits, b.bits, layer.out.bits, layer.acc_bits
    if max(ab, bb, ob) > 8:
        raise UnsupportedError("element-wise op on > 8-bit tensors", where=_where(layer))
    accb = elem_bytes(acc)
    h, w, c = layer.out.buf.hwc
    total = h * w * c
    chunk = min(MAXLEN, total)
    check_elt_shift(layer.shift, ob, acc, _where(layer))
    outa = layer.out.buf.addr + ofs
    aa, ba = a.buf.addr + ofs, b.buf.addr + ofs
    states = {} if states is None else states

    def talloc(core, st, n0) -> None:
        e = em[core]
        st["abuf"], st["bbuf"] = e.tarena.alloc(n0), e.tarena.alloc(n0)
        st["A"], st["B"] = e.tarena.alloc(n0 * accb), e.tarena.alloc(n0 * accb)
        st["obuf"] = e.tarena.alloc(n0)

    for core0, pieces in _chunks(total, workers, chunk):

        def setup(core, st, n0) -> None:
            talloc(core, st, n0)
            st.update(elt_consts(em[core], consts, n0, layer.in_shifts, layer.shift, acc))

        for p, q in pieces:
            reads = [(aa + p, aa + q), (ba + p, ba + q)]
            core = pick(reads, core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, setup=setup, p=p, q=q,
                    n0=chunk if pick else pieces[0][1] - pieces[0][0]) -> None:
                if not st:
                    setup(core, st, n0)
                elif em[core].per_task:
                    talloc(core, st, n0)
                e = em[core]
                abuf, bbuf, A, B, obuf = st["abuf"], st["bbuf"], st["A"], st["B"], st["obuf"]
                n = q - p
                e.ld(abuf, aa + p, n)
                e.ld(bbuf, ba + p, n)
                elt_arith(e, st, obuf, abuf, bbuf, A, B, n, layer.sub, layer.shift, layer.clamp, acc, ob)
                e.st(outa + p, obuf, n)

            yield Task(li, [core], [core], reads, [(outa + p, outa + q)], core, run, _where(layer), image=image)


def check_elt_shift(shift: int, ob: int, acc: int, where: str) -> None:
    """The Add requant's left shift must keep the pre-clamped value inside the accumulator."""
    shl = max(-shift, 0)
    if shl and (1 << (ob - 1)) << shl >= 1 << (acc - 1):
        raise UnsupportedError("Add requant left shift too large", where=where)


def elt_consts(e: CoreEmitter, consts: ConstPool, n0: int, in_shifts: tuple[int, int], shift: int,
               acc: int) -> dict[str, int]:
    """Per-core constant vectors of ``n0`` elements for :func:`elt_arith` (in ``e.arena``):
    the two input shifts (8-bit), the rounding constant and the shift amounts (``acc`` bits).
    Each is loaded as 64 elements from global memory and replicated locally."""
    accb = elem_bytes(acc)
    shr, shl = max(shift, 0), max(-shift, 0)
    half = (1 << (shr - 1)) if shr > 0 else 0
    u = min(n0, 64)
    st = {"ksa": e.arena.alloc(n0), "ksb": e.arena.alloc(n0), "kr": e.arena.alloc(n0 * accb)}
    e.ld_rep(st["ksa"], consts.add(np.full(u, in_shifts[0]), 8), u, n0)
    e.ld_rep(st["ksb"], consts.add(np.full(u, in_shifts[1]), 8), u, n0)
    e.ld_rep(st["kr"], consts.add(np.full(u, half), acc), u * accb, n0 * accb)
    if shr:
        st["ks"] = e.arena.alloc(n0 * accb)
        e.ld_rep(st["ks"], consts.add(np.full(u, shr), acc), u * accb, n0 * accb)
    if shl:
        st["kl"] = e.arena.alloc(n0 * accb)
        e.ld_rep(st["kl"], consts.add(np.full(u, shl), acc), u * accb, n0 * accb)
    return st


def elt_arith(e: CoreEmitter, k: dict[str, int], out: int, abuf: int, bbuf: int, A: int, B: int, n: int,
              sub: bool, shift: int, clamp: tuple[int, int], acc: int, ob: int) -> None:
    """``out ← sat(rshift_round((a << ka) ± (b << kb), shift))`` for ``n`` int8 elements
    (the frontend's Add/Sub); ``k`` = the constants of :func:`elt_consts`, ``A``/``B`` scratch
    vectors at accumulator width."""
    shr, shl = max(shift, 0), max(-shift, 0)
    e.setbw(8, acc)
    e.vv("vvsll", A, abuf, k["ksa"], n)
    e.vv("vvsll", B, bbuf, k["ksb"], n)
    e.setbw(acc, acc)
    e.vv("vvsub" if sub else "vvadd", A, A, B, n)
    requant_tail(e, A, out, n, acc, ob, clamp, half=k["kr"] if shr else None, shr=k["ks"] if shr else None,
                 left=k["kl"] if shl else None)


def requant_tail(e: CoreEmitter, A: int, out: int, n: int, acc: int, ob: int, clamp: tuple[int, int], *,
                 half: int | None = None, shr: int | None = None, left: int | None = None) -> None:
    """``out ← clip(A', *clamp)`` at ``ob`` bits from the ``acc``-bit vector ``A`` (bit widths
    already ``acc, acc``), where ``A'`` is ``(A + half) >> shr`` (the frontend's rounding shift;
    ``half``/``shr`` are constant vectors) or ``sat(A) << left`` (saturated to the int range first,
    so the left shift cannot wrap), or ``A`` itself.  Shared by every requantizing vector layer."""
    lo, hi = clamp
    tmax = (1 << (ob - 1)) - 1
    if half is not None:
        e.vv("vvadd", A, A, half, n)
        e.vv("vvsra", A, A, shr, n)
    if left is not None:
        e.vrs("vrsl", A, A, -tmax - 2, n)
        e.vrs("vrsu", A, A, tmax + 1, n)
        e.vv("vvsll", A, A, left, n)
    e.setbw(acc, ob)
    e.vrs("vrsl", out, A, lo, n)
    if hi < tmax:
        e.setbw(ob, ob)
        e.vrs("vrsu", out, out, hi, n)


def emit_clamp(layer: ClampLayer, em: dict[int, CoreEmitter], workers: list[int], ofs: int = 0) -> None:
    for t in clamp_tasks(layer, em, workers, ofs=ofs):
        t.run()


def clamp_tasks(layer: ClampLayer, em: dict[int, CoreEmitter], workers: list[int], li: int = 0, pick=None,
                image: int = 0, ofs: int = 0, states: dict | None = None):
    x = layer.inputs[0]
    bits = layer.out.bits
    if bits > 8 or x.bits != bits:
        raise UnsupportedError("Relu/Clip changing the element width", where=_where(layer))
    h, w, c = x.buf.hwc
    total = h * w * c
    lo, hi = layer.clamp
    tmax = (1 << (bits - 1)) - 1
    xa, outa = x.buf.addr + ofs, layer.out.buf.addr + ofs
    states = {} if states is None else states
    chunk = min(MAXLEN, total)
    for core0, pieces in _chunks(total, workers, chunk):
        for p, q in pieces:
            core = pick([(xa + p, xa + q)], core0) if pick else core0
            st = states.setdefault(core, {})

            def run(core=core, st=st, p=p, q=q, n0=chunk if pick else pieces[0][1] - pieces[0][0]) -> None:
                e = em[core]
                if not st or e.per_task:
                    st["buf"] = e.tarena.alloc(n0)
                    e.setbw(bits, bits)
                buf = st["buf"]
                e.ld(buf, xa + p, q - p)
                e.vrs("vrsl", buf, buf, lo, q - p)
                if hi < tmax:
                    e.vrs("vrsu", buf, buf, hi, q - p)
                e.st(outa + p, buf, q - p)

            yield Task(li, [core], [core], [(xa + p, xa + q)], [(outa + p, outa + q)], core, run, _where(layer),
                       image=image)
