"""core/native.py: lazy kernels, the exact argument check, and a real ahead-of-time build.

The build test compiles two small kernels with numba's pycc into a temporary folder (a C
compiler is needed: without one it checks that the build says so and the JIT still answers).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnisa.core import native
from nnisa.core.native import kernel


@kernel(cache=False, nogil=True, inline="always")
def _twice(x):
    return 2 * x


@kernel(cache=False, nogil=True)
def _scaled_sum(a, out, k):
    s = 0
    for i in range(a.shape[0]):
        out[i] = _twice(a[i]) * k
        s += out[i]
    return s, a.shape[0]


@kernel(cache=False, nogil=True)
def _add_one(b):
    for i in range(b.shape[0]):
        b[i] += 1


_OK, _NEG, _BIG = 0, 1, 2


@kernel(cache=False, nogil=True)
def _first_flag(b):
    """One variable assigned several global constants: typed only in SSA form (pycc once compiled
    it without SSA when a kernel that inlines another was exported before it)."""
    st = _OK
    for i in range(b.shape[0]):
        if b[i] < 0:
            st = _NEG
            break
        if b[i] > 100:
            st = _BIG
            break
    return st


def test_kernel_is_lazy_and_calls_kernels():
    """A kernel calling a kernel (inlined) compiles under the JIT; nothing compiled before the call."""
    a = np.arange(5, dtype=np.int64)
    out = np.zeros(5, np.int64)
    assert _scaled_sum(a, out, 3) == (60, 5)
    assert out.tolist() == [0, 6, 12, 18, 24]
    assert repr(_scaled_sum).startswith("<nnisa kernel ")
    assert _scaled_sum.__doc__ is None and _scaled_sum.__name__ == "_scaled_sum"


def test_import_does_not_load_numba():
    code = "import sys; from nnisa.core import native; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64, np.float32, np.float64, np.bool_]


@st.composite
def _values(draw):
    """Arrays (any dtype, 1-3 dims, C/F/strided, read-only or not) and scalars."""
    if draw(st.booleans()):
        kind = draw(st.sampled_from(["int", "float", "bool", "np"]))
        if kind == "np":
            return draw(st.sampled_from(_DTYPES))(1)
        return {"int": 3, "float": 2.5, "bool": True}[kind]
    dt = draw(st.sampled_from(_DTYPES))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    a = np.zeros(shape, dt)
    how = draw(st.sampled_from(["C", "F", "strided"]))
    if how == "F":
        a = np.asfortranarray(a)
    elif how == "strided":
        a = np.zeros(tuple(2 * s for s in shape), dt)[tuple(slice(None, None, 2) for _ in shape)]
    if draw(st.booleans()):
        a.flags.writeable = False
    return a


@settings(max_examples=200, deadline=None)
@given(_values(), _values())
def test_argument_check_follows_numba_typeof(x, y):
    """A value always passes the check of its own numba type; another value passes only when
    numba types it the same, or as the same array seen through a wider signature (an 'A' layout,
    a read-only parameter given a writable array): never another dtype, rank or scalar kind."""
    from numba import typeof, types

    tx, ty = typeof(x), typeof(y)
    sx = native._spec_of(tx)
    assert sx is not None and native._matches([sx], (x,))
    ok = native._matches([sx], (y,))
    if tx == ty:
        assert ok
    if ok and tx != ty:
        assert isinstance(tx, types.Array) and isinstance(ty, types.Array)
        assert (tx.dtype, tx.ndim) == (ty.dtype, ty.ndim)
        assert tx.layout in ("A", ty.layout) or (tx.layout == "C" and y.flags.c_contiguous) \
            or (tx.layout == "F" and y.flags.f_contiguous)  # e.g. a (1, 1) array is both
        assert ty.mutable or not tx.mutable


def test_build_load_dispatch_and_staleness(tmp_path, monkeypatch):
    """pycc builds the kernels' JIT signatures; the fresh module answers them bit for bit, a
    read-only array or another dtype goes to the JIT, NNISA_NATIVE=0 and a stale key disable it."""
    a = np.arange(7, dtype=np.int64)
    out = np.zeros(7, np.int64)
    _scaled_sum(a, out, 3)  # JIT signatures to export
    _add_one(np.zeros(3, np.int64))
    _first_flag(np.zeros(3, np.int64))
    monkeypatch.setattr(native, "_SEARCH", [tmp_path])
    native._forget()
    lines = []
    # _scaled_sum (which inlines _twice) first: every export must still be compiled in SSA form
    built = native.build(echo=lines.append, kernels=[_scaled_sum, _add_one, _first_flag], folders=[tmp_path])
    try:
        if built is None:
            assert lines and "not built" in lines[0]
            assert "Error: Failed in nopython" not in lines[0], lines[0]  # numba's, not a missing compiler
            pytest.skip(f"no native build here: {lines[0]}")
        assert "3 signature(s) of 3 kernel(s)" in lines[0]
        assert "3 signature(s)" in native.native_status()
        for b, want in (([1, 2], 0), ([1, -2, 200], 1), ([300, -1], 2)):
            arr = np.array(b, np.int64)
            assert _first_flag.native_for((arr,)) is not None and _first_flag(arr) == want
        assert _scaled_sum.native_for((a, out, 3)) is not None
        got = np.zeros(7, np.int64)
        assert _scaled_sum(a, got, 3) == _scaled_sum.dispatcher(a, out, 3)
        assert np.array_equal(got, out)
        b = np.zeros(3, np.int64)
        _add_one(b)
        assert b.tolist() == [1, 1, 1]
        ro = np.zeros(3, np.int64)
        ro.flags.writeable = False
        assert _add_one.native_for((ro,)) is None  # the kernel writes: never a read-only array
        assert _scaled_sum.native_for((a.astype(np.int32), out, 3)) is None
        assert _scaled_sum.native_for((a, out, 3.0)) is None
        monkeypatch.setenv("NNISA_NATIVE", "0")
        native._forget()
        assert _scaled_sum.native_for((a, out, 3)) is None
        monkeypatch.delenv("NNISA_NATIVE")
        native._forget()
        assert _scaled_sum.native_for((a, out, 3)) is not None
        monkeypatch.setattr(native, "source_key", lambda dirs: "edited")  # the kernels' sources changed
        native._forget()
        assert _scaled_sum.native_for((a, out, 3)) is None
    finally:
        monkeypatch.setattr(native, "_SEARCH", [])
        native._forget()


def test_pim_native_module_is_fresh_in_ci():
    """After ``make install`` (CI) the PIM kernels run native: ``nnisa sim`` starts without numba."""
    status = native.native_status()
    if "none fresh" in status:
        if os.environ.get("CI"):
            pytest.fail(f"CI: the native module was not built or is stale ({status}); make install builds it")
        pytest.skip(f"{status}: run `python -m nnisa.warmup` to build it")
    names = set(native._native())
    for k in ("nnisa.targets.pim.formats.jsonscan.scan", "nnisa.targets.pim.sim.timing_engine_fast._events",
              "nnisa.targets.pim.sim.timing_plan_fast._plan_local"):
        assert k in names
