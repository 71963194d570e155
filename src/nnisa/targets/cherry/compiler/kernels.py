"""Program generators for the Cherry compiler (spec ``cherry.md`` §6) and program fusion.

Every generator writes its instructions as assembly text (loops as blocks) and its loops and
address formulas as numbers, and assembles them, so each kernel passes the assembler's legality
checks (§6.3); instruction lines seen before cost a dictionary look-up.  :func:`fuse` concatenates phase
programs into as few programs as the budgets allow (8 loops, 8 formulas, 255 instructions),
renumbering loops and merging formulas that share a constant (inactive loops contribute 0).
"""

from __future__ import annotations

import numpy as np

from ..formats.text import CherryAssembler
from ..isa import LOOP_VARS, MAX_FORMULAS, MAX_LOOPS, OP
from ..program import MAX_ITERATIONS, MAX_PROGRAM, Header, Program


class Kernel:
    """Text builder for one program: loops are opened/closed as blocks, formulas get indices."""

    def __init__(self, sz: int):
        self.sz = sz
        self.lines: list[str] = []
        self.loops: list[int] = []
        self.formulas: dict[tuple[int, ...], int] = {}
        self.depth = 0
        self.active: list[int] = []  # open loops, innermost last

    def apu(self, formula: tuple[int, ...]) -> int:
        """Index of the formula (9 values: :func:`_expr`), deduplicated."""
        if formula not in self.formulas:
            self.formulas[formula] = len(self.formulas)
        return self.formulas[formula]

    def open(self, iterations: int, independent: bool) -> str:
        """Start a loop; returns its variable name."""
        a = len(self.loops)
        if iterations > MAX_ITERATIONS:
            raise ValueError(f"loop of {iterations} iterations (max {MAX_ITERATIONS})")
        self.loops.append(iterations)
        self.emit(f"{'start_independent_loop' if independent else 'start_loop'} {a}")
        self.depth += 1
        self.active.append(a)
        return LOOP_VARS[a]

    def close(self) -> None:
        """End the innermost open loop."""
        self.depth -= 1
        self.emit(f"end_loop {self.active.pop()}")

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def build(self) -> Program:
        asm = CherryAssembler("<kernel>", self.sz, None)
        for a, n in enumerate(self.loops):
            asm.define_loop(a, {"iterations": n}, 0)
        for vals, f in self.formulas.items():
            asm.define_formula(f, list(vals), 0)
        return asm.assemble("\n".join(self.lines) + "\n")


def _expr(const: int, terms: list[tuple[int, str]]) -> tuple[int, ...]:
    """The formula ``const + sum(c * v)`` (v a loop variable's name) as its 9 values."""
    vals = [0] * 9
    for c, v in terms:
        vals[LOOP_VARS.index(v)] += c
    vals[8] = const
    return tuple(vals)


def transfer(sz: int, write: bool, cache: int, dram: int, rows: int, cols: int, cstride: int,
             dstride: int) -> Program:
    """Copy a rows x cols block of tiles between device memory and the cache (mem_read/mem_write)."""
    k = Kernel(sz)
    op = "mem_write" if write else "mem_read"
    if rows == 1 or (cstride == cols and dstride == cols):
        v = k.open(rows * cols, True)
        c, d = k.apu(_expr(cache, [(1, v)])), k.apu(_expr(dram, [(1, v)]))
    else:
        r = k.open(rows, False)
        v = k.open(cols, True)
        c = k.apu(_expr(cache, [(cstride, r), (1, v)]))
        d = k.apu(_expr(dram, [(dstride, r), (1, v)]))
        k.emit(f"{op} {c}, {d}")
        k.close()
        k.close()
        return k.build()
    k.emit(f"{op} {c}, {d}")
    k.close()
    return k.build()


def zero_fill(sz: int, cache: int, tiles: int) -> Program:
    """cache[cache .. cache + tiles) = 0 (zero ACC; store ACC)."""
    k = Kernel(sz)
    v = k.open(tiles, True)
    c = k.apu(_expr(cache, [(1, v)]))
    k.emit("zero ACC")
    k.emit(f"store {c}, ACC")
    k.close()
    return k.build()


