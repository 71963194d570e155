"""Code generation of Conv / Gemm layers (batch schedule, spec §11.3 item 2).

Per replica and column unit, output windows are processed in *batches* of ``B`` consecutive
output positions (HWC order, so the batch's outputs are one contiguous store).  Per window,
every core holding AGs of the unit loads the part of the HWC im2col patch its AGs read
(``kh`` contiguous rows of ``kw·C`` bytes; padding filled by ``lldi``) and issues one
``mvmul`` per AG (``setbw a, acc``: exact, the accumulator width ``acc`` is chosen so that it
cannot wrap).  Per batch:

* ``setbw acc, acc``; ``vvadd`` the partial sums of the core's AGs (whole batch at once);
* a core that is not the unit's *home* sends its sum to the home core (``send``/``recv``), or,
  without core-to-core links, stores it to a global scratch area that the home core reads
  after a barrier;
* the home core adds the other cores' sums, then one ``vvadd`` of the constant vector
  ``bias + 2^(s-1)`` (bias and rounding constant merged: the addition is exact), ``vvsra`` by
  the shift vector ``s`` (round half up, identical to the frontend's ``rshift_round``); for
  channels with a left shift, a pre-clamp to ``[-2^(b-1)-1, 2^(b-1)]`` and ``vvsll``;
* ``setbw acc, b``; ``vrsl`` with bound ``lo`` (−128, or 0 = fused ReLU) saturates to ``b``
  bits; ``vrsu`` with ``hi`` only when the clamp's upper bound is below the type maximum;
* one ``st`` of the batch's outputs.
"""

from __future__ import annotations

import numpy as np

from .emit import MAXLEN, CoreEmitter
from .graph import MatLayer
from .mapping import units
from .memory_plan import ConstPool, elem_bytes


def _patch_taps(layer: MatLayer, oy: int, ox: int, in_addr: int, rw: int | None = None) -> list[tuple[int, int, int]]:
    """Segments ``(patch_offset, address or -1 for zeros, size)`` of one window's patch; input
    pixel ``(iy, ix)`` is at ``in_addr + (iy · rw + ix) · C`` (``rw``: row width, default the
    image's)."""
    h, w, c = layer.in_hwc
    kh, kw = layer.kernel
    sh, sw = layer.strides
    dh, dw = layer.dilations
    pt, pl = layer.pads[0], layer.pads[1]
    segs: list[list[int]] = []
    for ky in range(kh):
        iy = oy * sh - pt + ky * dh
        for kx in range(kw):
            ix = ox * sw - pl + kx * dw
            off = (ky * kw + kx) * c
            g = in_addr + (iy * (w if rw is None else rw) + ix) * c if (0 <= iy < h and 0 <= ix < w) else -1
            if segs:
                lo, lg, ls = segs[-1]
                if lo + ls == off and ((g < 0 and lg < 0) or (g >= 0 and lg >= 0 and lg + ls == g)):
                    segs[-1][2] += c
                    continue
            segs.append([off, g, c])
    return [tuple(s) for s in segs]


def _clip_segments(segs, k0: int, k1: int):
    out = []
    for off, g, size in segs:
        a, b = max(off, k0), min(off + size, k1)
        if a < b:
            out.append((a - k0, -1 if g < 0 else g + (a - off), b - a))
    return out


