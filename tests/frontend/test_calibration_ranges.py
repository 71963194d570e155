"""Calibration ranges: ``max |x|`` taken from each tensor's min and max equals the float64 ``abs``
reference on every kind of value (negative-only, signed zeros, infinities, NaN, float16/32/64)."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.frontend.calibration import _abs_max


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_abs_max_equals_the_float64_reference(dtype):
    rng = np.random.default_rng(3)
    cases = [rng.normal(size=(4, 5)) * 10, -np.abs(rng.normal(size=7)), np.abs(rng.normal(size=7)),
             np.array([-0.0, -0.0]), np.array([0.0, -0.0]), np.array([-np.inf, 1.0]), np.array([3.0, np.inf]),
             np.array([1.0, np.nan, -2.0]), np.array([np.nan]), np.array([-5.5]), rng.normal(size=(2, 3, 8, 8)) * 1e-3]
    for v in cases:
        v = v.astype(dtype)
        want = float(np.abs(np.asarray(v, np.float64)).max())
        got = _abs_max(v)
        assert (np.isnan(want) and np.isnan(got)) or (got == want and np.signbit(got) == np.signbit(want)), (v, got, want)
