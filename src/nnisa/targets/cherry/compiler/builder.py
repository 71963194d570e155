"""The plan builder: device tensors, constants, host layout steps and device kernels (§6).

A :class:`~nnisa.targets.cherry.program.Plan` is what the runtime replays: device-memory tensors (batches of tiled matrices),
constant tensors, and steps (``device``: programs to run; ``host``: a layout transform the
runtime performs between device tensors, §5.3).  :class:`Builder` offers the operators
(matmul, elementwise, reductions, transposes, pooling) and emits blocked, fused programs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.errors import ConfigError, UnsupportedError
from ..config import CherryConfig
from ..layout import tiles_of
from ..program import Plan, Program
from . import kernels as K

UNARY = ("relu", "exp", "log", "gtz")
BINARY = ("add", "sub", "mul", "div", "pow")
NEEDS_FIXUP = ("exp", "log", "div", "pow")
#: k-tiles per matmul iteration (2u + 1 formulas <= 8 allows 3; fewer ACC loads/stores, §6.10)
MATMUL_UNROLL = 3


class DeviceMemoryFull(ConfigError):
    """A tensor would reach past device memory (or the formulas' reach)."""

    def __init__(self, needed: int, limit: int, sz: int):
        self.needed, self.limit, self.sz = needed, limit, sz
        super().__init__(f"the model needs more than {needed - 1} device-memory tiles at SZ={sz} with every dead "
                         f"tensor's memory reused; the device holds {limit}")


class Builder:
    """Builds a :class:`Plan` operator by operator.

    Tensor ids index ``plan.tensors``; every tensor is a batch of ``batch`` matrices of
    ``rows`` x ``cols`` elements in tiled layout at device tile ``base``.
    """

    def __init__(self, cfg: CherryConfig, split_k: bool = False):
        self.cfg = cfg
        self.sz = cfg.sz
        #: long cherry18 matmuls accumulate in chunks summed in the cache (:meth:`_k_chunk`)
        self.split_k = split_k and cfg.element_format == "cherry18"
        self.plan = Plan(cfg.sz)
        self._ones: int | None = None
        self._masks: dict[tuple[int, int, int], int] = {}
        self._ones_tiles: dict[tuple[int, int], int] = {}
        self._scalars: dict[float, int] = {}
        #: free device-memory ranges (base, tiles), sorted: tensors whose last use has passed
        self._free: list[tuple[int, int]] = []
        self._top = 0           # first tile never allocated
        self.new: list[int] = []  # tensors allocated since the caller last cleared it
        #: the largest figure asked for (reported in the refusal when it exceeds device memory)
        self.needed = 0

    # ------------------------------------------------------------------ tensors
    def tensor(self, batch: int, rows: int, cols: int, fresh: bool = False) -> int:
        """A device tensor; ``fresh`` ones never take freed memory (constants: uploaded before any
        step runs, they must not share tiles with a tensor some step writes)."""
        rt, ct = tiles_of(rows, cols, self.sz)
        tiles = batch * rt * ct
        base = self._allocate(tiles, fresh)
        self.plan.tensors.append({"base": base, "batch": batch, "rows": rows, "cols": cols, "rt": rt, "ct": ct,
                                  "tiles": tiles})
        self.new.append(len(self.plan.tensors) - 1)
        return len(self.plan.tensors) - 1

    def _allocate(self, tiles: int, fresh: bool) -> int:
        """First fit in the freed ranges, else above everything allocated so far."""
        for i, (b, n) in enumerate(() if fresh else self._free):
            if n >= tiles:
                self._free[i:i + 1] = [(b + tiles, n - tiles)] if n > tiles else []
                return b
        base = self._top
        # formula values are signed 18 bits (§2.3): no tensor may reach past tile 131071
        limit = min(self.cfg.dram_tiles, 131071)
        if base + tiles > limit:
            self.needed = max(self.needed, base + tiles)
            raise DeviceMemoryFull(base + tiles, limit, self.sz)
        self._top = base + tiles
        return base

    def free(self, tid: int) -> None:
        """Return a tensor's device memory (its last use has been emitted; constants stay)."""
        if tid in self.plan.consts:
            return
        t = self.plan.tensors[tid]
        self._free.append((t["base"], t["tiles"]))
        self._free.sort()
        merged: list[tuple[int, int]] = []
        for b, n in self._free:
            if merged and merged[-1][0] + merged[-1][1] == b:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((b, n))
        # the top is never lowered: fresh tensors (constants) must stay above every tile any
        # step has written
        self._free = merged

    def const(self, mat: np.ndarray) -> int:
        """A constant tensor (B, R, C) uploaded by the runtime."""
        m = np.asarray(mat, np.float32)
        m = m.reshape((1,) * (3 - m.ndim) + m.shape) if m.ndim < 3 else m
        tid = self.tensor(*m.shape, fresh=True)
        self.plan.consts[tid] = m
        return tid

    def shape(self, t: int) -> tuple[int, int, int]:
        d = self.plan.tensors[t]
        return d["batch"], d["rows"], d["cols"]

    def host(self, kind: str, src: int | list[int], dst_shape: tuple[int, int, int], **params: Any) -> int:
        """A host layout step producing a new tensor from one source tensor or several (``srcs``;
        ``params["src_views"]`` then gives their views)."""
        dst = self.tensor(*dst_shape)
        step = {"kind": "host", "op": kind, "dst": dst, "params": params}
        if isinstance(src, list):
            step["srcs"] = src
        else:
            step["src"] = src
        self.plan.steps.append(step)
        return dst

    def device(self, progs: list[Program]) -> None:
        if not progs:
            return
        fused = K.fuse(progs)
        first = len(self.plan.programs)
        self.plan.programs.extend(fused)
        self.plan.steps.append({"kind": "device", "programs": list(range(first, first + len(fused)))})

    def _tile0(self, t: int, b: int = 0) -> int:
        d = self.plan.tensors[t]
        return d["base"] + b * d["rt"] * d["ct"]

    def _check_cache(self, need: int, what: str) -> None:
        if need > self.cfg.cache_tiles:
            raise ConfigError(f"{what} needs {need} cache tiles; the cache has {self.cfg.cache_tiles}")

    def _read(self, progs, t, b, r0, rows, c0, cols, cache) -> None:
        d = self.plan.tensors[t]
        progs.append(K.transfer(self.sz, False, cache, self._tile0(t, b) + r0 * d["ct"] + c0, rows, cols, cols,
                                d["ct"]))

    def _write(self, progs, t, b, r0, rows, c0, cols, cache) -> None:
        d = self.plan.tensors[t]
        progs.append(K.transfer(self.sz, True, cache, self._tile0(t, b) + r0 * d["ct"] + c0, rows, cols, cols,
                                d["ct"]))

    # ------------------------------------------------------------------ matmul (§6.6)
    def matmul(self, x: int, w: int, ta: bool = False, tb: bool = False, init: int | None = None) -> int:
        """C[b] = op(X[b]) @ op(W[b]) (+ INIT[b]); W or INIT with batch 1 broadcast over b."""
        bx, xr, xc = self.shape(x)
        bw, wr, wc = self.shape(w)
        m, k = (xc, xr) if ta else (xr, xc)
        k2, n = (wc, wr) if tb else (wr, wc)
        if k != k2:
            raise UnsupportedError(f"matmul: inner dimensions differ ({k} vs {k2})")
        batch = max(bx, bw)
        if bx not in (1, batch) or bw not in (1, batch):
            raise UnsupportedError(f"matmul: batch sizes {bx} and {bw} do not broadcast")
        c = self.tensor(batch, m, n)
        mt, kt = tiles_of(m, k, self.sz)
        _, nt = tiles_of(1, n, self.sz)
        kc = self._k_chunk(kt)
        chunked = kc < kt
        mb, kb, nb = self._blocks(mt, kc, nt, 2 if chunked else 1)
        progs: list[Program] = []
        for b in range(batch):
            bxx, bww = (b if bx > 1 else 0), (b if bw > 1 else 0)
            for m0 in range(0, mt, mb):
                ms = min(mb, mt - m0)
                for n0 in range(0, nt, nb):
                    ns = min(nb, nt - n0)
                    cx, cw, cc = 0, mb * kb, mb * kb + kb * nb
                    ctot = cc + mb * nb if chunked else cc  # the running total of the chunks
                    if init is None:
                        progs.append(K.zero_fill(self.sz, ctot, ms * ns))
                    else:
                        self._read(progs, init, b if self.shape(init)[0] > 1 else 0, m0, ms, n0, ns, ctot)
                    for c0 in range(0, kt, kc):
                        acc = ctot if c0 == 0 else cc
                        if c0:
                            progs.append(K.zero_fill(self.sz, cc, ms * ns))
                        for k0 in range(c0, min(c0 + kc, kt), kb):
                            ks = min(kb, c0 + kc - k0, kt - k0)
                            if ta:
                                self._read(progs, x, bxx, k0, ks, m0, ms, cx)
                            else:
                                self._read(progs, x, bxx, m0, ms, k0, ks, cx)
                            if tb:
                                self._read(progs, w, bww, n0, ns, k0, ks, cw)
                            else:
                                self._read(progs, w, bww, k0, ks, n0, ns, cw)
                            indep_m = ns < min(ms, self.cfg.superscalar_width)
                            u = min(MATMUL_UNROLL, ks)
                            main = ks - ks % u
                            progs.append(K.matmul_compute(self.sz, cx, cw, acc, ms, ks, ns, ta, tb, indep_m, u, 0,
                                                          main))
                            if main < ks:
                                progs.append(K.matmul_compute(self.sz, cx, cw, acc, ms, ks, ns, ta, tb, indep_m,
                                                              ks - main, main, ks - main))
                        if c0:
                            progs.append(K.elementwise(self.sz, "add", ms * ns, ctot, cc, ctot))
                    self._write(progs, c, b, m0, ms, n0, ns, ctot)
        self.device(progs)
        return c

    def _k_chunk(self, kt: int) -> int:
        """k-tiles accumulated in one ACC chain.  cherry18 truncates the running sum at every
        ``matmul`` (§1.4, toward zero), so a chain of kt k-tiles loses up to kt units in the last
        place, all in one direction; chunks of ≈√kt tiles, each started from 0 and added into a
        total in the cache, lose about 2√kt (top-1 of a 5408-long Gemm: 0.69 → 1.0 on 16 samples)
        for one more cache block and one ``add`` per chunk.  Chains up to 32 k-tiles (≤ 6 % in the
        worst case, half that expected) stay whole: their chunks would cost more cycles than they save."""
        if not self.split_k or kt <= 32:
            return kt
        return max(6, round(kt ** 0.5))

    def _blocks(self, mt: int, kt: int, nt: int, cblocks: int = 1) -> tuple[int, int, int]:
        """Cache blocks (m, k, n tiles) of a matmul: X, W and ``cblocks`` C blocks fit the cache."""
        cache = self.cfg.cache_tiles
        kb, nb = kt, nt
        while kb * nb > cache // 2 and (kb > 1 or nb > 1):
            if kb >= nb:
                kb = -(-kb // 2)
            else:
                nb = -(-nb // 2)
        mb = min(mt, max(1, (cache - kb * nb) // (kb + cblocks * nb)))
        while mb * kb + kb * nb + cblocks * mb * nb > cache:  # tiny caches
            if nb > 1:
                nb = -(-nb // 2)
            elif kb > 1:
                kb = -(-kb // 2)
            else:
                mb = max(1, mb // 2)
                if mb == 1:
                    break
        self._check_cache(mb * kb + kb * nb + cblocks * mb * nb, "a matmul block")
        return mb, kb, nb

    # ------------------------------------------------------------------ elementwise (§6.4, §6.9)
    def _invmask(self, shape: tuple[int, int, int]) -> int | None:
        """INVMASK (1 in the padding, 0 elsewhere) for ``shape``, one constant per shape."""
        b, r, c = shape
        if r % self.sz == 0 and c % self.sz == 0:
            return None
        if shape not in self._masks:
            rt, ct = tiles_of(r, c, self.sz)
            m = np.ones((b, rt * self.sz, ct * self.sz), np.float32)
            m[:, :r, :c] = 0
            # the INVMASK's own padding must be stored: keep it as a full padded matrix
            self._masks[shape] = self.const(m)
        return self._masks[shape]

    def scalar(self, value: float) -> int:
        """One constant tile of ``value`` that :meth:`elementwise` broadcasts over a tensor without
        padding (one tile instead of a tensor-sized constant)."""
        key = float(value)
        if key not in self._scalars:
            self._scalars[key] = self.const(np.full((1, self.sz, self.sz), key, np.float32))
        return self._scalars[key]

    def has_padding(self, shape: tuple[int, int, int]) -> bool:
        return bool(shape[1] % self.sz or shape[2] % self.sz)

    def elementwise(self, op: str, x: int, y: int | None = None) -> int:
        """OUT = op(X[, Y]) with Y of the same shape or a broadcast batch of 1, or one operand a
        :meth:`scalar` tile (the other then without padding).

        Tensors are contiguous batches of tiles, so same-shape operands are processed as one flat
        range of tiles (blocked to the cache), not matrix by matrix."""
        scalar_ids = set(self._scalars.values())
        sx, sy = x in scalar_ids, y is not None and y in scalar_ids
        if sx:
            x, y = y, x  # shape and blocking follow the tensor operand
        shape = self.shape(x)
        if (sx or sy) and self.has_padding(shape):
            raise UnsupportedError(f"elementwise {op}: a scalar tile over a padded {shape} tensor")
        if y is not None and not (sx or sy) and self.shape(y)[1:] != shape[1:]:
            raise UnsupportedError(f"elementwise {op}: operand shapes {self.shape(x)} and {self.shape(y)} differ "
                                   "(broadcasts are materialised by the compiler)")
        out = self.tensor(*shape)
        b, r, c = shape
        rt, ct = tiles_of(r, c, self.sz)
        flat = y is None or sx or sy or self.shape(y)[0] == b
        batches, per = (1, b * rt * ct) if flat else (b, rt * ct)
        mask = self._invmask(shape if flat else (1, r, c)) if op in NEEDS_FIXUP else None
        nops = 1 + (y is not None) + (mask is not None)
        blk = min(per, self.cfg.cache_tiles // nops)
        progs: list[Program] = []
        if sx or sy:
            progs.append(K.transfer(self.sz, False, blk, self._tile0(y), 1, 1, 1, 1))
        for bb in range(batches):
            yb = None if y is None else (bb if self.shape(y)[0] > 1 else 0)
            for t0 in range(0, per, blk):
                ts = min(blk, per - t0)
                cx, cy, cm = 0, blk, blk * (1 + (y is not None))
                progs.append(K.transfer(self.sz, False, cx, self._tile0(x, bb) + t0, 1, ts, ts, ts))
                if y is not None and not (sx or sy):
                    progs.append(K.transfer(self.sz, False, cy, self._tile0(y, yb) + t0, 1, ts, ts, ts))
                if mask is not None:
                    progs.append(K.transfer(self.sz, False, cm, self._tile0(mask) + t0, 1, ts, ts, ts))
                if sx:  # the scalar is the first operand: X = the scalar tile, Y = the tensor
                    progs.append(K.elementwise(self.sz, op, ts, cy, cx, cx, None, ystride=1, xstride=0))
                else:
                    progs.append(K.elementwise(self.sz, op, ts, cx, cy if y is not None else None, cx,
                                               cm if mask is not None else None, ystride=0 if sy else 1))
                progs.append(K.transfer(self.sz, True, cx, self._tile0(out, bb) + t0, 1, ts, ts, ts))
        self.device(progs)
        return out

    def ones_tile(self) -> int:
        if self._ones is None:
            self._ones = self.const(np.ones((1, self.sz, self.sz), np.float32))
        return self._ones

    def max_leading(self, x: int) -> int:
        """Max over the batch axis (B, R, C) → (1, R, C), by exact selects (§6.8)."""
        b, r, c = self.shape(x)
        return self._leading(x, "max")

    def sum_leading(self, x: int) -> int:
        """Sum over the batch axis (B, R, C) → (1, R, C), elementwise adds."""
        return self._leading(x, "sum")

    def _leading(self, x: int, op: str) -> int:
        b, r, c = self.shape(x)
        out = self.tensor(1, r, c)
        rt, ct = tiles_of(r, c, self.sz)
        per = rt * ct
        ones = self.ones_tile() if op == "max" else None
        blk = min(per, (self.cfg.cache_tiles - 1) // 2)
        c1 = 2 * blk
        progs: list[Program] = []
        if ones is not None:
            progs.append(K.transfer(self.sz, False, c1, self._tile0(ones), 1, 1, 1, 1))
        for t0 in range(0, per, blk):
            ts = min(blk, per - t0)
            ca, cr = 0, blk
            progs.append(K.transfer(self.sz, False, cr, self._tile0(x, 0) + t0, 1, ts, ts, ts))
            for bb in range(1, b):
                progs.append(K.transfer(self.sz, False, ca, self._tile0(x, bb) + t0, 1, ts, ts, ts))
                if op == "max":
                    progs.append(K.select_max(self.sz, ts, ca, cr, c1, cr))
                else:
                    progs.append(K.elementwise(self.sz, "add", ts, ca, cr, cr))
            progs.append(K.transfer(self.sz, True, cr, self._tile0(out) + t0, 1, ts, ts, ts))
        self.device(progs)
        return out

    # ------------------------------------------------------------------ reductions (§6.8)
    def reduce(self, x: int, axis: int, op: str) -> int:
        """Sum/max over the matrix rows (axis 0 → (B, 1, C)) or columns (axis 1 → (B, R, 1))."""
        if op not in ("sum", "max") or axis not in (0, 1):
            raise UnsupportedError(f"reduce {op} over matrix axis {axis}")
        b, r, c = self.shape(x)
        rt, ct = tiles_of(r, c, self.sz)
        out = self.tensor(b, 1, c) if axis == 0 else self.tensor(b, r, 1)
        parts = ct if axis == 0 else rt
        sz = self.sz
        padded = (r % sz) if axis == 0 else (c % sz)
        neg = init = None
        if op == "max":
            # partial init: -inf in the result row/column for valid positions of the kept axis
            pi = np.zeros((parts, sz, sz), np.float32)
            kept = c if axis == 0 else r
            for p in range(parts):
                nvalid = min(sz, kept - p * sz)
                if axis == 0:
                    pi[p, 0, :nvalid] = -np.inf
                else:
                    pi[p, :nvalid, 0] = -np.inf
            init = self.const(pi.reshape(1, parts * sz, sz))
            if padded:
                nm = np.zeros((parts, sz, sz), np.float32)
                for p in range(parts):
                    nvalid = min(sz, kept - p * sz)
                    if axis == 0:
                        nm[p, padded:, :nvalid] = -np.inf
                    else:
                        nm[p, :nvalid, padded:] = -np.inf
                neg = self.const(nm.reshape(1, parts * sz, sz))
        self._check_cache(rt * ct + 2 * parts, f"a reduction of {rt}x{ct} tiles")
        progs: list[Program] = []
        cx, cp, cn = 0, rt * ct, rt * ct + parts
        for bb in range(b):
            progs.append(K.transfer(sz, False, cx, self._tile0(x, bb), 1, rt * ct, rt * ct, rt * ct))
            if init is None:
                progs.append(K.zero_fill(sz, cp, parts))
            else:
                progs.append(K.transfer(sz, False, cp, self._tile0(init), 1, parts, parts, parts))
            if neg is not None:
                progs.append(K.transfer(sz, False, cn, self._tile0(neg), 1, parts, parts, parts))
                if axis == 1 and ct > 1:
                    progs.append(K.reduce_tiles(sz, op, 1, rt, ct - 1, cx, cp, ct))
                elif axis == 0 and rt > 1:
                    progs.append(K.reduce_tiles(sz, op, 0, rt - 1, ct, cx, cp, ct))
                progs.append(K.reduce_edge(sz, op, axis, rt, ct, cx, cp, cn))
            else:
                progs.append(K.reduce_tiles(sz, op, axis, rt, ct, cx, cp, ct))
            progs.append(K.transfer(sz, True, cp, self._tile0(out, bb), 1, parts, parts, parts))
        self.device(progs)
        return out

    # ------------------------------------------------------------------ transpose (§6.5)
    def transpose(self, x: int) -> int:
        """Swap the last two axes of every matrix."""
        b, r, c = self.shape(x)
        rt, ct = tiles_of(r, c, self.sz)
        out = self.tensor(b, c, r)
        self._check_cache(2 * rt * ct, f"a transpose of {rt}x{ct} tiles")
        progs: list[Program] = []
        for bb in range(b):
            progs.append(K.transfer(self.sz, False, 0, self._tile0(x, bb), 1, rt * ct, rt * ct, rt * ct))
            progs.append(K.transpose_tiles(self.sz, rt, ct, 0, rt * ct))
            progs.append(K.transfer(self.sz, True, rt * ct, self._tile0(out, bb), 1, rt * ct, rt * ct, rt * ct))
        self.device(progs)
        return out

    # ------------------------------------------------------------------ graph boundary
    def input(self, name: str, view: dict) -> int:
        """A model input with its view (the runtime converts and uploads it)."""
        from ..layout import mat_shape
        tid = self.tensor(*mat_shape(view))
        self.plan.inputs[name] = {"tensor": tid, "view": view}
        return tid

    def output(self, name: str, tid: int, view: dict) -> None:
        self.plan.outputs[name] = {"tensor": tid, "view": view}

    def relayout(self, tid: int, src_view: dict, dst_view: dict) -> int:
        """Host step: the same logical values in another view."""
        from ..layout import mat_shape
        return self.host("relayout", tid, mat_shape(dst_view), src_view=src_view, dst_view=dst_view)

    def broadcast(self, x: int, axis: int, n: int) -> int:
        """Spread a (B, R, 1) tensor over n columns (axis 1) or a (B, 1, C) one over n rows (axis 0)
        on the device (§6.4)."""
        b, r, c = self.shape(x)
        sz = self.sz
        rows, cols = (r, n) if axis == 1 else (n, c)
        rt, ct = tiles_of(rows, cols, sz)
        parts = ct if axis == 1 else rt
        key = (axis, rows if axis == 0 else cols)
        if key not in self._ones_tiles:  # one constant per spread length
            ones = np.zeros((parts, sz, sz), np.float32)
            for p in range(parts):
                valid = min(sz, (cols if axis == 1 else rows) - p * sz)
                if axis == 1:
                    ones[p, 0, :valid] = 1.0  # ONES_ROW
                else:
                    ones[p, :valid, 0] = 1.0  # ONES_COL
            self._ones_tiles[key] = self.const(ones.reshape(1, parts * sz, sz))
        cones_t = self._ones_tiles[key]
        out = self.tensor(b, rows, cols)
        xt = rt if axis == 1 else ct
        self._check_cache(xt + parts + rt * ct, "a broadcast")
        progs: list[Program] = [K.transfer(sz, False, xt, self._tile0(cones_t), 1, parts, parts, parts)]
        for bb in range(b):
            progs.append(K.transfer(sz, False, 0, self._tile0(x, bb), 1, xt, xt, xt))
            progs.append(K.broadcast_tiles(sz, rt, ct, 0, xt, xt + parts, axis == 1))
            progs.append(K.transfer(sz, True, xt + parts, self._tile0(out, bb), 1, rt * ct, rt * ct, rt * ct))
        self.device(progs)
        return out
