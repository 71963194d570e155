"""Small real jobs that compile the DAIS target's numba kernels into their on-disk cache.

Kernels: the CMVM common-subexpression kernel (``compiler.cmvm_nb``) and the kernels after it
(``compiler.cmvm_emit``: NAF terms, log replay and accumulation, with and without row blocks and
decomposition), reached through :func:`~nnisa.targets.dais.compiler.cmvm.compile_matrix` as the
network compiler reaches them; a convolution template's dense coefficients and its replay at
every position (``dense_coefs``, ``replay_positions`` with ``cmvm_nb.replay_kernel``); the program
depths (``program_nb.depths``, via the statistics); the interpreter's lowering
(``sim.kernel._dfs_order``, ``_allocate``) and execution kernels (``_run_serial`` for one thread,
the parallel ``_run`` for more), for both semantics; the bundle writers' row renderer
(``formats.rows_nb.fill_rows``, through the fast text and da4ml JSON writers).
"""

from __future__ import annotations

import numpy as np


def warm_up() -> list[str]:
    """Run the jobs; returns one line per job."""
    from .compiler.cmvm import compile_matrix
    from .sim.interp import Interpreter

    from .compiler.cmvm_emit import make_replay
    from .compiler.cmvm import CMVMCompiler
    from .program import ProgramBuilder

    W = np.array([[3, -5, 7, 0], [6, 2, -1, 9], [-4, 8, 5, -3], [1, 7, -6, 2], [5, -2, 3, 4]], np.float64)
    prog = compile_matrix(W, (1, 7, 0))
    compile_matrix(W, (1, 7, 0), block_rows=2, decompose=True).stats()  # row blocks, decomposition, depths
    scratch = ProgramBuilder(5)
    tmpl = CMVMCompiler(scratch, [(scratch.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(5)])
    tmpl.solve(W.astype(np.int64).tolist())
    b = ProgramBuilder(5)
    slots = np.array([[b.add_op(-1, j, -1, 0, (1, 7, 0)) for j in range(5)]] * 2)
    slots[1, 0] = -1  # one padded position
    kifs = np.where(slots[..., None] >= 0, np.array([1, 7, 0]), 0)
    rep = make_replay(tmpl, slots, kifs)
    for p in range(2):
        rep.emit(p, b)
    from .formats.fastrender import disassemble_fast, to_da4ml_json_fast

    disassemble_fast(prog, encoded=True)
    to_da4ml_json_fast(prog, encoded=True)
    X = np.arange(64 * W.shape[0], dtype=np.float64).reshape(64, -1) % 97 - 48
    for semantics in ("default", "da4ml-compat"):
        it = Interpreter(prog, semantics=semantics)
        for threads in (1, 2):
            it.run(X, n_threads=threads)
    return ["CMVM compile (CSE, replay and accumulation kernels; row blocks, decomposition, depths)",
            "convolution template replay at all positions",
            "interpreter lowering and run (1 and 2 threads, both semantics)",
            "text and da4ml JSON row renderer"]
