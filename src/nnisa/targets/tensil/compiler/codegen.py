"""Code generation: memory placement, stages and instruction emission (spec §9.5–§9.7).

Placement: graph inputs first in DRAM0, then every var first-fit with liveness (a freed region is
reused, so XOR's output lands on its input as in Tensil's build); consts in first-use order in
DRAM1 (the ``.tdata``) or, for the ``local-consts`` strategies, at local address 0.  With the
``local-vars`` strategies intermediate vars live in local memory for good.

Each job runs as stages whose working set fits: ``[consts | input rows | output staging]`` in the
local scratch above the persistent region, outputs in the accumulators.  An array job loads each
weight tile (N rows + bias or a zero vector) and streams every output pixel through it; per-pixel
MatMuls are merged into strided runs (:func:`rollup`), and accumulate-MatMuls of padding pixels,
which would add a zero bias to nothing, are dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ..config import TensilArch
from ..isa import DATAMOVE, LOADLUT, LOADWEIGHTS, MATMUL, SIMD, SIMD_OP_CODES
from .actmatmul import actmatmul_job
from .lanemove import lanemove_job
from .pooljob import pool_job
from .jobs import ArrayOp, Const, SimdOp, Var, _runs
from .simdjobs import hard_job
from .lower import Lowering

STRATEGIES = ("local-isolated", "local-vars", "local-consts", "local-vars-and-consts")
DM = {"dram0_in": 0x0, "dram0_out": 0x1, "dram1_in": 0x2, "dram1_out": 0x3, "acc_in": 0xC, "acc_out": 0xD,
      "acc_add": 0xF}


class FirstFit:
    """First-fit allocator over ``[0, limit)`` with explicit frees."""

    def __init__(self, limit: int, what: str) -> None:
        self.free = [(0, limit)]
        self.limit, self.what, self.high = limit, what, 0

    def alloc(self, size: int, name: str) -> int:
        for i, (a, n) in enumerate(self.free):
            if n >= size:
                self.free[i] = (a + size, n - size)
                self.high = max(self.high, a + size)
                return a
        raise UnsupportedError(f"{self.what} is full: {name} needs {size} vectors",
                               hint="choose a larger architecture or the local-isolated strategy")

    def release(self, addr: int, size: int) -> None:
        self.free.append((addr, size))
        self.free.sort()
        merged = []
        for a, n in self.free:
            if merged and merged[-1][0] + merged[-1][1] == a:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((a, n))
        self.free = [(a, n) for a, n in merged if n > 0] or [(self.limit, 0)]


def rollup(items: list[tuple[int, int]], max0: int, max1: int) -> list[tuple[int, int, int, int, int]]:
    """Merge per-vector (local, other) address pairs into runs ``(a0, s0, a1, s1, count)`` whose
    addresses advance by powers of two (strides < ``max0``/``max1``)."""
    runs: list[list[int]] = []
    for a, b in items:
        if runs:
            r = runs[-1]
            if r[4] == 1:
                d0, d1 = a - r[0], b - r[2]
                k0, k1 = _log2(d0), _log2(d1)
                if k0 is not None and k1 is not None and k0 < max0 and k1 < max1:
                    r[1], r[3], r[4] = k0, k1, 2
                    continue
            elif a == r[0] + (r[4] << r[1]) and b == r[2] + (r[4] << r[3]):
                r[4] += 1
                continue
        runs.append([a, 0, b, 0, 1])
    return [tuple(r) for r in runs]


def _log2(d: int) -> int | None:
    return d.bit_length() - 1 if d > 0 and d & (d - 1) == 0 else None


class CodeGen:
    """Emit the program of a :class:`Lowering` for ``arch`` under one memory strategy."""

    def __init__(self, low: Lowering, arch: TensilArch, strategy: str = "local-isolated", reuse: bool = True) -> None:
        if strategy not in STRATEGIES:
            raise UnsupportedError(f"unknown strategy {strategy!r} (choose {', '.join(STRATEGIES)})")
        self.low, self.arch, self.strategy = low, arch, strategy
        self.N = arch.array_size
        self.rows: list[tuple] = []
        self.local_consts = strategy in ("local-consts", "local-vars-and-consts")
        self.local_vars = strategy in ("local-vars", "local-vars-and-consts")
        self.max_local = self.max_acc = 0
        self.stages = 0
        self.reuse = reuse  # next job reads the previous job's output from local staging

    # ------------------------------------------------------------------ emission primitives
    def _row(self, hdr, a0=0, s0=0, a1=0, s1=0, n=0, sop=0, sl=0, sr=0, sd=0):
        self.rows.append((hdr, a0, s0, a1, s1, n, sop, sl, sr, sd, 0, 0))

    def move(self, kind: str, local: int, other: int, count: int, s0: int = 0, s1: int = 0) -> None:
        mem = {"dram0": self.arch.dram0_depth, "dram1": self.arch.dram1_depth, "acc": self.arch.accumulator_depth}[
            "dram0" if kind.startswith("dram0") else "dram1" if kind.startswith("dram1") else "acc"]
        step = min(self.arch.local_depth, mem)
        done = 0
        while done < count:
            k = min(step, count - done)
            self._row(DATAMOVE << 4 | DM[kind], local + (done << s0), s0, other + (done << s1), s1, k - 1)
            done += k
        self.max_local = max(self.max_local, local + ((count - 1) << s0) + 1)

    def simd(self, op: str, flags: str, dst: int = 0, left: int = 0, right: int = 0, w: int = 0, r: int = 0):
        f = sum({"r": 1, "w": 2, "a": 4}[c] for c in flags)
        self._row(SIMD << 4 | f, w, 0, r, 0, 0, SIMD_OP_CODES[op.lower()], left, right, dst)
        self.max_acc = max(self.max_acc, w + 1, r + 1)

    # ------------------------------------------------------------------ placement
    def place(self) -> None:
        low, arch = self.low, self.arch
        persist = FirstFit(arch.local_depth, "local memory")
        dram1 = 0
        for c in low.consts:
            if self.local_consts:
                c.addr = persist.alloc(c.size, c.name)
            else:
                c.addr = dram1
                dram1 += c.size
        if dram1 > arch.dram1_depth:
            big = max(low.consts, key=lambda c: c.size)
            raise UnsupportedError(f"consts need {dram1} vectors, DRAM1 of {arch.name} has {arch.dram1_depth} "
                                   f"(largest: {big.name}, {big.size} vectors)",
                                   hint=f"an architecture with dram1_depth >= {1 << (dram1 - 1).bit_length()} "
                                   "would fit (a .tarch file); grouped/depthwise layers are stored block-diagonal")
        self.consts_size = sum(c.size for c in low.consts)
        dram0 = FirstFit(arch.dram0_depth, "DRAM0")
        vars_ = [v for v in low.vars.values() if v.view_of is None]
        for v in vars_:
            if v.is_input:
                v.home, v.addr = "dram0", dram0.alloc(v.size, v.name)
        # walk the ops in order: allocate outputs, free dead inputs
        by_first: dict[int, list[Var]] = {}
        by_last: dict[int, list[Var]] = {}
        for v in vars_:
            if not v.is_input:
                by_first.setdefault(v.first, []).append(v)
            if not v.is_output:
                by_last.setdefault(v.last, []).append(v)
        for i in range(len(low.ops)):
            for v in by_first.get(i, []):
                if v.name in self.ephemeral:
                    v.home, v.addr = "none", -1
                elif self.local_vars and not v.is_output:
                    v.home, v.addr = "local", persist.alloc(v.size, v.name)
                else:
                    v.home, v.addr = "dram0", dram0.alloc(v.size, v.name)
            for v in by_last.get(i, []):
                if v.home != "none":
                    (persist if v.home == "local" else dram0).release(v.addr, v.size)
        self.persist_high = persist.high
        self.dram0_high = dram0.high
        self.scratch0 = persist.high

    # ------------------------------------------------------------------ jobs
    def generate(self) -> list[tuple]:
        """Emit; a second pass drops the DRAM0 copy of every var only ever read from the staging
        area its producer left in local memory (the next job's input)."""
        self.ephemeral: set[str] = set()
        self._emit()
        vs = {v.name: v for v in self.low.vars.values() if v.view_of is None}
        eph = {k for k, flags in self.reads.items() if all(flags) and not vs[k].is_output and not vs[k].is_input}
        if eph:
            self.ephemeral = eph
            self._emit()
        return self.rows

    def _emit(self) -> None:
        self.rows, self.stages, self.max_local, self.max_acc = [], 0, 0, 0
        self.cache: dict[str, int] = {}
        self.reads: dict[str, list[bool]] = {}
        self.place()
        self.spans: list[tuple[int, int, int]] = []  # (op index, first row, end row): per-layer figures
        for i, op in enumerate(self.low.ops):
            start = len(self.rows)
            if isinstance(op, ArrayOp):
                self.array_job(op)
            else:
                self.simd_job(op)
            self.spans.append((i, start, len(self.rows)))

    def _scratch_limit(self) -> int:
        return self.arch.local_depth - self.scratch0

    def _load_const(self, c: Const, at: int) -> int:
        """Local address of ``c``: loaded into the scratch at ``at`` unless it lives in local."""
        if self.local_consts:
            return c.addr
        self.move("dram1_in", at, c.addr, c.size)
        return at

    def array_job(self, op: ArrayOp) -> None:
        g, N, arch = op.geom, self.N, self.arch
        x, y, res = op.x.root, op.y, op.residual
        H, W, OH, OW, CINB, COUTB, B = g["H"], g["W"], g["OH"], g["OW"], g["CINB"], g["COUTB"], g["BATCH"]
        row_in, row_out = W * CINB, OW * COUTB
        tiles = {cb: self._tiles(op, cb) for cb in range(COUTB)}
        n_tiles = sum(len(t) for t in tiles.values())
        selective = not self.local_consts and n_tiles < COUTB * g["KH"] * g["KW"] * CINB
        const_sz = 0 if self.local_consts else (COUTB + n_tiles * N if selective else op.const.size)
        xc, rc = self._cached(x), self._cached(res)
        base = max([self.scratch0] + [a + v.size for a, v in ((xc, x), (rc, res)) if a is not None])
        # weights larger than half the free local memory stream in one tile at a time (bias + a slot)
        streamed = not self.local_consts and const_sz > (arch.local_depth - base) // 2
        if streamed:
            selective, const_sz = False, COUTB + N
        x_local = x.home == "local" or xc is not None
        r_local = res is None or res.home == "local" or rc is not None
        free_local = arch.local_depth - base - const_sz
        fresh = op.act is not None
        acc_consts = ([op.descale] if op.descale is not None else []) + list(op.act.consts if op.act else ())
        nacts = len(acc_consts)
        total_rows = B * OH
        rows_per = total_rows
        while rows_per > 0:  # largest chunk of output rows (batch × OH) whose working set fits
            span = max(len(self._in_rows(g, r, min(r + rows_per, total_rows))) for r in range(0, total_rows, rows_per))
            need_local = (0 if x_local else span * row_in) + (rows_per * row_out if y.home != "local" else 0) \
                + (0 if r_local else rows_per * row_out)
            need_acc = rows_per * row_out * (2 if fresh else 1) + nacts
            if need_local <= free_local and need_acc <= arch.accumulator_depth:
                break
            if need_acc > arch.accumulator_depth and fresh:
                fresh = False
                continue
            rows_per -= 1
        if rows_per == 0:
            if xc is not None or rc is not None:  # retry without the cached inputs' footprint
                self.cache = {}
                return self.array_job(op)
            raise UnsupportedError(f"one output row needs more local/accumulator memory than available "
                                   f"(local free {free_local} vectors, accumulators {arch.accumulator_depth})",
                                   where=f"node {op.node.name} ({op.node.op})")
        self._served(x, x_local and x.home != "local")
        if res is not None:
            self._served(res, rc is not None)
        s_cb = _log2(COUTB) if COUTB > 1 else 0
        if streamed:
            tile_at, cbase = None, base
            self.move("dram1_in", base, op.const.addr, COUTB)
        elif selective:  # only the non-zero tiles of a block-diagonal layer: bias block, then N rows per tile
            tile_at, cbase = self._load_tiles(op, tiles, base), base
        else:
            tile_at, cbase = None, self._load_const(op.const, base)
        staging = None
        for r0 in range(0, total_rows, rows_per):
            r1 = min(total_rows, r0 + rows_per)
            self.stages += 1
            at = base + const_sz
            if x_local:
                xin, slot = (x.addr if x.home == "local" else xc), None
            else:  # the needed input rows, packed (strided convolutions skip the rows they never read)
                rows = self._in_rows(g, r0, r1)
                slot = {r: i for i, r in enumerate(rows)}
                xin = at
                for first_row, count in _runs(rows):
                    self.move("dram0_in", at + slot[first_row] * row_in, x.addr + first_row * row_in, count * row_in)
                at += len(rows) * row_in
            n_out = (r1 - r0) * row_out
            acc0 = nacts
            for ci, c in enumerate(acc_consts):
                self.move("acc_out", self._load_const(c, at) if not self.local_consts else c.addr, ci, 1)
            for cb in range(COUTB):
                first = True
                for kh, kw, rb in tiles[cb]:
                    with_bias = first and op.has_bias
                    t = (kh * g["KW"] + kw) * CINB + rb
                    if streamed:
                        self._stream_tile(op, cb, t, base + COUTB)
                        self._load_rows(cbase + cb, base + COUTB, 0, with_bias)
                    elif tile_at is not None:
                        self._load_rows(cbase + cb, tile_at[(cb, t)], 0, with_bias)
                    else:
                        self._load_tile(cbase, cb, COUTB, s_cb, t, with_bias)
                    items = []
                    for rr in range(r0, r1):
                        b, oh = divmod(rr, OH)
                        ih = oh * g["SH"] - g["PT"] + kh * g["DH"]
                        row = b * H + ih
                        for ow in range(OW):
                            iw = ow * g["SW"] - g["PL"] + kw * g["DW"]
                            a = acc0 + ((rr - r0) * OW + ow) * COUTB + cb
                            if 0 <= ih < H and 0 <= iw < W:
                                li = row if slot is None else slot[row]
                                items.append((xin + (li * W + iw) * CINB + rb, a, False))
                            elif first:
                                items.append((0, a, True))  # writes the bias
                    self._matmuls(items, accumulate=not first)
                    first = False
            if op.descale is not None:  # undo the weights' 2^p (exact power of two, one rounding)
                self.simd("Move", "r", 1, r=0)
                for i in range(n_out):
                    self.simd("Multiply", "rw", 0, 0, 1, w=acc0 + i, r=acc0 + i)
            if res is not None:  # fused Add: acc ⊕= shortcut rows
                if res.home == "local" or rc is not None:
                    raddr = (res.addr if res.home == "local" else rc) + r0 * row_out
                else:
                    raddr = at
                    at += n_out
                    self.move("dram0_in", raddr, res.addr + r0 * row_out, n_out)
                self.move("acc_add", raddr, acc0, n_out)
            src = acc0
            if op.act is not None:
                dst = acc0 + n_out if fresh else acc0
                self._activation(op.act, src, dst, n_out, list(range(nacts - len(op.act.consts), nacts)))
                src = dst
            staging = at
            self._save(y, src, n_out, r0 * row_out, staging)
        self.cache = {y.name: staging} if self.reuse and rows_per == total_rows and y.home != "local" else {}

    def _cached(self, v: Var | None) -> int | None:
        """Local address of ``v`` when the previous job left all of it in its staging area."""
        return None if v is None or v.home == "local" else self.cache.get(v.name)

    def _served(self, v: Var, from_cache: bool) -> None:
        self.reads.setdefault(v.name, []).append(from_cache)

    def _in_rows(self, g, r0: int, r1: int) -> list[int]:
        """Global input rows (batch × H) that output rows [r0, r1) read, ascending."""
        OH, H = g["OH"], g["H"]
        need = set()
        for rr in range(r0, r1):
            b, oh = divmod(rr, OH)
            for kh in range(g["KH"]):
                ih = oh * g["SH"] - g["PT"] + kh * g["DH"]
                if 0 <= ih < H:
                    need.add(b * H + ih)
        return sorted(need)

    def _tiles(self, op: ArrayOp, cb: int) -> list[tuple[int, int, int]]:
        """Weight tiles (kh, kw, input block) of output block ``cb`` that are not all zero (grouped and
        depthwise convolutions are block-diagonal); the first tile always runs (it writes the bias)."""
        g, N = op.geom, self.N
        CINB, COUTB = g["CINB"], g["COUTB"]
        rows = op.const.vectors[COUTB:].reshape(-1, N, COUTB, N)[:, :, cb, :]  # (tiles, N rows, N lanes)
        nz = np.flatnonzero(rows.reshape(len(rows), -1).any(axis=1)).tolist() or [0]
        return [(t // CINB // g["KW"], t // CINB % g["KW"], t % CINB) for t in nz]

    def _load_tiles(self, op: ArrayOp, tiles: dict, base: int) -> dict:
        """Load the bias block and the rows of every non-zero tile into local; (cb, tile) → address."""
        N, COUTB = self.N, op.geom["COUTB"]
        self.move("dram1_in", base, op.const.addr, COUTB)
        at, out = base + COUTB, {}
        for cb, ts in tiles.items():
            for kh, kw, rb in ts:
                t = (kh * op.geom["KW"] + kw) * op.geom["CINB"] + rb
                self._stream_tile(op, cb, t, at)
                out[(cb, t)] = at
                at += N
        return out

    def _stream_tile(self, op: ArrayOp, cb: int, t: int, slot: int) -> None:
        """DRAM1 → local ``slot``: the N rows of weight tile ``t`` of output block ``cb``."""
        N, COUTB = self.N, op.geom["COUTB"]
        src = op.const.addr + COUTB + t * N * COUTB + cb
        s = _log2(COUTB) if COUTB > 1 else 0
        if s is not None and s < self.arch.stride1_depth:
            self.move("dram1_in", slot, src, N, 0, s)
        else:
            for k in range(N):
                self.move("dram1_in", slot + k, src + k * COUTB, 1)

    def _load_rows(self, bias: int, row0: int, s: int, with_bias: bool) -> None:
        """LoadWeights of N rows at ``row0`` (stride 2^s), then the bias vector or a zero vector."""
        self._row(LOADWEIGHTS << 4, row0, s, self.N - 1, 0)
        if with_bias:
            self._row(LOADWEIGHTS << 4, bias, 0, 0, 0)
        else:
            self._row(LOADWEIGHTS << 4 | 1, 0, 0, 0, 0)

    def _load_tile(self, cbase: int, cb: int, COUTB: int, s_cb: int | None, tile: int, with_bias: bool) -> None:
        N, sd = self.N, self.arch.stride0_depth
        bias = cbase + cb
        row0 = cbase + COUTB + tile * N * COUTB + cb
        strided = s_cb is not None and s_cb < sd and (COUTB == 1 or _log2(COUTB) is not None)
        if with_bias and strided and row0 == bias + COUTB:
            self._row(LOADWEIGHTS << 4, bias, s_cb, N, 0)
            return
        if strided:
            self._row(LOADWEIGHTS << 4, row0, s_cb, N - 1, 0)
        else:
            for k in reversed(range(N)):
                self._row(LOADWEIGHTS << 4, row0 + k * COUTB, 0, 0, 0)
        if with_bias:
            self._row(LOADWEIGHTS << 4, bias, 0, 0, 0)
        else:
            self._row(LOADWEIGHTS << 4 | 1, 0, 0, 0, 0)

    def _matmuls(self, items: list[tuple[int, int, bool]], accumulate: bool) -> None:
        sd0, sd1 = self.arch.stride0_depth, self.arch.stride1_depth
        i = 0
        while i < len(items):
            zero = items[i][2]
            j = i
            while j < len(items) and items[j][2] == zero:
                j += 1
            pairs = [(b if zero else a, b) for a, b, _ in items[i:j]]  # a zero input has no address
            for a0, s0, a1, s1, n in rollup(pairs, sd1 if zero else sd0, sd1):
                limit = min(self.arch.local_depth, self.arch.accumulator_depth)
                done = 0
                while done < n:
                    k = min(limit, n - done)
                    flags = (1 if accumulate else 0) | (2 if zero else 0)
                    self._row(MATMUL << 4 | flags, 0 if zero else a0 + (done << s0), 0 if zero else s0,
                              a1 + (done << s1), s1, k - 1)
                    self.max_acc = max(self.max_acc, a1 + ((n - 1) << s1) + 1)
                    done += k
            i = j

    def _activation(self, act, src: int, dst: int, n: int, crow: list[int]) -> None:
        if act.kind == "relu":
            self.simd("Zero", "", dst=1)
            for i in range(n):
                self.simd("Max", "rw", 0, 0, 1, w=dst + i, r=src + i)
        elif act.kind == "leaky":
            op = "Max" if act.alpha <= 1 else "Min"
            for i in range(n):
                self.simd("Move", "r", 1, r=crow[0])
                self.simd("Multiply", "r", 1, 0, 1, r=src + i)
                self.simd(op, "rw", 0, 0, 1, w=dst + i, r=src + i)
        else:  # clip
            for i in range(n):
                self.simd("Move", "r", 1, r=src + i)
                self.simd("Max", "r", 1, 0, 1, r=crow[0])
                self.simd("Min", "rw", 0, 0, 1, w=dst + i, r=crow[1])

    def _save(self, y: Var, src: int, n: int, offset: int, staging: int) -> None:
        if y.home == "local":
            self.move("acc_in", y.addr + offset, src, n)
        else:
            self.move("acc_in", staging, src, n)
            if y.home != "none":  # "none": only ever read from the staging area by the next job
                self.move("dram0_out", staging, y.addr + offset, n)

    # ------------------------------------------------------------------ SIMD jobs
    def simd_job(self, op: SimdOp) -> None:
        for v in op.inputs:
            if isinstance(v, Var):
                self._served(v.root, False)
        if op.kind in ("max_pool", "avg_pool"):
            pool_job(self, op)
        else:
            self._simd_job(op)
        self.cache = {}

    def _simd_job(self, op: SimdOp) -> None:
        if op.kind == "lut":
            return self.lut_job(op)
        if op.kind == "concat":
            return self.concat_job(op)
        if op.kind == "lanemove":
            return lanemove_job(self, op)
        if op.kind == "hard":
            return hard_job(self, op)
        if op.kind == "actmatmul":
            return actmatmul_job(self, op)
        if op.kind == "resize":
            return self.resize_job(op)
        if op.kind == "resize_linear":
            return self.resize_linear_job(op)
        arch = self.arch
        y = op.y
        tensors = [v for v in op.inputs if isinstance(v, Var)]
        consts = [c for c in op.inputs if isinstance(c, Const)] + list(op.act.consts if op.act else ())
        base = self.scratch0
        const_rows = sum(c.size for c in consts)
        free_local = self._scratch_limit() - (0 if self.local_consts else const_rows)
        per = len(tensors) + (1 if y.home != "local" else 0)
        chunk = min(y.size, max(1, free_local // max(per, 1)), max(1, (arch.accumulator_depth - const_rows) // 2))
        if chunk <= 0 or free_local < per:
            raise UnsupportedError("not enough local memory for an element-wise job", where=f"node {op.node.name}")
        # consts: scratch → accumulator rows [0, const_rows)
        crow, at = {}, 0
        for c in consts:
            la = self._load_const(c, base + at if not self.local_consts else 0)
            self.move("acc_out", la, at, c.size)
            crow[id(c)] = at
            at += c.size
        lbase = base + (0 if self.local_consts else const_rows)
        for v0 in range(0, y.size, chunk):
            n = min(chunk, y.size - v0)
            self.stages += 1
            addrs = []
            for k, v in enumerate(tensors):
                if v.home == "local":
                    addrs.append(v.addr + v0)
                else:
                    self.move("dram0_in", lbase + k * chunk, v.addr + v0, n)
                    addrs.append(lbase + k * chunk)
            a_out = const_rows
            b_rows = const_rows + n
            kind = op.kind
            if kind == "add" and len(tensors) == 2:
                self.move("acc_out", addrs[0], a_out, n)
                self.move("acc_add", addrs[1], a_out, n)
            elif kind == "act":
                self.move("acc_out", addrs[0], a_out, n)
            else:
                self._binary(op, kind, tensors, addrs, crow, a_out, b_rows, n, v0)
            if op.act is not None:
                self._activation(op.act, a_out, a_out, n, [crow[id(c)] for c in op.act.consts])
            self._save(y, a_out, n, v0, lbase + len(tensors) * chunk)

    def _binary(self, op, kind, tensors, addrs, crow, a_out, b_rows, n, v0) -> None:
        """``y = in0 OP in1`` with constants broadcast per channel: Move(in0) → R1; OP(R1, in1) → O."""
        ins = op.inputs
        self.move("acc_out", addrs[0], a_out, n)
        if len(tensors) == 2:
            self.move("acc_out", addrs[1], b_rows, n)
        name = {"add": "Add", "sub": "Subtract", "mul": "Multiply"}[kind]
        period = {id(c): c.size for c in ins if isinstance(c, Const)}
        for i in range(n):
            def row(k):
                v = ins[k]
                if isinstance(v, Var):
                    return (a_out if k == 0 or len(tensors) == 1 else b_rows) + i
                return crow[id(v)] + ((v0 + i) % period[id(v)])
            self.simd("Move", "r", 1, r=row(0))
            self.simd(name, "rw", 0, 1, 0, w=a_out + i, r=row(1))

    def concat_job(self, op: SimdOp) -> None:
        """Per chunk of pixels: each input → accumulators → its channel blocks of the output (strided
        DataMove acc → local), then the assembled output is saved like any job's."""
        y, N = op.y, self.N
        pix = y.shape[0] * (y.shape[2] * y.shape[3] if len(y.shape) == 4 else 1)
        cbo = y.size // pix
        cbs = [v.size // pix for v in op.inputs]
        free = self._scratch_limit()
        chunk = max(1, min(pix, free // (cbo + max(cbs)), self.arch.accumulator_depth // max(cbs)))
        base = self.scratch0
        for p0 in range(0, pix, chunk):
            n = min(chunk, pix - p0)
            self.stages += 1
            stage = base + n * max(cbs)
            out = y.addr + p0 * cbo if y.home == "local" else stage
            off = 0
            for v, cb in zip(op.inputs, cbs):
                if v.home == "local":
                    src = v.addr + p0 * cb
                else:
                    src = base
                    self.move("dram0_in", src, v.addr + p0 * cb, n * cb)
                self.move("acc_out", src, 0, n * cb)
                for j in range(cb):
                    ks, kd = _log2(cb) if cb > 1 else 0, _log2(cbo) if cbo > 1 else 0
                    if ks is not None and kd is not None and ks < self.arch.stride1_depth \
                            and kd < self.arch.stride0_depth:
                        self.move("acc_in", out + off + j, j, n, kd, ks)
                    else:
                        for q in range(n):
                            self.move("acc_in", out + q * cbo + off + j, q * cb + j, 1)
                off += cb
            if y.home != "local" and y.home != "none":
                self.move("dram0_out", stage, y.addr + p0 * cbo, n * cbo)

    def resize_job(self, op: SimdOp) -> None:
        """Nearest upsampling by integer factors: input rows → accumulators → each output vector with
        strided DataMoves (acc → local), one per output row, phase and channel block."""
        x, y = op.inputs[0], op.y
        B, C, H, W = x.shape
        sh, sw = op.geom["scales"]
        OW = W * sw
        cb = x.size // (B * H * W)
        row_in, row_out = W * cb, OW * cb
        free = self._scratch_limit()
        rows = max(1, min(B * H, free // (row_in + sh * row_out), self.arch.accumulator_depth // row_in))
        base = self.scratch0
        ks, kd = _log2(cb) if cb > 1 else 0, _log2(sw * cb)
        strided = ks is not None and kd is not None and ks < self.arch.stride1_depth and kd < self.arch.stride0_depth
        for r0 in range(0, B * H, rows):
            n = min(rows, B * H - r0)
            self.stages += 1
            if x.home == "local":
                src = x.addr + r0 * row_in
            else:
                src = base
                self.move("dram0_in", src, x.addr + r0 * row_in, n * row_in)
            self.move("acc_out", src, 0, n * row_in)
            stage = base + n * row_in
            out = y.addr + r0 * sh * row_out if y.home == "local" else stage
            for r in range(n):
                for a in range(sh):
                    orow = out + (r * sh + a) * row_out
                    for q in range(sw):
                        for j in range(cb):
                            if strided:
                                self.move("acc_in", orow + q * cb + j, r * row_in + j, W, kd, ks)
                            else:
                                for iw in range(W):
                                    self.move("acc_in", orow + (iw * sw + q) * cb + j, r * row_in + iw * cb + j, 1)
            if y.home not in ("local", "none"):
                self.move("dram0_out", stage, y.addr + r0 * sh * row_out, n * sh * row_out)

    def resize_linear_job(self, op: SimdOp) -> None:
        """Linear resize: weights and one input sample in the accumulators; per output vector
        ``Move(I=weight) → R1`` (only when R1 holds another weight) and ``Multiply(I=source, R1) → O``,
        accumulating after the first source."""
        x, y = op.inputs[0], op.y
        B, C, H, W = x.shape
        _, _, OH, OW = y.shape
        cb = x.size // (B * H * W)
        base = self.scratch0
        nw = len(op.consts)
        for i, c in enumerate(op.consts):
            self.move("acc_out", self._load_const(c, base + i) if not self.local_consts else c.addr, i, 1)
        lbase = base + (0 if self.local_consts else nw)
        n_in, n_out = H * W * cb, OH * OW * cb
        if nw + n_in + n_out > self.arch.accumulator_depth:
            raise UnsupportedError(f"resize input ({n_in} vectors) and output ({n_out}) do not fit the accumulators",
                                   where=f"node {op.node.name} ({op.node.op})")
        r1 = None
        for b in range(B):
            self.stages += 1
            xin = x.addr + b * n_in if x.home == "local" else lbase
            if x.home != "local":
                self.move("dram0_in", lbase, x.addr + b * n_in, n_in)
            acc_in, acc_out = nw, nw + n_in
            self.move("acc_out", xin, acc_in, n_in)
            for p, terms in enumerate(op.geom["plan"]):
                for j in range(cb):
                    out = acc_out + p * cb + j
                    for k, (h, w, wi) in enumerate(terms):
                        if r1 != wi:
                            self.simd("Move", "r", 1, r=wi)
                            r1 = wi
                        self.simd("Multiply", "rw" if k == 0 else "rwa", 0, 0, 1, w=out,
                                  r=acc_in + (h * W + w) * cb + j)
            staging = lbase + (0 if x.home == "local" else n_in)
            self._save(y, acc_out, n_out, b * n_out, staging)

    def stage_in(self, x: Var, v0: int, n: int, at: int, acc_row: int) -> None:
        """Vectors ``[v0, v0+n)`` of ``x`` into accumulator rows from ``acc_row`` (through local
        ``at`` unless ``x`` lives in local memory)."""
        if x.home == "local":
            src = x.addr + v0
        else:
            src = at
            self.move("dram0_in", src, x.addr + v0, n)
        self.move("acc_out", src, acc_row, n)

    def lut_job(self, op: SimdOp) -> None:
        """``y = v_i + s_i·(x − k_i)``: LoadLUT the key/value/slope tables, then per vector
        ``Lookup(I) → R1, R2, R3``; ``R1 = Multiply(R1, R3)``; ``O = Add(R1, R2)``."""
        x, y = op.inputs[0], op.y
        base = self.scratch0
        at = base
        for t, c in enumerate(op.consts):
            la = c.addr if self.local_consts else at
            if not self.local_consts:
                self.move("dram1_in", at, c.addr, c.size)
                at += c.size
            self._row(LOADLUT << 4, la, 0, t, 0)
        free = self.arch.local_depth - at
        chunk = min(y.size, max(1, free // 2), self.arch.accumulator_depth)
        for v0 in range(0, y.size, chunk):
            n = min(chunk, y.size - v0)
            self.stages += 1
            self.stage_in(x, v0, n, at, 0)
            for i in range(n):
                self.simd("Lookup", "r", 1, r=i)
                self.simd("Multiply", "", 1, 1, 3)
                self.simd("Add", "w", 0, 1, 2, w=i)
            self._save(y, 0, n, v0, at + (0 if x.home == "local" else n))


def codegen_summary(gen: CodeGen) -> dict[str, Any]:
    return {"strategy": gen.strategy, "stages": gen.stages, "local_used": max(gen.max_local, gen.persist_high),
            "accumulators_used": gen.max_acc, "dram0_used": gen.dram0_high, "consts_vectors": gen.consts_size,
            "instructions": len(gen.rows), "array_layers": sum(isinstance(o, ArrayOp) for o in gen.low.ops),
            "simd_layers": sum(not isinstance(o, ArrayOp) for o in gen.low.ops)}


__all__ = ["CodeGen", "STRATEGIES", "rollup", "codegen_summary", "np"]
