"""Code of the fused epilogues (:mod:`.fusion`): residual Add, MaxPool, GlobalAveragePool.

:class:`Epilogue` plugs into :class:`~.lower_mat.MatCodegen`: it picks the batches of a
replica (row-aligned for a fused pool), tells where the requantized int8 batch goes, and after
the clamp it finishes the batch (add → pool / gap / store) on the unit's home core.  Every step
keeps the frontend's integer semantics, so fused programs stay bit-exact:

* add: the residual slice of the batch is loaded (one ``ld``, or one per position when the unit
  holds part of the channels), then :func:`~.lower_vec.elt_arith` (the unfused Add's code);
* pool: conv row ``y`` lives in slot ``y mod span`` of a ring of ``span`` conv rows; once the
  last conv row a pool row needs is done, the pool row is computed separably (max is
  associative): one ``vvmax`` chain down its valid ring rows over the tile's whole width, then a
  chain across each pixel's valid columns of that row (:func:`~.lower_vec.max_pool_row`, shared
  with the unfused pool), and one store; padding rows/columns never contribute;
* gap: the batch is widened to the sum width (``vvsll`` by a zero vector) and added per
  position into the unit's channel sums; the replica's sums are stored once, as one row of the
  partial-sum buffer that :func:`gap_finish_tasks` averages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....core.errors import UnsupportedError
from .emit import CoreEmitter
from .fusion import GapFinishLayer, conv_cols_for, conv_rows_for
from .lower_vec import check_elt_shift, elt_arith, elt_consts, max_pool_row
from .memory_plan import elem_bytes
from .schedule import Task


@dataclass
class BatchInfo:
    """What happens after one batch: pool rows completed, first/last batch of the range."""

    pool_rows: list[int] = field(default_factory=list)
    first: bool = False
    last: bool = False


class Epilogue:
    """The fused steps of one :class:`~.graph.MatLayer` (``fused_add`` / ``fused_pool`` / ``fused_gap``)."""

    def __init__(self, cg):
        self.cg = cg
        self.l = cg.l
        self.add = self.l.fused_add
        self.pool = self.l.fused_pool
        self.gap = self.l.fused_gap
        if self.add is not None:
            check_elt_shift(self.add.shift, self.add.out_bits, self.add.acc_bits, f"node {self.l.name} (Add)")
        if self.pool is not None:
            self.span = (self.pool.kernel[0] - 1) * self.pool.dilations[0] + 1
            self._tiles: dict[int, tuple] = {}
        if self.gap is not None:
            self.sb = self.l.out.bits          # the partial sums' width
            self.sbb = elem_bytes(self.sb)

    # ------------------------------------------------------------------ batches
    def batches(self, r: int, ranges: list[tuple[int, int]], bmax: int) -> list[tuple[int, int, BatchInfo]]:
        """Batches of replica ``r``; row-aligned (and only the needed rows) for a fused pool."""
        if self.pool is None:
            out = [(q0, q1, BatchInfo()) for q0, q1 in self.cg.range_batches(r, ranges, bmax)]
        else:
            out = self._pool_batches(r, bmax)
        if out:
            out[0][2].first = True
            out[-1][2].last = True
        return out

    def tile(self, r: int) -> tuple[int, int, int, int, int, int]:
        """Replica ``r``'s pool tile ``(p0, p1, x0, x1)`` and its conv columns ``[c_lo, c_hi)``."""
        got = self._tiles.get(r)
        if got is None:
            p0, p1, x0, x1 = self.l.plan.pool_tiles[r]
            cols = conv_cols_for(self.pool, x0, x1)
            got = self._tiles[r] = (p0, p1, x0, x1, cols[0], cols[-1] + 1)
        return got

    def _pool_batches(self, r: int, bmax: int) -> list[tuple[int, int, BatchInfo]]:
        p0, p1, _, _, c_lo, c_hi = self.tile(r)
        pool = self.pool
        ow = self.l.out_hw[1]
        last_row = {}          # pool row → the last conv row it needs
        for py in range(p0, p1):
            need = conv_rows_for(pool, py, py + 1)
            if not need:
                raise UnsupportedError("max-pool window without any input row", where=f"node {pool.name}")
            last_row[py] = need[-1]
        out = []
        nxt = p0
        for y in conv_rows_for(pool, p0, p1):
            for x in range(c_lo, c_hi, bmax):
                out.append((y * ow + x, y * ow + min(c_hi, x + bmax), BatchInfo()))
            while nxt < p1 and last_row[nxt] <= y:
                out[-1][2].pool_rows.append(nxt)
                nxt += 1
        return out

    # ------------------------------------------------------------------ local memory
    def setup(self, st: dict, home: int, nu: int, bmax: int, r: int = 0) -> None:
        """Per-unit state in the home core's persistent arena."""
        e = self.cg.em[home]
        n0 = bmax * nu
        if self.add is not None:
            a = self.add
            ka, kb = (a.shifts[0], a.shifts[1]) if a.conv_first else (a.shifts[1], a.shifts[0])
            st["add_k"] = elt_consts(e, self.cg.consts, n0, (ka, kb), a.shift, a.acc_bits)
        if self.pool is not None:
            _, _, x0, x1, c_lo, c_hi = self.tile(r)
            st["ring_rowb"] = (c_hi - c_lo) * self.l.N
            st["ring"] = e.arena.alloc(self.span * st["ring_rowb"])
        if self.gap is not None:
            st["gap_sum"] = e.arena.alloc(nu * self.sbb)
            st["gap_zero"] = e.arena.alloc(n0)
            e.lldi(st["gap_zero"], 0, n0)

    def talloc(self, st: dict, home: int, nu: int, bmax: int, r: int = 0) -> None:
        """Transient buffers of one batch on the home core."""
        e = self.cg.em[home]
        n0 = bmax * nu
        if self.add is not None:
            accb = elem_bytes(self.add.acc_bits)
            st["add_r"] = e.tarena.alloc(n0)
            st["add_A"], st["add_B"] = e.tarena.alloc(n0 * accb), e.tarena.alloc(n0 * accb)
        if self.pool is not None:
            _, _, x0, x1, c_lo, c_hi = self.tile(r)
            st["pool_row"] = e.tarena.alloc((x1 - x0) * self.l.N)
            st["pool_down"] = e.tarena.alloc((c_hi - c_lo) * self.l.N)     # the vertical maxima
        if self.gap is not None:
            st["gap_w"] = e.tarena.alloc(n0 * self.sbb)

    def out_buffer(self, st: dict, q0: int, q1: int, r: int = 0) -> int | None:
        """Where the clamped conv output of the batch goes (the pool ring), or None."""
        if self.pool is None:
            return None
        y, x = divmod(q0, self.l.out_hw[1])
        c_lo = self.tile(r)[4]
        return st["ring"] + (y % self.span) * st["ring_rowb"] + (x - c_lo) * self.l.N

    # ------------------------------------------------------------------ dependences
    def reads(self, q0: int, q1: int, c0: int, c1: int, ofs: int) -> list[tuple[int, int]]:
        if self.add is None:
            return []
        a = self.add.other.buf.addr + ofs
        n = self.l.N
        return [(a + q0 * n + c0, a + (q1 - 1) * n + c1)]

    def writes(self, r: int, q0: int, q1: int, c0: int, c1: int, ofs: int, info: BatchInfo) -> list[tuple[int, int]]:
        out = self.l.out.buf.addr + ofs
        n = self.l.N
        if self.pool is not None:
            ow2 = self.pool.out_hw[1]
            _, _, x0, x1, _, _ = self.tile(r)
            return [(out + (py * ow2 + x0) * n, out + (py * ow2 + x1) * n) for py in info.pool_rows]
        if self.gap is not None:
            sbb = self.sbb
            return [(out + (r * n + c0) * sbb, out + (r * n + c1) * sbb)] if info.last else []
        return [(out + q0 * n + c0, out + (q1 - 1) * n + c1)]

    # ------------------------------------------------------------------ code
    def finish(self, e: CoreEmitter, st: dict, obuf: int, q0: int, q1: int, c0: int, c1: int, r: int,
               info: BatchInfo) -> None:
        """After the clamp: the fused steps and the store(s) of the batch."""
        l = self.l
        nu = c1 - c0
        n = (q1 - q0) * nu
        ofs = self.cg.ofs
        if self.add is not None:
            a = self.add
            res = a.other.buf.addr + ofs
            rbuf = st["add_r"]
            if "res_region" in st:        # received core to core (all channels of the positions)
                rbuf = st["res_region"] + self.cg.pidx(r, q0) * l.N
            elif nu == l.N:
                e.ld(rbuf, res + q0 * l.N, n)
            else:
                for i, p in enumerate(range(q0, q1)):
                    e.ld(rbuf + i * nu, res + p * l.N + c0, nu)
            abuf, bbuf = (obuf, rbuf) if a.conv_first else (rbuf, obuf)
            elt_arith(e, st["add_k"], obuf, abuf, bbuf, st["add_A"], st["add_B"], n, a.sub, a.shift, a.clamp,
                      a.acc_bits, a.out_bits)
        if self.pool is not None:
            for py in info.pool_rows:
                self._pool_row(e, st, py, r)
            return
        if self.gap is not None:
            self._gap_batch(e, st, obuf, q0, q1, c0, c1, r, info)
            return
        if not st.get("gm_store", True):
            return
        out = l.out.buf.addr + ofs
        if nu == l.N:
            e.st(out + q0 * l.N, obuf, n)
        else:
            for i, p in enumerate(range(q0, q1)):
                e.st(out + p * l.N + c0, obuf + i * nu, nu)

    def _pool_row(self, e: CoreEmitter, st: dict, py: int, r: int) -> None:
        """Pool row ``py`` of the tile (ring: conv row ``iy`` in slot ``iy mod span``, conv column
        ``c_lo`` at the slot's start): the ``vvmax`` chain down the valid rows over the tile's
        conv columns at once, then per pixel the chain across its valid columns; one store."""
        pool = self.pool
        ow2 = pool.out_hw[1]
        n = self.l.N
        _, _, x0, x1, c_lo, c_hi = self.tile(r)
        ring, prow, rowb = st["ring"], st["pool_row"], st["ring_rowb"]
        if "out_region" in st:            # kept for core-to-core sends
            prow = st["out_region"] + (py - self.l.plan.pool_tiles[r][0]) * (x1 - x0) * n
        y0 = py * pool.strides[0] - pool.pads[0]
        span = self.span
        e.setbw(pool.out.bits, pool.out.bits)
        max_pool_row(e, pool, lambda iy: ring + (iy % span) * rowb, y0, st["pool_down"], (c_hi - c_lo) * n, c_lo,
                     prow - x0 * n, range(x0, x1))
        if st.get("gm_store", True):
            e.st(self.l.out.buf.addr + self.cg.ofs + (py * ow2 + x0) * n, prow, (x1 - x0) * n)

    def _gap_batch(self, e: CoreEmitter, st: dict, obuf: int, q0: int, q1: int, c0: int, c1: int, r: int,
                   info: BatchInfo) -> None:
        nu = c1 - c0
        n = (q1 - q0) * nu
        s, w = st["gap_sum"], st["gap_w"]
        if info.first:
            e.lldi(s, 0, nu * self.sbb)
        e.setbw(self.l.fused_gap.inputs[0].bits, self.sb)
        e.vv("vvsll", w, obuf, st["gap_zero"], n)        # widen int8 → sum width
        e.setbw(self.sb, self.sb)
        for i in range(q1 - q0):
            e.vv("vvadd", s, s, w + i * nu * self.sbb, nu)
        if info.last:
            out = self.l.out.buf.addr + self.cg.ofs
            e.st(out + (r * self.l.N + c0) * self.sbb, s, nu * self.sbb)


