"""Functional runs of the 3.1 M-instruction conformance program (spec §12; weightless → zeros).

Slow (loading the JSON alone takes several seconds): ``make test-all``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nnisa.core.errors import DeadlockError
from nnisa.targets.pim.sim.functional import run_functional
from nnisa.targets.pim.isa import OPCODE

sys.path.insert(0, str(Path(__file__).parent))
from .pim_loader import read_program  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def conformance():
    from shared_data import require_shared
    path = require_shared("conformance", "pim", "resnet18_batch_8x8.json.gz")
    cfg = require_shared("conformance", "pim", "pimsim_config.json")
    return read_program(path), cfg


def test_conformance_functional_zeros(conformance):
    prog, cfg = conformance
    t0 = time.perf_counter()
    res = run_functional(prog, cfg, weights="zeros", global_address_mode="single32")
    wall = time.perf_counter() - t0
    assert res.total_instructions == 3_119_907
    assert res.instructions[4] == 316_790 and res.instructions[43] == 12
    assert len(res.instructions) == 44
    rate = res.total_instructions / wall
    print(f"\nconformance functional (zeros): {wall:.2f} s, {rate / 1e6:.2f} M instructions/s")
    assert rate > 0.3e6
    # every st wrote something: global memory holds the stored outputs (all zero values here)
    assert res.gmem.pages > 0


def test_conformance_deadlock_c9(conformance):
    """C9: delete core 6's last recv — core 7 blocks in its last send to 6 (core 6 finished),
    core 8 blocks in its send to core 7."""
    prog, cfg = conformance
    rows = prog.cores[6]
    last = int(np.flatnonzero(rows["op"] == OPCODE["recv"])[-1])
    import copy
    p = copy.copy(prog)
    p.cores = dict(prog.cores)
    p.cores[6] = np.delete(rows, last)
    with pytest.raises(DeadlockError) as exc:
        run_functional(p, cfg, weights="zeros", global_address_mode="single32")
    rep = exc.value.report
    line7 = next(ln for ln in rep.splitlines() if ln.startswith("  core 7 "))
    line8 = next(ln for ln in rep.splitlines() if ln.startswith("  core 8 "))
    assert "send $r1, 6," in line7 or "send " in line7
    assert "waits for: recv on core 6 (core 6 has finished)" in line7
    assert int(line7.split()[3]) == int(np.flatnonzero(prog.cores[7]["op"] == OPCODE["send"])[-1])
    assert "waits for: recv on core 7 (core 7 is blocked at pc" in line8 and " send " in line8
    assert exc.value.exit_code == 3
