"""Layer fusion: fold MaxPool, residual Add (+ReLU) and GlobalAveragePool into the producing conv.

Unfused, each of these is a separate pass through global memory: the conv stores its output,
the vector layer loads it again and stores its own result (ResNet-18: 4.17 of 10.96 MB of
traffic).  :func:`fuse_layers` rewrites the layer list so that the conv's requantized int8
output is consumed in local memory by an *epilogue* (code in :mod:`.lower_fused`):

* **pool** — ``Conv → MaxPool``: the conv's replicas cover whole pool-output rows (their
  window ranges are cut at pool rows; the conv rows a pool window shares with the previous
  replica's range are computed by both).  Conv rows go into a ring of ``span`` rows in local
  memory; every completed pool row is a chain of ``vvmax`` and one store.
* **add** — ``Conv → Add(/Sub)(+ReLU)`` where the conv's output feeds only the Add: the
  residual operand is loaded beside the patch (positions and channels of the batch), then the
  Add's exact integer arithmetic (input shifts, sum, rounding, shift, clamp) runs on the batch.
  The deepest conv operand is chosen (the second conv of a residual block, not the shortcut).
* **gap** — ``Conv (→ Add) → GlobalAveragePool``: every replica sums its int8 outputs per channel
  (16/24-bit), the partial sums go to a small buffer in global memory, and a
  :class:`GapFinishLayer` averages them with one ``vavg`` per channel over ``H·W`` elements (the
  partial rows followed by zeros: ``vavg`` rounds half away from zero exactly like the
  frontend's ``div_round_away``).

Only layers whose intermediate result has no other consumer and is no graph output are fused.
Switches: ``fuse_pool``, ``fuse_add``, ``fuse_gap`` (compile options, default on).
"""

from __future__ import annotations

from dataclasses import dataclass

from .graph import Buffer, EltLayer, GapLayer, Layer, Lowered, MatLayer, PoolLayer, TensorRef, acc_width
from .lower_vec import split


@dataclass
class FusedAdd:
    """The Add/Sub folded into a conv: ``sat(rshift_round(IR_c(conv) ± IR_r(res), shift))``."""

    other: TensorRef             # the residual operand (loaded beside the patch)
    conv_first: bool             # the conv output is the Add's first operand (order of Sub)
    sub: bool
    shifts: tuple[int, int]      # left shifts of (conv output, residual)
    shift: int                   # requant shift (negative = left)
    clamp: tuple[int, int]
    acc_bits: int
    out_bits: int = 8


@dataclass
class GapFinishLayer(Layer):
    """Average of the per-replica channel sums of a conv fused with GlobalAveragePool.

    ``inputs[0]`` is the partial-sum buffer: one row of ``channels`` ``sum_bits``-wide sums per
    replica of ``mat``; ``out`` the pooled ``1 × 1 × channels`` tensor."""

    mat: MatLayer = None
    positions: int = 1            # H·W of the pooled map (the vavg length)
    channels: int = 1
    sum_bits: int = 16

    @property
    def replicas(self) -> int:
        return self.mat.plan.replicas


def _consumers(low: Lowered) -> dict[int, list[Layer]]:
    out: dict[int, list[Layer]] = {}
    for layer in low.layers:
        for t in layer.inputs:
            out.setdefault(id(t.buf), []).append(layer)
    return out


def _depths(low: Lowered) -> dict[int, int]:
    """Longest layer path from the graph inputs to each buffer (id(buffer) → depth)."""
    depth = {id(t.buf): 0 for t in low.inputs}
    for layer in low.layers:
        depth[id(layer.out.buf)] = 1 + max((depth.get(id(t.buf), 0) for t in layer.inputs), default=0)
    return depth


def _single_use(m: Layer, user: Layer, cons: dict, outputs: set[int]) -> bool:
    return id(m.out.buf) not in outputs and [id(x) for x in cons.get(id(m.out.buf), [])] == [id(user)]