def gap_finish_tasks(layer: GapFinishLayer, em: dict[int, CoreEmitter], li: int = 0, image: int = 0,
                     ofs: int = 0):
    """One task: average the partial channel sums (``vavg`` over the rows, zeros after them)."""
    m = layer.mat
    core = next(a.core for a in m.plan.ags[0] if a.row_slice == 0)
    part = layer.inputs[0].buf
    pa, outa = part.addr + ofs, layer.out.buf.addr + ofs
    c, hw, reps = layer.channels, layer.positions, layer.replicas
    sbb = elem_bytes(layer.sum_bits)
    ob = layer.out.bits

    def run() -> None:
        e = em[core]
        buf = e.tarena.alloc(hw * c * sbb)
        obuf = e.tarena.alloc(c)
        e.ld(buf, pa, reps * c * sbb)
        if hw > reps:
            e.lldi(buf + reps * c * sbb, 0, (hw - reps) * c * sbb)
        e.setbw(layer.sum_bits, ob)
        for ch in range(c):
            e.vavg(obuf + ch, buf, c, hw, ch)
        e.st(outa, obuf, c)

    yield Task(li, [core], [core], [(pa, pa + reps * c * sbb)], [(outa, outa + c)], core, run,
               f"node {layer.name} ({layer.op})", image=image)
