"""The liveness pass (:mod:`nnisa.targets.pimsab.sim.liveness`): a batched run that evaluates only
the live bitlines of each compute instruction gives the observed DRAM bytes of a full evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.targets.pimsab.sim.fastrun import lanes_of, plan_for, run_batched
from nnisa.targets.pimsab.sim.liveness import FULL
from nnisa.targets.pimsab.sim.simulate import _inputs_to_dram

from .sim_helpers import ISA, SMALL
from .test_batch import B, random_program

OUT = 0x1000
ELEMENTWISE = ("add", "sub", "mult", "max", "min", "and", "or", "xor", "not", "copy", "set", "reset", "set_mask",
               "mac", "mul_const", "add_const", "dot_const")


def _program(rng, length: int):
    return random_program(rng, length, OUT)


def _inputs(rng):
    return [{"dram_0x0": rng.integers(0, 256, 0x400, dtype=np.uint8),
             "dram_0x400": rng.integers(0, 256, 0x400, dtype=np.uint8)} for _ in range(B)]


@pytest.mark.parametrize("seed", range(12))
def test_live_bitlines_give_the_observed_bytes_of_a_full_run(seed):
    """Random programs (every instruction kind, predicates, shifts, reductions, messages, loads of
    stored bytes) observed through a random subset of the final stores' bytes."""
    rng = np.random.default_rng(500 + seed)
    prog = _program(rng, 80)
    inputs = _inputs(rng)
    full = run_batched(prog, SMALL, inputs, _inputs_to_dram)
    end = max(a + n for a, n in plan_for(prog, SMALL).stores)
    observed = np.zeros(end, bool)
    lo = OUT + int(rng.integers(0, 64))
    observed[lo:end] = rng.random(end - lo) < rng.choice([0.02, 0.2, 0.7])
    part = run_batched(prog, SMALL, inputs, _inputs_to_dram, observed)
    idx = np.flatnonzero(observed)
    for b in range(B):
        want = np.asarray(full.dram.sample(b).read(0, end))
        got = np.asarray(part.dram.sample(b).read(0, end))
        assert np.array_equal(got[idx], want[idx]), f"seed {seed}, sample {b}"


def test_more_observed_bytes_never_evaluate_fewer_bitlines():
    rng = np.random.default_rng(7)
    prog = _program(rng, 60)
    plan = plan_for(prog, SMALL)
    end = max(a + n for a, n in plan.stores)
    comp = np.isin(plan.code[:, 0], [ISA.by_mnemonic[m].opcode for m in ELEMENTWISE])
    n = plan.code[:, 2] * comp
    some = np.zeros(end, bool)
    some[OUT::7] = True
    counts = [lanes_of(prog, SMALL, obs).evaluated(n)
              for obs in (np.zeros(end, bool), some, np.ones(end, bool), None)]
    assert counts == sorted(counts) and counts[-1] == n.sum() and counts[0] < counts[-1]
    assert (lanes_of(prog, SMALL, None).sel == FULL).all()


def test_a_layer_on_part_of_each_cram_evaluates_only_its_bitlines():
    """A compiled convolution with 6 output columns on the bitlines of 32-bitline CRAMs: the
    compute rows evaluate a fraction of the bitlines, and the outputs equal the reference."""
    from nnisa.targets.pimsab.compiler import dsl as T
    x = T.tensor((4, 8, 8), T.i8, "x")
    w = T.tensor((4, 3, 3, 5), T.i8, "w", const=True)
    m, e, f = T.loop(5, "m"), T.loop(6, "e"), T.loop(6, "f")
    c, r, s = T.red_loop(4, "c"), T.red_loop(3, "r"), T.red_loop(3, "s")
    op = T.compute("y", (m, e, f), T.sum(T.i32(x[c, e + r, f + s]) * T.i32(w[c, r, s, m]), c, r, s))
    sch = T.schedule(op)
    sch.bitlines(f)
    cfg = SMALL.replace(cram_cols=32, crams_per_tile=8)
    prog = T.build(sch, cfg)
    rng = np.random.default_rng(3)
    vals = [{"x": rng.integers(-128, 128, (4, 8, 8)), "w": rng.integers(-128, 128, (4, 3, 3, 5))} for _ in range(3)]
    outs, _ = prog.run_batch(vals)
    for v, o in zip(vals, outs):
        assert np.array_equal(o["y"], prog.reference(v)["y"])
    plan = plan_for(prog.program, cfg)
    lanes = lanes_of(prog.program, cfg, prog.layout.observed_bytes())
    n = plan.code[:, 2] * np.isin(plan.code[:, 0], [ISA.by_mnemonic[m].opcode for m in ELEMENTWISE])
    assert lanes.evaluated(n) < 0.5 * n.sum()
