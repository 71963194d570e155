"""Bit-level micro-op mode: bit-serial micro-programs on a bit-plane CRAM model give the word-level
results, and their cycle counts equal the formulas of spec §3.2 on the shapes those describe."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.targets.pimsab import precision as P
from nnisa.targets.pimsab.isa import build_isa
from nnisa.targets.pimsab.sim.costs import compute_cycles, mul_const_bitexact
from nnisa.targets.pimsab.sim.machine import Machine
from nnisa.targets.pimsab.sim.microops import run_microops

from .sim_helpers import SMALL, rand_patterns

ISA = build_isa()
W = SMALL.tile_bitlines
PRECS = [P.make(k, w) for k in ("i", "u") for w in (1, 3, 4, 8, 11)]


def _pair(mn, seed, **fields):
    """Run one instruction word-level and bit-level from the same random state; return both tiles
    and the micro-op cycles."""
    states = []
    for _ in range(2):
        m = Machine(SMALL)
        ts = m.tile(0)
        r2 = np.random.default_rng(seed)
        for row in (0, 16, 32, 48, 64):
            ts.write(row, 16, rand_patterns(r2, W, 16))
        ts.mask[:] = r2.integers(0, 2, W).astype(bool)
        ts.carry[:] = r2.integers(0, 2, W).astype(bool)
        ts.rf[:] = r2.integers(0, 1 << 32, len(ts.rf), dtype=np.uint64).astype(np.uint32)
        states.append((m, ts))
    (m0, t0), (m1, t1) = states
    row = ISA.row(mn, **fields)
    m0.step(0, row)
    cyc = run_microops(t1, dict(zip(ISA.columns, row)), mn)
    return t0, t1, cyc


def _same(t0, t1, rows=96):
    for r in range(rows):
        a = t0.rows[r] if t0.rows[r] is not None else np.zeros(W // 8, np.uint8)
        b = t1.rows[r] if t1.rows[r] is not None else np.zeros(W // 8, np.uint8)
        assert np.array_equal(a, b), f"wordline {r}"


@settings(max_examples=60, deadline=None)
@given(mn=st.sampled_from(["add", "sub", "and", "or", "xor", "max", "min", "mult"]),
       pd=st.sampled_from(PRECS), pa=st.sampled_from(PRECS), pb=st.sampled_from(PRECS),
       pred=st.integers(0, 3), seed=st.integers(0, 2 ** 31))
def test_binary_microprograms_are_exact(mn, pd, pa, pb, pred, seed):
    if mn in ("max", "min", "mult"):
        pred = 0
    t0, t1, cyc = _pair(mn, seed, rd=0, pd=pd, ra=16, pa=pa, rb=32, pb=pb, pred=pred)
    _same(t0, t1)
    if mn in ("add", "sub"):
        assert np.array_equal(t0.carry, t1.carry)
    assert cyc > 0


@pytest.mark.parametrize("mn", ["not", "copy", "set", "reset", "set_mask", "shift", "cram_local_shf"])
def test_unary_microprograms_are_exact(mn):
    fields = dict(rd=0, pd=P.make("i", 8), ra=16, pa=P.make("i", 8))
    if mn == "set_mask":
        fields = dict(ra=20)
    elif mn in ("set", "reset"):
        fields = dict(rd=0, pd=P.make("u", 8), pred=1)
    elif mn == "shift":
        fields.update(dist=2, dir=1, ra=0, size=40)
    elif mn == "cram_local_shf":
        fields.update(shf=1, shf_en=1)
    t0, t1, cyc = _pair(mn, 7, **fields)
    _same(t0, t1)
    assert np.array_equal(t0.mask, t1.mask)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_cycle_counts_equal_the_formulas_on_their_shapes(p):
    u, u2 = P.make("u", p), P.make("u", 2 * p)
    s, s1 = P.make("i", p), P.make("i", p + 1)
    cases = [("add", dict(rd=0, pd=s1, ra=16, pa=s, rb=32, pb=s)), ("add", dict(rd=0, pd=u, ra=16, pa=u, rb=32, pb=u)),
             ("sub", dict(rd=0, pd=s, ra=16, pa=s, rb=32, pb=s)), ("mult", dict(rd=0, pd=u2, ra=16, pa=u, rb=32, pb=u)),
             ("max", dict(rd=0, pd=s, ra=16, pa=s, rb=32, pb=s)), ("min", dict(rd=0, pd=u, ra=16, pa=u, rb=32, pb=u)),
             ("and", dict(rd=0, pd=u, ra=16, pa=u, rb=32, pb=u)), ("copy", dict(rd=0, pd=s, ra=16, pa=s)),
             ("set", dict(rd=0, pd=u)), ("shift", dict(rd=0, pd=u, ra=0, pa=u, dist=2)),
             ("cram_local_shf", dict(rd=0, pd=u, ra=16, pa=u, shf=0, shf_en=1))]
    for mn, f in cases:
        t0, t1, cyc = _pair(mn, p, **f)
        _same(t0, t1)
        assert cyc == compute_cycles(mn, dict(zip(ISA.columns, ISA.row(mn, **f))), SMALL), mn


@pytest.mark.parametrize("const", [0, 1, 0x55, 0xAA, 0xFF])
def test_mul_const_microprogram_counts_set_bits(const):
    m = Machine(SMALL)
    ts = m.tile(0)
    ts.write(16, 8, np.arange(W, dtype=np.uint64) % 256)
    ts.rf[3] = const
    u8, u16 = P.make("u", 8), P.make("u", 16)
    ins = dict(zip(ISA.columns, ISA.row("mul_const", rd=32, pd=u16, ra=16, pa=u8, rb=3, pb=u8)))
    cyc = run_microops(ts, ins, "mul_const")
    assert cyc == mul_const_bitexact(8, const)
    assert np.array_equal(ts.read(32, 16), (np.arange(W) % 256) * const)


def test_unsupported_instruction_is_a_clear_error():
    from nnisa.core.errors import UnsupportedError
    m = Machine(SMALL)
    with pytest.raises(UnsupportedError, match="micro-op mode covers"):
        run_microops(m.tile(0), dict(zip(ISA.columns, ISA.row("reduce_tile", levels=1))), "reduce_tile")
