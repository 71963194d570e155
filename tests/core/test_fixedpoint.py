"""Fixed-point helpers against plain-Python definitions."""

from fractions import Fraction
import math

import numpy as np
from hypothesis import given, strategies as st

from nnisa.core import fixedpoint as fx


@given(st.integers(-(1 << 40), 1 << 40), st.integers(1, 32))
def test_wrap_and_saturate(x, bits):
    w = int(fx.wrap(x, bits))
    lo, hi = fx.int_range(bits)
    assert lo <= w <= hi and (w - x) % (1 << bits) == 0
    assert int(fx.saturate(x, bits)) == min(max(x, lo), hi)
    u = int(fx.wrap(x, bits, signed=False))
    assert 0 <= u < (1 << bits) and (u - x) % (1 << bits) == 0


def _ref_round(x, s, mode):
    q = Fraction(x, 1 << s)
    fl = math.floor(q)
    frac = q - fl
    if mode == "floor":
        return fl
    if mode == "trunc":
        return int(q)
    if mode == "half_up":
        return math.floor(q + Fraction(1, 2))
    if mode == "half_away":
        r = math.floor(abs(q) + Fraction(1, 2))
        return r if q >= 0 else -r
    if mode == "half_even":
        if frac > Fraction(1, 2):
            return fl + 1
        if frac < Fraction(1, 2):
            return fl
        return fl + (fl & 1)


@given(st.integers(-(1 << 40), 1 << 40), st.integers(0, 20),
       st.sampled_from(["floor", "trunc", "half_up", "half_away", "half_even"]))
def test_shift_right_round(x, s, mode):
    assert int(fx.shift_right_round(x, s, mode)) == _ref_round(x, s, mode)


def test_round_half_away_and_requantize():
    assert fx.round_half_away([0.5, -0.5, 1.49, -2.5]).tolist() == [1, -1, 1, -3]
    acc = np.array([1000, -1000, 70000])
    # 1000 * 3 / 2**5 = 93.75 -> 94; 70000*3/32 = 6562.5 -> saturates at 127
    assert fx.requantize(acc, 3, 5).tolist() == [94, -94, 127]


@given(st.integers(-(1 << 40), 1 << 40), st.integers(1, 40))
def test_int_twins_match_array_versions(x, bits):
    assert fx.wrap_int(x, bits) == int(fx.wrap(x, bits))
    assert fx.sat_int(x, bits) == int(fx.saturate(x, bits))


@given(st.integers(-(1 << 40), 1 << 40), st.integers(1, 1000))
def test_div_round_away(a, n):
    q = Fraction(a, n)
    want = math.floor(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1)
    assert fx.div_round_away_int(a, n) == want == int(fx.div_round_away(a, n))


@given(st.floats(-1e12, 1e12, allow_nan=False))
def test_round_half_away_twins(v):
    assert fx.round_half_away_int(v) == int(fx.round_half_away(v))
