"""``PimTarget.simulate_batch``: the samples of a compiled stream in one simulation.

A program compiled for a stream of ``N`` images (``-O images=N``) runs ``N`` samples per
simulation, one per image slot (``CompileResult.samples_per_run``; a last, partial group is
filled up with its final sample, whose extra results are ignored); the core run loop
(:func:`nnisa.core.target.run_samples`) checks every sample against the frontend's integer
reference.  Timing, energy and the lint do not depend on the data: the run's first simulation
gives them (``latency_ns`` is the first image's latency, ``period_ns`` the stream's steady-state
time per image), the others compute values only.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....core.target import CompileResult, Stats

__all__ = ["simulate_stream"]


def simulate_stream(simulate: Callable, compiled: CompileResult, samples: list[dict[str, np.ndarray]],
                    first: int = 0) -> tuple[list[dict[str, np.ndarray]], Stats | None]:
    """One simulation of ``samples`` placed in the image slots of the compiled stream → each
    sample's raw outputs and the statistics (the run's first simulation, ``first == 0``, is timed;
    the others compute values only and give ``None``)."""
    n_img = compiled.samples_per_run or 1
    slots = [samples[min(k, len(samples) - 1)] for k in range(n_img)]
    segs: dict[int, bytes] = {}
    for k, sample in enumerate(slots):
        segs.update(compiled.encode_inputs(sample, image=k))
    options = compiled.sim_options if first == 0 else {**compiled.sim_options, "mode": "functional", "lint": False}
    res = simulate(compiled.program, inputs=segs, **options)
    stats = res.stats if first == 0 else None
    if n_img == 1:  # one image: outputs without an image axis
        return [res.outputs], stats
    return [{name: np.asarray(v)[k:k + 1] for name, v in res.outputs.items()} for k in range(len(samples))], stats
