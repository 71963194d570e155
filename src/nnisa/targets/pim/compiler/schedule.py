"""Schedules: the batch (layer-by-layer) order and the barrier used between layers.

Batch / high-throughput mode: layer by layer, every layer's outputs go to global memory; all
participating cores meet at a barrier before the next layer reads them.  The barrier respects
the *equality* semantics of ``wait`` (§5.5): the leader waits for ``ev0 == n − 1`` (one
``sync`` from every other core), then releases each core with ``sync ev1``; a follower does
``sync ev0 → leader`` and ``wait ev1, 1``.  A follower cannot reach the next barrier's
``sync`` before the leader has consumed (reset) the current count, so the counter can never
overshoot the awaited value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .emit import CoreEmitter

EV_ARRIVE = 0
EV_RELEASE = 1


def barrier(em: dict[int, CoreEmitter], cores: list[int]) -> None:
    """Emit one barrier among ``cores`` (sorted; the lowest id leads)."""
    if len(cores) < 2:
        return
    lead, rest = cores[0], cores[1:]
    for c in rest:
        em[c].sync(EV_ARRIVE, lead)
        em[c].wait(EV_RELEASE, 1)
    em[lead].wait(EV_ARRIVE, len(rest))
    for c in rest:
        em[lead].sync(EV_RELEASE, c)


@dataclass
class Task:
    """One schedulable piece of a layer's code (a batch of windows, a pooled row, a chunk).

    ``run()`` appends the code to the emitters of ``cores`` (in program order on each core);
    ``loaders`` are the cores that read ``reads`` (global byte ranges) from global memory,
    ``store`` the core that writes ``writes``.  Batch mode just runs the tasks in order; the
    element schedule (``pipeline.py``) orders them and adds the synchronisation.
    """

    layer: int
    cores: list[int]
    loaders: list[int]
    reads: list[tuple[int, int]]
    writes: list[tuple[int, int]]
    store: int
    run: Callable[[], None]
    where: str = ""
    chain: object = None     # tasks with the same key run in list order (a unit's batches)
    deps: list = field(default_factory=list)
    image: int = 0           # the image of a stream (``images`` > 1) this task works on
    # core-to-core transport (``c2c.py``): per-unit set-up before the messages, the positions
    # the task needs in its regions and those it leaves in its output region
    prepare: Callable[[], object] | None = None
    needs: Callable[[], list] | None = None
    runs: Callable[[], list] | None = None
    out_buf: int | None = None
    unit: tuple | None = None       # (layer, replica, first column) of a conv/Gemm unit
