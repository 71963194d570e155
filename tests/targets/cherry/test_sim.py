"""Cherry functional simulator and cycle model (spec §3, §4, §8.2, §8.5-8.7)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .cherry_progs import TINY_TEXT, relu_dram, relu_program
from nnisa.core.errors import SimError
from nnisa.targets.cherry.config import CherryConfig
from nnisa.targets.cherry.formats.text import assemble
from nnisa.targets.cherry.isa import OP
from nnisa.targets.cherry.sim.element import (decode18, encode18, pack_tile, quantize, tile_bytes,
                                              unpack_tile)
from nnisa.targets.cherry.sim.machine import Machine
from nnisa.targets.cherry.sim.run import make_timing, simulate_program
from nnisa.targets.cherry.sim.timing import QueueModel


def cycles(prog, **cfg):
    c = CherryConfig(dram_tiles=1024, **cfg)
    m = Machine(c)
    tm = make_timing(c)
    m.run(prog, timing=tm, functional=False)
    return tm.cycles


# ------------------------------------------------------------------ §4.6 reference values
def test_reference_cycle_values():
    assert cycles(relu_program(128)) == 328
    assert cycles(relu_program(128), superscalar_width=12) == 364
    assert cycles(relu_program(256, independent=False)) == 9985
    assert cycles(assemble(TINY_TEXT)) == 49
    assert cycles(relu_program(37)) == 122


def test_tiny_prog_trace():
    c = CherryConfig()
    m = Machine(c)
    m.write_dram(3, np.full((1, 4, 4), 7.0, np.float32))
    tm = QueueModel(record=True)
    m.run(assemble(TINY_TEXT), timing=tm)
    assert [e[2] for e in tm.events] == [1, 1, 1]  # copy count 1 each
    assert all(np.all(m.cache[a] == 7.0) for a in (0, 2, 4))  # cache 0, 2, 4 <- DRAM 3


def test_stall_rule_and_reserve_copies():
    body = "\n".join("    relu" for _ in range(62))
    text = f".loop 0 iterations=32\nstart_independent_loop 0\n{body}\nend_loop 0\n"
    prog = assemble(text)
    c = CherryConfig()
    tm = make_timing(c)
    Machine(c).run(prog, timing=tm, functional=False)
    assert tm.stall_cycles > 0  # 124 AR pushes run far ahead of the control unit: the queue fills
    tm_small = make_timing(c.with_(iq_entries=1024))
    Machine(c).run(prog, timing=tm_small, functional=False)
    assert tm_small.stall_cycles == 0 and tm_small.cycles == tm.cycles  # positions, not stalls, dominate
    # copies reservation packs the groups of 16 copies without the SW gap only when n < SW
    short = assemble(text.replace("iterations=32", "iterations=2"))
    assert cycles(short, iq_reserve="copies") < cycles(short)


def test_host_link_slows_mem_read():
    base = cycles(relu_program(128))
    assert cycles(relu_program(128), host_link=True, link_latency=100, link_bytes_per_cycle=1) > base


# ------------------------------------------------------------------ §8.2 functional vector
@pytest.mark.parametrize("encoding", ["canonical", "cherrycore"])
@pytest.mark.parametrize("fmt", ["cherry18", "fp32"])
def test_fast_relu_vector(encoding, fmt):
    d = relu_dram()
    prog = relu_program(encoding=encoding)
    outs, st, _, _ = simulate_program([prog], CherryConfig(element_format=fmt, dram_tiles=128), {"dram": d})
    assert np.array_equal(outs["dram"], np.maximum(d, 0))
    assert st.cycles == 328 and st.extra["issued_copies"] == 5 * 128


# ------------------------------------------------------------------ loops and formulas
def test_nested_loops_group_sizes_and_formulas():
    text = """.loop 0 iterations=3
.loop 1 iterations=37
.loop 2 iterations=2
.apu 0 = 100*i + j + 5
.apu 1 = 40*i + j
.apu 2 = 7*k + 1000
start_loop 0
    start_independent_loop 1
        mem_read 1, 0
    end_loop 1
