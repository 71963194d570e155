"""The throughput schedule: a layer pipeline across the images of a stream.

Each core runs, per image, its share of every layer it holds (one task per replica unit, or per
core for a vector layer, and image: :func:`~.pipeline.coarsen`).  Layer ``L`` gets a *stage*
``s(L)`` — its depth in the layer graph (1 + the deepest stage it reads from) — and the task of
layer ``L`` for image ``k`` belongs to *round* ``k + s(L)``.  The list schedule of
:mod:`.pipeline` emits the rounds in order, so in round ``r`` every core works on image
``r − s(L)`` of each of its layers, and every input of such a task was made in an earlier round:
no task waits for work of its own round.  Activations go through global memory (every image has
its own buffers, so no write-after-read hazard between images); a consumer core receives one
1-byte token from each producer core it reads from, once per layer boundary and image; there
are no global barriers.

In steady state all stages are busy and a round lasts about as long as the busiest core's work
for one image of each of its layers: that is the **period**.  The **latency** of an image is
its ``D`` rounds (``D`` = number of stages), so this schedule trades latency for throughput; the
element schedule is the low-latency one.  A stream must hold well over ``D`` images for the
middle of the stream to run with a full pipeline (:mod:`nnisa.targets.pim.sim.stream`).
"""

from __future__ import annotations

from .graph import Lowered


def layer_stages(low: Lowered) -> list[int]:
    """Stage of every layer (index in ``low.layers``): 0 for layers that read only graph inputs,
    else 1 + the largest stage among the layers producing its inputs."""
    stage_of_buf: dict[int, int] = {}
    out = []
    for layer in low.layers:
        s = 0
        for t in layer.inputs:
            if id(t.buf) in stage_of_buf:
                s = max(s, stage_of_buf[id(t.buf)] + 1)
        add = getattr(layer, "fused_add", None)
        if add is not None and id(add.other.buf) in stage_of_buf:
            s = max(s, stage_of_buf[id(add.other.buf)] + 1)
        stage_of_buf[id(layer.out.buf)] = s
        out.append(s)
    return out


def _colour(msgs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Order one boundary's token messages (producer core, consumer core) by a greedy edge
    colouring: messages of one colour touch each core at most once and proceed in parallel, so
    a core waits for at most as many message slots as it has messages."""
    busy: dict[int, set[int]] = {}
    keyed = []
    for p, c in sorted(set(msgs)):
        k = 0
        while k in busy.setdefault(p, set()) or k in busy.setdefault(c, set()):
            k += 1
        busy[p].add(k)
        busy[c].add(k)
        keyed.append((k, p, c))
    return [(p, c) for _, p, c in sorted(keyed)]


def run_throughput(tasks: list, em: dict, stages: list[int], lmem: int) -> dict:
    """Emit the coarse ``tasks`` (one per unit, layer and image) round by round.

    Round ``r`` holds the tasks of layer ``L`` and image ``r − stages[L]``.  At the start of
    round ``r`` every core exchanges the tokens of boundary ``r``: a consumer core that loads
    data another core stored in round ``r − 1`` receives one token from it (the data stays in the
    image's own global-memory buffer until used, however many rounds later).  The boundary's
    tokens follow one global order (:func:`_colour`), tasks and their partial-sum messages
    another, round after round, and every core issues its messages in that order: deadlock-free
    by construction, and nothing inside a round waits for work of the same round."""
    from .emit import LmemArena
    from .pipeline import _deps
    _deps(tasks)
    for e in em.values():
        e.per_task = True
        e.tarena = LmemArena(lmem)
        e.tarena.base = e.tarena.top = lmem // 2
    rnd = [t.image + stages[t.layer] for t in tasks]
    order = sorted(range(len(tasks)), key=lambda i: (rnd[i], tasks[i].layer, i))
    boundary: dict[int, list[tuple[int, int]]] = {}
    for i, t in enumerate(tasks):
        for d in t.deps:
            p = tasks[d].store
            if rnd[d] >= rnd[i]:      # pragma: no cover - stages make every input come earlier
                raise RuntimeError("throughput schedule: an input made in the same round")
            for c in t.loaders:
                if c != p:
                    boundary.setdefault(rnd[d] + 1, []).append((p, c))
    tokens = 0
    pos = 0
    rounds = max(rnd, default=-1) + 1
    for r in range(rounds):
        for p, c in _colour(boundary.get(r, [])):
            em[p].token_send(c)
            em[c].token_recv(p)
            tokens += 1
        while pos < len(order) and rnd[order[pos]] == r:
            t = tasks[order[pos]]
            for c in t.cores:
                em[c].tarena.reset()
            t.run()
            for c in t.cores:
                em[c].mark(t.image)
            pos += 1
    return {"tasks": len(tasks), "tokens": tokens, "rounds": rounds, "stages": max(stages, default=0) + 1}
