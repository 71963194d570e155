"""Tensil numerics (§6) and instruction semantics (§7): unit vectors, SIMD ops, fast == reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core.errors import SimError
from nnisa.targets.tensil.config import PRESETS
from nnisa.targets.tensil.formats.text import assemble
from nnisa.targets.tensil.numerics import Numeric, mac_int
from nnisa.targets.tensil.sim.emulator import Emulator

MAC16 = [(1, 128, 0, 0), (3, 128, 0, 2), (5, 128, 0, 2), (-1, 128, 0, 0), (-3, 128, 0, -2), (1, 127, 0, 0),
         (1, 129, 0, 1), (384, 384, 0, 576), (100, 200, -300, -222), (32767, 512, 0, 32767),
         (-32768, 512, 0, -32768), (-32768, -32768, 0, 32767), (256, 32767, 1, 32767), (256, -32768, -1, -32768)]


@pytest.mark.parametrize("x,y,z,want", MAC16)
def test_mac_fp16bp8(x, y, z, want):
    assert mac_int(x, y, z, 16, 8) == want
    assert int(Numeric("FP16BP8").mac(x, y, z)) == want


def test_mac_other_types():
    assert mac_int(3, 8, 0, 8, 4) == 2 and int(Numeric("FP8BP4").mac(3, 8, 0)) == 2
    assert mac_int(3, 512, 0, 18, 10) == 2 and int(Numeric("FP18BP10").mac(3, 512, 0)) == 2
    assert int(Numeric("FP18BP10").mac(131071, 2048, 0)) == 131071
    assert int(Numeric("FP16BP8").minus(0, -32768)) == 32767


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["FP8BP4", "FP16BP8", "FP18BP10", "FP32BP16"]), st.data())
def test_mac_array_matches_int_reference(dt, data):
    num = Numeric(dt)
    x, y, z = (data.draw(st.integers(num.lo, num.hi)) for _ in range(3))
    assert int(num.mac(x, y, z)) == mac_int(x, y, z, num.bits, num.bp)


def test_file_formats_of_every_type():
    for dt in ("FP8BP4", "FP16BP8", "FP18BP10", "FP32BP16"):
        num = Numeric(dt)
        raw = np.array([num.lo, -1, 0, 1, num.hi])
        assert num.from_bytes(num.to_bytes(raw)).tolist() == raw.tolist()
    assert Numeric("FP18BP10").to_bytes(np.array([-1])) == b"\xff\xff\x03\x00"  # upper 14 bits zero
    f = Numeric("FLOAT32")
    assert f.to_bytes(np.array([1.0], np.float32)) == b"\x3f\x80\x00\x00"  # big-endian


def test_float_to_fixed_rules():
    num = Numeric("FP16BP8")
    assert num.from_float([0.5 / 256, -0.5 / 256, 1.5 / 256]).tolist() == [1, 0, 2]  # half up
    assert num.from_float([200.0, -200.0]).tolist() == [32767, -32768]
    assert num.stats["convert"].count == 2
    assert num.from_float([0.5 / 256, 1.5 / 256], rule="pynq").tolist() == [0, 2]  # half even
    assert num.from_float([200.0], rule="pynq").tolist() == [200 * 256 - 65536]  # wraps


def _machine(text, arch="tiny4x4", path="fast", setup=None):
    a = PRESETS[arch][0]
    emu = Emulator(a, path)
    m = emu.machine
    if setup:
        setup(m)
    emu.run(assemble(text, a))
    return m


def test_simd_ops_rtl_semantics():
    one = 256

    def setup(m):
        m.acc[0] = [-32768, -256, 0, 300]
        m.regs[0] = [0, 256, 512, -1]

    prog = "\n".join(f"simd.rw R1 = {op}(I, R1), w=acc[{i + 1}], r=acc[0]" for i, op in enumerate(
        ["Not", "And", "Or", "Increment", "Decrement", "Abs", "GreaterThan", "GreaterThanEqual", "Min", "NoOp"]))
    for path in ("fast", "reference"):
        # each op reads R1 as written by the previous one: check the chain against a scalar model
        m = _machine(prog, path=path, setup=setup)
        ref = _machine(prog, path="reference", setup=setup)
        assert np.array_equal(m.acc, ref.acc) and np.array_equal(m.regs, ref.regs)
    m = _machine("simd.rw O = Abs(I, I), w=acc[1], r=acc[0]\nsimd.rw O = Not(I, I), w=acc[2], r=acc[0]\n"
                 "simd.rw O = Increment(I, I), w=acc[3], r=acc[0]", setup=setup)
    assert m.acc[1].tolist() == [-32768, 256, 0, 300]  # Abs keeps the most negative code
    assert m.acc[2].tolist() == [0, 0, one, 0]
    assert m.acc[3].tolist() == [-32512, 0, 256, 556]


def test_simd_dest_register_also_writes_accumulator():
    def setup(m):
        m.acc[0] = [1, 2, 3, 4]
        m.acc[1] = [10, 10, 10, 10]
    m = _machine("simd.rwa R1 = Move(I, I), w=acc[1], r=acc[0]", setup=setup)
    assert m.regs[0].tolist() == [1, 2, 3, 4]  # register overwritten, never accumulated
    assert m.acc[1].tolist() == [11, 12, 13, 14]  # accumulator accumulates (RTL)


def test_loadweights_reverse_order_and_bias_first():
    def setup(m):
        for i in range(7):
            m.local[i] = [256 * (i + 1)] * 4
    m = _machine("loadweights local[0], 5", setup=setup)
    assert m.weights[:, 0].tolist() == [256, 512, 768, 1024, 1280]
    m = _machine("loadweights local[0], 5\nloadweights local[5], 2", setup=setup)
    assert m.weights[:, 0].tolist() == [1536, 1792, 256, 512, 768]  # v[r] then old rows
    m = _machine("loadweights.zeroes local[0], 1", setup=setup)
    assert not m.weights.any()


def test_out_of_range_runs_and_raw_words_are_errors():
    with pytest.raises(SimError, match="instruction 0: local address 256"):
        _machine("datamove local[250] <- dram0[0], 7")
    with pytest.raises(SimError, match="reserved opcode"):
        _machine(".word 0x70000000")


ARCHS = ["tiny4x4", "stride2x2", "tiny2x2"]


def _random_program(data, arch):
    a = PRESETS[arch][0]
    n = a.array_size
    lines = []
    d = min(a.local_depth, 64)
    for _ in range(data.draw(st.integers(1, 25))):
        kind = data.draw(st.sampled_from(["mm", "lw", "dm", "simd"]))
        cnt = data.draw(st.integers(1, 4))
        s0 = data.draw(st.integers(0, a.stride0_depth - 1))
        s1 = data.draw(st.integers(0, a.stride1_depth - 1))
        la = data.draw(st.integers(0, d - 8))
        oa = data.draw(st.integers(0, d - 8))
        if kind == "mm":
            flags = data.draw(st.sampled_from(["", ".acc", ".zeroes", ".acc.zeroes"]))
            lines.append(f"matmul{flags} local[{la}]@2^{s0}, acc[{oa}]@2^{s1}, {cnt}")
        elif kind == "lw":
            flags = data.draw(st.sampled_from(["", ".zeroes"]))
            lines.append(f"loadweights{flags} local[{la}]@2^{s0}, {data.draw(st.integers(1, n + 2))}")
        elif kind == "dm":
            form = data.draw(st.sampled_from(["<- dram0", "-> dram0", "<- dram1", "-> dram1", "<- acc", "-> acc",
                                              "+> acc"]))
            arrow, mem = form.split()
            lines.append(f"datamove local[{la}]@2^{s0} {arrow} {mem}[{oa}]@2^{s1}, {cnt}")
        else:
            op = data.draw(st.sampled_from(["NoOp", "Zero", "Move", "Not", "And", "Or", "Increment", "Decrement",
                                            "Add", "Subtract", "Multiply", "Abs", "GreaterThan", "GreaterThanEqual",
                                            "Min", "Max"]))
            flags = data.draw(st.sampled_from(["", ".r", ".w", ".rw", ".wa", ".rwa", ".a", ".ra"]))
            src = [data.draw(st.sampled_from(["I", "R1"])) for _ in range(2)]
            dst = data.draw(st.sampled_from(["O", "R1"]))
            lines.append(f"simd{flags} {dst} = {op}({src[0]}, {src[1]}), w=acc[{oa}], r=acc[{la}]")
    return "\n".join(lines)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ARCHS), st.data())
def test_fast_path_equals_reference_on_random_programs(arch, data):
    text = _random_program(data, arch)
    seed = data.draw(st.integers(0, 2**31 - 1))
    big = data.draw(st.booleans())  # large values exercise saturation

    def setup(m):
        rng = np.random.default_rng(seed)
        hi = 32767 if big else 600
        for mem in ("local", "acc"):
            getattr(m, mem)[:] = rng.integers(-hi, hi + 1, size=getattr(m, mem).shape)
        m.ensure("dram0", 64)
        m.ensure("dram1", 64)
        m.dram0[:64] = rng.integers(-hi, hi + 1, size=(64, m.n))
        m.dram1[:64] = rng.integers(-hi, hi + 1, size=(64, m.n))
        m.weights[:] = rng.integers(-hi, hi + 1, size=m.weights.shape)

    a = PRESETS[arch][0]
    fast, ref = Emulator(a, "fast"), Emulator(a, "reference")
    setup(fast.machine)
    setup(ref.machine)
    prog = assemble(text, a)
    fast.run(prog)
    ref.run(prog)
    for mem in ("local", "acc", "dram0", "dram1", "weights", "regs"):
        assert np.array_equal(getattr(fast.machine, mem), getattr(ref.machine, mem)), mem
    assert {k: v["overflows"] + v["underflows"] for k, v in fast.saturation().items()} == \
        {k: v["overflows"] + v["underflows"] for k, v in ref.saturation().items()}


def test_fast_matmul_per_lane_bound_path():
    """Row bound fails (max |w| per row) but every lane stays in range: the Σ|terms| path."""
    def setup(m):
        m.local[:5] = 0
        for k in range(4):
            m.local[1 + k, k] = 256  # identity weights, bias 0
        m.local[5] = [9000, 9000, 9000, 9000]
        m.local[6] = [30000, -30000, 20000, 100]  # saturates nothing per lane either
    text = "loadweights local[0], 5\nmatmul local[5], acc[0], 2"
    fast, ref = _machine(text, path="fast", setup=setup), _machine(text, path="reference", setup=setup)
    assert np.array_equal(fast.acc, ref.acc)
    assert fast.acc[0].tolist() == [9000] * 4 and fast.acc[1].tolist() == [30000, -30000, 20000, 100]


def test_float32_matmul_two_roundings():
    a = PRESETS["tiny4x4"][0].with_(data_type="FLOAT32")
    emu = Emulator(a, "fast")  # FLOAT32 runs on the reference interpreter
    m = emu.machine
    m.local[:6] = (np.arange(24).reshape(6, 4) * 0.1).astype(np.float32)
    emu.run(assemble("loadweights local[0], 5\nmatmul local[5], acc[0], 1", a))
    y = m.local[0].copy()
    for k in range(4):
        y = (np.float32(m.local[5, k]) * m.local[1 + k]).astype(np.float32) + y
    assert np.array_equal(m.acc[0], y)