def fuse_layers(low: Lowered, *, pool: bool = True, add: bool = True, gap: bool = True,
                cores: int = 64) -> list[str]:
    """Rewrite ``low.layers`` in place; returns one line per fusion done.

    Needs the partition (``MatLayer.plan``) for the pool fusion (one column unit per replica).
    A pool is fused only when its output has at least half as many pixels as the conv could
    use replicas (one per core, at most ~``sqrt(6·windows·AGs)``): a replica of a fused conv
    owns whole pool pixels, so a tiny pool output would cost the conv its parallelism."""
    done: list[str] = []
    outputs = {id(t.buf) for t in low.outputs}
    if add:
        done += _fuse_adds(low, outputs)
    if pool:
        done += _fuse_pools(low, outputs, cores)
    if gap:
        done += _fuse_gaps(low, outputs)
    return done


def _producer(low: Lowered, t: TensorRef) -> Layer | None:
    for layer in low.layers:
        if layer.out.buf is t.buf:
            return layer
    return None


def _fuse_adds(low: Lowered, outputs: set[int]) -> list[str]:
    done = []
    for e in [l for l in low.layers if isinstance(l, EltLayer)]:
        cons, depth = _consumers(low), _depths(low)
        cands = []
        for j, t in enumerate(e.inputs):
            m = _producer(low, t)
            if (isinstance(m, MatLayer) and m.op == "Conv" and not m.fused and _single_use(m, e, cons, outputs)
                    and e.inputs[1 - j].buf is not t.buf and max(t.bits, e.inputs[1 - j].bits, e.out.bits) <= 8):
                cands.append((depth.get(id(t.buf), 0), -j, j, m))
        if not cands:
            continue
        _, _, j, m = max(cands, key=lambda c: c[:2])
        other = e.inputs[1 - j]
        m.fused_add = FusedAdd(other, j == 0, e.sub, (e.in_shifts[j], e.in_shifts[1 - j]), e.shift, e.clamp,
                               e.acc_bits, e.out.bits)
        m.conv_bits = m.conv_bits or m.out.bits
        m.out = e.out
        layers = low.layers
        layers.remove(m)
        layers[layers.index(e)] = m      # the fused layer runs where the Add ran (both operands exist)
        done.append(f"{e.name} ({e.op}) folded into {m.name}")
    return done


def _fuse_pools(low: Lowered, outputs: set[int], cores: int) -> list[str]:
    done = []
    cons = _consumers(low)
    for p in [l for l in low.layers if isinstance(l, PoolLayer)]:
        m = _producer(low, p.inputs[0])
        if not (isinstance(m, MatLayer) and m.op == "Conv" and not m.fused and p.kind == "max"
                and p.out.bits <= 8 and m.plan is not None and m.plan.agp == 1 and m.windows > 1
                and _single_use(m, p, cons, outputs)):
            continue
        useful = min(m.windows, cores, int((6 * m.windows * m.plan.hbar) ** 0.5))
        if 2 * p.out_hw[0] * p.out_hw[1] < useful:
            continue
        m.fused_pool = p
        m.conv_bits = m.conv_bits or m.out.bits
        m.out = p.out
        low.layers.remove(p)
        done.append(f"{p.name} ({p.op}) folded into {m.name}")
    return done


def _fuse_gaps(low: Lowered, outputs: set[int]) -> list[str]:
    done = []
    cons = _consumers(low)
    for g in [l for l in low.layers if isinstance(l, GapLayer)]:
        m = _producer(low, g.inputs[0])
        h, w, c = g.in_hwc
        if not (isinstance(m, MatLayer) and m.op == "Conv" and m.fused_pool is None and m.fused_gap is None
                and g.out.bits <= 8 and h * w <= 2047 and _single_use(m, g, cons, outputs)):
            continue
        bits = acc_width(h * w * (1 << (m.out.bits - 1)))
        buf = Buffer(f"{m.name}/gap_partials", (1, 1, c), bits)   # rows set when replicas are known
        low.buffers.append(buf)
        part = TensorRef(buf.name, (1, 1, c), buf, None, None, 1.0, bits)
        fin = GapFinishLayer(g.node, [part], g.out, mat=m, positions=h * w, channels=c, sum_bits=bits)
        m.fused_gap = g
        m.conv_bits = m.conv_bits or m.out.bits
        m.out = part
        low.layers[low.layers.index(g)] = fin
        done.append(f"{g.name} ({g.op}) folded into {m.name}")
    return done