end_loop 0
start_loop 2
    mem_write 2, 2
end_loop 2
"""
    c = CherryConfig(dram_tiles=2048)
    m = Machine(c)
    m.write_dram(0, np.broadcast_to(np.arange(400, dtype=np.float32)[:, None, None], (400, 4, 4)))
    tm = QueueModel(record=True)
    m.run(assemble(text), timing=tm)
    assert [e[2] for e in tm.events[:3]] == [16, 16, 5]  # 37 iterations with SW = 16
    for i in range(3):
        for j in range(37):
            assert m.cache[40 * i + j, 0, 0, 0] == 100 * i + j + 5
    # sibling loop k: formula 2 uses k only (inactive i, j contribute 0)
    assert m.read_dram(1000, 1)[0, 0, 0, 0] == m.cache[1000, 0, 0, 0]
    assert m.read_dram(1007, 1)[0, 0, 0, 0] == m.cache[1007, 0, 0, 0]


def test_runtime_errors_name_pc_loops_and_bank():
    c = CherryConfig(cache_tiles=64)
    prog = assemble(".loop 0 iterations=20\n.apu 0 = 4*i\nstart_independent_loop 0\nload 0, INPUT\nend_loop 0\n")
    with pytest.raises(SimError, match=r"pc 1 \(load 0, INPUT\), loops \[i=0/20\], bank 16: APU 0 address 64 outside the cache"):
        Machine(c.with_(threads=32, superscalar_width=32)).run(prog)
    with pytest.raises(SimError, match="beyond the icache"):
        p = relu_program()
        p.org = 2045
        Machine(CherryConfig()).run(p)
    bad = relu_program()
    bad.header.jumps[0] = 5  # lands one instruction late
    with pytest.raises(SimError, match="jump 5 lands"):
        Machine(CherryConfig(dram_tiles=256)).run(bad)
    zero = relu_program()
    zero.header.iterations[0] = 0
    with pytest.raises(SimError, match="0 iterations"):
        Machine(CherryConfig(dram_tiles=256)).run(zero)
    with pytest.raises(SimError, match="SZ=16"):
        Machine(CherryConfig()).run(relu_program(sz=16))


def test_race_check_detects_interference():
    # every copy stores into cache tile 0 and reads it back: order-dependent
    text = """.loop 0 iterations=4
.apu 0 = i
.apu 1 = 0
start_independent_loop 0
    load 0, INPUT
    relu
    store 1, OUTPUT
    load 1, WEIGHTS
    add
    store 0, OUTPUT
