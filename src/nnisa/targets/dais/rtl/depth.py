"""CMVM solutions for pipelined RTL: the fewest pipeline stages at a latency cutoff.

The CSE of :func:`~nnisa.targets.dais.compiler.cmvm.compile_matrix` minimises adders; the adder
depth it leaves decides the pipeline depth (``ceil(depth / cutoff)`` stages at an integer cutoff,
one adder = one delay).  :func:`compile_matrix_for_cutoff` also solves with the adder-depth bound
``max_depth`` of each smaller stage count and keeps the solution with the fewest stages, then the
fewest adders, then the fewest adder bits — a bounded solution only when its adder bits stay
within ``area_slack`` of the unbounded one.
"""

from __future__ import annotations

from ....core.errors import OptionError
from ..compiler.cmvm import compile_matrix
from ..program import Program
from .netlist import build_netlist, chain_stages


def compile_matrix_for_cutoff(W, inputs, latency_cutoff: float, *, area_slack: float = 0.05,
                              **options) -> Program:
    """Compile ``y = x @ W`` for an RTL pipeline cut every ``latency_cutoff`` adder delays.

    Parameters
    ----------
    W, inputs
        As :func:`~nnisa.targets.dais.compiler.cmvm.compile_matrix`.
    latency_cutoff
        Adder delays per pipeline stage (as :func:`~nnisa.targets.dais.rtl.emit`).
    area_slack
        A solution with fewer stages is taken only if its adder bits are at most ``1 + area_slack``
        times those of the unbounded solution.
    **options
        Passed to ``compile_matrix`` (``search``, ``method``, ...); a ``max_depth`` given here is
        the first bound tried.

    Returns
    -------
    Program
        The chosen solution; its ``meta["cse_max_depth"]`` is the bound used (``None``: unbounded).
    """
    if not (latency_cutoff and latency_cutoff > 0):
        raise OptionError(f"latency_cutoff must be a positive number, not {latency_cutoff!r}")
    if area_slack < 0:
        raise OptionError(f"area_slack must be >= 0, not {area_slack!r}")

    def key(p: Program):
        st = p.stats()
        return (build_netlist(p, latency_cutoff=latency_cutoff).n_stages, st["n_adders"], st["adder_bits"])

    bound = options.pop("max_depth", None)
    best = compile_matrix(W, inputs, max_depth=bound, **options)
    best_key = key(best)
    limit = best.stats()["adder_bits"] * (1 + area_slack)
    depth = best.stats()["adder_depth"]
    for stages in range(best_key[0] - 1, 0, -1):
        d = depth  # the deepest adder chain that fits in `stages` stages
        while d > 0 and chain_stages(d, latency_cutoff) > stages:
            d -= 1
        if d <= 0:
            break
        p = compile_matrix(W, inputs, max_depth=d, **options)
        k = key(p)
        if k[0] > stages:
            break  # the columns' own term counts need more depth: no smaller bound can help
        if k[2] <= limit and k < best_key:
            best, best_key, bound = p, k, d
        depth = d
    return best.replace(meta={**best.meta, "cse_max_depth": bound})
