"""Functional semantics (spec §2.7, golden test §3.10.5): every instruction against Python-int
references on random data, predication, wrap-around, mixed signedness, shuffles, gather/scatter,
shifts across CRAM boundaries, reductions, transfers and synchronisation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core.errors import DeadlockError, SimError
from nnisa.targets.pimsab import precision as P
from nnisa.targets.pimsab.formats.text import assemble_text
from nnisa.targets.pimsab.sim.machine import run_functional

from .sim_helpers import SMALL, machine, rand_patterns, run, value_of

W = SMALL.tile_bitlines
INTS = [P.make(k, w) for k in ("i", "u") for w in (1, 3, 8, 13, 32, 63, 64)]
REF = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mult": lambda a, b: a * b,
    "max": max, "min": min,
}


def _bitwise(op, a, b, bits):
    m = (1 << bits) - 1
    return {"and": (a & b), "or": (a | b), "xor": (a ^ b)}[op] & m


@settings(max_examples=120, deadline=None)
@given(op=st.sampled_from(["add", "sub", "mult", "max", "min", "and", "or", "xor"]),
       pd=st.sampled_from(INTS), pa=st.sampled_from(INTS), pb=st.sampled_from(INTS),
       pred=st.integers(0, 3), size=st.sampled_from([0, 5, 17, W]), seed=st.integers(0, 2 ** 31))
def test_binary_integer_ops(op, pd, pa, pb, pred, size, seed):
    rng = np.random.default_rng(seed)
    m = machine()
    ts = m.tile(0)
    bd, ba, bb = (P.bits(x) for x in (pd, pa, pb))
    ra, rb, rd = 0, 64 - bb if bb <= 32 else 0, 0
    # disjoint rows: A at 0, B at 64 (or shared for wide operands), D at 0 = in-place with A
    rb = 64
    if bb > 32:
        ra, rb, rd = 0, 0, 0
    a = rand_patterns(rng, W, ba)
    b = a.copy() if rb == ra else rand_patterns(rng, W, bb)
    if rb == ra:
        pb = pa
        bb = ba
    old_d = rand_patterns(rng, W, bd)
    ts.write(ra, ba, a)
    if rb != ra:
        ts.write(rb, bb, b)
    if rd != ra:
        ts.write(rd, bd, old_d)
    else:
        old_d = ts.read(rd, bd)
    ts.mask[:] = rng.integers(0, 2, W).astype(bool)
    ts.carry[:] = rng.integers(0, 2, W).astype(bool)
    mask, carry = ts.mask.copy(), ts.carry.copy()
    run(m, 0, op, rd=rd, pd=pd, ra=ra, pa=pa, rb=rb, pb=pb, pred=pred, size=size)
    got = ts.read(rd, bd)
    n = size or W
    for g in range(W):
        active = g < n and (pred == 0 or (pred == 1 and mask[g]) or (pred == 2 and carry[g])
                            or (pred == 3 and not carry[g]))
        if not active:
            assert got[g] == old_d[g], (g, "inactive bitline changed")
            continue
        A, B = value_of(int(a[g]), pa), value_of(int(b[g]), pb)
        if op in ("and", "or", "xor"):
            want = _bitwise(op, A & ((1 << 64) - 1), B & ((1 << 64) - 1), bd)
        else:
            want = REF[op](A, B) & ((1 << bd) - 1)
        assert int(got[g]) == want, (op, g, A, B)
        if op == "add":
            M = (1 << bd) - 1
            assert ts.carry[g] == (((A & M) + (B & M)) >> bd == 1)
        elif op == "sub":
            M = (1 << bd) - 1
            assert ts.carry[g] == ((A & M) >= (B & M))
        else:
            assert not ts.carry[g]


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", ["add", "sub", "mult", "max", "min"])
def test_float_ops_round_to_nearest_even(fmt, op):
    rng = np.random.default_rng(1)
    m = machine()
    ts = m.tile(0)
    p = P.make(fmt)
    a = rng.standard_normal(W).astype(np.float32) * 100
    b = rng.standard_normal(W).astype(np.float32)
    if fmt == "f32":
        pat = lambda x: x.view(np.uint32).astype(np.uint64)
        back = lambda v: v.astype(np.uint32).view(np.float32)
        ref = {"add": a + b, "sub": a - b, "mult": a * b, "max": np.maximum(a, b), "min": np.minimum(a, b)}[op]
        want = ref
    elif fmt == "f16":
        a, b = a.astype(np.float16), b.astype(np.float16)
        pat = lambda x: x.view(np.uint16).astype(np.uint64)
        back = lambda v: v.astype(np.uint16).view(np.float16)
        want = {"add": a + b, "sub": a - b, "mult": a * b, "max": np.maximum(a, b), "min": np.minimum(a, b)}[op]
    else:
        a = (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        b = (b.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        pat = lambda x: (x.view(np.uint32) >> np.uint32(16)).astype(np.uint64)
        back = lambda v: (v.astype(np.uint32) << np.uint32(16)).view(np.float32)
        exact = {"add": a.astype(np.float64) + b, "sub": a.astype(np.float64) - b,
                 "mult": a.astype(np.float64) * b, "max": np.maximum(a, b), "min": np.minimum(a, b)}[op]
        # round the exact result to bf16 (nearest even) through an independent path
        f32 = exact.astype(np.float32)
        bits = f32.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        want = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    ts.write(0, P.bits(p), pat(a))
    ts.write(40, P.bits(p), pat(b))
    run(m, 0, op, rd=0, pd=p, ra=0, pa=p, rb=40, pb=p)
    got = back(ts.read(0, P.bits(p)))
    assert np.array_equal(got, want)


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
def test_float_max_min_signed_zero_and_nan(fmt):
    """IEEE 754-2019 maximum/minimum (Decision): NaN propagates, -0 < +0 in either operand order."""
    m = machine()
    ts = m.tile(0)
    p = P.make(fmt)
    a = np.array([-0.0, 0.0, -0.0, 0.0, np.nan, 1.0, np.nan, -np.inf] * (W // 8), np.float32)
    b = np.array([0.0, -0.0, -0.0, 0.0, 1.0, np.nan, np.nan, 3.0] * (W // 8), np.float32)
    if fmt == "f32":
        pat, back = (lambda x: x.view(np.uint32).astype(np.uint64)), (lambda v: v.astype(np.uint32).view(np.float32))
    elif fmt == "f16":
        pat = lambda x: x.astype(np.float16).view(np.uint16).astype(np.uint64)  # noqa: E731
        back = lambda v: v.astype(np.uint16).view(np.float16).astype(np.float32)  # noqa: E731
    else:
        pat = lambda x: (x.view(np.uint32) >> np.uint32(16)).astype(np.uint64)  # noqa: E731
        back = lambda v: (v.astype(np.uint32) << np.uint32(16)).view(np.float32)  # noqa: E731
    ts.write(0, P.bits(p), pat(a))
    ts.write(40, P.bits(p), pat(b))
    for op, sign in (("max", [0, 0, 1, 0]), ("min", [1, 1, 1, 0])):
        run(m, 0, op, rd=0, pd=p, ra=0, pa=p, rb=40, pb=p)  # in place (the tile has 96 wordlines)
        got = back(ts.read(0, P.bits(p)))[:8]
        ts.write(0, P.bits(p), pat(a))
        assert np.array_equal(np.signbit(got[:4]), np.array(sign, bool)) and np.all(got[:4] == 0)
        assert np.isnan(got[4:7]).all() and got[7] == (3.0 if op == "max" else -np.inf)


def test_float_and_int_mixing_is_rejected_by_the_assembler():
    from nnisa.core.errors import AsmError
    with pytest.raises(AsmError, match="cannot be mixed"):
        assemble_text(".tile 0\nadd r0, f32, r0, i8, r8, i8\n")


@pytest.mark.parametrize("op", ["not", "copy"])
def test_unary(op):
    rng = np.random.default_rng(2)
    m = machine()
    ts = m.tile(0)
    a = rand_patterns(rng, W, 6)
    ts.write(10, 6, a)
    run(m, 0, op, rd=30, pd=P.make("i", 12), ra=10, pa=P.make("i", 6))
    got = ts.read(30, 12)
    for g in range(W):
        A = value_of(int(a[g]), P.make("i", 6))
        want = (~A if op == "not" else A) & 0xFFF
        assert got[g] == want


def test_set_reset_set_mask_and_predicated_write():
    m = machine()
    ts = m.tile(0)
    run(m, 0, "set", rd=0, pd=P.make("u", 5), size=20)
    assert ts.read(0, 5).tolist() == [31] * 20 + [0] * (W - 20)
    pattern = np.arange(W) % 3 == 0
    ts.write(50, 1, pattern.astype(np.uint64))
    run(m, 0, "set_mask", ra=50)
    assert np.array_equal(ts.mask, pattern)
    run(m, 0, "reset", rd=0, pd=P.make("u", 5), pred=1)
    got = ts.read(0, 5)
    assert np.array_equal(got[:20], np.where(pattern[:20], 0, 31))


@pytest.mark.parametrize("direction,dist", [(0, 1), (1, 1), (0, 17), (1, 3), (0, W + 5)])
def test_shift_crosses_cram_boundaries(direction, dist):
    m = machine()
    ts = m.tile(0)
    v = np.arange(W, dtype=np.uint64) + 1
    ts.write(0, 8, v)
    n = W - 3
    run(m, 0, "shift", rd=0, pd=P.make("u", 8), ra=0, pa=P.make("u", 8), dir=direction, dist=min(dist, 1024) - 1,
        size=n)
    got = ts.read(0, 8)
    want = v.copy()
    for g in range(n):
        src = g + dist if direction == 0 else g - dist
        want[g] = v[src] if 0 <= src < n else 0
    assert np.array_equal(got, want & np.uint64(255))


@pytest.mark.parametrize("levels", [1, 2, 4])
def test_reduce_cram(levels):
    rng = np.random.default_rng(3)
    m = machine()
    ts = m.tile(0)
    a = rand_patterns(rng, W, 8)
    ts.write(0, 8, a)
    run(m, 0, "reduce_cram", rd=20, pd=P.make("i", 12), ra=0, pa=P.make("i", 8), levels=levels)
    got = ts.read(20, 12)
    g = 1 << levels
    vals = [value_of(int(x), P.make("i", 8)) for x in a]
    for b in range(W):
        want = sum(vals[b:b + g]) & 0xFFF if b % g == 0 else 0
        assert got[b] == want


@pytest.mark.parametrize("levels", [1, 2])
def test_reduce_tile(levels):
    rng = np.random.default_rng(4)
    m = machine()
    ts = m.tile(0)
    a = rand_patterns(rng, W, 8)
    ts.write(0, 8, a)
    run(m, 0, "reduce_tile", rd=20, pd=P.make("u", 10), ra=0, pa=P.make("u", 8), levels=levels)
    got = ts.read(20, 10).reshape(SMALL.crams_per_tile, SMALL.cram_cols)
    x = a.reshape(SMALL.crams_per_tile, SMALL.cram_cols).astype(np.int64)
    g = 1 << levels
    for c in range(SMALL.crams_per_tile):
        want = x[c:c + g].sum(axis=0) & 0x3FF if c % g == 0 else np.zeros(SMALL.cram_cols)
        assert np.array_equal(got[c], want)


def test_float_reduction_tree_order():
    m = machine()
    ts = m.tile(0)
    x = np.array([1e8, 1.0, -1e8, 1.0] * (W // 4), np.float32)
    ts.write(0, 32, x.view(np.uint32).astype(np.uint64))
    f32 = P.make("f32")
    run(m, 0, "reduce_cram", rd=40, pd=f32, ra=0, pa=f32, levels=2)
    got = ts.read(40, 32).astype(np.uint32).view(np.float32)
    # tree: (1e8 + 1) + (-1e8 + 1) = 1e8 + -1e8 = 0 in float32 (1 is absorbed at both leaves)
    assert got[0] == np.float32(np.float32(1e8 + 1) + np.float32(-1e8 + 1))
    assert got[1] == 0


@pytest.mark.parametrize("k", [0, 1, 3])
def test_cram_local_shuffle(k):
    m = machine()
    ts = m.tile(0)
    v = np.arange(W, dtype=np.uint64)
    ts.write(0, 8, v)
    run(m, 0, "cram_local_shf", rd=10, pd=P.make("u", 8), ra=0, pa=P.make("u", 8), shf=k, shf_en=1)
    got = ts.read(10, 8)
    cols = SMALL.cram_cols
    want = [(g // cols) * cols + (g % cols) % (1 << k) for g in range(W)]
    assert got.tolist() == want


def test_rf_operand_ops_and_scalar_ops():
    m = machine()
    ts = m.tile(0)
    rng = np.random.default_rng(5)
    a = rand_patterns(rng, W, 8)
    b = rand_patterns(rng, W, 8)
    ts.write(0, 8, a)
    ts.write(8, 8, b)
    run(m, 0, "write_rf", rd=1, imm=0xFFFFFFFD)  # -3
    run(m, 0, "write_rf", rd=2, imm=7)
    run(m, 0, "add_rf", rd=3, ra=1, rb=2)
    run(m, 0, "sub_rf", rd=4, ra=2, rb=1)
    assert ts.rf[3] == 4 and ts.rf[4] == 10
    i8, i16 = P.make("i", 8), P.make("i", 16)
    run(m, 0, "mul_const", rd=20, pd=i16, ra=0, pa=i8, rb=1, pb=i8)
    run(m, 0, "add_const", rd=40, pd=i16, ra=0, pa=i8, rb=2, pb=i8)
    run(m, 0, "dot_const", rd=60, pd=i16, ra=0, pa=i8, rb=8, pb=i8, xrf=1, px=i8, yrf=2, py=i8)
    A = np.array([value_of(int(x), i8) for x in a])
    B = np.array([value_of(int(x), i8) for x in b])
    assert np.array_equal(ts.read(20, 16), (A * -3) & 0xFFFF)
    assert np.array_equal(ts.read(40, 16), (A + 7) & 0xFFFF)
    assert np.array_equal(ts.read(60, 16), (A * -3 + B * 7) & 0xFFFF)
    run(m, 0, "popcount_rf", rd=5, ra=0, pa=P.make("u", 8), size=10)
    assert ts.rf[5] == int(a[:10].sum())


def test_mac_accumulates_and_clears_scratch():
    m = machine()
    ts = m.tile(0)
    rng = np.random.default_rng(6)
    a, b, acc = rand_patterns(rng, W, 8), rand_patterns(rng, W, 8), rand_patterns(rng, W, 16)
    ts.write(0, 8, a)
    ts.write(8, 8, b)
    ts.write(20, 16, acc)
    ts.write(50, 8, np.full(W, 255, np.uint64))
    i8, i16, i17 = P.make("i", 8), P.make("i", 16), P.make("i", 17)
    run(m, 0, "mac", rd=20, pd=i17, ra=0, pa=i8, rb=8, pb=i8, pin=i16, scratch=50)
    A = np.array([value_of(int(x), i8) for x in a])
    B = np.array([value_of(int(x), i8) for x in b])
    C = np.array([value_of(int(x), i16) for x in acc])
    assert np.array_equal(ts.read(20, 17), (C + A * B) & 0x1FFFF)
    assert not ts.read(50, 8).any()


def test_overlapping_rows_are_an_error():
    m = machine()
    with pytest.raises(SimError, match="overlap"):
        run(m, 0, "add", rd=4, pd=P.make("i", 8), ra=0, pa=P.make("i", 8), rb=20, pb=P.make("i", 8))
    run(m, 0, "add", rd=0, pd=P.make("i", 9), ra=0, pa=P.make("i", 8), rb=20, pb=P.make("i", 8))


def _prog(text: str, data: dict[int, bytes] = {}):
    segs = "".join(f".data 0x{a:x}, hex:{d.hex()}\n" for a, d in data.items())
    return assemble_text(".config_hash " + SMALL.sha256.hex() + "\n" + segs + text, config=SMALL)


@pytest.mark.parametrize("prec,tr", [("i8", 1), ("u4", 1), ("i5", 1), ("i13", 1), ("u1", 1), ("i8", 0),
                                     ("i13", 0), ("f16", 1), ("f32", 0)])
def test_load_store_layouts(prec, tr):
    rng = np.random.default_rng(7)
    p = P.decode(P.parse_token(prec))
    w = p.dram_bits
    n = 40
    vals = rng.integers(0, 1 << p.bits, n, dtype=np.uint64)
    if tr:
        from nnisa.targets.pimsab.sim.dram import pack_elements
        raw = pack_elements(vals, w).tobytes()
    else:
        bits = ((vals[None, :] >> np.arange(p.bits, dtype=np.uint64)[:, None]) & np.uint64(1)).astype(np.uint8)
        raw = np.packbits(bits, axis=1, bitorder="little").tobytes()
    prog = _prog(f".tile 1\nload r3, 0x100, {n}, {prec}, tr={tr}, cram=1\n"
                 f"store 0x9000, r3, {n}, {prec}, tr={tr}, cram=1\n", {0x100: raw})
    m = run_functional(prog, SMALL)
    ts = m.tile(1)
    got = ts.read(3, p.bits, SMALL.cram_cols, n)
    assert np.array_equal(got, vals)
    stored = m.dram.read(0x9000, len(raw))
    if tr and p.signed and w > p.bits:  # stores sign-extend to the DRAM width
        from nnisa.targets.pimsab.sim.dram import unpack_elements
        back = unpack_elements(stored, n, w)
        ext = np.array([value_of(int(v), P.parse_token(prec)) & ((1 << w) - 1) for v in vals], np.uint64)
        assert np.array_equal(back, ext)
    else:
        assert stored.tobytes() == raw


@pytest.mark.parametrize("bcast,k", [(1, None), (1, 1), (0, 0), (0, 2)])
def test_load_shf_patterns(bcast, k):
    cols, crams = SMALL.cram_cols, SMALL.crams_per_tile
    count = cols if bcast else crams << k
    vals = np.arange(count, dtype=np.uint8) + 1
    opt = f", bcast={bcast}" + ("" if k is None else f", shf={k}")
    prog = _prog(f".tile 0\nload_shf r0, 0x40, all, u8{opt}\n", {0x40: vals.tobytes()})
    m = run_functional(prog, SMALL)
    got = m.tile(0).read(0, 8).reshape(crams, cols)
    for c in range(crams):
        for b in range(cols):
            if bcast:
                want = vals[b % (1 << k)] if k is not None else vals[b]
            else:
                want = vals[c * (1 << k) + b % (1 << k)]
            assert got[c, b] == want


def test_gather_scatter_round_trip_through_a_broadcast_chain():
    cols, crams = SMALL.cram_cols, SMALL.crams_per_tile
    vals = np.arange(crams, dtype=np.uint8) + 10
    text = (".tile 0\nload_shf r0, 0x40, all, u8, shf=0\n"
            "tile_bcast t0:r0, all, u8, to=t1..t3, shf=0\n")
    prog = _prog(text, {0x40: vals.tobytes()})
    m = run_functional(prog, SMALL)
    for t in range(4):
        got = m.tile(t).read(0, 8).reshape(crams, cols)
        assert np.array_equal(got, np.repeat(vals[:, None], cols, axis=1)), t


def test_tile_messages_rf_image_and_sync():
    text = """
    .tile 0
        write_rf rf5, 1234
        tile_tx t3:r0, t0:r0, 1024, u1, rf=1
        set r0, u4, size=7
        tile_tx t3:r10, t0:r0, 20, u4
        signal t3:c2, t0:c1, tag=4
    .tile 3
        wait t0:c1, tag=4, cram=2
        tile_rx t3:r10, t0:r0, 20, u4
        tile_rx t3:r0, t0:r0, 1024, u1, rf=1
        cram_tx_rx c2:r40, c0:r10, u4
        cram_bcast r60, r10, u4
        store_rf 0x500, rf5, 1, i32
    """
    m = run_functional(_prog(text), SMALL)
    ts = m.tile(3)
    assert ts.rf[5] == 1234
    assert ts.read(10, 4, 0, 20).tolist() == [15] * 7 + [0] * 13
    assert ts.read(40, 4, 2 * SMALL.cram_cols, 7).tolist() == [15] * 7
    assert ts.read(60, 4, 3 * SMALL.cram_cols, 7).tolist() == [15] * 7
    assert m.dram.read(0x500, 4).view("<u4")[0] == 1234


def test_mismatched_receive_and_deadlock():
    with pytest.raises(SimError, match="expects size 8"):
        run_functional(_prog(".tile 0\ntile_tx t1:r0, t0:r0, 4, u4\n.tile 1\ntile_rx t1:r0, t0:r0, 8, u4\n"), SMALL)
    with pytest.raises(DeadlockError, match="tile 1") as ei:
        run_functional(_prog(".tile 1\ntile_rx t1:r0, t0:r0, 8, u4\n"), SMALL)
    assert ei.value.exit_code == 3


def test_load_rf_elements_and_image():
    data = np.arange(32, dtype="<u4") * 3
    prog = _prog(".tile 2\nload_rf rf0, 0x80\nload_rf rf4, 0x200, 3, i16\n",
                 {0x80: data.tobytes(), 0x200: np.array([-1, 2, -3], "<i2").tobytes()})
    ts = run_functional(prog, SMALL).tile(2)
    assert ts.rf[:4].tolist() == [0, 3, 6, 9]
    assert ts.rf[4:7].tolist() == [0xFFFFFFFF, 2, 0xFFFFFFFD]
