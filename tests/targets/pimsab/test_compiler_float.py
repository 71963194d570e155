"""PIMSAB compiler: f16 / bf16 computations and float max/min (spec §2.2, §2.7.1, §4.1).

The oracle is NumPy, independent of the compiler's own reference: float16 arithmetic for f16 and
float32 arithmetic rounded to bfloat16 (nearest even) for bf16, one rounding per operation; float
``max``/``min`` are IEEE 754-2019 ``maximum``/``minimum``: NumPy's ``maximum``/``minimum`` (NaN
propagates) with −0 < +0, since NumPy's own result on ±0 differs between float16 and float32.
"""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.core.errors import NnisaError
from nnisa.targets.pimsab.compiler import dsl as T
from nnisa.targets.pimsab.config import load_config

R, C = 8, 256
SPECIAL_A = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -0.0, 65504.0]
SPECIAL_B = [1.0, 0.0, -0.0, np.nan, 2.0, np.nan, -0.0, 65504.0]


def bf16(x):
    """float32 → bfloat16 (round to nearest even, NaN kept quiet) as float32 values."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint32) << 16
    r = np.where(np.isnan(x), ((b >> 16) | 0x40).astype(np.uint32) << 16, r)
    return r.astype(np.uint32).view(np.float32)


def oracle(fmt, f, *xs):
    """One operation of NumPy in the format: float16 natively, bf16 = RNE of the float32 result."""
    with np.errstate(all="ignore"):
        if fmt == "f16":
            return f(*[np.asarray(x, np.float16) for x in xs])
        return bf16(f(*[bf16(x) for x in xs]))


def ieee_max(a, b):
    """IEEE 754-2019 maximum: NaN propagates, -0 < +0 (the nnisa decision; NumPy leaves ±0 open)."""
    z = (a == 0) & (b == 0)
    return np.where(np.isnan(a) | np.isnan(b), np.nan,
                    np.where(z, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), np.maximum(a, b))).astype(a.dtype)


def ieee_min(a, b):
    """IEEE 754-2019 minimum: NaN propagates, -0 < +0."""
    z = (a == 0) & (b == 0)
    return np.where(np.isnan(a) | np.isnan(b), np.nan,
                    np.where(z, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), np.minimum(a, b))).astype(a.dtype)


def bits(v):
    v = np.asarray(v)
    return v.view(np.uint16 if v.dtype == np.float16 else np.uint32)


def same(out, ref):
    """Bit-identical, except that any NaN equals any NaN (payloads are not specified)."""
    out, ref = np.asarray(out), np.asarray(ref)
    nan = np.isnan(out.astype(np.float32))
    return np.array_equal(nan, np.isnan(ref.astype(np.float32))) and np.array_equal(bits(out)[~nan], bits(ref)[~nan])


def _inputs(seed=1):
    rng = np.random.default_rng(seed)
    vals = {k: (rng.standard_normal((R, C)) * 4).astype(np.float32) for k in "ab"}
    vals["a"][0, :8], vals["b"][0, :8] = SPECIAL_A, SPECIAL_B
    return vals


ELEMENTWISE = {
    "add": (lambda A, B: A + B, np.add),
    "sub": (lambda A, B: A - B, np.subtract),
    "mul": (lambda A, B: A * B, np.multiply),
    "max": (lambda A, B: T.maximum(A, B), ieee_max),
    "min": (lambda A, B: T.minimum(A, B), ieee_min),
}


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("op", list(ELEMENTWISE))
def test_elementwise_matches_numpy(fmt, op):
    t = getattr(T, fmt)
    a, b = T.tensor((R, C), t, name="a"), T.tensor((R, C), t, name="b")
    x, y = T.loop(R, "x"), T.loop(C, "y")
    s = T.schedule(T.compute("c", (x, y), ELEMENTWISE[op][0](a[x, y], b[x, y])))
    s.bitlines(y)
    prog = T.build(s, "pimsab_s")
    vals = _inputs()
    out, _ = prog.run(vals)
    expect = oracle(fmt, ELEMENTWISE[op][1], vals["a"], vals["b"])
    assert out["c"].dtype == (np.float16 if fmt == "f16" else np.float32)
    assert same(out["c"], expect)
    assert same(out["c"], prog.reference(vals)["c"])
    # DRAM element width 16 (spec §2.2): two 8 x 256 inputs of 2 bytes per element
    assert prog.report["input_bytes"] == 2 * R * C * 2 and prog.report["output_bytes"] == R * C * 2
    assert prog.report["buffers"]["a"] == 16


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_constants_are_rounded_to_the_format(fmt):
    """``a * 2.5 - 1.1 + 0.3``: constants become values of the format (1.1 is not), one rounding per op."""
    t = getattr(T, fmt)
    a = T.tensor((R, C), t, name="a")
    x, y = T.loop(R, "x"), T.loop(C, "y")
    s = T.schedule(T.compute("c", (x, y), T.maximum(a[x, y] * 2.5 - 1.1, 0.3)))
    s.bitlines(y)
    prog = T.build(s, "pimsab_s")
    vals = _inputs(2)
    out, _ = prog.run(vals)
    c = {k: oracle(fmt, lambda v: v, np.float32(k)) for k in (2.5, 1.1, 0.3)}
    v = oracle(fmt, np.multiply, vals["a"], c[2.5])
    v = oracle(fmt, np.subtract, v, c[1.1])
    v = oracle(fmt, ieee_max, v, c[0.3])
    assert same(out["c"], v)


def _reduction(fmt, kind, k_ext=64):
    a = T.tensor((k_ext, C), getattr(T, fmt), name="a")
    y, k = T.loop(C, "y"), T.red_loop(k_ext, "k")
    s = T.schedule(T.compute("c", (y,), getattr(T, kind)(a[k, y], k)))
    s.bitlines(y)
    return s


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_serial_reduction_matches_numpy(fmt, kind):
    """Serial accumulation in the tile controller: k = 0, 1, ... one rounding per step."""
    s = _reduction(fmt, kind)
    prog = T.build(s, "pimsab_s", tiles={}, arrays={})
    vals = {"a": np.random.default_rng(3).standard_normal((64, C)).astype(np.float32)}
    vals["a"][5, :3] = [np.nan, -0.0, 0.0]
    vals["a"][0, 1:3] = [0.0, -0.0]
    out, _ = prog.run(vals)
    f = {"sum": np.add, "max": ieee_max, "min": ieee_min}[kind]
    acc = oracle(fmt, lambda v: v, vals["a"][0])
    for i in range(1, 64):
        acc = oracle(fmt, f, acc, vals["a"][i])
    assert same(out["c"], acc)
    assert same(out["c"], prog.reference(vals)["c"])


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_tree_sum_over_crams_matches_numpy(fmt):
    """The searched mapping puts k on CRAMs: every CRAM c accumulates k = j·a + c serially, then
    ``reduce_tile`` adds CRAM c + 2^(i-1) into c at level i; NumPy in the same order agrees."""
    s = _reduction(fmt, "sum", 128)
    prog = T.build(s, "pimsab_s")
    arrays = {lp.name: v for lp, v in prog.candidate.arrays.items()}
    a_k = arrays.get("k", 1)
    assert a_k > 1 and "reduce_tile" in prog.program.mnemonics()
    vals = {"a": np.random.default_rng(4).standard_normal((128, C)).astype(np.float32)}
    out, _ = prog.run(vals)
    x = oracle(fmt, lambda v: v, vals["a"]).reshape(128 // a_k, a_k, C)
    part = x[0]
    for j in range(1, x.shape[0]):
        part = oracle(fmt, np.add, part, x[j])
    while part.shape[0] > 1:
        part = oracle(fmt, np.add, part[0::2], part[1::2])
    assert same(out["c"], part[0])


def test_float_max_cycles_need_bitexact_mode():
    """Float max/min have no cycle formula in the simulator-compatible mode (spec §3.2 Decision);
    with ``cycle_mode=bitexact`` the compiled program runs with values and cycles."""
    s = _reduction("f16", "max")
    vals = {"a": np.random.default_rng(5).standard_normal((64, C)).astype(np.float32)}
    with pytest.raises(NnisaError, match="cycle_mode=bitexact"):
        T.build(s, "pimsab_s").run(vals, mode="both")
    prog = T.build(s, load_config("pimsab_s").replace(cycle_mode="bitexact"))
    out, res = prog.run(vals, mode="both")
    assert res.stats.cycles > 0 and same(out["c"], prog.reference(vals)["c"])


def test_float_format_errors():
    a = T.tensor((R, C), T.f16, name="a")
    b = T.tensor((R, C), T.bf16, name="b")
    x, y = T.loop(R, "x"), T.loop(C, "y")
    for e, msg in ((a[x, y] + b[x, y], "mixing f16 and bf16"), (T.f16(T.i8(a[x, y])), "int/float conversion"),
                   (a[x, y] | a[x, y], "float or")):
        with pytest.raises(T.CompileError, match=msg):
            s = T.schedule(T.compute("c", (x, y), e))
            s.bitlines(y)
            T.build(s, "pimsab_s")


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("tiles, arrays", [({}, {}), ({"x": 4}, {"x": 2, "z": 2}), ({"x": 8}, {"z": 2})])
def test_distributions_with_scalars_and_tiles(fmt, tiles, arrays):
    """``c[x, z, y] = a[x, z, y] * s[x] + b[z, y]`` on 8 tiles: a per-row scalar replicated into the
    CRAMs (scatter ``load_shf`` of 16-bit elements), an operand shared by tiles (``tile_bcast``)."""
    t = getattr(T, fmt)
    X, Z = 8, 2
    a, s_, b = T.tensor((X, Z, C), t, name="a"), T.tensor((X,), t, name="s"), T.tensor((Z, C), t, name="b")
    x, z, y = T.loop(X, "x"), T.loop(Z, "z"), T.loop(C, "y")
    sch = T.schedule(T.compute("c", (x, z, y), a[x, z, y] * s_[x] + b[z, y]))
    sch.bitlines(y)
    loops = {"x": x, "z": z}
    cfg = load_config("base").replace(mesh_width=4, mesh_height=2, n_tiles_used=8, crams_per_tile=16, htree_depth=2)
    prog = T.build(sch, cfg, tiles={loops[k]: v for k, v in tiles.items()},
                   arrays={loops[k]: v for k, v in arrays.items()})
    rng = np.random.default_rng(7)
    vals = {"a": rng.standard_normal((X, Z, C)).astype(np.float32) * 8,
            "s": rng.standard_normal(X).astype(np.float32), "b": rng.standard_normal((Z, C)).astype(np.float32)}
    out, _ = prog.run(vals)
    expect = oracle(fmt, np.add, oracle(fmt, np.multiply, vals["a"], vals["s"][:, None, None]), vals["b"][None])
    assert same(out["c"], expect)
    mn = prog.program.mnemonics()
    assert "load_shf" in mn and ("tile_tx" in mn) == bool(tiles)


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("where", ["factors", "product"])
def test_half_products_accumulated_in_f32(fmt, where):
    """Mixed precision: ``T.sum(T.f32(a) * T.f32(b))`` (exact products) or ``T.sum(T.f32(a * b))``
    (products rounded to the half format); the casts are ``copy`` conversions, the sum is f32."""
    t = getattr(T, fmt)
    a, b = T.tensor((64, C), t, name="a"), T.tensor((64, C), t, name="b")
    y, k = T.loop(C, "y"), T.red_loop(64, "k")
    body = T.f32(a[k, y]) * T.f32(b[k, y]) if where == "factors" else T.f32(a[k, y] * b[k, y])
    s = T.schedule(T.compute("c", (y,), T.sum(body, k)))
    s.bitlines(y)
    prog = T.build(s, "pimsab_s", tiles={}, arrays={})
    rng = np.random.default_rng(8)
    vals = {n: rng.standard_normal((64, C)).astype(np.float32) for n in "ab"}
    out, _ = prog.run(vals)
    ha, hb = (oracle(fmt, lambda v: v, vals[n]).astype(np.float32) for n in "ab")
    prod = ha * hb if where == "factors" else oracle(fmt, np.multiply, ha, hb).astype(np.float32)
    acc = prod[0]
    for i in range(1, 64):
        acc = acc + prod[i]  # float32 round-to-nearest-even per step
    assert out["c"].dtype == np.float32 and same(out["c"], acc)
    assert prog.program.mnemonics().count("copy") >= 63


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_narrowing_cast_rounds_once(fmt):
    """``T.f16(a32 * 3.3) + 1.1``: the f32 product rounded to the half format, then a half add
    (the constant 1.1 in the half format, 3.3 in f32: each constant takes its operation's format)."""
    t = getattr(T, fmt)
    a = T.tensor((R, C), T.f32, name="a")
    x, y = T.loop(R, "x"), T.loop(C, "y")
    s = T.schedule(T.compute("c", (x, y), t(a[x, y] * 3.3) + 1.1))
    s.bitlines(y)
    prog = T.build(s, "pimsab_s")
    vals = {"a": np.random.default_rng(9).standard_normal((R, C)).astype(np.float32) * 100}
    out, _ = prog.run(vals)
    p = oracle(fmt, lambda v: v, vals["a"] * np.float32(3.3))
    assert same(out["c"], oracle(fmt, np.add, p, oracle(fmt, lambda v: v, np.float32(1.1))))
