"""Arithmetic definitions (semantics.py) and memories (memory.py) of the PIM functional simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnisa.targets.pim.sim.memory import PAGE_SIZE, GlobalMemory, GmemRangeError, load_elems, store_elems, wrap_np
from nnisa.targets.pim.sim.semantics import (activation, activation_np, div_round_away, elem_get, elem_put, sat,
                                         shift_amount, wrap, wrap32)


def test_wrap_sat():
    assert [wrap(v, 4) for v in (7, 8, -8, -9, 16, 23)] == [7, -8, -8, 7, 0, 7]
    assert wrap32(2**31) == -(2**31) and wrap32(-(2**31) - 1) == 2**31 - 1 and wrap32(0xFFFFFFFF) == -1
    assert [sat(v, 8) for v in (-129, -128, 127, 128, 5)] == [-128, -128, 127, 127, 5]
    assert [shift_amount(v) for v in (-1, 0, 63, 64, 1000)] == [0, 0, 63, 63, 63]


def test_div_round_away():
    assert [div_round_away(n, 2) for n in (3, -3, 1, -1, 2, 0)] == [2, -2, 1, -1, 1, 0]
    assert [div_round_away(n, 3) for n in (4, 5, -4, -5)] == [1, 2, -1, -2]


def test_activation_d9():
    # Q3.4 input, Q0.7 output (8-bit defaults)
    assert activation("vtanh", 16, 4, 7, 8) == 97         # tanh(1) * 128 = 97.49
    assert activation("vtanh", 127, 4, 7, 8) == 127       # 128 saturates
    assert activation("vtanh", -128, 4, 7, 8) == -128
    assert activation("vsigm", 0, 4, 7, 8) == 64
    assert activation("vsigm", 0, 4, 0, 8) == 1           # 0.5 ties away from zero
    assert activation("vsigm", -(2**30), 0, 7, 31) == 0   # exp overflow → 0.0
    assert activation("vtanh", -8, 4, 1, 8) == -1         # tanh(-0.5)*2 = -0.92 → -1
    x = np.array([16, 16, -128, 127, 0])
    assert activation_np("vtanh", x, 4, 7, 8).tolist() == [97, 97, -128, 127, 0]


@given(st.integers(1, 31), st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=20))
def test_elem_storage_roundtrip(biw, values):
    byw = (biw + 7) // 8
    vals = [wrap(v, biw) for v in values]
    buf = bytearray(len(vals) * byw + 3)
    for i, v in enumerate(vals):
        elem_put(buf, 1 + i * byw, v, byw)
    assert [elem_get(buf, 1 + i * byw, biw, byw) for i in range(len(vals))] == vals
    arr = np.frombuffer(buf, dtype=np.uint8)
    assert load_elems(arr, 1, len(vals), biw, byw).tolist() == vals
    out = np.zeros_like(arr)
    store_elems(out, 1, wrap_np(np.array(values, dtype=np.int64), biw), byw)
    assert bytes(out) == bytes(buf)  # sign-extended storage identical (D12)
    if len(vals) > 1:  # strided and negative stride
        assert load_elems(arr, 1 + (len(vals) - 1) * byw, len(vals), biw, byw, -1).tolist() == vals[::-1]


def test_elem_upper_bits_ignored():
    buf = bytearray(b"\x17\xf0\x7f")
    assert elem_get(buf, 0, 4, 1) == 7 and elem_get(buf, 1, 4, 1) == 0
    assert elem_get(buf, 1, 12, 2) == -16  # 0x7ff0 → low 12 bits 0xff0
    assert load_elems(np.frombuffer(buf, np.uint8), 1, 1, 12, 2).tolist() == [-16]


def test_global_memory_sparse_pages():
    gm = GlobalMemory()
    data, init = gm.read(123, 4)
    assert data == bytes(4) and not init and gm.pages == 0
    gm.write(PAGE_SIZE - 2, b"\x01\x02\x03\x04")  # crosses a page boundary
    assert gm.read(PAGE_SIZE - 2, 4) == (b"\x01\x02\x03\x04", True)
    assert gm.read(PAGE_SIZE - 3, 4) == (b"\x00\x01\x02\x03", False)
    assert gm.pages == 2
    assert gm.merged_segments() == [(PAGE_SIZE - 2, b"\x01\x02\x03\x04")]
    gm.write_tensor(0x100, [-1, 300, -129], 9)  # 9-bit elements in 2 bytes
    assert gm.read_tensor(0x100, 3, 9).tolist() == [-1, -212, -129]
    assert gm.read_bytes(0x100, 2) == b"\xff\xff"


def test_global_memory_bounds():
    gm = GlobalMemory(limit=1000, segments={990: np.arange(10, dtype=np.uint8)})
    assert gm.read_bytes(990, 10) == bytes(range(10))
    with pytest.raises(GmemRangeError, match=r"\[0x3e6, 0x3ea\) outside \[0, 0x3e8\)"):
        gm.write(998, b"abcd")
    with pytest.raises(GmemRangeError):
        gm.read(-1, 1)
    with pytest.raises(TypeError):
        GlobalMemory(segments={0: np.zeros(3, dtype=np.int32)})


def test_tanh_formula_matches_spec_defaults():
    # every 8-bit input against the literal D9 formula
    for x in range(-128, 128):
        v = math.tanh(x / 16) * 128
        expect = max(-128, min(127, int(math.copysign(math.floor(abs(v) + 0.5), v))))
        assert activation("vtanh", x, 4, 7, 8) == expect
