"""Issue 13 item 4 on DAIS: exact fast integer matrix conversion, row-block CSE (exact, deterministic,
same adders in both CSE engines)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nnisa.targets.dais.compiler.cmvm import CMVMCompiler, _to_int_matrix, compile_matrix, verify_linear
from nnisa.targets.dais.program import ProgramBuilder


def _fraction_path(W):
    W = np.asarray(W, np.float64)
    F = max(Fraction(float(v)).denominator.bit_length() - 1 for v in W.ravel())
    return [[int(Fraction(float(v)) * (1 << F)) for v in row] for row in W], F


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_int_matrix_fast_path_matches_fractions(r, c, seed):
    rng = np.random.default_rng(seed)
    W = np.ldexp(rng.integers(-1000, 1000, (r, c)).astype(np.float64), rng.integers(-24, 16, (r, c)))
    W[rng.random((r, c)) < 0.2] = 0.0
    assert _to_int_matrix(W) == _fraction_path(W)


def _solve(M, n, engine, block_rows):
    b = ProgramBuilder(n)
    ins = [(b.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(n)]
    comp = CMVMCompiler(b, ins, engine=engine, block_rows=block_rows)
    return comp.solve(M), comp.log, b


def test_row_blocks_same_in_both_engines_and_block_local():
    rng = np.random.default_rng(7)
    M = rng.integers(-127, 128, (40, 10)).tolist()
    a = _solve(M, 40, "numba", 16)
    b = _solve(M, 40, "python", 16)
    assert a[0] == b[0] and a[1] == b[1]
    # the CSE's adders (before the per-column accumulation) never pair two blocks' signals
    bb = ProgramBuilder(40)
    comp = CMVMCompiler(bb, [(bb.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(40)], block_rows=16)
    from nnisa.targets.dais.compiler.cmvm import csd
    cols = [{(j, sh): d for j in range(40) if M[j][c] for sh, d in csd(M[j][c])} for c in range(10)]
    comp._cse_blocks(cols)
    assert comp.log
    block = {j: j // 16 for j in range(40)}
    for i, (p, q, _, _) in enumerate(comp.log):
        assert block[p] == block[q]
        block[40 + i] = block[p]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([4, 8, 32]))
def test_compile_matrix_row_blocks_exact(seed, block):
    """Row-block CSE through compile_matrix's compiler: the program computes x @ W exactly."""
    rng = np.random.default_rng(seed)
    W = rng.integers(-60, 61, (20, 6)).astype(np.float64)
    p = compile_matrix(W, (1, 7, 0), block_rows=block)
    assert verify_linear(p, W)
