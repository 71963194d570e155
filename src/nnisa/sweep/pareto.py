"""Pareto fronts (every objective minimised): a readable reference and a vectorised fast path.

A point is on the front when no other point is at least as good in every objective and strictly
better in one.  Equal points do not dominate each other (both stay on the front).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: rows compared at once by the fast path (memory: block x n x objectives booleans)
_BLOCK = 256


def pareto_reference(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the non-dominated points (pure Python, O(n^2)): the definition, spelled out."""
    front = []
    for i, p in enumerate(points):
        dominated = False
        for j, q in enumerate(points):
            if j != i and all(a <= b for a, b in zip(q, p)) and any(a < b for a, b in zip(q, p)):
                dominated = True
                break
        if not dominated:
            front.append(i)
    return front


def pareto_front(points: Sequence[Sequence[float]] | np.ndarray) -> list[int]:
    """Indices (ascending) of the non-dominated points; same result as :func:`pareto_reference`.

    Points are compared block by block with numpy (n x n comparisons, ``_BLOCK`` rows at a time)."""
    v = np.asarray(points, dtype=np.float64)
    if v.size == 0:
        return []
    if v.ndim != 2:
        raise ValueError("points must be a 2-D array (points x objectives)")
    n = len(v)
    dominated = np.zeros(n, dtype=bool)
    for s in range(0, n, _BLOCK):
        blk = v[s:s + _BLOCK, None, :]           # the candidates
        le = (v[None, :, :] <= blk).all(axis=2)   # others at least as good everywhere
        lt = (v[None, :, :] < blk).any(axis=2)    # ... and strictly better somewhere
        dominated[s:s + _BLOCK] = (le & lt).any(axis=1)
    return [int(i) for i in np.flatnonzero(~dominated)]
