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
from ..isa import DATAMOVE, LOADWEIGHTS, MATMUL, SIMD, SIMD_OP_CODES
from .lower import ArrayOp, Const, Lowering, SimdOp, Var

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

    def __init__(self, low: Lowering, arch: TensilArch, strategy: str = "local-isolated") -> None:
        if strategy not in STRATEGIES:
            raise UnsupportedError(f"unknown strategy {strategy!r} (choose {', '.join(STRATEGIES)})")
        self.low, self.arch, self.strategy = low, arch, strategy
        self.N = arch.array_size
        self.rows: list[tuple] = []
        self.local_consts = strategy in ("local-consts", "local-vars-and-consts")
        self.local_vars = strategy in ("local-vars", "local-vars-and-consts")
        self.max_local = self.max_acc = 0
        self.stages = 0

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
            raise UnsupportedError(f"consts need {dram1} vectors, DRAM1 has {arch.dram1_depth}")
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
                if self.local_vars and not v.is_output:
                    v.home, v.addr = "local", persist.alloc(v.size, v.name)
                else:
                    v.home, v.addr = "dram0", dram0.alloc(v.size, v.name)
            for v in by_last.get(i, []):
                (persist if v.home == "local" else dram0).release(v.addr, v.size)
        self.persist_high = persist.high
        self.dram0_high = dram0.high
        self.scratch0 = persist.high

    # ------------------------------------------------------------------ jobs
    def generate(self) -> list[tuple]:
        self.place()
        for op in self.low.ops:
            if isinstance(op, ArrayOp):
                self.array_job(op)
            else:
                self.simd_job(op)
        return self.rows

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
        x, y = op.x.root, op.y
        H, W, OH, OW, CINB, COUTB, B = g["H"], g["W"], g["OH"], g["OW"], g["CINB"], g["COUTB"], g["BATCH"]
        row_in, row_out = W * CINB, OW * COUTB
        const_sz = 0 if self.local_consts else op.const.size
        free_local = self._scratch_limit() - const_sz
        fresh = op.act is not None
        nacts = len(op.act.consts) if op.act is not None else 0
        # largest chunk of output rows (over batch × OH) whose working set fits
        total_rows = B * OH
        rows_per = total_rows
        while rows_per > 0:
            span = max(self._in_span(g, r, min(r + rows_per, total_rows))[1] for r in range(0, total_rows, rows_per))
            need_local = (span * row_in if x.home != "local" else 0) + (rows_per * row_out if y.home != "local" else 0)
            need_acc = rows_per * row_out * (2 if fresh else 1) + nacts
            if need_local <= free_local and need_acc <= arch.accumulator_depth:
                break
            if need_acc > arch.accumulator_depth and fresh:
                fresh = False
                continue
            rows_per -= 1
        if rows_per == 0:
            raise UnsupportedError(f"one output row needs more local/accumulator memory than available "
                                   f"(local free {free_local} vectors, accumulators {arch.accumulator_depth})",
                                   where=f"node {op.node.name} ({op.node.op})")
        base = self.scratch0
        cbase = self._load_const(op.const, base)
        s_cb = _log2(COUTB) if COUTB > 1 else 0
        for r0 in range(0, total_rows, rows_per):
            r1 = min(total_rows, r0 + rows_per)
            self.stages += 1
            in_lo, in_n = self._in_span(g, r0, r1)
            xin = base + const_sz
            if x.home == "local":
                xin = x.addr + in_lo * row_in
            else:
                self.move("dram0_in", xin, x.addr + in_lo * row_in, in_n * row_in)
            n_out = (r1 - r0) * row_out
            acc0 = nacts
            for ci, c in enumerate(op.act.consts if op.act is not None else ()):
                self.move("acc_out", self._load_const(c, base + const_sz + in_n * row_in) if not self.local_consts
                          else c.addr, ci, 1)
            for cb in range(COUTB):
                first = True
                for kh, kw, rb in self._tiles(op, cb):
                    with_bias = first and op.has_bias
                    self._load_tile(cbase, cb, COUTB, s_cb, (kh * g["KW"] + kw) * CINB + rb, with_bias)
                    items = []
                    for rr in range(r0, r1):
                        b, oh = divmod(rr, OH)
                        ih = oh * g["SH"] - g["PT"] + kh * g["DH"]
                        for ow in range(OW):
                            iw = ow * g["SW"] - g["PL"] + kw * g["DW"]
                            a = acc0 + ((rr - r0) * OW + ow) * COUTB + cb
                            if 0 <= ih < H and 0 <= iw < W:
                                items.append((xin + (((b * H + ih) - in_lo) * W + iw) * CINB + rb, a, False))
                            elif first:
                                items.append((0, a, True))  # writes the bias
                    self._matmuls(items, accumulate=not first)
                    first = False
            src = acc0
            if op.act is not None:
                dst = acc0 + n_out if fresh else acc0
                self._activation(op.act, src, dst, n_out, list(range(nacts)))
                src = dst
            self._save(y, src, n_out, r0 * row_out, base + const_sz + (0 if x.home == "local" else in_n * row_in))

    def _tiles(self, op: ArrayOp, cb: int) -> list[tuple[int, int, int]]:
        """Weight tiles (kh, kw, input block) of output block ``cb`` that are not all zero (grouped and
        depthwise convolutions are block-diagonal); the first tile always runs (it writes the bias)."""
        g, N = op.geom, self.N
        CINB, COUTB = g["CINB"], g["COUTB"]
        rows = op.const.vectors[COUTB:].reshape(-1, N, COUTB, N)[:, :, cb, :]  # (tiles, N rows, N lanes)
        nz = np.flatnonzero(rows.reshape(len(rows), -1).any(axis=1)).tolist() or [0]
        return [(t // CINB // g["KW"], t // CINB % g["KW"], t % CINB) for t in nz]

    def _in_span(self, g, r0: int, r1: int) -> tuple[int, int]:
        """Global input rows (batch × H) needed by output rows [r0, r1): (first, count)."""
        OH, H = g["OH"], g["H"]
        lo_b, lo_oh = divmod(r0, OH)
        hi_b, hi_oh = divmod(r1 - 1, OH)
        lo = lo_b * H + max(0, lo_oh * g["SH"] - g["PT"])
        hi = hi_b * H + min(H - 1, hi_oh * g["SH"] - g["PT"] + (g["KH"] - 1) * g["DH"])
        return lo, max(hi - lo + 1, 0)

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
            self.move("dram0_out", staging, y.addr + offset, n)

    # ------------------------------------------------------------------ SIMD jobs
    def simd_job(self, op: SimdOp) -> None:
        if op.kind in ("max_pool", "avg_pool"):
            return self.pool_job(op)
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

    def pool_job(self, op: SimdOp) -> None:
        g = op.geom
        x, y = op.inputs[0].root, op.y
        _, C, H, W = x.shape
        B, _, OH, OW = y.shape
        CB = -(-C // self.N)
        kh, kw = g["kernel"]
        sh, sw = g["strides"]
        pt, pl = g["pads"][0], g["pads"][1]
        dh, dw = g["dilations"]
        base = self.scratch0
        nrec = len(op.consts)
        for i, c in enumerate(op.consts):
            self.move("acc_out", self._load_const(c, base + i) if not self.local_consts else c.addr, i, 1)
        lbase = base + (0 if self.local_consts else nrec)
        self._r1 = None  # which reciprocal row R1 holds
        for b in range(B):
            self.stages += 1
            n_in = H * W * CB
            xin = x.addr + b * n_in if x.home == "local" else lbase
            if x.home != "local":
                self.move("dram0_in", lbase, x.addr + b * n_in, n_in)
            acc_in = nrec
            self.move("acc_out", xin, acc_in, n_in)
            acc_out = acc_in + n_in
            n_out = OH * OW * CB
            if acc_out + n_out > self.arch.accumulator_depth:
                raise UnsupportedError(f"pooling input ({n_in} vectors) and output do not fit the accumulators",
                                       where=f"node {op.node.name} ({op.node.op})")
            for oh in range(OH):
                for ow in range(OW):
                    elems = [(oh * sh - pt + i * dh, ow * sw - pl + j * dw) for i in range(kh) for j in range(kw)]
                    elems = [(h, w) for h, w in elems if 0 <= h < H and 0 <= w < W]
                    for cb in range(CB):
                        rows = [acc_in + (h * W + w) * CB + cb for h, w in elems]
                        out = acc_out + (oh * OW + ow) * CB + cb
                        self._pool_vector(op.kind, rows, out, g, oh, ow)
            staging = lbase + (0 if x.home == "local" else n_in)
            self._save(y, acc_out, n_out, b * n_out, staging)

    def _pool_vector(self, kind: str, rows: list[int], out: int, g: dict, oh: int, ow: int) -> None:
        if kind == "max_pool":
            if len(rows) == 1:
                self.simd("Move", "rw", 0, w=out, r=rows[0])
                return
            self.simd("Max", "r", 1, r=rows[0])
            for r in rows[1:-1]:
                self.simd("Max", "r", 1, 0, 1, r=r)
            self.simd("Max", "rw", 0, 0, 1, w=out, r=rows[-1])
            return
        # average: acc[out] = Σ e·(1/k), each product rounded; summing first would saturate large windows
        recip = g["recip_index"][int(g["counts"][oh, ow])]
        if self._r1 != recip:
            self.simd("Move", "r", 1, r=recip)
            self._r1 = recip
        self.simd("Multiply", "rw", 0, 0, 1, w=out, r=rows[0])
        for r in rows[1:]:
            self.simd("Multiply", "rwa", 0, 0, 1, w=out, r=r)


def codegen_summary(gen: CodeGen) -> dict[str, Any]:
    return {"strategy": gen.strategy, "stages": gen.stages, "local_used": max(gen.max_local, gen.persist_high),
            "accumulators_used": gen.max_acc, "dram0_used": gen.dram0_high, "consts_vectors": gen.consts_size,
            "instructions": len(gen.rows), "array_layers": sum(isinstance(o, ArrayOp) for o in gen.low.ops),
            "simd_layers": sum(not isinstance(o, ArrayOp) for o in gen.low.ops)}


__all__ = ["CodeGen", "STRATEGIES", "rollup", "codegen_summary", "np"]