end_loop 0
"""
    c = CherryConfig(race_check=True)
    m = Machine(c)
    m.cache[:4] = np.arange(1, 5, dtype=np.float32)[:, None, None, None]
    with pytest.raises(SimError, match="interfere"):
        m.run(assemble(text))
    Machine(CherryConfig(race_check=True, dram_tiles=256)).run(relu_program())  # the fast ReLU is race-free


# ------------------------------------------------------------------ fast path vs reference
_ARITH = ["matmul", "mulacc", "add", "sub", "mul", "div", "pow", "relu", "exp", "log", "gtz"]


@st.composite
def random_body(draw):
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        k = draw(st.sampled_from(_ARITH + ["red", "copy", "zero", "load", "store"]))
        if k == "red":
            lines.append(f"{draw(st.sampled_from(['sum', 'max']))} {draw(st.integers(0, 1))}, "
                         f"{draw(st.integers(0, 2))}, {draw(st.sampled_from([1, 2, 3, 4]))}")
        elif k == "copy":
            regs = st.sampled_from(["INPUT", "WEIGHTS", "OUTPUT", "ACC"])
            lines.append(f"copy {draw(regs)}, {draw(regs)}{', T' if draw(st.booleans()) else ''}")
        elif k == "zero":
            lines.append(f"zero {draw(st.sampled_from(['INPUT', 'ACC']))}")
        elif k == "load":
            lines.append(f"load {draw(st.integers(0, 1))}, {draw(st.sampled_from(['INPUT', 'WEIGHTS', 'ACC']))}, "
                         f"{draw(st.integers(1, 4))}, {draw(st.integers(1, 4))}, {draw(st.integers(0, 1))}, "
                         f"{draw(st.integers(0, 1))}")
        elif k == "store":
            lines.append(f"store 2, {draw(st.sampled_from(['OUTPUT', 'ACC']))}, {draw(st.integers(1, 4))}, 4")
        else:
            lines.append(k)
    return lines


@settings(max_examples=40, deadline=None)
@given(random_body(), st.integers(1, 40), st.sampled_from(["cherry18", "fp32"]), st.integers(0, 2**31),
       st.integers(1, 3))
def test_fast_path_equals_reference(body, n, fmt, seed, batch):
    """Random loop bodies on a machine of 1-3 samples: the fast path (all copies and samples per
    numpy operation) and the reference (copy by copy, sample by sample) agree bit for bit."""
    text = (f".loop 0 iterations={n}\n.apu 0 = i\n.apu 1 = 2*i + 50\n.apu 2 = i + 200\n"
            "start_independent_loop 0\n" + "\n".join(body) + "\nend_loop 0\nrelu\n")
    prog = assemble(text)
    c = CherryConfig(element_format=fmt)
    rng = np.random.default_rng(seed)
    init = (rng.standard_normal((300, batch, 4, 4)) * 2).astype(np.float32)
    states = []
    for engine in ("fast", "reference"):
        m = Machine(c, batch)
        m.cache[:300] = quantize(init, fmt)
        with np.errstate(all="ignore"):
            m.run(prog, engine=engine)
        states.append((m.regs, m.cache[:300]))
    for a, b in zip(states[0], states[1]):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


# ------------------------------------------------------------------ §8.7 element format
def test_element_format():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1 + 2**-9, 1 + 2**-10, -1.999], np.float32)
    q = quantize(x, "cherry18")
    assert q[0] == 0 and np.signbit(q[1]) and q[2] == np.inf and q[3] == -np.inf and np.isnan(q[4])
    assert encode18(x[4:5])[0] == 0x1FF00
    assert q[5] == decode18(encode18(x[5:6]))[0] and 0 < q[5] <= x[5]
    assert q[6] == np.float32(1 + 2**-9) and q[7] == 1.0
    assert q[8] == -1.998046875  # toward zero in magnitude
    assert np.array_equal(quantize(x, "fp32"), x, equal_nan=True)


def test_tile_wire_format():
    tile = np.zeros((4, 4), np.float32)
    tile[0, 0] = 1.0  # code 0x0FE00
    tile[3, 3] = -2.0  # code 0x30000
    data = pack_tile(tile, "cherry18")
    assert len(data) == tile_bytes(4, "cherry18") == 36
    acc = int.from_bytes(data, "big")
    assert acc >> (18 * 15) == 0x0FE00 and acc & 0x3FFFF == 0x30000
    assert np.array_equal(unpack_tile(data, 4, "cherry18"), tile)
    assert np.array_equal(unpack_tile(pack_tile(tile, "fp32"), 4, "fp32"), tile)


def test_copy_transpose_and_reduce_semantics():
    text = """.apu 0 = 0
load 0, OUTPUT
zero ACC
sum 0, 1, 3
copy INPUT, OUTPUT, T
max 1, 0, 4
"""
    m = Machine(CherryConfig(element_format="fp32"))
    t = np.arange(16, dtype=np.float32).reshape(4, 4)
    m.cache[0] = t
    m.run(assemble(text))
    acc = m.regs[3, 0, 0]
    assert np.array_equal(acc[1:, 0], t[1:, :3].sum(1))  # column 0 (rows 1..3 untouched by max)
    assert np.array_equal(acc[0, :], np.maximum(t.max(0), [t[0, :3].sum(), 0, 0, 0]))
    assert np.array_equal(m.regs[0, 0, 0], t.T)
    assert OP["copy"] == 13