class MatCodegen:
    """Emits one MatLayer onto the per-core emitters."""

    def __init__(self, layer: MatLayer, em: dict[int, CoreEmitter], consts: ConstPool, *,
                 links: bool, batch: int, scratch_alloc):
        self.l = layer
        self.em = em
        self.consts = consts
        self.links = links
        self.batch = batch
        self.scratch_alloc = scratch_alloc
        self.ab = layer.inputs[0].bits
        self.ob = layer.conv_bits or layer.out.bits     # the conv's own output (before epilogues)
        self.acc = layer.acc_bits
        self.accb = elem_bytes(self.acc)
        self.ofs = 0               # byte offset of the current image's activations (streams)
        self._const_cache: dict[tuple, dict] = {}
        self._templates: dict[tuple, list] = {}
        self._units: dict[tuple, dict] = {}   # per-unit state (bands, constants), shared by images
        self.deferred: list = []   # gmem-mode reductions run after a barrier
        self.c2c = None            # core-to-core transport plan (``c2c.py``), set by the driver
        self.post = None           # fused epilogue (add / pool / gap, ``lower_fused.py``)
        if layer.fused:
            from .lower_fused import Epilogue
            self.post = Epilogue(self)

    @property
    def in_addr(self) -> int:
        return self.l.inputs[0].buf.addr + self.ofs

    @property
    def out_addr(self) -> int:
        return self.l.out.buf.addr + self.ofs

    # ------------------------------------------------------------------ constants
    def _consts(self, core: int, c0: int, c1: int, b: int) -> dict:
        key = (core, c0, c1, b)
        got = self._const_cache.get(key)
        if got is not None:
            return got
        l = self.l
        s = l.shift[c0:c1]
        shr = np.maximum(s, 0)
        shl = np.maximum(-s, 0)
        half = np.where(shr > 0, np.left_shift(1, np.maximum(shr - 1, 0)), 0)
        e = self.em[core]
        n = (c1 - c0) * b
        vecs = [("bias", l.bias[c0:c1] + half)]
        if shr.any():
            vecs.append(("shr", shr))
        if shl.any():
            vecs.append(("shl", shl))
        # all vectors of the unit in one contiguous local block, fetched with as few global
        # requests as possible (global memory is the chip's shared bottleneck)
        one = (c1 - c0) * self.accb
        size = n * self.accb
        base = e.arena.alloc(len(vecs) * size)
        out = {name: base + j * size for j, (name, _) in enumerate(vecs)}
        if b > 1 and one * b > 512:
            # one copy of each vector, moved to its slot, then replicated locally by doubling
            e.ld(base, self.consts.add(np.concatenate([v for _, v in vecs]), self.acc), len(vecs) * one)
            for j in range(len(vecs) - 1, 0, -1):
                e.lmv(base + j * size, base + j * one, one)
            for j in range(len(vecs)):
                have = one
                while have < size:
                    k = min(have, size - have)
                    e.lmv(base + j * size + have, base + j * size, k)
                    have += k
        else:
            e.ld(base, self.consts.add(np.concatenate([np.tile(v, b) for _, v in vecs]), self.acc), len(vecs) * size)
        self._const_cache[key] = out
        return out

    # ------------------------------------------------------------------ patch loading
    def _load_patch(self, e: CoreEmitter, p: int, patch: int, k0: int, k1: int) -> None:
        l = self.l
        ow = l.out_hw[1]
        oy, ox = divmod(p, ow)
        h, w, c = l.in_hwc
        kh, kw = l.kernel
        sh, sw = l.strides
        dh, dw = l.dilations
        iy0, ix0 = oy * sh - l.pads[0], ox * sw - l.pads[1]
        interior = iy0 >= 0 and ix0 >= 0 and iy0 + (kh - 1) * dh < h and ix0 + (kw - 1) * dw < w
        if interior:
            key = (k0, k1)
            tpl = self._templates.get(key)
            if tpl is None:
                # relative to the window's top-left input pixel
                tpl = self._templates[key] = self._interior_template(k0, k1)
            base = self.in_addr + (iy0 * w + ix0) * c
            for off, g, size in tpl:
                e.ld(patch + off, base + g, size)
            return
        for off, g, size in _clip_segments(_patch_taps(l, oy, ox, self.in_addr), k0, k1):
            if g < 0:
                e.lldi(patch + off, 0, size)
            else:
                e.ld(patch + off, g, size)

    # ------------------------------------------------------------------ band reuse
    BAND_LIMIT = 1 << 16

    def _band_alloc(self, e: CoreEmitter, k0: int = 0, k1: int | None = None, nwin: int | None = None,
                    cols: tuple[int, int] | None = None):
        """A buffer for ``span`` input rows (sliding-window reuse), or None (direct patch loads).

        Direct per-window loads of the core's patch part ``[k0, k1)`` are chosen when they move
        fewer bytes through global memory than the band would (cores holding a few row slices
        of a large patch).  ``cols``: the input columns the replica reads (a tile), default all."""
        l = self.l
        h, w, c = l.in_hwc
        x0, x1 = cols if cols is not None else (0, w)
        span = (l.kernel[0] - 1) * l.dilations[0] + 1
        if l.windows == 1 or span * (x1 - x0) * c > self.BAND_LIMIT:
            return None
        if k1 is not None and nwin:
            ow = l.out_hw[1]
            band_bytes = span * w * c + (nwin / ow) * l.strides[0] * w * c
            if nwin * (k1 - k0) < band_bytes:
                return None
        # [address, first row, end row, spare buffer, first column, row width]: when the window
        # moves down, the rows still needed are copied (lmv, local) into the spare buffer and only
        # the new rows are loaded from global memory, then the buffers swap
        rb = span * (x1 - x0) * c
        return [e.arena.alloc(rb), -1, -1, e.arena.alloc(rb), x0, x1 - x0]

    def _geometry(self) -> tuple:
        """The layer's window geometry (constant; read once per window by the band loader):
        ``(ow, h, w, c, sh, sw, pt, pl, span, x_span)`` with ``x_span`` = the last tap's
        column offset ``(kw - 1) · dw``."""
        g = self.__dict__.get("_geom")
        if g is None:
            l = self.l
            h, w, c = l.in_hwc
            g = self._geom = (l.out_hw[1], h, w, c, l.strides[0], l.strides[1], l.pads[0], l.pads[1],
                              (l.kernel[0] - 1) * l.dilations[0] + 1, (l.kernel[1] - 1) * l.dilations[1])
        return g

    def _load_patch_band(self, e: CoreEmitter, band: list, p: int, patch: int, k0: int, k1: int) -> None:
        """Patch from a local band of input rows: rows are loaded from global memory once per
        band (one ``ld``), each window's patch is assembled with ``lmv`` (local) and ``lldi``."""
        ow, h, w, c, sh, sw, pt, pl, span, x_span = self.__dict__.get("_geom") or self._geometry()
        oy, ox = divmod(p, ow)
        iy0, ix0 = oy * sh - pt, ox * sw - pl
        need0, need1 = max(0, iy0), min(h, iy0 + span)
        baddr, by0, by1 = band[0], band[1], band[2]
        x_lo, rw = band[4], band[5]          # the band's first input column and row width
        rb = rw * c
        if need0 < need1 and not (by0 <= need0 and need1 <= by1):
            nb0, nb1 = need0, min(h, need0 + span)
            if by0 <= nb0 < by1 < nb1:
                spare = band[3]
                e.lmv(spare, baddr + (nb0 - by0) * rb, (by1 - nb0) * rb)
                self._ld_rows(e, spare + (by1 - nb0) * rb, by1, nb1, x_lo, rw)
                band[0], band[3] = spare, baddr
                baddr = spare
            else:
                self._ld_rows(e, baddr, nb0, nb1, x_lo, rw)
            by0, by1 = nb0, nb1
            band[1], band[2] = by0, by1
        if iy0 >= 0 and ix0 >= 0 and iy0 + span <= h and ix0 + x_span < w:
            tpl = self._templates.get((k0, k1, rw))
            if tpl is None:
                tpl = self._templates[(k0, k1, rw)] = self._interior_template(k0, k1, rw)
            e.lmv_segments(patch, baddr + ((iy0 - by0) * rw + ix0 - x_lo) * c, tpl)
            return
        for off, g, size in _clip_segments(_patch_taps(self.l, oy, ox, baddr - (by0 * rw + x_lo) * c, rw), k0, k1):
            if g < 0:
                e.lldi(patch + off, 0, size)
            else:
                e.lmv(patch + off, g, size)

    def _ld_rows(self, e: CoreEmitter, dst: int, y0: int, y1: int, x_lo: int, rw: int) -> None:
        """Input rows ``[y0, y1)``, columns ``[x_lo, x_lo + rw)`` from global memory (one ``ld``
        when the rows are whole)."""
        h, w, c = self.l.in_hwc
        if rw == w:
            e.ld(dst, self.in_addr + y0 * w * c, (y1 - y0) * w * c)
            return
        for i, y in enumerate(range(y0, y1)):
            e.ld(dst + i * rw * c, self.in_addr + (y * w + x_lo) * c, rw * c)

    def _interior_template(self, k0: int, k1: int, rw: int | None = None):
        l = self.l
        h, w, c = l.in_hwc
        w = w if rw is None else rw
        kh, kw = l.kernel
        dh, dw = l.dilations
        segs = []
        for ky in range(kh):
            for kx in range(kw):
                off = (ky * kw + kx) * c
                g = (ky * dh * w + kx * dw) * c
                if segs and segs[-1][0] + segs[-1][2] == off and segs[-1][1] + segs[-1][2] == g:
                    segs[-1][2] += c
                else:
                    segs.append([off, g, c])
        out = []
        for off, g, size in segs:
            a, b = max(off, k0), min(off + size, k1)
            if a < b:
                out.append((a - k0, g + (a - off), b - a))
        return out

    # ------------------------------------------------------------------ main
    def emit(self, image: int = 0, ofs: int = 0) -> None:
        for t in self.tasks(image=image, ofs=ofs):
            t.run()

    def tasks(self, layer_index: int = 0, element: bool = False, image: int = 0, ofs: int = 0):
        """The layer's tasks for one image in batch order (replica, unit, batch).

        ``ofs`` is the image's activation offset (a stream compiled with ``images`` > 1); the
        per-unit state (bands, constants) is kept for the next image when the codegen object is
        reused (the element schedule's persistent arena)."""
        plan = self.l.plan
        chunks = getattr(plan, "chunks", None)
        for r, ags in enumerate(plan.ags):
            ranges = chunks[r] if chunks else [plan.windows[r]]
            for unit in units(ags):
                yield from self._unit_tasks(layer_index, r, unit, ranges, element, image, ofs)

    def _read_range(self, q0: int, q1: int, ofs: int = 0) -> tuple[int, int]:
        """Global byte range of the input rows that the windows ``[q0, q1)`` load (superset)."""
        l = self.l
        buf = l.inputs[0].buf
        if l.windows == 1:
            return (buf.addr + ofs, buf.addr + ofs + buf.size)
        h, w, c = l.in_hwc
        ow = l.out_hw[1]
        span = (l.kernel[0] - 1) * l.dilations[0] + 1
        ys = []
        for oy in {q0 // ow, (q1 - 1) // ow}:
            iy0 = oy * l.strides[0] - l.pads[0]
            ys.append((max(0, iy0), min(h, max(0, iy0) + span)))
        y0 = min(a for a, _ in ys)
        y1 = max(b for _, b in ys)
        base = buf.addr + ofs
        return (base + y0 * w * c, base + max(y0 + 1, y1) * w * c)

    def _unit_tasks(self, li: int, r: int, unit, ranges: list[tuple[int, int]], element: bool,
                    image: int = 0, ofs: int = 0):
        from ....core.errors import UnsupportedError
        from .schedule import Task
        l = self.l
        c0, c1 = unit[0].c0, unit[0].c1
        nu = c1 - c0
        bmax = max(1, min(self.batch, MAXLEN // nu if nu <= MAXLEN else 1))
        home = next(a.core for a in unit if a.row_slice == 0)
        by_core: dict[int, list] = {}
        for a in unit:
            by_core.setdefault(a.core, []).append(a)
        cores = [c for c in by_core if c != home] + [home]
        if element and len(cores) > 1 and not self.links:
            raise UnsupportedError("element schedule of a replica split over cores needs core links",
                                   where=f"node {l.name} ({l.op})")
        st: dict = self._units.setdefault((r, c0), {})
        nwin = sum(q - p for p, q in ranges)
        post = self.post
        key = (li, r, c0)
        c2c = self.c2c
        main_c2c = c2c is not None and key in c2c.main
        res_c2c = c2c is not None and key in c2c.res
        out_c2c = c2c is not None and id(l.out.buf) in c2c.producers
        in_hwc = l.in_hwc

        from .c2c import input_box, out_positions
        box = input_box(l, r)

        def setup() -> None:
            # per-unit state: input bands or regions, constants (kept while the unit runs)
            bands = {}
            if main_c2c:
                y0, y1, x0, x1 = box
                st["in_box"] = box
                st["in_regions"] = {}
                for c in cores:
                    reg = self.em[c].arena.alloc((y1 - y0) * (x1 - x0) * in_hwc[2])
                    st["in_regions"][c] = reg
                    bands[c] = [reg, y0, y1, None, x0, x1 - x0]     # a region: never reloaded
            else:
                for c in cores:
                    my = by_core[c]
                    bands[c] = self._band_alloc(self.em[c], min(a.r0 for a in my), max(a.r1 for a in my), nwin,
                                                cols=box[2:])
            st["bands"] = bands
            e_home = self.em[home]
            if res_c2c:
                st["res_region"] = e_home.arena.alloc(out_positions(l, r) * l.N)
            if out_c2c:
                st["out_region"] = e_home.arena.alloc(out_positions(l, r) * l.N)
            st["gm_store"] = c2c is None or c2c.gm_store(l.out.buf)
            st["consts"] = self._consts(home, c0, c1, bmax)
            if post is not None:
                post.setup(st, home, nu, bmax, r)

        # each core's rows of the unit's weights (the same for every batch)
        core_rows = {c: (min(a.r0 for a in by_core[c]), max(a.r1 for a in by_core[c])) for c in cores}

        tarenas = [self.em[c].tarena for c in cores]

        def talloc() -> None:
            # transient buffers of one batch; the bump allocation depends only on the arenas'
            # tops, so a repeat from the same tops (every task of the element schedule, whose
            # transient arenas are reset per task) reuses the addresses and the mvmul lists
            tops = tuple([a.top for a in tarenas])
            memo = st.get("talloc")
            if memo is not None and memo[0] == tops:
                st.update(memo[1])
                for a, top in zip(tarenas, memo[2]):
                    a.top = top
                    a.peak = max(a.peak, top)
                return
            bufs = {}
            psize = bmax * nu * self.accb
            for c in cores:
                e = self.em[c]
                my = by_core[c]
                k0, k1 = core_rows[c]
                patch = e.tarena.alloc(k1 - k0)
                parts = [e.tarena.alloc(psize) for _ in my]
                # (the last item: the core's mvmul list, filled by the first _partials)
                bufs[c] = (my, k0, k1, patch, parts, st["bands"][c], [])
            e_home = self.em[home]
            new = {"bufs": bufs,
                   "rbuf": e_home.tarena.alloc(bmax * nu * self.accb) if len(cores) > 1 else None,
                   "obuf": e_home.tarena.alloc(bmax * nu * elem_bytes(self.ob))}
            if post is not None:
                post.talloc(new, home, nu, bmax, r)
            st.update(new)
            st["talloc"] = (tops, new, tuple([a.top for a in tarenas]))

        def prepare() -> bool:
            self.ofs = ofs
            if "consts" in st:
                return False
            setup()
            return True

        ob = elem_bytes(self.ob)
        if post is not None:
            batches = post.batches(r, ranges, bmax)
        else:
            batches = [(q0, q1, None) for q0, q1 in self.range_batches(r, ranges, bmax)]
        for q0, q1, info in batches:

            def run(q0=q0, q1=q1, info=info) -> None:
                if prepare() or self.em[home].per_task:
                    talloc()
                if st.get("image", image) != image:
                    for band in st["bands"].values():   # a new image: the cached rows are stale
                        if band is not None and band[3] is not None:
                            band[1] = band[2] = -1
                st["image"] = image
                self._batch(st, cores, home, nu, c0, c1, q0, q1, r, info)

            reads = self._reads(q0, q1, ofs)
            if post is not None:
                reads += post.reads(q0, q1, c0, c1, ofs)
                writes = post.writes(r, q0, q1, c0, c1, ofs, info)
            else:
                oa = l.out.buf.addr + ofs
                writes = [(oa + (q0 * l.N + c0) * ob, oa + ((q1 - 1) * l.N + c1) * ob)]
            t = Task(li, list(cores), list(cores), reads, writes, home, run,
                     f"node {l.name} ({l.op})", chain=(li, r, c0), image=image, unit=key)
            if c2c is not None:
                t.prepare = prepare
                t.out_buf = id(l.out.buf)
                if main_c2c or res_c2c:
                    t.needs = self._needs_fn(st, cores, home, key, main_c2c, res_c2c, r, q0, q1)
                if out_c2c:
                    t.runs = self._runs_fn(st, r, q0, q1, info)
                if main_c2c and l.fused_pool is None and l.fused_gap is None:
                    t.chain = None    # the input region holds every row: batches in any order
            yield t

    def range_batches(self, r: int, ranges: list[tuple[int, int]], bmax: int) -> list[tuple[int, int]]:
        """Batches ``[q0, q1)`` of replica ``r``: chunks of its window ranges, or of every row of
        its tile (``plan.tiles``: a batch stays inside one row of the tile)."""
        plan = self.l.plan
        if plan.tiles:
            y0, y1, x0, x1 = plan.tiles[r]
            ow = self.l.out_hw[1]
            return [(y * ow + x, y * ow + min(x1, x + bmax)) for y in range(y0, y1) for x in range(x0, x1, bmax)]
        return [(q, min(p1, q + bmax)) for p0, p1 in ranges for q in range(p0, p1, bmax)]

    def pidx(self, r: int, q: int) -> int:
        """Index of output position ``q`` in replica ``r``'s output/residual regions (tile order)."""
        plan = self.l.plan
        if plan.tiles:
            y0, _, x0, x1 = plan.tiles[r]
            y, x = divmod(q, self.l.out_hw[1])
            return (y - y0) * (x1 - x0) + x - x0
        return q - plan.windows[r][0]

    def _in_rows_cols(self, q0: int, q1: int) -> tuple[int, int, int, int]:
        """Input rows/columns ``(y0, y1, x0, x1)`` the windows ``[q0, q1)`` of one row read."""
        memo = self.__dict__.setdefault("_rows_cols", {})    # (asked for every task, by two users)
        got = memo.get((q0, q1))
        if got is None:
            got = memo[(q0, q1)] = self._in_rows_cols_of(q0, q1)
        return got

    def _in_rows_cols_of(self, q0: int, q1: int) -> tuple[int, int, int, int]:
        l = self.l
        h, w, c = l.in_hwc
        if l.windows == 1:
            return 0, h, 0, w
        ow = l.out_hw[1]
        oy, xa = divmod(q0, ow)
        xb = (q1 - 1) % ow + 1
        y0 = max(0, oy * l.strides[0] - l.pads[0])
        y1 = min(h, oy * l.strides[0] - l.pads[0] + (l.kernel[0] - 1) * l.dilations[0] + 1)
        x0 = max(0, xa * l.strides[1] - l.pads[1])
        x1 = min(w, (xb - 1) * l.strides[1] - l.pads[1] + (l.kernel[1] - 1) * l.dilations[1] + 1)
        return y0, max(y0 + 1, y1), x0, max(x0 + 1, x1)

    def _reads(self, q0: int, q1: int, ofs: int) -> list[tuple[int, int]]:
        """Global byte ranges the batch reads (its input rows; per row, the columns, in a tile)."""
        l = self.l
        if not l.plan.tiles or (q1 - 1) // l.out_hw[1] != q0 // l.out_hw[1]:
            return [self._read_range(q0, q1, ofs)]
        h, w, c = l.in_hwc
        y0, y1, x0, x1 = self._in_rows_cols(q0, q1)
        base = l.inputs[0].buf.addr + ofs
        return [(base + (y * w + x0) * c, base + (y * w + x1) * c) for y in range(y0, y1)]

    def _needs_fn(self, st: dict, cores: list[int], home: int, key: tuple, main: bool, res: bool, r: int,
                  q0: int, q1: int):
        """The bytes a batch needs in its cores' regions (``c2c.Need``), once they exist."""
        from .c2c import Need
        l = self.l
        h, w, c = l.in_hwc
        buf = l.inputs[0].buf
        y0, y1, x0, x1 = self._in_rows_cols(q0, q1)
        if not l.plan.tiles:      # a contiguous window range may span rows: whole rows
            lo, hi = self._read_range(q0, q1, 0)
            y0, y1 = (lo - buf.addr) // (w * c), -(-(hi - buf.addr) // (w * c))
            x0, x1 = 0, w

        def needs() -> list:
            out = []
            if main:
                ry0, ry1, rx0, rx1 = st["in_box"]
                a, b = max(x0, rx0), min(x1, rx1)
                for y in range(max(y0, ry0), min(y1, ry1)):
                    lo = (y * w + a) * c
                    off = ((y - ry0) * (rx1 - rx0) + a - rx0) * c
                    out += [Need(cc, ("in", key, cc), id(buf), lo, lo + (b - a) * c, lo, st["in_regions"][cc] + off)
                            for cc in cores]
            if res:
                n = l.N
                out.append(Need(home, ("res", key), id(l.fused_add.other.buf), q0 * n, q1 * n, q0 * n,
                                st["res_region"] + self.pidx(r, q0) * n))
            return out
        return needs

    def _runs_fn(self, st: dict, r: int, q0: int, q1: int, info):
        """The positions a batch leaves in its output region (``c2c.Run``), after it ran."""
        from .c2c import Run
        l = self.l
        buf = id(l.out.buf)

        def runs() -> list:
            n = l.N
            if l.fused_pool is not None:
                p0, _, x0, x1 = l.plan.pool_tiles[r]
                ow2, tw = l.fused_pool.out_hw[1], x1 - x0
                return [Run(buf, (py * ow2 + x0) * n, (py * ow2 + x1) * n, st["out_region"] + (py - p0) * tw * n)
                        for py in info.pool_rows]
            return [Run(buf, q0 * n, q1 * n, st["out_region"] + self.pidx(r, q0) * n)]
        return runs

    def _batch(self, st: dict, cores: list[int], home: int, nu: int, c0: int, c1: int, q0: int, q1: int,
               r: int = 0, info=None) -> None:
        bufs, rbuf, obuf, consts = st["bufs"], st["rbuf"], st["obuf"], st["consts"]
        e_home = self.em[home]
        nb = q1 - q0
        for c in cores:
            self._partials(c, bufs[c], q0, q1, nu)
        n = nb * nu
        if len(cores) > 1 and self.links:
            for c in cores[:-1]:
                self.em[c].send(bufs[c][4][0], home, n * self.accb)
                e_home.recv(rbuf, c, n * self.accb)
                e_home.setbw(self.acc, self.acc)
                e_home.vv("vvadd", bufs[home][4][0], bufs[home][4][0], rbuf, n)
        elif len(cores) > 1:
            # global-memory path: partial sums go to scratch, reduced after the barrier
            slots = []
            for c in cores:
                ga = self.scratch_alloc(n * self.accb)
                self.em[c].st(ga, bufs[c][4][0], n * self.accb)
                slots.append(ga)
            self.deferred.append((home, bufs[home][4][0], slots, q0, q1, c0, c1, rbuf, obuf, consts, self.ofs,
                                  st, r, info))
            return
        self._finish(e_home, bufs[home][4][0], consts, obuf, q0, q1, c0, c1, st, r, info)

    def _partials(self, c: int, buf, q0: int, q1: int, nu: int) -> None:
        l = self.l
        e = self.em[c]
        my, k0, k1, patch, parts, band, mvs = buf
        mbiw = l.w_bits
        # the array groups' ids and source addresses are the same for every window (ids are
        # assigned on first use: taken in the same order, and only if there is a window); kept
        # with the buffers for the unit's next batches
        if not mvs and q1 > q0:
            mvs += [(e.group_id((a.layer, a.replica, a.unit, a.row_slice), a.xbars), part, patch + a.r0 - k0)
                    for a, part in zip(my, parts)]
        step = nu * self.accb
        widths = (self.ab, self.acc)
        load = self._load_patch if band is None else self._load_patch_band
        for i, p in enumerate(range(q0, q1)):
            if e.widths != widths:
                e.setbw(*widths)
            if band is None:
                load(e, p, patch, k0, k1)
            else:
                load(e, band, p, patch, k0, k1)
            e.mvmuls(mvs, i * step, mbiw)
        n = (q1 - q0) * nu
        if len(my) > 1:
            e.setbw(self.acc, self.acc)
            for part in parts[1:]:
                e.vv("vvadd", parts[0], parts[0], part, n)

    def finish_deferred(self) -> None:
        """Global-memory path: load the scratch partial sums, reduce and requantize."""
        for home, acc_buf, slots, q0, q1, c0, c1, rbuf, obuf, consts, ofs, st, r, info in self.deferred:
            self.ofs = ofs
            e = self.em[home]
            n = (q1 - q0) * (c1 - c0)
            e.setbw(self.acc, self.acc)
            e.ld(acc_buf, slots[-1], n * self.accb)   # the home core's own sum (stored last)
            for ga in slots[:-1]:
                e.ld(rbuf, ga, n * self.accb)
                e.vv("vvadd", acc_buf, acc_buf, rbuf, n)
            self._finish(e, acc_buf, consts, obuf, q0, q1, c0, c1, st, r, info)
        self.deferred = []

    def _finish(self, e: CoreEmitter, acc_buf: int, consts: dict, obuf: int, q0: int, q1: int, c0: int, c1: int,
                st: dict | None = None, r: int = 0, info=None) -> None:
        l = self.l
        if st is not None and "out_region" in st and (self.post is None or self.post.pool is None):
            obuf = st["out_region"] + self.pidx(r, q0) * l.N     # kept for core-to-core sends
        if self.post is not None:
            ring = self.post.out_buffer(st, q0, q1, r)
            obuf = obuf if ring is None else ring
        nu = c1 - c0
        n = (q1 - q0) * nu
        acc = self.acc
        e.setbw(acc, acc)
        e.vv("vvadd", acc_buf, acc_buf, consts["bias"], n)
        if "shr" in consts:
            e.vv("vvsra", acc_buf, acc_buf, consts["shr"], n)
        lo, hi = l.clamp
        tmax = (1 << (self.ob - 1)) - 1
        if "shl" in consts:
            e.vrs("vrsl", acc_buf, acc_buf, -tmax - 2, n)
            e.vrs("vrsu", acc_buf, acc_buf, tmax + 1, n)
            e.vv("vvsll", acc_buf, acc_buf, consts["shl"], n)
        e.setbw(acc, self.ob)
        e.vrs("vrsl", obuf, acc_buf, lo, n)
        if hi < tmax:
            e.setbw(self.ob, self.ob)
            e.vrs("vrsu", obuf, obuf, hi, n)
        if self.post is not None:
            self.post.finish(e, st, obuf, q0, q1, c0, c1, r, info)
            return
        if st is not None and not st.get("gm_store", True):
            return
        ob = elem_bytes(self.ob)
        if nu == l.N:
            e.st(self.out_addr + q0 * l.N * ob, obuf, n * ob)
        else:
            for i, p in enumerate(range(q0, q1)):
                e.st(self.out_addr + (p * l.N + c0) * ob, obuf + i * nu * ob, nu * ob)