def matmul_compute(sz: int, cx: int, cw: int, cc: int, mb: int, kb: int, nb: int, ta: bool, tb: bool,
                   indep_m: bool = False, unroll: int = 1, k0: int = 0, kcount: int | None = None) -> Program:
    """C[m, n] += X[m, k] @ W[k, n] over an mb x kb x nb block of tiles held in the cache.

    Cache layouts (row-major tiles): X block mb x kb (ta: kb x mb, transposed in registers), W block
    kb x nb (tb: nb x kb), C block mb x nb.  The innermost loop is independent (over n, or over m
    with ``indep_m``); the other two are in-order.  The program covers k-tiles
    ``k0 .. k0 + kcount`` of the block, ``unroll`` of them per iteration with one ACC load/store
    (``kcount`` a multiple of ``unroll``): 2u + 2 load/store slots per u matmuls instead of 4u.
    """
    u = unroll
    kcount = kb if kcount is None else kcount
    k = Kernel(sz)
    if indep_m:
        vn = k.open(nb, False)
        vk = k.open(kcount // u, False)
        vm = k.open(mb, True)
    else:
        vm = k.open(mb, False)
        vk = k.open(kcount // u, False)
        vn = k.open(nb, True)
    fc = k.apu(_expr(cc, [(nb, vm), (1, vn)]))
    xs, ws = [], []
    for j in range(u):
        kk = k0 + j
        xs.append(k.apu(_expr(cx + mb * kk, [(mb * u, vk), (1, vm)]) if ta else
                        _expr(cx + kk, [(kb, vm), (u, vk)])))
        ws.append(k.apu(_expr(cw + kk, [(kb, vn), (u, vk)]) if tb else
                        _expr(cw + nb * kk, [(nb * u, vk), (1, vn)])))
    k.emit(f"load {fc}, ACC")
    for j in range(u):
        k.emit(f"load {xs[j]}, INPUT")
        if ta:
            k.emit("copy INPUT, INPUT, T")
        k.emit(f"load {ws[j]}, WEIGHTS")
        if tb:
            k.emit("copy WEIGHTS, WEIGHTS, T")
        k.emit("matmul")
    k.emit(f"store {fc}, ACC")
    for _ in range(3):
        k.close()
    return k.build()


def elementwise(sz: int, op: str, tiles: int, cx: int, cy: int | None, co: int, cmask: int | None = None,
                ystride: int = 1, xstride: int = 1) -> Program:
    """OUT = op(X[, Y]) over ``tiles`` cache tiles, with the zero-padding fix-ups of §6.9.

    ``cmask`` is the cache address of an INVMASK tensor (1 in padding, 0 elsewhere; same tiling),
    required for exp/log/div/pow.  ``ystride`` (``xstride``) 0 broadcasts one Y (X) tile.
    """
    k = Kernel(sz)
    v = k.open(tiles, True)
    fx = k.apu(_expr(cx, [(xstride, v)]))
    fo = k.apu(_expr(co, [(1, v)]))
    fy = k.apu(_expr(cy, [(ystride, v)])) if cy is not None else None
    fm = k.apu(_expr(cmask, [(1, v)])) if cmask is not None else None
    if op in ("relu", "exp", "log", "gtz"):
        if op == "log" and fm is not None:  # log2(X + INVMASK)
            k.emit(f"load {fx}, INPUT")
            k.emit(f"load {fm}, WEIGHTS")
            k.emit("add")
            k.emit("copy INPUT, OUTPUT")
            k.emit("log")
        else:
            k.emit(f"load {fx}, INPUT")
            k.emit(op)
            if op == "exp" and fm is not None:  # exp(X) - INVMASK
                k.emit("copy INPUT, OUTPUT")
                k.emit(f"load {fm}, WEIGHTS")
                k.emit("sub")
    else:
        if op == "div" and fm is not None:  # X / (Y + INVMASK)
            k.emit(f"load {fy}, INPUT")
            k.emit(f"load {fm}, WEIGHTS")
            k.emit("add")
            k.emit("copy WEIGHTS, OUTPUT")
            k.emit(f"load {fx}, INPUT")
        else:
            k.emit(f"load {fx}, INPUT")
            k.emit(f"load {fy}, WEIGHTS")
        k.emit(op)
        if op == "pow" and fm is not None:  # pow(X, Y) - INVMASK
            k.emit("copy INPUT, OUTPUT")
            k.emit(f"load {fm}, WEIGHTS")
            k.emit("sub")
    k.emit(f"store {fo}, OUTPUT")
    k.close()
    return k.build()


def select_max(sz: int, tiles: int, ca: int, cb: int, ones: int, co: int) -> Program:
    """OUT = max(A, B) = m*A + (1-m)*B, m = gtz(A - B) (exact for finite values, §6.8)."""
    k = Kernel(sz)
    v = k.open(tiles, True)
    fa, fb = k.apu(_expr(ca, [(1, v)])), k.apu(_expr(cb, [(1, v)]))
    f1 = k.apu(_expr(ones, []))
    fo = k.apu(_expr(co, [(1, v)]))
    for line in (f"load {fa}, INPUT", f"load {fb}, WEIGHTS", "sub", "copy INPUT, OUTPUT", "gtz",
                 "copy WEIGHTS, OUTPUT", f"load {f1}, INPUT", "sub", "copy INPUT, OUTPUT",
                 f"load {fb}, WEIGHTS", "zero ACC", "mulacc", "copy WEIGHTS, INPUT", f"load {f1}, INPUT", "sub",
                 "copy INPUT, OUTPUT", f"load {fa}, WEIGHTS", "mulacc", f"store {fo}, ACC"):
        k.emit(line)
    k.close()
    return k.build()


def reduce_tiles(sz: int, op: str, axis: int, rt: int, ct: int, cx: int, cp: int, stride: int) -> Program:
    """Partials op= reduction of an rt x ct grid of X tiles (row stride ``stride`` tiles) along
    ``axis``: 1 reduces over columns into column 0 of the partial of each row tile, 0 over rows
    into row 0 of the partial of each column tile (§6.8)."""
    k = Kernel(sz)
    outer, inner = (ct, rt) if axis == 1 else (rt, ct)
    vo = k.open(outer, False)
    vi = k.open(inner, True)
    fx = k.apu(_expr(cx, [(stride, vi), (1, vo)] if axis == 1 else [(stride, vo), (1, vi)]))
    fp = k.apu(_expr(cp, [(1, vi)]))
    k.emit(f"load {fp}, ACC")
    k.emit(f"load {fx}, OUTPUT")
    k.emit(f"{op} 1, {axis}")
    k.emit(f"store {fp}, ACC")
    k.close()
    k.close()
    return k.build()


def reduce_edge(sz: int, op: str, axis: int, rt: int, ct: int, cx: int, cp: int, neg: int) -> Program:
    """The last tile along the reduced axis, with X + NEGMASK before a max reduction."""
    k = Kernel(sz)
    inner = rt if axis == 1 else ct
    vi = k.open(inner, True)
    if axis == 1:
        fx = k.apu(_expr(cx + ct - 1, [(ct, vi)]))
    else:
        fx = k.apu(_expr(cx + (rt - 1) * ct, [(1, vi)]))
    fp = k.apu(_expr(cp, [(1, vi)]))
    fn = k.apu(_expr(neg, [(1, vi)]))
    for line in (f"load {fx}, INPUT", f"load {fn}, WEIGHTS", "add", f"load {fp}, ACC", f"{op} 1, {axis}",
                 f"store {fp}, ACC"):
        k.emit(line)
    k.close()
    return k.build()


def transpose_tiles(sz: int, rt: int, ct: int, cx: int, co: int) -> Program:
    """O = Xᵀ over an rt x ct tile grid (§6.5): tile (r, c) → (c, r), transposed in registers."""
    k = Kernel(sz)
    vr = k.open(rt, False)
    vc = k.open(ct, True)
    fx = k.apu(_expr(cx, [(ct, vr), (1, vc)]))
    fo = k.apu(_expr(co, [(rt, vc), (1, vr)]))
    k.emit(f"load {fx}, INPUT")
    k.emit("copy OUTPUT, INPUT, T")
    k.emit(f"store {fo}, OUTPUT")
    k.close()
    k.close()
    return k.build()


# ------------------------------------------------------------------ fusion
def _apu_columns(op: int) -> tuple[str, ...]:
    if op in (OP["load"], OP["store"]):
        return ("apu",)
    if op in (OP["mem_read"], OP["mem_write"]):
        return ("capu", "mapu")
    return ()


class _Fusion:
    """Programs concatenated so far (loops renumbered, formulas merged); adding one costs its
    own length, so fusing a long run of phase programs stays linear."""

    def __init__(self, sz: int):
        self.sz = sz
        self.rows: list[np.ndarray] = []
        self.count = 0
        self.iters, self.jumps = [0] * MAX_LOOPS, [0] * MAX_LOOPS
        self.forms: list[list[int]] = []
        self.loop_base = 0

    def add(self, p: Program) -> bool:
        """Append ``p``; False (and nothing changed) when the budgets would be exceeded."""
        used = [a for a in range(MAX_LOOPS) if p.header.iterations[a]]
        span = max(used) + 1 if used else 0
        if self.loop_base + span > MAX_LOOPS or self.count + len(p.rows) > MAX_PROGRAM:
            return False
        forms = [list(f) for f in self.forms]
        own = range(self.loop_base, MAX_LOOPS)
        fmap = []
        for vec in p.header.formulas.tolist():
            shifted = [0] * 9
            shifted[8] = vec[8]
            for a in range(MAX_LOOPS):
                if vec[a]:
                    shifted[self.loop_base + a] = vec[a]
            f = _merge(forms, shifted, own)
            if f is None:
                return False
            fmap.append(f)
        r = p.rows.copy()
        ops = r["op"]
        remap = np.array(fmap, dtype=r["apu"].dtype)
        for col, sel in (("apu", (ops == OP["load"]) | (ops == OP["store"])),
                         ("capu", (ops == OP["mem_read"]) | (ops == OP["mem_write"])),
                         ("mapu", (ops == OP["mem_read"]) | (ops == OP["mem_write"]))):
            r[col][sel] = remap[r[col][sel]]
        loop_sel = (ops == OP["start_loop"]) | (ops == OP["start_independent_loop"]) | (ops == OP["end_loop"])
        r["loop"][loop_sel] += self.loop_base
        for a in used:
            self.iters[self.loop_base + a] = p.header.iterations[a]
            self.jumps[self.loop_base + a] = p.header.jumps[a]
        self.loop_base += span
        self.forms = forms
        self.rows.append(r)
        self.count += len(r)
        return True

    def program(self) -> Program:
        fm = np.zeros((MAX_FORMULAS, 9), np.int64)
        for i, f in enumerate(self.forms):
            fm[i] = f
        return Program(np.concatenate(self.rows), Header(list(self.iters), list(self.jumps), fm), sz=self.sz)


def concat(progs: list[Program]) -> Program | None:
    """One program equivalent to running ``progs`` in order, or None if it exceeds the budgets."""
    fu = _Fusion(progs[0].sz)
    return fu.program() if all(fu.add(p) for p in progs) else None


def _merge(forms: list[list[int]], vec: list[int], own_loops: range) -> int | None:
    """Index of a formula equal to ``vec`` where ``vec``'s loops are active (§6.3 merging)."""
    for i, f in enumerate(forms):
        if f == vec:
            return i
    others = [a for a in range(8) if a not in own_loops]
    for i, f in enumerate(forms):
        # same constant; earlier programs' loops are inactive in this one and vice versa
        if f[8] == vec[8] and not any(f[a] for a in own_loops) and not any(vec[a] for a in others):
            for a in range(8):
                f[a] += vec[a]
            return i
    if len(forms) >= MAX_FORMULAS:
        return None
    forms.append(list(vec))
    return len(forms) - 1


def fuse(progs: list[Program]) -> list[Program]:
    """Greedily concatenate consecutive programs while the budgets allow."""
    out: list[Program] = []
    group: list[Program] = []
    fu: _Fusion | None = None
    for p in progs:
        if fu is not None and fu.add(p):
            group.append(p)
            continue
        if group:
            out.append(fu.program() if len(group) > 1 else group[0])
        group, fu = [p], _Fusion(p.sz)
        if not fu.add(p):  # a program at the budget limits on its own stays as it is
            out.append(p)
            group, fu = [], None
    if group:
        out.append(fu.program() if len(group) > 1 else group[0])
    return out


def broadcast_tiles(sz: int, rt: int, ct: int, cx: int, cones: int, co: int, along_cols: bool) -> Program:
    """In-tile broadcast with constant tiles (§6.4): column 0 of each X row tile (``along_cols``)
    or row 0 of each X column tile spread over an rt x ct output grid, as ACC = X @ ONES_ROW
    (or ONES_COL @ X).  ``cones`` holds one ONES tile per output column tile (resp. row tile) with
    ones only where the output is valid, so the padding stays 0; products with 1 are exact."""
    k = Kernel(sz)
    vr = k.open(rt, False)
    vc = k.open(ct, True)
    fx = k.apu(_expr(cx, [(1, vr)] if along_cols else [(1, vc)]))
    f1 = k.apu(_expr(cones, [(1, vc)] if along_cols else [(1, vr)]))
    fo = k.apu(_expr(co, [(ct, vr), (1, vc)]))
    k.emit("zero ACC")
    k.emit(f"load {fx}, {'INPUT' if along_cols else 'WEIGHTS'}")
    k.emit(f"load {f1}, {'WEIGHTS' if along_cols else 'INPUT'}")
    k.emit("matmul")
    k.emit(f"store {fo}, ACC")
    k.close()
    k.close()
    return k.build()
