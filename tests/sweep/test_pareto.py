"""Pareto fronts: the vectorised fast path equals the reference definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nnisa.sweep import pareto
from nnisa.sweep.pareto import pareto_front, pareto_reference


def test_small_cases():
    pts = [[1, 5], [2, 2], [5, 1], [3, 3], [2, 2], [6, 6]]
    assert pareto_reference(pts) == [0, 1, 2, 4]  # equal points do not dominate each other
    assert pareto_front(pts) == [0, 1, 2, 4]
    assert pareto_front([]) == [] and pareto_front([[7.0, 1.0, 3.0]]) == [0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3), max_size=40))
def test_fast_equals_reference(points):
    assert pareto_front(points) == pareto_reference(points)


def test_blocks(monkeypatch):
    """More points than one block: the blocked comparison gives the same front."""
    rng = np.random.default_rng(1)
    pts = rng.integers(0, 50, size=(700, 3)).astype(float)
    ref = pareto_reference(pts.tolist())
    monkeypatch.setattr(pareto, "_BLOCK", 64)
    assert pareto_front(pts) == ref
