"""CMVM compiler: CSD, exactness, soundness (checked mode), invariants, depth limit, determinism."""

import numpy as np
import pytest

from nnisa.targets.dais.binary import write_binary
from nnisa.targets.dais.cmvm import compile_matrix, csd, verify_linear
from nnisa.targets.dais.interp import run


@pytest.mark.parametrize("n", list(range(-70, 71)) + [2**20 - 1, -(2**31) + 5])
def test_csd_is_nonadjacent_and_exact(n):
    digits = csd(n)
    assert sum(d << b for b, d in digits) == n
    bits = [b for b, _ in digits]
    assert all(b2 - b1 >= 2 for b1, b2 in zip(bits, bits[1:]))


def _corner_inputs(rng, n_in, kif, n=300):
    k, i, f = kif
    lo, hi = -k * 2.0**i, 2.0**i - 2.0**-f
    X = lo + np.floor(rng.random((n, n_in)) * ((hi - lo) * 2**f + 1)) / 2**f
    X[:20] = lo
    X[20:40] = hi
    X[40:60] = np.where(rng.random((20, n_in)) < 0.5, lo, hi)
    return X


CASES = [(1, 1, 4, 0.0, (1, 7, 0)), (3, 5, 6, 0.0, (0, 8, 0)), (8, 8, 8, 0.0, (1, 7, 0)),
         (16, 8, 5, 0.5, (1, 3, 2)), (12, 20, 10, 0.7, (1, 5, -1)), (24, 12, 3, 0.9, (0, 4, 0))]


@pytest.mark.parametrize("method", ["wmc", "mc", "dummy"])
@pytest.mark.parametrize("n_in,n_out,bits,sp,kif", CASES)
def test_exact_and_sound(n_in, n_out, bits, sp, kif, method):
    rng = np.random.default_rng(n_in * 100 + n_out)
    W = rng.integers(-2 ** (bits - 1), 2 ** (bits - 1), (n_in, n_out)).astype(float)
    W[rng.random(W.shape) < sp] = 0
    W[:, 0] = 0  # an all-zero column
    if n_in > 2:
        W[1] = 0  # a dead input
        W[:, -1] = W[:, min(1, n_out - 1)] * 4  # duplicate/power-of-two column
    W = W / 8
    p = compile_matrix(W, kif, method=method)
    assert verify_linear(p, W)
    X = _corner_inputs(rng, n_in, kif)
    y = run(p, X, check=True)  # checked mode: every op stays inside its dtype
    assert np.array_equal(y, X @ W)
    assert p.out_idxs[0] == -1
    st = p.stats()
    assert st["n_adders"] == int(np.isin(p.opcode, [0, 1]).sum())
    # invariants: inputs first, canonical f for adders, inp_shifts 0
    f = p.f.astype(int)
    lo = p.data_lo().astype(int)
    add = np.isin(p.opcode, [0, 1])
    assert np.all(f[add] == np.maximum(f[p.id0[add]], f[p.id1[add]] - lo[add]))
    assert not p.inp_shifts.any()


def test_cse_saves_adders_and_is_deterministic():
    rng = np.random.default_rng(3)
    W = rng.integers(-128, 128, (16, 16)).astype(float)
    dummy = compile_matrix(W, (1, 7, 0), method="dummy").stats()["n_adders"]
    p1 = compile_matrix(W, (1, 7, 0))
    p2 = compile_matrix(W, (1, 7, 0))
    assert p1.stats()["n_adders"] < 0.8 * dummy
    assert write_binary(p1).tobytes() == write_binary(p2).tobytes()
    best = compile_matrix(W, (1, 7, 0), search=True).stats()["n_adders"]
    assert best <= p1.stats()["n_adders"]


def test_depth_limit():
    rng = np.random.default_rng(4)
    W = rng.integers(-128, 128, (16, 8)).astype(float)
    free = compile_matrix(W, (1, 7, 0), method="mc")
    lim = compile_matrix(W, (1, 7, 0), method="mc", max_depth=6)
    assert lim.stats()["adder_depth"] <= max(6, 0) or lim.stats()["adder_depth"] < free.stats()["adder_depth"]
    assert lim.stats()["adder_depth"] <= free.stats()["adder_depth"]
    X = _corner_inputs(rng, 16, (1, 7, 0))
    assert np.array_equal(run(lim, X, check=True), X @ W)


def test_rejects_non_dyadic():
    with pytest.raises(ValueError, match=r"W\[0,1\]"):
        compile_matrix(np.array([[1.0, 0.1]]), (1, 7, 0))
