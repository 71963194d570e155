"""The mapping model of one candidate distribution (spec §4.3–§4.7).

A candidate gives every leaf loop a tile factor ``t`` (data-parallel loops only), an array factor
``a`` (CRAMs) and leaves the serial remainder ``s = E / (t·a)`` to the tile controller.  This module
classifies the operands (vectors along the bitlines, per-CRAM scalars, tile scalars in the RF),
allocates CRAM buffers greedily at their outermost reuse level (§4.5), applies adaptive precision
and the bit-level lifetime window (§4.6) and estimates occupancy, DRAM traffic and cycles (§4.7).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from ..config import PimsabConfig
from ..precision import decode as pdecode
from ..precision import make
from .lang import (Access, Bin, Cast, CompileError, Const, Expr, Loop, Reduce, Schedule, Select, Shift, accesses,
                   children, declared_type)
from .widths import Width, const_formats, converts, width
from .window import find_window, window_saving


@dataclass
class Operand:
    """One tensor access of the expression and how it reaches the CRAMs."""

    access: Access
    leaves: frozenset  # leaf loops its index uses
    kind: str  # "vector" (bitline loop in the index), "rf" (multiplier/addend scalar), "bcast" (scalar row)
    bits: int  # effective width (wordlines of one copy)
    dram_bits: int  # DRAM element width
    name: str = ""  # buffer name (the tensor's, numbered when a tensor is accessed twice)


@dataclass
class Buffer:
    name: str
    role: str  # output, input, rf, temp
    bits: int
    slots: int = 1
    level: int = 0  # residency level r (1-based over serial loops; q+1 = streamed)
    reload: int = 1

    @property
    def rows(self) -> int:
        return 1 if self.role == "rf" else self.bits * self.slots


@dataclass
class Candidate:
    """A distribution and its model figures."""

    tiles: dict[Loop, int]
    arrays: dict[Loop, int]
    serial: dict[Loop, int]
    buffers: list[Buffer] = field(default_factory=list)
    occupancy: float = 0.0
    traffic_bits: float = 0.0
    cycles: float = 0.0
    rows: int = 0
    real_rows: int = 0
    nest: "Nest | None" = None
    stages: dict[str, int] = field(default_factory=dict)
    stack: dict[str, int] = field(default_factory=dict)  # streamed per-CRAM scalars: steps per load

    def breakdown(self) -> str:
        return " + ".join(f"{b.name} {b.rows}" for b in self.buffers) + f" = {self.rows} wordlines"

    def key(self, leaves: list[Loop]) -> tuple:
        """Lexicographic objective (spec §4.7): occupancy, DRAM traffic, cycles, factor vectors."""
        return (-round(self.occupancy, 12), self.traffic_bits, self.cycles,
                tuple(self.tiles.get(lp, 1) for lp in leaves), tuple(self.arrays.get(lp, 1) for lp in leaves))


def dtype_prec(t) -> int:
    """Precision byte of a DSL type (or of a :class:`Width`)."""
    fmt = t.token if getattr(t, "is_float", False) else getattr(t, "fmt", "")
    return make(fmt) if fmt else make("i" if t.signed else "u", t.bits)


def mesh_aligned(tiles: dict[Loop, int], cfg: PimsabConfig) -> bool:
    """Whether tiles share operands through broadcasts along mesh rows/columns (spec §4.3/§4.8,
    Decision): one tile loop, or two whose factors are the mesh width and height.  (An operand that
    depends on no tile loop is broadcast to every tile in any mapping.)"""
    f = [v for v in tiles.values() if v > 1]
    return len(f) <= 1 or (len(f) == 2 and sorted(f) == sorted((cfg.mesh_width, cfg.mesh_height)))


def log2_exact(n: int) -> int | None:
    k = n.bit_length() - 1
    return k if n > 0 and 1 << k == n else None


@dataclass
class Nest:
    """The analysed loop nest of a schedule (independent of the distribution)."""

    sched: Schedule
    leaves: list[Loop]
    bitline: Loop
    dp: list[Loop]  # data-parallel leaves except the bitline loop
    red: list[Loop]
    out_leaves: frozenset
    reduce: Reduce | None
    body: Expr  # the reduction body (or the elementwise expression)
    operands: list[Operand]
    out_width: Width  # accumulator / result width (adaptive)
    out_declared: Width
    product: Width | None  # width of a product feeding the accumulation (temporary)
    product_declared: Width | None
    rf_factor: Operand | None  # the scalar multiplier/addend kept in the RF
    alias: dict = field(default_factory=dict)  # id(access) → index of its operand
    lazy: frozenset = frozenset()  # streamed operands loaded into temporary rows right before use


def leaves_of(s: Schedule, acc: Access) -> frozenset:
    return frozenset(lf for a in acc.index for lp in a.terms for lf in s.value[lp])


def strip(e: Expr) -> Expr:
    """The expression under any casts."""
    while isinstance(e, Cast):
        e = e.expr
    return e


def _computed(e: Expr) -> bool:
    return isinstance(e, (Bin, Select)) or (isinstance(e, Shift) and e.amount > 0) or converts(e)


def is_mac(nest: "Nest") -> bool:
    """A product of two CRAM operands accumulated by a sum (bit-level lifetime applies, §4.6)."""
    core = strip(nest.body)
    return (nest.reduce is not None and nest.reduce.kind == "sum" and isinstance(core, Bin) and core.op == "mul"
            and all(isinstance(strip(x), Access) for x in (core.a, core.b)) and not nest.out_width.fmt)


def temp_nodes(nest: "Nest", adaptive: bool, bit_lifetime: bool, real: bool = False) -> list[tuple[Expr, int]]:
    """Expression nodes that need CRAM rows, with their wordlines.

    The reduction body (the product feeding the accumulator) comes first: its full width, or the
    half-width window of the bit-level lifetime (§4.6).  With ``real`` the window only applies when
    code generation fuses the product into ``mac`` (both factors in CRAM); an RF multiplier keeps
    ``mul_const`` and its full-width product.  Other intermediate values and constants that are not
    RF operands need their own rows.
    """
    out: list[tuple[Expr, int]] = []
    root = strip(nest.body)
    rf = nest.rf_factor.access if nest.rf_factor else None
    cfmt = const_formats(nest.body)  # a float constant's row holds the format of its operation

    def via_rf(parent: Expr, child: Expr) -> bool:
        c = strip(child)
        if not isinstance(parent, Bin):
            return False
        if isinstance(c, Const):
            return parent.op in ("mul", "add") or (parent.op == "sub" and c is strip(parent.b))
        return c is rf and parent.op in ("mul", "add")

    seen: set[int] = set()

    def walk(e: Expr, parent: Expr | None) -> None:
        if id(e) in seen:  # a shared subexpression is computed once per step
            return
        seen.add(id(e))
        if e is root:
            if nest.reduce is not None and (_computed(e) or isinstance(e, Const)):
                bits = width(e, adaptive).bits
                if bit_lifetime and adaptive and is_mac(nest) and (not real or nest.rf_factor is None):
                    bits = -(-bits // 2)
                out.append((e, bits))
        elif _computed(e) or (isinstance(e, Const) and not (parent is not None and via_rf(parent, e))):
            # a constant row of a float computation holds the computation's format
            out.append((e, pdecode(make(cfmt[id(e)])).bits if id(e) in cfmt else width(e, adaptive).bits))
        for c in children(e):
            walk(c, e if not isinstance(e, Cast) else parent)
    walk(nest.body, None)
    return out


def analyse(s: Schedule, cfg: PimsabConfig) -> Nest:
    """Validate the schedule against the machine and classify its operands (spec §4.1 rules)."""
    op = s.op
    if s.bitline is None:
        raise CompileError(f"compute {op.name}: mark the innermost data-parallel loop with s.bitlines(loop)")
    b = s.bitline
    if b.reduce:
        raise CompileError(f"compute {op.name}: the bitline loop {b.name} is a reduction loop")
    if b.extent > cfg.cram_cols:
        raise CompileError(f"compute {op.name}: the bitline loop {b.name} has extent {b.extent} > "
                           f"{cfg.cram_cols} bitlines per CRAM; split it by {cfg.cram_cols}")
    if any(not lp.reduce for lp in s.leaves[s.leaves.index(b) + 1:]):
        raise CompileError(f"compute {op.name}: the bitline loop {b.name} must be the innermost data-parallel "
                           f"loop (reorder it last)")
    red = op.expr if isinstance(op.expr, Reduce) else None
    body = red.expr if red else op.expr
    out_leaves = frozenset(lf for a in op.axes for lf in s.value[a])
    ops: list[Operand] = []
    rf_factor = None
    # scalar multiplier / addend of a two-operand body goes to the RF (mul_const / add_const)
    core = strip(body)
    cand = None
    if isinstance(core, Bin) and core.op in ("mul", "add"):
        for x, y in ((core.b, core.a), (core.a, core.b)):
            xs = strip(x)
            if isinstance(xs, Access) and b not in leaves_of(s, xs) and isinstance(strip(y), Access):
                cand = xs
                break
    seen: dict = {}
    alias: dict[int, int] = {}  # id(access) → operand index (equal accesses share one buffer)
    for acc in accesses(body):
        key = (id(acc.tensor), tuple((tuple(sorted((lp.uid, c) for lp, c in a.terms.items())), a.const)
                                     for a in acc.index))
        if key in seen and not (acc is cand) and not (ops[seen[key]].access is cand):
            alias[id(acc)] = seen[key]
            continue
        if id(acc) in alias:
            continue
        lv = leaves_of(s, acc)
        t = acc.tensor.dtype
        w = Width(t.bits, t.signed, t.token if t.is_float else "")
        # the RF takes integers only (load_rf has integer precisions): float scalars are broadcast
        kind = "vector" if b in lv else ("rf" if acc is cand and not t.is_float else "bcast")
        dbits = pdecode(dtype_prec(t)).dram_bits
        names = [o.name for o in ops]
        nm = acc.tensor.name if acc.tensor.name not in names else f"{acc.tensor.name}#{len(ops)}"
        o = Operand(acc, lv, kind, w.bits, dbits, nm)
        if kind == "rf":
            rf_factor = o
        seen.setdefault(key, len(ops))
        alias[id(acc)] = len(ops)
        ops.append(o)
    adaptive = width(op.expr), width(op.expr, False)
    product = product_d = None
    if red is not None and not isinstance(strip(body), Access):
        product, product_d = width(body), width(body, False)
    if not isinstance(core, (Bin, Access, Select, Shift)):
        raise CompileError(f"compute {op.name}: the expression body must be an operation on tensor accesses")
    return Nest(s, list(s.leaves), b, [lp for lp in s.leaves if not lp.reduce and lp is not b],
                [lp for lp in s.leaves if lp.reduce], out_leaves, red, body, ops, adaptive[0], adaptive[1],
                product, product_d, rf_factor, alias)


def _all_nodes(e: Expr):
    yield e
    for c in children(e):
        yield from _all_nodes(c)


def temp_layout(nest: "Nest", adaptive: bool, bit_lifetime: bool, real: bool = False
                ) -> tuple[dict[int, int], int]:
    """Row offsets of the temporaries (by node id) and the peak wordlines they need.

    Rows are reused: nodes are evaluated in post-order (as code generation does) and a value's rows
    are freed once its only consumer is computed (first fit in a free list).  Constant rows and
    values used more than once stay allocated for the whole step."""
    need = dict((id(e), b) for e, b in temp_nodes(nest, adaptive, bit_lifetime, real))
    if nest.lazy:
        for e in _all_nodes(nest.body):
            if isinstance(e, Access) and nest.operands[nest.alias[id(e)]].name in nest.lazy:
                need[id(e)] = nest.operands[nest.alias[id(e)]].bits
    uses: dict[int, int] = {}

    def count(e: Expr) -> None:
        for c in children(e):
            uses[id(c)] = uses.get(id(c), 0) + 1
            if uses[id(c)] == 1:
                count(c)
    count(nest.body)
    free: list[tuple[int, int]] = []  # (start, length)
    off: dict[int, int] = {}
    top = 0

    def alloc(n: int) -> int:
        nonlocal top
        for k, (st, ln) in enumerate(free):
            if ln >= n:
                free[k] = (st + n, ln - n)
                return st
        top += n
        return top - n

    def release(st: int, n: int) -> None:
        free.append((st, n))
        free.sort()
        merged: list[tuple[int, int]] = []
        for a, ln in free:
            if merged and merged[-1][0] + merged[-1][1] == a:
                merged[-1] = (merged[-1][0], merged[-1][1] + ln)
            elif ln:
                merged.append((a, ln))
        free[:] = merged

    def holder(e: Expr) -> Expr | None:
        while (isinstance(e, Cast) and id(e) not in need) or (isinstance(e, Shift) and e.amount < 0):
            e = e.expr
        return e if id(e) in need else None

    for e, _ in temp_nodes(nest, adaptive, bit_lifetime, real):  # constant rows: whole program
        if isinstance(e, Const):
            off[id(e)] = alloc(need[id(e)])
    seen: set[int] = set()

    def visit(e: Expr) -> None:
        if id(e) in seen:
            return
        seen.add(id(e))
        for c in children(e):
            visit(c)
        if id(e) in need and id(e) not in off:
            off[id(e)] = alloc(need[id(e)])
        if id(e) in need or e is strip(nest.body):
            for c in children(e):
                h = holder(c)
                if h is not None and not isinstance(h, Const) and uses.get(id(h), 0) <= 1 and h is not e:
                    release(off[id(h)], need[id(h)])
    visit(nest.body)
    return off, top


def evaluate(nest: Nest, cfg: PimsabConfig, tiles: dict[Loop, int], arrays: dict[Loop, int], *,
             adaptive: bool = True, bit_lifetime: bool = True, residency: dict[str, int] | None = None,
             explicit: bool = False) -> Candidate:
    """Buffers, wordlines and objective figures of one distribution.

    An RF multiplier that would vary along a reduction mapped to CRAMs, or need more registers
    than the RF has, is broadcast into the CRAMs instead (scatter ``load_shf``, full width).
    """
    rf = nest.rf_factor
    if rf is not None and (any(arrays.get(lp, 1) > 1 for lp in rf.leaves if lp.reduce)
                           or math.prod(arrays.get(lp, 1) for lp in rf.leaves) > cfg.rf_regs):
        ops = [dataclasses.replace(o, kind="bcast") if o is rf else o for o in nest.operands]
        nest = dataclasses.replace(nest, rf_factor=None, operands=ops)
    serial = {lp: lp.extent // (tiles.get(lp, 1) * arrays.get(lp, 1)) for lp in nest.leaves if lp is not nest.bitline}
    S = [lp for lp in nest.leaves if serial.get(lp, 1) > 1]
    q = len(S)
    cand = Candidate(dict(tiles), dict(arrays), serial)
    cand.nest = nest

    def place(name: str, role: str, lv: frozenset, bits: int) -> Buffer:
        r = next((j + 1 for j, lp in enumerate(S) if lp not in lv), q + 1)
        r = max(r, (residency or {}).get(name, 0))
        slots = math.prod(serial[lp] for j, lp in enumerate(S) if j + 1 >= r and lp in lv)
        reload = math.prod(serial[lp] for j, lp in enumerate(S) if j + 1 < r and lp not in lv)
        return Buffer(name, role, bits, slots, r, reload)

    out_w = nest.out_width if adaptive else nest.out_declared
    bufs = [place(nest.sched.op.name, "output", nest.out_leaves, out_w.bits)]
    for o in nest.operands:
        role = "rf" if o.kind == "rf" else "input"
        bf = place(o.name, role, o.leaves, o.bits)
        if o.name in nest.lazy:
            bf.role, bf.slots = "lazy", 0  # its rows are in the temporary region
        bufs.append(bf)
    stages: dict[str, int] = {}
    _, tmp = temp_layout(nest, adaptive, bit_lifetime)
    _, real = temp_layout(nest, adaptive, bit_lifetime, real=True)
    if tmp:
        bufs.append(Buffer("temporary", "temp", tmp))
    red_arr = math.prod(arrays.get(lp, 1) for lp in nest.red)
    if explicit and red_arr > 1:  # partner rows of the cram_tx_rx + add halving sequence
        bufs.append(Buffer("partner", "partner", out_w.bits))
    partial = _partial_bits(nest, serial, red_arr, out_w, adaptive and not explicit)
    if partial and bufs[0].slots > 1:
        # several accumulators awaiting a reduce_tile hold per-CRAM partial sums only; the reduction
        # writes the full width into one result buffer, stored from there
        bufs[0].bits = partial
        bufs.append(Buffer("result", "result", out_w.bits))
    cand.buffers = bufs
    cand.rows = sum(bf.rows for bf in bufs)
    cand.real_rows = cand.rows - tmp + real
    _stack(nest, cand, cfg, arrays, q)
    if max(cand.rows, cand.real_rows) > cfg.cram_rows and not nest.lazy:
        # does not fit: load the streamed operands (reloaded every step) just in time into the
        # temporary region, where their rows are reused once consumed
        lazy = frozenset(o.name for o, bf in zip(nest.operands, bufs[1:]) if bf.level == q + 1 and o.kind != "rf")
        if lazy:
            alt = evaluate(dataclasses.replace(nest, lazy=lazy), cfg, tiles, arrays, adaptive=adaptive,
                           bit_lifetime=bit_lifetime, residency=residency, explicit=explicit)
            if max(alt.rows, alt.real_rows) < max(cand.rows, cand.real_rows):
                return alt
    # objective figures
    n_arr = math.prod(arrays.values()) if arrays else 1
    n_t = math.prod(tiles.values()) if tiles else 1
    cand.occupancy = n_t * n_arr * nest.bitline.extent / (cfg.tiles_used * cfg.crams_per_tile * cfg.cram_cols)
    traffic = 0.0
    per_tile_cycles = 0.0
    steps = math.prod(serial[lp] for lp in S)
    W = n_arr * cfg.cram_cols
    aligned = mesh_aligned(tiles, cfg)
    for o, bf in zip(nest.operands, bufs[1:]):
        loads = math.prod(serial[lp] for lp in S if lp in o.leaves) * bf.reload
        n = W if o.kind == "vector" else (math.prod(arrays.get(lp, 1) for lp in o.leaves) or 1)
        share = math.prod(tiles.get(lp, 1) for lp in nest.dp if lp not in o.leaves) \
            if aligned or not any(lp in o.leaves for lp in tiles) else 1
        flits = math.ceil(n * o.dram_bits / cfg.link_bits) if o.kind == "vector" else 1
        win = find_window(nest, o, tiles, arrays, cfg.cram_cols) if o.name not in nest.lazy else None
        outer = [lp for j, lp in enumerate(S) if j + 1 < bf.level and lp in o.leaves]
        if win is not None and window_saving(win, serial, outer) > 1:
            # sliding window (window.py): one halo load per run of the window loops, then shifts;
            # a shared window goes down each mesh column from that column's DRAM channel
            runs = loads // window_saving(win, serial, outer)
            per_col = math.ceil(share / min(share, cfg.mesh_width))
            traffic += n_t * runs * n * o.dram_bits / per_col
            per_tile_cycles += runs * (flits + 22 + math.ceil(math.log2(per_col)) * (flits + 10)
                                       + win.shift * o.bits + loads // runs)
            continue
        traffic += n_t * loads * n * o.dram_bits / share
        k = cand.stack.get(o.name, 1)
        per_tile_cycles += math.ceil(loads / k) * (k * flits + 22 + (k * flits * 2 if share > 1 else 0))
    out_stores = math.prod(serial[lp] for lp in S if lp in nest.out_leaves)
    res_bits = declared_bits(nest)
    if red_arr > 1:  # one store per result CRAM
        n_st = n_arr // red_arr
        traffic += n_t * out_stores * n_st * cfg.cram_cols * res_bits
        per_tile_cycles += out_stores * n_st * (math.ceil(cfg.cram_cols * res_bits / cfg.link_bits) + 10)
    else:
        traffic += n_t * out_stores * W * res_bits
        per_tile_cycles += out_stores * (math.ceil(W * res_bits / cfg.link_bits) + 10)
    if nest.product is not None:
        pw = (nest.product if adaptive else nest.product_declared).bits
        a = max(o.bits for o in nest.operands)
        mul = (a * a + 3 * a - 2) // (2 if nest.rf_factor else 1)
        per_tile_cycles += steps * (mul + pw + out_w.bits + 3)
    else:
        per_tile_cycles += steps * (out_w.bits + 2)
    if red_arr > 1:
        levels = range(1, (log2_exact(red_arr) or 0) + 1)
        if explicit:
            per_tile_cycles += out_stores * sum((n_arr >> i) * (out_w.bits + 1) + out_w.bits + 2 for i in levels)
        else:
            per_tile_cycles += out_stores * sum(out_w.bits + i + 1 for i in levels)
    cand.traffic_bits = traffic
    cols = max(1, min(cfg.mesh_width, n_t))
    cand.cycles = max(per_tile_cycles, traffic / cols / cfg.link_bits)
    cand.stages = stages
    return cand


def _partial_bits(nest: Nest, serial: dict, red_arr: int, out_w: Width, adaptive: bool) -> int:
    """Width of a per-CRAM partial sum before ``reduce_tile`` (the growing accumulator after the serial
    reduction steps, §4.6) when it is narrower than the result; 0 otherwise."""
    if red_arr <= 1 or not adaptive or nest.reduce is None or nest.reduce.kind != "sum" or out_w.fmt:
        return 0
    steps = math.prod(serial.get(lp, 1) for lp in nest.red)
    bits = min(width(nest.body, True).bits + (math.ceil(math.log2(steps)) if steps > 1 else 0), out_w.bits)
    return bits if bits < out_w.bits else 0


#: steps whose per-CRAM scalars one scatter ``load_shf`` fetches at most (stacked bit groups)
STACK = 4


def _stack(nest: Nest, cand: Candidate, cfg: PimsabConfig, arrays: dict, q: int) -> None:
    """Stacked loads: a streamed per-CRAM scalar (reloaded every step, e.g. a convolution weight)
    is fetched for k consecutive steps by one scatter ``load_shf`` of k·bits rows (the k values
    packed side by side in one DRAM element), which saves k − 1 request latencies.  Kept only
    when the k slots fit the CRAM."""
    for o, bf in zip(nest.operands, cand.buffers[1:]):
        if (o.kind != "bcast" or bf.level != q + 1 or o.name in nest.lazy or o.access.tensor.dtype.is_float
                or not any(arrays.get(lp, 1) > 1 for lp in o.leaves)):
            continue
        steps = math.prod(cand.serial[lp] for lp in o.leaves if lp in cand.serial)
        k = min(STACK, 32 // o.bits, steps)
        if k > 1 and max(cand.rows, cand.real_rows) + (k - 1) * o.bits <= cfg.cram_rows:
            cand.stack[o.name] = k
            bf.slots = k
            cand.rows += (k - 1) * o.bits
            cand.real_rows += (k - 1) * o.bits


def declared_bits(nest: Nest) -> int:
    return pdecode(dtype_prec(nest.sched.op.dtype)).dram_bits


def stage_breakdown(nest: Nest, cfg: PimsabConfig, tiles: dict[Loop, int], arrays: dict[Loop, int]) -> dict:
    """Wordlines before adaptive precision, after it, and after the bit-level lifetime window
    (the three figures of spec §4.10) with the per-buffer breakdown of the last stage."""
    a = evaluate(nest, cfg, tiles, arrays, adaptive=False, bit_lifetime=False)
    b = evaluate(nest, cfg, tiles, arrays, adaptive=True, bit_lifetime=False)
    c = evaluate(nest, cfg, tiles, arrays, adaptive=True, bit_lifetime=True)
    return {"declared": a.rows, "adaptive": b.rows, "bit_lifetime": c.rows,
            "buffers": {bf.name: bf.rows for bf in c.buffers}}


__all__ = ["Nest", "Candidate", "Buffer", "Operand", "analyse", "evaluate", "stage_breakdown", "declared_type"]
