"""PIMSAB compiler, layer 1: the DSL, the distribution search, CRAM allocation, adaptive precision
and code generation (spec §4.1–§4.10), checked against NumPy in the functional simulator."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.core.errors import NnisaError
from nnisa.targets.pimsab.compiler import dsl as T
from nnisa.targets.pimsab.compiler.search import describe, search
from nnisa.targets.pimsab.config import load_config

SMALL = load_config("base").replace(mesh_width=4, mesh_height=2, n_tiles_used=8, crams_per_tile=16, htree_depth=2)


def paper_example(order=("xoo", "yo", "xoi", "k", "yi", "xi")):
    n, m, p = 12 * 256 * 64, 10 * 32, 1024
    a = T.tensor((n // 256, p, 256), T.i8, name="a")
    b = T.tensor((m, p), T.i8, name="b")
    xo, xi = T.loop(n // 256, name="xo"), T.loop(256, name="xi")
    y = T.loop(m, name="y")
    k = T.red_loop(p, name="k")
    c = T.compute("c", (xo, y, xi), T.sum(T.i32(a[xo, k, xi]) * T.i32(b[y, k]), k))
    s = T.schedule(c)
    xoo, xoi = s.split(xo, factor=64)
    yo, yi = s.split(y, factor=32)
    loops = dict(xoo=xoo, xoi=xoi, yo=yo, yi=yi, k=k, xi=xi)
    s.reorder(*(loops[n_] for n_ in order))
    s.bitlines(xi)
    return s, loops


def test_worked_example_search_and_wordlines():
    """Spec §4.10: 12 x 10 across tiles; the Fig. 14 organisation needs 297 / 233 / 225 wordlines."""
    s, L = paper_example()
    cfg = load_config("base")
    nest = T.analyse(s, cfg)
    cand, stats = search(nest, cfg)
    assert {lp.name: v for lp, v in cand.tiles.items()} == {"xo.o": 12, "y.o": 10}
    assert cand.occupancy == 1.0 and cand.rows <= 256
    st = T.stage_breakdown(nest, cfg, {L["xoo"]: 12, L["yo"]: 10}, {L["xoi"]: 64, L["yi"]: 4})
    assert (st["declared"], st["adaptive"], st["bit_lifetime"]) == (297, 233, 225)
    assert st["buffers"] == {"c": 208, "a": 8, "b": 1, "temporary": 8}
    assert stats["candidates_evaluated"] > 100


def test_infeasible_organisation_is_one_line_with_breakdown():
    s, L = paper_example()
    with pytest.raises(T.CompileError) as e:
        T.build(s, "base", adaptive_precision=False, tiles={L["xoo"]: 12, L["yo"]: 10},
                arrays={L["xoi"]: 64, L["yi"]: 4})
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, NnisaError)
    assert "c 256 + a 8 + b 1 + temporary 32 = 297 wordlines > 256" in msg and "conservative" in msg


def test_search_infeasible_everywhere():
    a = T.tensor((256,), T.i64, name="a")
    b = T.tensor((256,), T.i64, name="b")
    x = T.loop(256, "x")
    c = T.compute("c", (x,), (a[x] * b[x]) + (a[x] * a[x]))
    s = T.schedule(c)
    s.bitlines(x)
    with pytest.raises(T.CompileError, match=r"no feasible distribution: the best candidate needs .* wordlines > 256"):
        T.build(s, "pimsab_s", adaptive_precision=False)


@pytest.mark.parametrize("problem, message", [
    ("nobitline", "mark the innermost data-parallel loop"),
    ("wide", "extent 512 > 256 bitlines"),
    ("notinner", "innermost data-parallel"),
    ("redbit", "is a reduction loop"),
])
def test_validation_errors(problem, message):
    a = T.tensor((512, 4), T.i8, name="a")
    x, y, k = T.loop(512 if problem == "wide" else 256, "x"), T.loop(4, "y"), T.red_loop(4, "k")
    if problem == "redbit":
        c = T.compute("c", (x,), T.sum(a[x, k], k))
    else:
        c = T.compute("c", (x, y), a[x, y] + 1)
    s = T.schedule(c)
    if problem != "nobitline":
        s.bitlines(k if problem == "redbit" else x)
    with pytest.raises(T.CompileError, match=message):
        T.build(s, "pimsab_s")


def test_dsl_errors():
    a = T.tensor((4, 4), T.i8, name="a")
    x, y, k = T.loop(4, "x"), T.loop(4, "y"), T.red_loop(4, "k")
    with pytest.raises(T.CompileError, match="non-affine"):
        a[x * y, 0]
    with pytest.raises(T.CompileError, match="not reduced"):
        T.schedule(T.compute("c", (x,), a[x, k]))
    with pytest.raises(T.CompileError, match="does not divide"):
        T.schedule(T.compute("c", (x, y), a[x, y])).split(x, 3)
    with pytest.raises(T.CompileError, match="indexed with 1"):
        a[x]
    with pytest.raises(T.CompileError, match="mixing f16 and f32: cast explicitly"):
        f = T.tensor((4,), T.f16, name="f")
        s = T.schedule(T.compute("c", (x,), f[x] + T.f32(f[x])))
        s.bitlines(x)
        T.build(s, "pimsab_s")


def _vals(rng, shapes):
    out = {}
    for name, (shape, t) in shapes.items():
        lo, hi = (-(1 << (t.bits - 1)), 1 << (t.bits - 1)) if t.signed else (0, 1 << t.bits)
        out[name] = rng.integers(lo, hi, shape)
    return out


R, C = 8, 256


def _elementwise():
    a = T.tensor((R, C), T.i8, name="a")
    b = T.tensor((R, C), T.u4, name="b")
    m = T.tensor((R, C), T.u1, name="m")
    x, y = T.loop(R, "x"), T.loop(C, "y")
    A, B = a[x, y], b[x, y]
    exprs = {"add": A + B, "sub": A - B, "mul": T.i16(A) * B, "and": A & B, "or": A | B, "xor": A ^ B,
             "max": T.maximum(A, B), "min": T.minimum(A, -3), "shr": A >> 2, "shl": T.i16(A) << 3,
             "select": T.select(m[x, y], A, B), "const": T.i16(A) * 5 + 7, "csub": A - 9,
             "nested": T.i16(T.i16(A) * B) - (T.i16(A) >> 1), "narrow": T.i4(A + B)}
    return (x, y), exprs


@pytest.mark.parametrize("name", list(_elementwise()[1]))
def test_elementwise_matches_numpy(name):
    (x, y), exprs = _elementwise()
    c = T.compute("c", (x, y), exprs[name])
    s = T.schedule(c)
    s.bitlines(y)
    prog = T.build(s, "pimsab_s")
    vals = _vals(np.random.default_rng(1), {"a": ((R, C), T.i8), "b": ((R, C), T.u4), "m": ((R, C), T.u1)})
    out, _ = prog.run(vals)
    assert np.array_equal(out["c"], prog.reference(vals)["c"])
    assert prog.report["wordlines_codegen"] <= 256


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reductions_match_numpy(kind):
    a = T.tensor((R, C), T.i8, name="a")
    b = T.tensor((R, C), T.u4, name="b")
    y, k = T.loop(C, "y"), T.red_loop(R, "k")
    c = T.compute("c", (y,), getattr(T, kind)(T.i16(a[k, y]) * b[k, y], k))
    s = T.schedule(c)
    s.bitlines(y)
    prog = T.build(s, "pimsab_s")
    vals = _vals(np.random.default_rng(2), {"a": ((R, C), T.i8), "b": ((R, C), T.u4)})
    out, _ = prog.run(vals)
    assert np.array_equal(out["c"], prog.reference(vals)["c"])
    if kind == "sum":  # power-of-two reduction on CRAMs, then reduce_tile
        assert "reduce_tile" in prog.program.mnemonics()


def test_adaptive_precision_and_growing_accumulator():
    """Accumulator of 1024 i16 products: i26 instead of the declared i32 (§4.6); widths grow step by step."""
    a = T.tensor((64, 256), T.i8, name="a")
    b = T.tensor((64,), T.i8, name="b")
    y, k = T.loop(256, "y"), T.red_loop(64, "k")
    c = T.compute("c", (y,), T.sum(T.i32(a[k, y]) * T.i32(b[k]), k))
    s = T.schedule(c)
    s.bitlines(y)
    s.arrays()
    fixed = dict(tiles={}, arrays={})
    on = T.build(s, "pimsab_s", **fixed)
    off = T.build(s, "pimsab_s", adaptive_precision=False, **fixed)
    assert on.report["buffers"]["c"] == 16 + 6 and off.report["buffers"]["c"] == 32
    assert on.report["buffers"]["b"] == 1  # tile scalar in the RF (mul_const)
    widths = [int(r["pd"]) & 63 for r in on.program.rows if int(r["op"]) == 1]  # add
    assert widths == sorted(widths) and widths[0] + 1 == 17 and widths[-1] + 1 == 22
    vals = _vals(np.random.default_rng(3), {"a": ((64, 256), T.i8), "b": ((64,), T.i8)})
    for prog in (on, off):
        out, res = prog.run(vals, mode="both")
        assert np.array_equal(out["c"], prog.reference(vals)["c"])
    assert on.run(vals, mode="timing")[1].stats.cycles < off.run(vals, mode="timing")[1].stats.cycles


def test_mac_with_bit_lifetime_and_multi_tile_broadcast():
    """Products of two CRAM operands fuse into mac; operands shared by tiles travel by tile_bcast."""
    M, N, K = 256 * 16 * 2, 4, 8
    a = T.tensor((K, M), T.i4, name="a")
    b = T.tensor((N, K, M), T.i4, name="b", const=True)
    m, n, k = T.loop(M, "m"), T.loop(N, "n"), T.red_loop(K, "k")
    c = T.compute("c", (n, m), T.sum(T.i16(a[k, m]) * T.i16(b[n, k, m]), k))
    s = T.schedule(c)
    mo, mi = s.split(m, 256)
    s.bitlines(mi)
    prog = T.build(s, SMALL, tiles={n: 4, mo: 2}, arrays={mo: 16})  # 4 x 2 = the mesh: rows/columns share
    vals = _vals(np.random.default_rng(4), {"a": ((K, M), T.i4), "b": ((N, K, M), T.i4)})
    out, res = prog.run(vals, mode="both")
    assert np.array_equal(out["c"], prog.reference(vals)["c"])
    mn = prog.program.mnemonics()
    assert "tile_tx" in mn and "tile_rx" in mn and "mac" in mn
    assert len(set(prog.program.tiles.tolist())) == 8


def test_report_names_distribution_and_layout():
    a = T.tensor((4, 256), T.i8, name="a")
    x, y = T.loop(4, "x"), T.loop(256, "y")
    s = T.schedule(T.compute("c", (x, y), a[x, y] + 1))
    s.bitlines(y)
    prog = T.build(s, "pimsab_s")
    assert prog.report["distribution"] == "tiles 1, arrays x=4"
    assert prog.report["input_regions"] == 1 and prog.report["output_regions"] == 1
    with pytest.raises(T.CompileError, match="missing input tensor 'a'"):
        prog.inputs({})
    with pytest.raises(T.CompileError, match="shape"):
        prog.inputs({"a": np.zeros((2, 2))})
