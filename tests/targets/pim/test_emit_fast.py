"""Fast paths of the PIM code emitter and the compile-time cost model against their readable
references (issue 14: element-schedule compile time)."""

from __future__ import annotations

import gc
import struct

import numpy as np
import pytest
from .compiler_helpers import quantized, small_config
from hypothesis import given, settings
from hypothesis import strategies as st

from nnisa.core.errors import NnisaError
from nnisa.frontend.models import make_lenet
from nnisa.targets.pim.compiler import compile_program
from nnisa.targets.pim.compiler.costmodel import CostModel
from nnisa.targets.pim.compiler.emit import MAXLEN, CoreEmitter, pack_row, records_to_array
from nnisa.targets.pim.isa import OPCODE
from nnisa.targets.pim.program import DTYPE

_ADDR = st.integers(0, 1 << 16)
# a history of register-cache traffic (lreg / near / lmv), then a patch template
_HISTORY = st.lists(st.tuples(st.sampled_from(["lreg", "near", "lmv"]), _ADDR, _ADDR,
                              st.integers(1, 3 * MAXLEN)), max_size=60)
_SEGMENTS = st.lists(st.tuples(st.integers(0, 4096), st.integers(0, 4096), st.integers(0, 3 * MAXLEN)),
                     max_size=12)


def _emitter(history) -> CoreEmitter:
    e = CoreEmitter(0, 1 << 20)
    for op, a, b, n in history:
        if op == "lreg":
            e.lreg(a)
        elif op == "near":
            e.near(a)
        else:
            e.lmv(a, b, n)
    return e


def _state(e: CoreEmitter):
    return list(e.rows), list(e.cache.items()), dict(e.owner), list(e._sorted), list(e.reg)


@settings(max_examples=200, deadline=None)
@given(_HISTORY, _SEGMENTS, _ADDR, _ADDR)
def test_lmv_segments_matches_lmv_calls(history, segments, dst, src):
    ref, fast = _emitter(history), _emitter(history)
    for off, g, size in segments:
        ref.lmv(dst + off, src + g, size)
    fast.lmv_segments(dst, src, segments)
    assert _state(fast) == _state(ref)


_ROW_OPS = ["setbw", "mvmul", "ld", "st", "lmv", "lldi", "send", "recv", "vvadd", "vvsra", "vrsl", "vrsu",
            "vvmax", "vavg", "sldi"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_ROW_OPS), st.integers(0, MAXLEN), st.sampled_from([8, 16, 24, 31])),
                max_size=80), st.floats(0, 1e6))
def test_cost_model_run_matches_step_reference(ops, t0):
    rows = []
    for op, n, bits in ops:
        r = [0] * 16
        r[0], r[4] = OPCODE[op], n
        if op == "setbw":
            r[12], r[13] = bits, 8
        rows.append(tuple(r))
    cm = CostModel()
    times: list[float] = []
    end = cm.run(3, [pack_row(*r) for r in rows], t0, times)     # (the emitters' records)
    # reference: every row's time straight from _step, no memo
    ref = CostModel()
    ib, ob, t, want = 8, 8, t0, []
    for r in rows:
        if r[0] == OPCODE["setbw"]:
            ib, ob = r[12], r[13]
            t += 1
        else:
            t += ref._step(r[0], r[4], ib, ob)
        want.append(t)
    assert times == want
    assert end == t
    assert cm.widths[3] == (ib, ob)


@pytest.mark.parametrize("enabled", [True, False])
def test_compile_restores_gc_state(enabled):
    qg, _ = quantized(make_lenet())
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        compile_program(qg, small_config(16), schedule="element")
        assert gc.isenabled() is enabled
        with pytest.raises(NnisaError):
            compile_program(qg, small_config(16), schedule="nonsense")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@settings(max_examples=200, deadline=None)
@given(_HISTORY, st.lists(st.tuples(st.integers(0, 40), _ADDR, _ADDR), max_size=10), st.integers(0, 4096),
       st.sampled_from([1, 8]))
def test_mvmuls_matches_mvmul_calls(history, mvs, offset, mbiw):
    ref, fast = _emitter(history), _emitter(history)
    for g, part, src in mvs:
        ref.mvmul(part + offset, src, g, mbiw)
    fast.mvmuls(mvs, offset, mbiw)
    assert _state(fast) == _state(ref)


@pytest.mark.parametrize("n", [0, 1, MAXLEN, MAXLEN + 1, 3 * MAXLEN + 5])
def test_vv_chunks(n):
    e = CoreEmitter(0, 1 << 20)
    e.vv("vvadd", 100, 200, 300, n)
    arr = records_to_array(e.rows)
    vv = arr[arr["op"] == OPCODE["vvadd"]]
    assert vv["len"].tolist() == [min(MAXLEN, n - k) for k in range(0, n, MAXLEN)]
    assert list(zip(vv["ofs_sel"].tolist(), vv["ofs_val"].tolist())) == [(7 if k else 0, k) for k in range(0, n, MAXLEN)]


_I32 = st.integers(-(1 << 31), (1 << 31) - 1)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 31), _I32, _I32, _I32, _I32, st.integers(-(1 << 63), (1 << 63) - 1),
                          *([_I32] * 10)), max_size=50))
def test_records_match_numpy_reference(rows):
    got = records_to_array([pack_row(*r) for r in rows])
    want = np.array(rows, dtype=DTYPE) if rows else np.zeros(0, DTYPE)
    assert got.dtype == DTYPE and got.flags.writeable
    assert got.tobytes() == want.tobytes()


def test_out_of_range_field_is_an_encode_error(monkeypatch):
    row = (1, 0, 0, 0, 1 << 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)    # len beyond int32
    with pytest.raises(struct.error):
        pack_row(*row)
    # compile_program reports a field out of range as the CLI's one-line EncodeError
    from nnisa.core.errors import EncodeError
    from nnisa.targets.pim.compiler import driver

    def emit(low, em, *args, **kw):
        next(iter(em.values())).rows.append(pack_row(*row))
    monkeypatch.setattr(driver, "_emit_batch", emit)
    qg, _ = quantized(make_lenet())
    with pytest.raises(EncodeError, match="out of range"):
        compile_program(qg, small_config(16), schedule="batch")


_LEAN = {"pack_sldi": ("op", "rd", "imm"), "pack_lmv": ("op", "rd", "rs1", "len", "ofs_sel", "ofs_val"),
         "pack_vec": ("op", "rd", "rs1", "rs2", "len", "ofs_sel", "ofs_val"),
         "pack_mvmul": ("op", "rd", "rs1", "mbiw", "group"), "pack_setbw": ("op", "ibiw", "obiw"),
         "pack_msg": ("op", "rd", "rs1", "len", "core", "ofs_val")}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(_LEAN)), st.lists(_I32, min_size=7, max_size=7), st.integers(0, 31))
def test_lean_packers_equal_pack_row(name, values, op):
    from nnisa.targets.pim.compiler import emit
    fields = _LEAN[name]
    args = dict(zip(fields, [op, *values]))
    full = [args.get(n, 0) for n in DTYPE.names]
    assert getattr(emit, name)(*[args[n] for n in fields]) == pack_row(*full)
