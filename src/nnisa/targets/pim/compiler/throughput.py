"""The throughput schedule: a layer pipeline across the images of a stream.

Each core runs, per image, its share of every layer it holds (one task per replica unit, or per
core for a vector layer, and image: :func:`~.pipeline.coarsen`); a consumer task receives one
token from every producer core it depends on (one synchronisation per producer/consumer core
pair, layer boundary and image), there are no global barriers, and every image has its own
activation buffers (no write-after-read hazards between images).  The list schedule of
:mod:`.pipeline` orders each core's tasks by estimated start time with image ``k`` released
at ``k · P``: the pipeline fills as in steady state (a core holding an early and a late layer
works on image ``k + d`` of the early layer while the late one handles image ``k``), while the
first image is not slowed down by the later ones.

``P`` is a static estimate of the period (:func:`estimate_period`): the larger of the busiest
core's work per image (``mvmul`` ≈ 1,660 ns, partial sums and requantization from
:func:`~.partition.window_ns`) and the global memory's service time per image.  It only steers
the order; an estimate that is off makes the first image slower or the pipeline fill later,
never a wrong result.
"""

from __future__ import annotations

from collections import defaultdict

from .graph import Lowered, MatLayer
from .memory_plan import elem_bytes
from .partition import _vec_ns

#: global-memory service time per byte (conformance: 40 ns per 32-byte read beat, 50 per write)
GM_NS_PER_BYTE = 1.45
MVM_NS = 1660


def core_work_ns(low: Lowered) -> dict[int, float]:
    """Estimated work (ns) per core for one image: every array group's ``mvmul`` per window, the
    partial-sum additions and, on a unit's home core, the gather and requantization."""
    work: dict[int, float] = defaultdict(float)
    for layer in low.layers:
        if not isinstance(layer, MatLayer) or layer.plan is None:
            continue
        plan = layer.plan
        accb = elem_bytes(layer.acc_bits)
        for r, ags in enumerate(plan.ags):
            w0, w1 = plan.windows[r]
            nwin = w1 - w0
            if layer.fused_pool is not None:
                from .fusion import tile_conv_windows
                nwin = tile_conv_windows(layer, plan.pool_tiles[r])
            by_unit: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
            for a in ags:
                by_unit[a.unit][a.core] += 1
            for u, per_core in by_unit.items():
                c0, c1 = plan.col_ranges[u]
                n = c1 - c0
                home = next(a.core for a in ags if a.unit == u and a.row_slice == 0)
                for c, k in per_core.items():
                    work[c] += nwin * (k * MVM_NS + (k - 1) * _vec_ns(n, accb) + 150 * k)
                work[home] += nwin * ((len(per_core) - 1) * (_vec_ns(n, accb) + n * accb * 0.7)
                                      + 2 * _vec_ns(n, accb) + _vec_ns(n, accb, 1))
    return dict(work)


def gm_bytes(low: Lowered) -> int:
    """Bytes one image moves through global memory (layer inputs read, outputs written)."""
    total = 0
    for layer in low.layers:
        total += sum(t.buf.size for t in layer.inputs) + layer.out.buf.size
        add = getattr(layer, "fused_add", None)
        if add is not None:
            total += add.other.buf.size
    return total


def estimate_period(low: Lowered) -> float:
    """Static estimate (ns) of the throughput schedule's period (see the module docstring)."""
    work = core_work_ns(low)
    return max(max(work.values(), default=0.0), gm_bytes(low) * GM_NS_PER_BYTE)
