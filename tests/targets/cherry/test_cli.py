"""The Cherry workflow through the CLI: asm/disasm/convert/stats/sim/compile/run/bench, and errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from .cherry_progs import relu_dram, relu_text
from cli_runner import run_cli
from nnisa.frontend.models import bundled_model_path


def test_program_workflow(tmp_path, capsys):
    src = tmp_path / "relu.casm"
    src.write_text(relu_text())
    img, pkt, back = tmp_path / "relu.cisa", tmp_path / "relu.pkt", tmp_path / "back.casm"
    assert run_cli(["asm", "-t", "cherry", src, "-o", img], capsys)[0] == 0
    assert img.stat().st_size == 186 + 14
    assert run_cli(["convert", "-t", "cherry", img, pkt], capsys)[0] == 0
    assert run_cli(["disasm", "-t", "cherry", pkt, "-o", back], capsys)[0] == 0
    assert back.read_text() == relu_text().replace("; fast ReLU\n", "").replace(".encoding canonical\n", "")
    code, out, _ = run_cli(["stats", "-t", "cherry", img, "--json"], capsys)
    assert code == 0 and json.loads(out)["instruction_mix"]["relu"] == 1
    np.savez(tmp_path / "in.npz", dram=relu_dram())
    code, out, _ = run_cli(["sim", "-t", "cherry", img, "--arch", "dram_tiles=128", "--inputs", tmp_path / "in.npz",
                            "--outputs", tmp_path / "out.npz", "--gantt", tmp_path / "g.png", "--trace",
                            tmp_path / "t.json", "--json"], capsys)
    rep = json.loads(out)
    assert code == 0 and rep["cycles"] == 328 and rep["timing_model"].startswith("cherrycore")
    assert np.array_equal(np.load(tmp_path / "out.npz")["dram"], np.maximum(relu_dram(), 0))
    assert (tmp_path / "g.png").stat().st_size > 1000 and json.loads((tmp_path / "t.json").read_text())
    code, out, _ = run_cli(["convert", "-t", "cherry", img, tmp_path / "alt.cisa", "-O", "encoding=cherrycore"],
                           capsys)
    assert code == 0
    code, out, _ = run_cli(["disasm", "-t", "cherry", tmp_path / "alt.cisa", "--arch", "encoding=cherrycore"], capsys)
    assert code == 0 and ".encoding cherrycore" in out


@pytest.mark.parametrize("text, message", [
    (".loop 0 iterations=262143\n", "iterations=262143 outside 1..262142"),
    (".loop 0 iterations=2\nstart_loop 0\n" + "relu\n" * 63 + "end_loop 0\n", "at most 62 fit"),
    ("relu\n" * 256, "at most 255 fit"),
    (".apu 0 = i*j\n", "not linear"),
    (".apu 0 = 131072\n", "outside signed 18 bits"),
    ("start_loop 0\nend_loop 0\n", "no iteration count"),
    (".loop 0 iterations=2\n.loop 1 iterations=2\nstart_independent_loop 0\nstart_loop 1\nend_loop 1\nend_loop 0\n",
     "inside an independent loop"),
    (".loop 0 iterations=2\nstart_loop 0\nend_loop 1\n", "innermost active loop is 0"),
    (".sz 16\nload 0, INPUT, 5\n", "not representable at SZ=16"),
    ("load 9, INPUT\n", "out of range"),
    ("frobnicate\n", "unknown instruction"),
])
def test_assembler_errors_exit_2(tmp_path, capsys, text, message):
    src = tmp_path / "bad.casm"
    src.write_text(text)
    code, _, err = run_cli(["asm", "-t", "cherry", src, "-o", tmp_path / "x.cisa"], capsys)
    assert code == 2 and message in err and "bad.casm:" in err and err.count("\n") == 1
    assert not (tmp_path / "x.cisa").exists()


def test_binary_and_sim_errors_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.cisa"
    bad.write_bytes(b"\0" * 186 + bytes([0xB8, 0x00]))  # opcode 23
    code, _, err = run_cli(["disasm", "-t", "cherry", bad], capsys)
    assert code == 2 and "unknown opcode 23" in err
    src = tmp_path / "oob.casm"
    src.write_text(".apu 0 = 9000\nload 0, INPUT\n")
    assert run_cli(["asm", "-t", "cherry", src, "-o", tmp_path / "oob.cisa"], capsys)[0] == 0
    code, _, err = run_cli(["sim", "-t", "cherry", tmp_path / "oob.cisa"], capsys)
    assert code == 2 and "address 9000 outside the cache" in err and "pc 0 (load 0, INPUT)" in err
    code, _, err = run_cli(["sim", "-t", "cherry", tmp_path / "oob.cisa", "--arch", "sz=5"], capsys)
    assert code == 2 and "sz" in err
    code, _, err = run_cli(["sim", "-t", "cherry", tmp_path / "oob.cisa", "-O", "engine=turbo"], capsys)
    assert code == 2 and "engine" in err
    (tmp_path / "in.npz").write_bytes(b"")
    np.savez(tmp_path / "in.npz", weird=np.zeros(16))
    code, _, err = run_cli(["sim", "-t", "cherry", tmp_path / "oob.cisa", "--inputs", tmp_path / "in.npz"], capsys)
    assert code == 2 and "dram_<tile>" in err


def test_compile_sim_run_bench(tmp_path, capsys):
    model = bundled_model_path("digits_mlp")
    out = tmp_path / "mlp"
    code, o, _ = run_cli(["compile", "-t", "cherry", model, "-o", out, "--arch", "sz16", "--json"], capsys)
    assert code == 0 and json.loads(o)["report"]["programs"] >= 1
    x = np.random.default_rng(0).random((1, 1, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "x.npz", input=x)
    code, o, _ = run_cli(["sim", "-t", "cherry", out, "--inputs", tmp_path / "x.npz", "--json"], capsys)
    assert code == 0 and json.loads(o)["outputs"]["logits"] == [1, 10]
    code, o, _ = run_cli(["sim", "-t", "cherry", out, "--mode", "timing", "--json"], capsys)
    assert code == 0 and json.loads(o)["cycles"] > 0
    code, o, _ = run_cli(["run", "-t", "cherry", model, "--samples", "3", "--json"], capsys)
    rep = json.loads(o)
    assert code == 0 and rep["top1_agreement"] == 1.0
    code, o, _ = run_cli(["bench", "-t", "cherry", "fast_relu", "--json"], capsys)
    assert code == 0 and json.loads(o)["cycles"] == 328
    code, o, _ = run_cli(["targets", "--json"], capsys)
    cherry = [t for t in json.loads(o)["targets"] if t["target"] == "cherry"][0]
    assert {"compile", "simulate", "asm", "bench"} <= set(cherry["capabilities"])


def test_sim_of_a_compiled_folder_takes_float_samples_in_the_models_shape(tmp_path, capsys):
    """Issue 28 item 3: one sample in the model's shape, N samples as (N, *shape) or (N, *shape[1:]),
    float outputs in the model's output shapes (N stacked), anything else a one-line error naming
    the expected shapes; the values are onnxruntime's within cherry18's error."""
    from nnisa.api import onnx_reference
    from nnisa.frontend.models import bundled_testset
    model = bundled_model_path("digits_cnn")
    out = tmp_path / "cnn"
    assert run_cli(["compile", "-t", "cherry", model, "-o", out, "--json"], capsys)[0] == 0
    x, _ = bundled_testset("digits_cnn")
    ref = onnx_reference(model, {"input": x[:3]})["logits"]
    for name, arr, n in (("one", x[:1], 1), ("n", x[:3], 3), ("n1", x[:3, None], 3)):
        np.save(tmp_path / f"{name}.npy", arr)
        code, o, _ = run_cli(["sim", "-t", "cherry", out, "--inputs", tmp_path / f"{name}.npy",
                              "--outputs", tmp_path / f"{name}.npz", "--json"], capsys)
        assert code == 0 and json.loads(o)["outputs"]["logits"] == [n, 10]
        got = np.load(tmp_path / f"{name}.npz")["logits"]
        assert got.dtype == np.float32
        assert np.array_equal(got.argmax(1), ref[:n].argmax(1))
        assert np.abs(got - ref[:n]).max() < 0.05 * np.abs(ref).max()
    np.save(tmp_path / "bad.npy", x[:3, 0])
    code, o, e = run_cli(["sim", "-t", "cherry", out, "--inputs", tmp_path / "bad.npy"], capsys)
    assert code == 2 and "expected (N, 1, 8, 8)" in e + o and "(3, 8, 8)" in e + o and "Traceback" not in e + o


def test_layers_and_gantt_on_compile_sim_and_run(tmp_path, capsys):
    """Issue 28 items 5-6: --layers on compile (the compiler's table), sim of a compiled folder and run
    (simulated rows that add up to the run's cycles and dynamic energy); --gantt draws a PNG."""
    model = bundled_model_path("digits_cnn")
    out = tmp_path / "cnn"
    code, o, _ = run_cli(["compile", "-t", "cherry", model, "-o", out, "--json", "--layers"], capsys)
    rows = json.loads(o)["layers"]
    assert code == 0 and [r["op"] for r in rows][:2] == ["Conv", "Relu"]
    assert all(r["memory_bytes"] > 0 for r in rows) and sum(r["instructions"] for r in rows) > 0
    np.save(tmp_path / "x.npy", np.random.default_rng(1).random((1, 1, 8, 8)).astype(np.float32))
    code, o, _ = run_cli(["sim", "-t", "cherry", out, "--inputs", tmp_path / "x.npy", "--json",
                          "--gantt", tmp_path / "g.png"], capsys)
    rep = json.loads(o)
    assert code == 0 and (tmp_path / "g.png").stat().st_size > 0
    assert sum(r["cycles"] for r in rep["layers"]) == rep["cycles"]  # the steps partition the run
    assert sum(r["energy_pj"] for r in rep["layers"]) == pytest.approx(rep["energy_dynamic_pj"], rel=1e-9)
    conv = [r for r in rep["layers"] if r["op"] == "Conv"]
    assert all(0 < r["utilization"] <= 1 and r["matmul_copies"] > 0 for r in conv)
    code, o, _ = run_cli(["run", "-t", "cherry", model, "--layers", "--gantt", tmp_path / "r.png"], capsys)
    assert code == 0 and "per layer" in o and "/conv1/Conv" in o and (tmp_path / "r.png").stat().st_size > 0


def test_bench_resnet18_convs_rows_are_on_the_layer_contract(capsys):
    """`nnisa bench -t cherry resnet18_convs`: one per-layer row per conv shape (its instances back to
    back), adding up to the workload's cycles and dynamic energy (a traceback before: its old rows had
    no `op`)."""
    code, o, e = run_cli(["bench", "-t", "cherry", "resnet18_convs", "--arch", "sz32", "--json"], capsys)
    assert code == 0, e
    d = json.loads(o)
    rows = d["layers"]
    assert len(rows) == 11 and sum(r["count"] for r in rows) == 20 and all(r["op"] == "Conv" for r in rows)
    assert sum(r["cycles"] for r in rows) == d["cycles"]
    assert all(r["cycles"] == r["cycles_each"] * r["count"] and 0 < r["utilization"] <= 1 for r in rows)
    assert sum(r["energy_pj"] for r in rows) == pytest.approx(d["energy_dynamic_pj"], rel=1e-9)
