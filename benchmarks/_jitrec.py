"""Record numba compilations (``numba:compile`` events) while running code: per kernel, the time
of its own compilation and of its compilation with the kernels it pulls in.  Used by
``benchmarks/jit_cold.py`` and by the warm-up coverage test."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def record_compiles():
    """Yields a list that receives, when the block ends, ``(kernel, inclusive_s, own_s, depth)``
    for every compilation in the block (``kernel`` = ``module.qualname``; numba's own helpers
    included; ``depth`` 0 for the compilations the code triggered directly)."""
    from numba.core import event as ev
    out: list = []
    with ev.install_recorder("numba:compile") as rec:
        yield out
    stack = []
    for ts, e in rec.buffer:
        d = e.data["dispatcher"]
        name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        if type(d).__name__ == "ObjModeLiftedWith":  # a `with objmode` block: compiled per process
            name += " (objmode block)"
        if e.is_start:
            stack.append([name, ts, 0.0])
        else:
            n, t0, child = stack.pop()
            dur = ts - t0
            out.append((n, dur, dur - child, len(stack)))
            if stack:
                stack[-1][2] += dur
