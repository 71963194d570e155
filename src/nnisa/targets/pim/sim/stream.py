"""Streams of images: per-image completion times, latency and period.

A program processes a *stream* of ``N`` images in one of two ways:

* it was **compiled** for ``N`` images (``-O images=N``): every image has its own buffers and
  the program carries *image marks* (:attr:`~nnisa.targets.pim.program.PimProgram.image_ends`:
  per core, the end of each image's work);
* a program without marks is **repeated** ``N`` times on every core (``-O images=N`` on
  ``nnisa sim``): a core starts its next round as soon as it ends the previous one, like
  pimsim-nn's throughput mode but for a fixed number of rounds.

Image ``k`` is complete when the last instruction of its work has retired on every core:
``T_k = max_c R(c, last pc of image k on c)``.  All inputs are present at time 0, so the
**latency** (first image in → out) is ``T_0``.  The **period** (steady-state time per image) is
``(T_{N−D} − T_0) / (N − D)``, where ``D`` is the program's pipeline depth (the throughput
schedule's number of stages, 1 otherwise, :attr:`PimProgram.pipeline_depth`): in a pipeline of
``D`` stages image ``k`` completes in round ``k + D − 1`` and the pipeline is full from round
``D − 1`` to ``N − 1``, so images ``0 … N − D`` complete in full rounds while the later ones
complete while it drains (short, not steady-state intervals).  With ``N ≤ D`` images (or one)
there is no period.
"""

from __future__ import annotations

import numpy as np

from .trace import instruction_times


def compiled_image_done(program, plans: dict, eng, P: int) -> list[int] | None:
    """``T_k`` (ps) of a program with image marks (``None`` when it has none)."""
    ends = program.image_ends
    if not ends:
        return None
    n = program.images
    done = [0] * n
    for c, marks in ends.items():
        plan = plans.get(c)
        if plan is None or not any(marks):
            continue
        if eng.inst_times is not None:       # rob_size > 1 model: per-instruction R is stored
            R = np.asarray(eng.inst_times[c][2], np.int64)
        else:
            R = instruction_times(plan, eng.ev_S[c], eng.ev_E[c], P)["R"]
        for k, m in enumerate(marks):
            if 0 < m <= len(R):
                done[k] = max(done[k], int(R[m - 1]))
    return done


def repeated_image_done(eng, P: int) -> list[int] | None:
    """``T_k`` (ps) of a program repeated on every core (``eng.round_ends``)."""
    if not eng.round_ends:
        return None
    n = max((len(v) for v in eng.round_ends.values()), default=0)
    done = [0] * n
    for ends in eng.round_ends.values():
        for k, t in enumerate(ends):
            done[k] = max(done[k], int(t) + P)   # R of a round's last instruction = cursor + P
    return done


def stream_figures(done: list[int] | None, depth: int = 1) -> tuple[int | None, float | None]:
    """(latency ps, period ps) of a stream's completion times (see the module docstring);
    period ``None`` when the stream is not longer than the pipeline."""
    if not done:
        return None, None
    j = len(done) - max(1, depth)
    return done[0], ((done[j] - done[0]) / j if j >= 1 else None)
