"""Compile every target's JIT kernels into numba's on-disk cache (``make install`` runs this).

numba compiles a kernel the first time it is called with new argument types and, with
``cache=True``, keeps the machine code in ``__pycache__`` next to the source.  On a fresh
checkout that first call costs seconds per kernel (the DAIS CSE kernel alone ~10 s); running
each target's :meth:`~nnisa.core.target.Target.warm_up` once after installation moves that cost
out of the first ``nnisa compile``/``nnisa sim``/``nnisa demo``.

Usage: ``python -m nnisa.warmup [TARGET ...]``.
"""

from __future__ import annotations

import sys
import time

from .core.errors import NnisaError
from .core.target import get_target, target_names


def warm_up(names: list[str] | None = None, echo=print) -> dict[str, float]:
    """Run :meth:`Target.warm_up` for ``names`` (default: every installed target); returns
    seconds per target.  Targets that are not installed are skipped."""
    out = {}
    for name in names or target_names():
        try:
            target = get_target(name)
        except NnisaError:
            continue
        t0 = time.perf_counter()
        jobs = target.warm_up()
        out[name] = time.perf_counter() - t0
        if jobs and echo:
            echo(f"nnisa warm-up: {name}: {out[name]:.1f} s ({'; '.join(jobs)})")
    return out


def main(argv: list[str] | None = None) -> int:
    warm_up(list(sys.argv[1:] if argv is None else argv) or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
