"""Compile every target's JIT kernels into numba's on-disk cache (``make install`` runs this).

numba compiles a kernel the first time it is called with new argument types and, with
``cache=True``, keeps the machine code in ``__pycache__`` next to the source.  On a fresh
checkout that first call costs seconds per kernel (the DAIS CSE kernel alone ~10 s); running
the jobs below once after installation moves that cost out of the first ``nnisa compile``,
``nnisa sim`` or ``nnisa demo``:

* each target's own :meth:`~nnisa.core.target.Target.warm_up` (readers, writers, engines);
* for every target that compiles and simulates, the demo's job on two samples of each bundled
  model (``api.run_model``), so ``make demo`` loads every kernel it needs;
* then (a full warm-up, no target named) the kernels written with :func:`nnisa.core.native.kernel`
  are compiled ahead of time, for the signatures the jobs used, into the native module that
  lets ``nnisa sim`` on a PIM program start without importing numba (:mod:`nnisa.core.native`;
  needs a C compiler, else the JIT stays in use).

Usage: ``python -m nnisa.warmup [TARGET ...]``.
"""

from __future__ import annotations

import sys
import time

from .core.errors import NnisaError
from .core.target import get_target, target_names


def _demo_jobs(name: str, target) -> list[str]:
    """The demo's compile + simulate on two samples of each bundled model (those the target compiles)."""
    import onnx

    from .api import run_model
    from .demo import DEMO_MODELS, DEMO_SKIP, _bundled

    caps = target.capabilities()
    if "compile" not in caps or "simulate" not in caps:
        return []
    jobs = []
    for model, _samples in DEMO_MODELS:
        found = _bundled(model)
        if (name, model) in DEMO_SKIP:
            continue
        if found is None:
            continue
        path, x, _ = found
        try:
            run_model(name, path, inputs={onnx.load(str(path)).graph.input[0].name: x[:2]})
        except NnisaError:  # a model this target does not compile
            continue
        jobs.append(f"demo job on {model}")
    return jobs


def warm_up(names: list[str] | None = None, echo=print, demo: bool = True) -> dict[str, float]:
    """Run the warm-up jobs for ``names`` (default: every installed target); returns seconds per
    target.  Targets that are not installed are skipped."""
    out = {}
    for name in names or target_names():
        try:
            target = get_target(name)
        except NnisaError:
            continue
        t0 = time.perf_counter()
        jobs = list(target.warm_up())
        if demo:
            jobs += _demo_jobs(name, target)
        out[name] = time.perf_counter() - t0
        if jobs and echo:
            echo(f"nnisa warm-up: {name}: {out[name]:.1f} s ({'; '.join(jobs)})")
    return out


def main(argv: list[str] | None = None) -> int:
    from .core import native

    names = list(sys.argv[1:] if argv is None else argv) or None
    native.use_jit()  # the jobs run on the JIT, so its signatures are what the native module exports
    try:
        warm_up(names)
    finally:
        native.use_jit(False)
    if names is None:  # the targets whose kernels have a native form, built in a process of their own
        owners = sorted({k.py_func.__module__.split(".")[2] for k in native.REGISTRY.values()
                         if k._jit is not None and k.py_func.__module__.startswith("nnisa.targets.")})
        if owners:
            native.build_in_fresh_process(owners)
    return 0


if __name__ == "__main__":
    sys.exit(main())
