"""nnisa against the official simulator's recorded runs (workloads/official.py): the same cycles and,
where recorded, the same dynamic energy (the official CSV's 6 significant digits)."""

from __future__ import annotations

import pytest

from nnisa.targets.pimsab.config import preset
from nnisa.targets.pimsab.workloads.official import RUNS
from nnisa.targets.pimsab.workloads.registry import run_workload

#: runs of more than this many official cycles go to the slow suite (a few seconds each)
FAST_CYCLES = 40_000


@pytest.mark.parametrize("run", [r if r.cycles <= FAST_CYCLES else pytest.param(r, marks=pytest.mark.slow)
                                 for r in RUNS], ids=[r.case for r in RUNS])
def test_equal_to_the_official_simulator(run):
    res = run_workload(run.nnisa, preset(run.preset), **run.params).figures()
    assert res["cycles"] == run.cycles
    if run.energy_j is not None:
        assert res["energy_j"] == pytest.approx(run.energy_j, rel=6e-6)
