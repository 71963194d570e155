"""DAIS RTL through the CLI and the compiler: convert to .v/.vhd, sim -O engine=rtl, compile
-O hdl=..., compiled networks (lookup tables, the digits MLP) co-simulated bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_runner import run_cli
from nnisa.frontend import evaluate_quantized, load_model, quantize
from nnisa.frontend.models import bundled_inputs_for, bundled_model_path
from nnisa.targets.dais.compiler.netcompile import compile_qgraph
from nnisa.targets.dais.sim.interp import run

from .rtl_programs import edge_inputs, random_program
from .rtl_tools import require
from .test_netcompile import _mlp


def test_convert_writes_verilog_and_vhdl(tmp_path, capsys):
    p = random_program(5, n_ops=40)
    src = tmp_path / "prog.dais"
    from nnisa.targets.dais.formats.files import write_program
    write_program(p, src)
    code, _, err = run_cli(["convert", "-t", "dais", str(src), str(tmp_path / "layer0.v")], capsys)
    assert code == 0, err
    text = (tmp_path / "layer0.v").read_text()
    assert "module layer0 (" in text and "combinational" in text
    code, _, err = run_cli(["convert", "-t", "dais", str(src), str(tmp_path / "net.vhd"), "-O", "latency_cutoff=2",
                        "-O", "top=my_net"], capsys)
    assert code == 0, err
    text = (tmp_path / "net.vhd").read_text()
    assert "entity my_net is" in text and "rising_edge(clk)" in text
    code, _, err = run_cli(["disasm", "-t", "dais", str(tmp_path / "layer0.v")], capsys)
    assert code == 2 and "not read" in err and err.count("\n") == 1


def test_sim_engine_rtl_cli(tmp_path, capsys):
    require("verilator")
    p = random_program(0, n_ops=120)
    src = tmp_path / "prog.dais"
    from nnisa.targets.dais.formats.files import write_program
    write_program(p, src)
    X = edge_inputs(p, 400, 0)
    np.save(tmp_path / "x.npy", X)
    code, out, err = run_cli(["sim", "-t", "dais", str(src), "--inputs", str(tmp_path / "x.npy"), "--outputs",
                          str(tmp_path / "y.npy"), "-O", "engine=rtl", "-O", "input_range=wrap", "--json"], capsys)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["bit_exact"] and rep["samples"] == 400 and rep["interp_samples_per_s"] > 0
    assert np.load(tmp_path / "y.npy").tobytes() == run(p, X, engine="exact").tobytes()


def test_compiled_network_with_lookup_tables_cosim():
    """A Tanh MLP compiled by nnisa (CMVM layers + LUT activations) runs bit-exactly as RTL."""
    from nnisa.targets.dais.sim.rtl_engine import RtlEngine
    require("verilator")
    g = load_model(_mlp((8, 12, 4), "Tanh", 3))
    x = np.random.default_rng(1).uniform(-1.5, 1.5, (500, 8)).astype(np.float32)
    qg = quantize(g, x[:64], scale_mode="pow2")
    p, _ = compile_qgraph(qg)
    assert 8 in p.opcode.tolist()
    qx = qg.quantize_input(qg.inputs[0].name, x).reshape(len(x), -1)
    ref = evaluate_quantized(qg, {qg.inputs[0].name: x})[qg.outputs[0].name].reshape(len(x), -1)
    for cutoff in (None, 2):
        y = RtlEngine(p, latency_cutoff=cutoff).run(qx)
        assert np.array_equal(y, ref)


@pytest.fixture(scope="module")
def digits_mlp_program():
    from nnisa.targets.dais.compiler import compile_model
    res = compile_model(bundled_model_path("digits_mlp"))
    return res


@pytest.mark.slow
@pytest.mark.parametrize("cutoff", [None, 3])
def test_digits_mlp_cosim(digits_mlp_program, cutoff):
    from nnisa.targets.dais.sim.rtl_engine import RtlEngine
    require("verilator")
    res = digits_mlp_program
    qg = res.qgraph
    t_in = qg.inputs[0]
    x = next(iter(bundled_inputs_for(bundled_model_path("digits_mlp"), samples=300).values()))
    qx = qg.quantize_input(t_in.name, x).reshape(len(x), -1)
    rng = np.random.default_rng(0)
    qx = np.concatenate([qx, rng.integers(-128, 128, (2000, qx.shape[1])), np.full((1, qx.shape[1]), -128),
                         np.full((1, qx.shape[1]), 127)]).astype(float)
    eng = RtlEngine(res.program, latency_cutoff=cutoff)
    y = eng.run(qx)
    assert y.tobytes() == run(res.program, qx).tobytes()
    ref = evaluate_quantized(qg, {t_in.name: x})[qg.outputs[0].name].reshape(len(x), -1)
    assert np.array_equal(y[:len(x)], ref)
    if cutoff:
        assert eng.net.n_stages == -(-res.program.stats()["adder_depth"] // cutoff)


@pytest.mark.slow
def test_compile_with_hdl_and_synth(tmp_path, capsys):
    require("yosys")
    model = _mlp((6, 5, 3), "Relu", 9)
    import onnx
    onnx.save(model, tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    code, stdout, err = run_cli(["compile", "-t", "dais", str(tmp_path / "tiny.onnx"), "-o", str(out), "-O", "hdl=verilog",
                             "-O", "latency_cutoff=2", "-O", "synth=true", "--json"], capsys)
    assert code == 0, err
    rep = json.loads(stdout)["report"]["rtl"]
    assert (out / "tiny.v").exists() and rep["file"] == "tiny.v" and rep["module"] == "tiny"
    assert rep["pipeline_depth"] >= 1 and rep["synth"]["luts"] > 0 and 0 < rep["synth"]["ffs"] <= rep["register_bits"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert "tiny.v" in manifest["files"].values()
    code, stdout, err = run_cli(["compile", "-t", "dais", str(tmp_path / "tiny.onnx"), "-o", str(tmp_path / "o2"),
                             "-O", "hdl=vhdl", "--json"], capsys)
    assert code == 0, err and (tmp_path / "o2" / "tiny.vhd").exists()
