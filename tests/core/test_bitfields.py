"""Bit fields and formats: reference path vs numpy bulk path, ranges, layout checks."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core.bitfields import Field, Format


def test_field_range_and_pack():
    f = Field("imm", 63, 32, signed=True, wrap_unsigned=True)
    assert f.width == 32
    assert f.value_range == (-(1 << 31), (1 << 32) - 1)
    # an unsigned spelling and its signed twin encode alike, and decode signed
    assert f.pack(0xFFFFFFFF) == f.pack(-1)
    assert f.unpack(f.pack(0xFFFFFFFF)) == -1
    g = Field("rd", 10, 6)
    assert g.fits(31) and not g.fits(32) and not g.fits(-1)
    assert Field("r", 4, 0, multiple_of=2).fits(4)
    assert not Field("r", 4, 0, multiple_of=2).fits(3)


def test_format_rejects_overlap_and_out_of_word():
    op = Field("op", 3, 0)
    with pytest.raises(ValueError):
        Format(16, ((op, 1),), (Field("a", 5, 2),))
    with pytest.raises(ValueError):
        Format(16, ((op, 1),), (Field("a", 16, 4),))


@settings(max_examples=200, deadline=None)
@given(lo=st.integers(0, 60), width=st.integers(1, 30), signed=st.booleans(), data=st.data())
def test_bulk_matches_reference(lo, width, signed, data):
    hi = min(lo + width - 1, 63)
    f = Field("x", hi, lo, signed=signed)
    vmin, vmax = f.value_range
    vals = data.draw(st.lists(st.integers(vmin, vmax), min_size=1, max_size=20))
    words = f.pack_array(np.array(vals, dtype=np.int64))
    assert [int(w) for w in words] == [f.pack(v) for v in vals]
    assert f.unpack_array(words).tolist() == vals
    assert [f.unpack(int(w)) for w in words] == vals
