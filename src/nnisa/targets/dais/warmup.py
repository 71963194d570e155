"""Small real jobs that compile the DAIS target's numba kernels into their on-disk cache.

Kernels: the CMVM common-subexpression kernel (``compiler.cmvm_nb``), reached through
:func:`~nnisa.targets.dais.compiler.cmvm.compile_matrix` as the network compiler reaches it, and
the interpreter's lowering (``sim.kernel._dfs_order``, ``_allocate``) and execution kernels
(``_run_serial`` for one thread, the parallel ``_run`` for more), for both semantics.
"""

from __future__ import annotations

import numpy as np


def warm_up() -> list[str]:
    """Run the jobs; returns one line per job."""
    from .compiler.cmvm import compile_matrix
    from .sim.interp import Interpreter

    W = np.array([[3, -5, 7, 0], [6, 2, -1, 9], [-4, 8, 5, -3], [1, 7, -6, 2], [5, -2, 3, 4]], np.float64)
    prog = compile_matrix(W, (1, 7, 0))
    X = np.arange(64 * W.shape[0], dtype=np.float64).reshape(64, -1) % 97 - 48
    for semantics in ("default", "da4ml-compat"):
        it = Interpreter(prog, semantics=semantics)
        for threads in (1, 2):
            it.run(X, n_threads=threads)
    return ["CMVM compile (CSE kernel)", "interpreter lowering and run (1 and 2 threads, both semantics)"]
