"""Data movement whose lanes move: Slice, Gather, Split, Pad, Transpose, Concat at any channel
count and layout-changing Reshapes, all as one job on the systolic array.

Tensil's DataMove copies whole vectors; it cannot move an element from one lane to another.  The
array can: streaming a source vector through a 0/1 weight matrix ``P`` (``P[i, j] = 1``: source
lane ``i`` → output lane ``j``) writes exactly those lanes, and the products ``x·1`` and sums with
zeros are exact in every fixed-point type.  So any element map ``y.flat[e] = x_k.flat[s(e)]``
(or a fill value) is planned as: per output vector, per source vector it reads, the lane pattern
between them; each distinct pattern is one weight matrix, loaded once per chunk; every
(source vector → output vector) pair is one MatMul accumulating into the output's accumulator
row.  Plans are computed with numpy from index tensors (``np.arange`` through the ONNX op).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from .. import layout as L
from ..isa import LOADWEIGHTS
from .jobs import Const, SimdOp, Var, _err, _runs


@dataclass
class MovePlan:
    """``groups``: int64 ``(G, 4)`` rows ``(matrix, source, source vector, output vector)`` sorted by
    matrix; ``matrices``: ``(M, N, N)`` 0/1; the fill source (when any) is the last source."""

    groups: np.ndarray
    matrices: np.ndarray
    out_vectors: int


def plan_move(out_shape: tuple[int, ...], src_shapes: list[tuple[int, ...]], src_map: np.ndarray,
              N: int, fill: bool, weight: float = 1.0) -> MovePlan:
    """Plan ``y.flat[e] = source element src_map.flat[e]`` (global ids: sources' flat indices
    offset by the sizes of the sources before; ``-1`` = the fill vector's lane).  A ``src_map`` of
    shape ``out_shape + (R,)`` sums R sources per element, each times ``weight`` (reductions)."""
    src_map = np.asarray(src_map, np.int64)
    R = src_map.shape[-1] if src_map.ndim == len(out_shape) + 1 else 1
    src_map = src_map.reshape(-1, R)
    out_pos = L.element_positions(out_shape, N)
    ov, ol = np.nonzero(out_pos >= 0)
    g = src_map[out_pos[ov, ol]].reshape(-1)
    ov, ol = np.repeat(ov, R), np.repeat(ol, R)
    offsets = np.cumsum([0] + [int(np.prod(s)) for s in src_shapes])
    k = np.searchsorted(offsets, g, side="right") - 1
    sv, sl = np.zeros_like(g), np.zeros_like(g)
    for i, shape in enumerate(src_shapes):
        pos = L.element_positions(shape, N)
        vec, lane = np.nonzero(pos >= 0)
        order = np.empty(int(np.prod(shape)), np.int64)
        order[pos[vec, lane]] = np.arange(len(vec))
        m = k == i
        at = order[g[m] - offsets[i]]
        sv[m], sl[m] = vec[at], lane[at]
    is_fill = g < 0
    if is_fill.any() and not fill:  # a zero fill: the lanes stay as the chunk opened them (0)
        keep = ~is_fill
        ov, ol, g, k, sv, sl, is_fill = ov[keep], ol[keep], g[keep], k[keep], sv[keep], sl[keep], is_fill[keep]
    if is_fill.any():
        k[is_fill], sv[is_fill], sl[is_fill] = len(src_shapes), 0, ol[is_fill]
    key = (ov * (len(src_shapes) + 1) + k) * (int(sv.max(initial=0)) + 1) + sv
    order = np.lexsort((ol, key))
    key, ov, k, sv, sl, ol = key[order], ov[order], k[order], sv[order], sl[order], ol[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    patterns: dict[bytes, int] = {}
    mats: list[np.ndarray] = []
    rows = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        pat = np.stack([sl[a:b], ol[a:b]]).astype(np.int16).tobytes()
        m = patterns.get(pat)
        if m is None:
            m = patterns[pat] = len(mats)
            mat = np.zeros((N, N), np.float32)
            np.add.at(mat, (sl[a:b], ol[a:b]), weight)
            mats.append(mat)
        rows.append((m, int(k[a]), int(sv[a]), int(ov[a])))
    groups = np.array(sorted(rows), np.int64).reshape(-1, 4)
    return MovePlan(groups, np.stack(mats) if mats else np.zeros((0, N, N), np.float32), out_pos.shape[0])


def index_map(op: str, attrs: dict[str, Any], ids: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
    """The source element (global id, -1 = fill) of every output element of a data-movement node
    whose inputs hold the global ids ``ids``."""
    x = ids[0]
    if op in ("ReduceMean", "ReduceSum"):  # (out..., R): the reduced elements of each output
        axes = tuple(attrs["axes"])
        keep = [a for a in range(x.ndim) if a not in axes]
        y = x.transpose(keep + list(axes)).reshape([x.shape[a] for a in keep] + [-1])
        return y.reshape(tuple(out_shape) + (y.shape[-1],))
    if op == "Slice":
        sel = tuple(np.arange(n) if p is None else np.asarray(p, np.int64) for p, n in zip(attrs["index"], x.shape))
        y = x[np.ix_(*sel)]
    elif op == "Pad":
        pads = list(attrs["pads"])
        r = x.ndim
        begin, end = pads[:r], pads[r:]
        y = np.pad(x, [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)], constant_values=-1)
        y = y[tuple(slice(-min(b, 0), y.shape[i] + min(e, 0)) for i, (b, e) in enumerate(zip(begin, end)))]
    elif op == "Transpose":
        y = x.transpose(attrs["perm"])
    elif op == "Rows":  # broadcast over batch axes, then (batch, rows, features)
        y = np.broadcast_to(x, attrs["bshape"]).reshape(out_shape)
    elif op == "Expand":
        y = np.broadcast_to(x, out_shape)
    elif op == "Concat":
        y = np.concatenate(ids, axis=int(attrs["axis"]))
    else:  # Flatten / Reshape / Squeeze / Unsqueeze / Identity: C order is kept
        y = x.reshape(out_shape)
    if tuple(y.shape) != tuple(out_shape):
        raise ValueError(f"{op}: index map of shape {y.shape}, expected {out_shape}")
    return y


#: operators that may read a virtual (rank > 4) tensor of a move chain
VIRTUAL_READERS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Identity")


def lower_move(low: Any, n: Any, op: str, attrs: dict[str, Any], inputs: list[str] | None = None,
               out: tuple[str, tuple[int, ...]] | None = None) -> Any:
    """Lower data-movement node ``n`` (semantics of ``op`` with ``attrs``) as a ``lanemove`` job
    reading ``inputs`` (default: the node's) into ``out`` (name, shape; default: the node's
    output); returns the output var."""
    g = low.g
    sources: list[Any] = []
    ids, root_shapes = [], []

    def source(src: Any, shape: tuple[int, ...]) -> int:
        sources.append(src)
        root_shapes.append(tuple(shape))
        return sum(int(np.prod(s)) for s in root_shapes[:-1])

    for name in inputs or n.inputs:
        if name in low.virtual:  # a rank-5 intermediate of a move chain: compose its map
            subs, vmap = low.virtual[name]
            offs = [source(low._use(low.var(sn)).root, low.var(sn).root.shape) for sn in subs]
            starts = np.cumsum([0] + [int(np.prod(low.var(sn).root.shape)) for sn in subs])
            k = np.searchsorted(starts, vmap, side="right") - 1
            ids.append(np.where(vmap < 0, -1, vmap - starts[k] + np.asarray(offs)[k]))
        elif name in g.initializers:
            arr = np.asarray(g.initializers[name], np.float32)
            if arr.ndim == 0:
                arr = arr.reshape(1)
            off = source(low.const(f"{n.name}.{name}", L.activation_to_vectors(arr, low.N)), arr.shape)
            ids.append(np.arange(off, off + arr.size, dtype=np.int64).reshape(arr.shape))
        else:
            v = low._use(low.var(name))
            off = source(v.root, v.root.shape)
            ids.append(np.arange(off, off + int(np.prod(v.shape)), dtype=np.int64).reshape(v.shape))
    out_shape = tuple(out[1]) if out is not None else tuple(g.shape(n.outputs[0]))
    # a reshape that only further moves read (the head split: Reshape then Transpose) stays virtual
    # too: the readers compose its map into their own single move instead of moving lanes twice
    # (as does a rank-5+ tensor only moves read; else it is laid out as rows of its last axis)
    only_moves = not g.is_output(n.outputs[0]) and bool(g.consumers(n.outputs[0])) and \
        all(c.op in VIRTUAL_READERS for c in g.consumers(n.outputs[0])) and \
        not any(isinstance(s, Const) for s in sources)
    chained = op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze") or len(out_shape) > 4
    if out is None and chained and only_moves:
        low.virtual[n.outputs[0]] = ([getattr(s, "name", None) for s in sources],
                                     index_map(op, attrs, ids, out_shape))
        return None
    if out is None:
        y = low._out(n, None)
    else:
        y = low.vars[out[0]] = Var(out[0], out_shape, L.vector_count(out_shape, low.N), first=len(low.ops))
    src_map = index_map(op, attrs, ids, y.shape)
    value = float(attrs.get("value", 0.0) or 0.0)
    fill = bool((src_map < 0).any()) and value != 0.0
    weight = 1.0
    if op == "ReduceMean":
        weight = 1.0 / src_map.shape[-1]
    plan = plan_move(y.shape, root_shapes, src_map, low.N, fill, weight)
    mats = low.const(f"{n.name}.lanes", plan.matrices.reshape(-1, low.N))
    if fill:
        sources.append(low.const(f"{n.name}.fill", L.replicate(value, low.N)))
    low.ops.append(SimdOp(n, "lanemove", sources, y, consts=[mats], geom={"plan": plan}))
    assert all(isinstance(s, Const) or hasattr(s, "home") for s in sources)
    return y


def lanemove_job(gen: Any, op: Any) -> None:
    """Emit a ``lanemove`` job (``op.geom['plan']``): per chunk of output vectors (accumulator rows
    ``[0, n)``) the source vectors it reads are loaded into local memory, zero-written rows open
    the chunk, then per weight matrix one LoadWeights and the MatMuls that accumulate through it."""
    plan: MovePlan = op.geom["plan"]
    y, N, arch = op.y, gen.N, gen.arch
    sources = list(op.inputs)  # Vars, then the fill Const when any
    mats = op.consts[0]
    base = gen.scratch0
    groups = plan.groups
    free = gen._scratch_limit() - N
    chunk = min(plan.out_vectors, arch.accumulator_depth)
    while True:
        spans = _chunk_sources(groups, chunk, plan.out_vectors, sources)
        need = max((n_src + min(chunk, plan.out_vectors - o0) for o0, n_src in spans), default=chunk)
        if need <= free or chunk == 1:
            break
        chunk = max(1, chunk // 2)
    if need > free:
        raise UnsupportedError(f"data movement needs {need} local vectors, {free} are free",
                               where=f"node {op.node.name} ({op.node.op})",
                               hint="choose an architecture with a larger local memory")
    slot = base
    src_base = base + N
    by_out = np.argsort(groups[:, 3], kind="stable")
    for o0 in range(0, plan.out_vectors, chunk):
        n = min(chunk, plan.out_vectors - o0)
        gen.stages += 1
        sel = by_out[(groups[by_out, 3] >= o0) & (groups[by_out, 3] < o0 + n)]
        sel = np.sort(sel)  # back in matrix order
        local: dict[tuple[int, int], int] = {}
        at = src_base
        for s, src in enumerate(sources):
            vecs = sorted(set(groups[sel][groups[sel, 1] == s, 2].tolist()))
            if not vecs:
                continue
            if getattr(src, "home", None) == "local":
                for v in vecs:
                    local[(s, v)] = src.addr + v
                continue
            kind = "dram1_in" if not hasattr(src, "home") else "dram0_in"
            if kind == "dram1_in" and gen.local_consts:
                for v in vecs:
                    local[(s, v)] = src.addr + v
                continue
            for first, count in _runs(vecs):
                gen.move(kind, at, src.addr + first, count)
                for j in range(count):
                    local[(s, first + j)] = at + j
                at += count
        # open the chunk: a zero input through weights with a zero bias writes 0 to every row
        first_m = int(groups[sel[0], 0]) if len(sel) else -1
        _load_matrix(gen, mats, max(first_m, 0), slot, len(plan.matrices) > 0)
        gen._matmuls([(0, a, True) for a in range(n)], accumulate=False)
        loaded = max(first_m, 0)
        for m in np.unique(groups[sel, 0]).tolist():
            if m != loaded:
                _load_matrix(gen, mats, m, slot, True)
                loaded = m
            rows = groups[sel][groups[sel, 0] == m]
            gen._matmuls([(local[(int(s), int(v))], int(o) - o0, False) for _, s, v, o in rows], accumulate=True)
        gen._save(y, 0, n, o0, at)


def _chunk_sources(groups: np.ndarray, chunk: int, total: int, sources: list) -> list[tuple[int, int]]:
    """Per output chunk: how many source vectors must be loaded into local memory."""
    out = []
    for o0 in range(0, total, chunk):
        m = (groups[:, 3] >= o0) & (groups[:, 3] < o0 + chunk)
        pairs = {(int(s), int(v)) for s, v in groups[m][:, 1:3]
                 if getattr(sources[int(s)], "home", "dram") != "local"}
        out.append((o0, len(pairs)))
    return out


def _load_matrix(gen: Any, mats: Any, m: int, slot: int, real: bool) -> None:
    """LoadWeights of matrix ``m`` (N rows) and a zero bias; without matrices, N+1 zero vectors."""
    N = gen.N
    if not real:
        gen._row(LOADWEIGHTS << 4 | 1, 0, 0, N, 0)
        return
    addr = mats.addr + m * N
    if not gen.local_consts:
        gen.move("dram1_in", slot, addr, N)
        addr = slot
    gen._load_rows(0, addr, 0, with_bias=False)
