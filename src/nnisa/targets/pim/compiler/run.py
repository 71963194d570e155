"""``PimTarget.run_compiled``: simulate a compiled model on a batch of samples.

A program compiled for a stream of ``N`` images (``-O images=N``) runs ``N`` samples per
simulation, one per image slot (a last, partial group is filled up with its final sample,
whose extra results are ignored); every sample is checked against the frontend's integer
reference.  Timing, energy and the lint do not depend on the data: the first simulation gives
them (``latency_ns`` is the first image's latency, ``period_ns`` the stream's steady-state time
per image), the others compute values only.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ....core.target import CompileResult, Stats


def run_stream(simulate: Callable, compiled: CompileResult, inputs: dict[str, np.ndarray],
               progress: Any = None) -> tuple[dict[str, np.ndarray], Stats, dict[str, Any]]:
    """Float outputs (batch first), the statistics of the first simulation and ``bit_exact``."""
    stream = compiled.sim_options.get("stream") or {}
    n_img = int(stream.get("images", 1))
    n = len(next(iter(inputs.values())))
    outs: dict[str, list[np.ndarray]] = {}
    stats = Stats()
    exact: list[bool] | None = [] if compiled.reference is not None else None
    for start in range(0, n, n_img):
        idx = [min(start + k, n - 1) for k in range(n_img)]
        samples = [{k: v[i] for k, v in inputs.items()} for i in idx]
        segs: dict[int, bytes] = {}
        for k, sample in enumerate(samples):
            segs.update(compiled.encode_inputs(sample, image=k) if n_img > 1 else compiled.encode_inputs(sample))
        if start == 0:
            res = simulate(compiled.program, inputs=segs, **compiled.sim_options)
            stats = res.stats
        else:   # the same program again: values only
            res = simulate(compiled.program, inputs=segs, **{**compiled.sim_options, "mode": "functional",
                                                             "lint": False})
        for k in range(min(n_img, n - start)):
            got = {name: np.asarray(v)[k:k + 1] if n_img > 1 else np.asarray(v) for name, v in res.outputs.items()}
            if exact is not None:
                ref = compiled.reference(samples[k])
                exact.append(all(np.array_equal(got[name], np.asarray(v)) for name, v in ref.items()))
            for name, v in compiled.decode_outputs(got).items():
                outs.setdefault(name, []).append(np.asarray(v))
            if progress is not None:
                progress(start + k + 1, n)
    checks = {"bit_exact": None if exact is None else bool(all(exact))}
    return {k: np.stack(v) for k, v in outs.items()}, stats, checks