def grid_tiles(h: int, w: int, parts: int, tall: bool = False) -> list[tuple[int, int, int, int]]:
    """``parts`` balanced tiles ``(y0, y1, x0, x1)`` of an ``h × w`` grid: row bands (cut into
    column ranges when there are more parts than rows), or with ``tall`` column strips (cut into
    row ranges when there are more parts than columns) — tall tiles let a consumer layer follow
    its producer a few rows behind (the element schedule's pipeline depth is a tile's height)."""
    if tall:
        return [(x0, x1, y0, y1) for y0, y1, x0, x1 in grid_tiles(w, h, parts)]
    groups = split(h, min(parts, h))
    per = split(min(parts, h * w), len(groups))
    tiles = []
    for (y0, y1), (a, b) in zip(groups, per):
        tiles += [(y0, y1, x0, x1) for x0, x1 in split(w, b - a)]
    return tiles


def pool_tiles(pool, replicas: int, tall: bool = False) -> list[tuple[int, int, int, int]]:
    """Pool-output tiles ``(p0, p1, x0, x1)`` of the replicas of a conv fused with a MaxPool."""
    return grid_tiles(pool.out_hw[0], pool.out_hw[1], replicas, tall)


def conv_rows_for(pool, p0: int, p1: int) -> list[int]:
    """Conv output rows the pool rows ``[p0, p1)`` read, ascending."""
    return _taps(pool.in_hwc[0], pool.kernel[0], pool.strides[0], pool.pads[0], pool.dilations[0], p0, p1)


def conv_cols_for(pool, x0: int, x1: int) -> list[int]:
    """Conv output columns the pool columns ``[x0, x1)`` read, ascending."""
    return _taps(pool.in_hwc[1], pool.kernel[1], pool.strides[1], pool.pads[1], pool.dilations[1], x0, x1)


def _taps(h: int, k: int, s: int, pad: int, d: int, p0: int, p1: int) -> list[int]:
    if d == 1 and s <= k:   # the windows overlap or touch: one contiguous range
        return list(range(max(0, p0 * s - pad), min(h, (p1 - 1) * s - pad + k))) if p1 > p0 else []
    rows: set[int] = set()
    for py in range(p0, p1):
        y0 = py * s - pad
        rows.update(y for y in range(y0, y0 + (k - 1) * d + 1, d) if 0 <= y < h)
    return sorted(rows)


def tile_windows(layer, tile: tuple[int, int, int, int]) -> tuple[int, int]:
    """The conv window range (a superset, in row-major order) that a pool tile reads."""
    p0, p1, x0, x1 = tile
    rows = conv_rows_for(layer.fused_pool, p0, p1)
    cols = conv_cols_for(layer.fused_pool, x0, x1)
    ow = layer.out_hw[1]
    return (rows[0] * ow + cols[0], rows[-1] * ow + cols[-1] + 1) if rows and cols else (0, 0)


def tile_conv_windows(layer, tile: tuple[int, int, int, int]) -> int:
    """Conv windows a pool tile computes (its rows × its conv column range)."""
    p0, p1, x0, x1 = tile
    cols = conv_cols_for(layer.fused_pool, x0, x1)
    return len(conv_rows_for(layer.fused_pool, p0, p1)) * (cols[-1] + 1 - cols[0] if cols else 0)


def size_partials(low: Lowered) -> None:
    """Give every GAP partial-sum buffer one row per replica (after replication)."""
    for layer in low.layers:
        if isinstance(layer, GapFinishLayer):
            layer.inputs[0].buf.hwc = (1, layer.replicas, layer.channels)
