"""The PIMSAB workflow through the CLI: asm/disasm/convert/stats/sim/bench/isa/targets, and errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_runner import run_cli

#: Listing 1 of the paper, as shipped for the README's commands
LISTING1 = (Path(__file__).resolve().parents[3] / "examples" / "pimsab" / "listing1.s").read_text()


def test_program_workflow(tmp_path, capsys):
    src = tmp_path / "listing1.s"
    src.write_text(LISTING1)
    img, back = tmp_path / "l1.psab", tmp_path / "back.s"
    assert run_cli(["asm", "-t", "pimsab", src, "-o", img], capsys)[0] == 0
    assert img.read_bytes()[:4] == b"PSAB"
    assert run_cli(["disasm", "-t", "pimsab", img, "-o", back], capsys)[0] == 0
    assert run_cli(["convert", "-t", "pimsab", back, tmp_path / "again.psab"], capsys)[0] == 0
    assert (tmp_path / "again.psab").read_bytes() == img.read_bytes()
    code, out, _ = run_cli(["stats", "-t", "pimsab", img, "--json"], capsys)
    st = json.loads(out)
    assert code == 0 and st["by_mnemonic"] == {"load": 2, "mult": 1, "store": 1}
    assert st["declared_dram_read_bits"] == 2 * 65536 * 8
    a = np.arange(65536, dtype=np.int8)
    np.savez(tmp_path / "in.npz", dram_0x0=a, dram_0x10000=np.full(65536, 3, np.int8))
    code, out, _ = run_cli(["sim", "-t", "pimsab", img, "--inputs", tmp_path / "in.npz", "--outputs",
                            tmp_path / "out.npz", "--gantt", tmp_path / "g.png", "--trace", tmp_path / "t.json",
                            "-O", f"log={tmp_path / 'log.csv'}", "--json"], capsys)
    rep = json.loads(out)
    assert code == 0 and rep["cycles"] > 1000 and rep["timing_model"].startswith("pimsab-simulator")
    assert rep["dram_read_bits"] == 2 * 65536 * 8 and rep["energy_dynamic_pj"] > 0
    y = np.load(tmp_path / "out.npz")["dram_0x20000"].view("<i2")
    assert np.array_equal(y, a.astype(np.int16) * 3)
    assert (tmp_path / "g.png").stat().st_size > 1000 and json.loads((tmp_path / "t.json").read_text())
    log = (tmp_path / "log.csv").read_text().splitlines()
    assert log[0].startswith("tile,stream_index") and len(log) == 5
    code, out, _ = run_cli(["sim", "-t", "pimsab", img, "--mode", "functional", "--json"], capsys)
    assert code == 0 and json.loads(out)["cycles"] is None


def test_config_forms_and_presets(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text(".tile 0\nadd r16, i9, r0, i8, r8, i8\n")
    for cfg in ("abl_bus", "base,shuffle=off", "cycle_mode=bitexact"):
        code, out, _ = run_cli(["sim", "-t", "pimsab", src, "--config", cfg, "--mode", "timing", "--json"], capsys)
        assert code == 0 and json.loads(out)["cycles"] == 10  # 9-cycle add, dispatched at 0, ends at 9
    (tmp_path / "c.json").write_text('{"preset": "pimsab_s", "clock_ghz": 1.0}')
    code, out, _ = run_cli(["sim", "-t", "pimsab", src, "--config", tmp_path / "c.json", "--json"], capsys)
    assert code == 0 and json.loads(out)["latency_ns"] == 10.0


def test_bench_lists_and_runs(capsys):
    code, out, _ = run_cli(["bench", "-t", "pimsab", "--json"], capsys)
    names = json.loads(out)["workloads"]
    assert {"vadd", "gemv", "fir", "gemm", "conv2d", "resnet18", "bert", "bert_nap"} <= set(names)
    code, out, _ = run_cli(["bench", "-t", "pimsab", "conv2d", "--json"], capsys)
    rep = json.loads(out)
    assert code == 0
    for key in ("cycles", "latency_ns", "dram_read_bits", "dram_write_bits", "energy_pj", "energy_dynamic_pj",
                "energy_static_pj", "wall_s"):
        assert key in rep
    code, out, _ = run_cli(["bench", "-t", "pimsab", "vadd", "-O", "scale=0.01", "-O", "check=true", "--json"], capsys)
    assert code == 0 and json.loads(out)["values_checked"]


def test_bench_takes_the_official_workload_parameters(capsys):
    code, out, _ = run_cli(["bench", "-t", "pimsab", "gemv", "-O", "m=30720", "--json"], capsys)
    rep = json.loads(out)
    assert code == 0 and rep["cycles"] == 58885 and rep["params"] == {"m": 30720, "k": 2048, "bits": 8}
    assert "speedup_vs_a100" not in rep  # not the paper's size
    code, out, _ = run_cli(["bench", "-t", "pimsab", "resnet18", "-O", "layer=conv3_1_2", "--json"], capsys)
    assert code == 0 and json.loads(out)["cycles"] == 10404
    code, out, _ = run_cli(["bench", "-t", "pimsab", "gemm_tiled", "-O", "m=384", "-O", "k=64", "-O", "n=384",
                            "--json"], capsys)
    assert code == 0 and json.loads(out)["cycles"] == 3734


@pytest.mark.parametrize("args,message", [
    (["vadd", "-O", "m=5"], "takes no option m"),
    (["bert", "-O", "scale=2"], "no size to scale"),
    (["gemv", "-O", "scale=0.5", "-O", "m=100"], "either scale or m"),
    (["resnet18", "-O", "layer=conv9"], "layer"),
    (["gemv", "-O", "k=0"], "minimum"),
    (["gemv", "-O", "acc_bits=65"], "maximum"),
    (["vadd", "-O", "n=10**9"], "expected int"),
    (["gemm", "-O", "n=100000"], "instructions"),
    (["gemm", "-O", "k=100"], "k >= crams_per_tile"),
])
def test_bench_parameter_errors_are_one_line(capsys, args, message):
    code, _, err = run_cli(["bench", "-t", "pimsab", *args], capsys)
    assert code == 2 and message in err and "Traceback" not in err, err


def test_targets_and_isa(capsys):
    code, out, _ = run_cli(["targets", "--json"], capsys)
    row = next(r for r in json.loads(out)["targets"] if r["target"] == "pimsab")
    assert {"asm", "disasm", "encode", "decode", "simulate", "stats", "bench", "isa"} <= set(row["capabilities"])
    assert "sens_cram128" in row["presets"]
    code, out, _ = run_cli(["isa", "-t", "pimsab"], capsys)
    assert code == 0 and "`load_shf`" in out and "128-bit" in out


@pytest.mark.parametrize("text,args,code,message", [
    ("add r0, i65, r0, i8, r8, i8", [], 2, "width must be 1..64"),
    ("load r250, 0, all, i8", [], 2, "exceed the 256 wordlines"),
    ("bogus r1", [], 2, "unknown instruction"),
    ("tile_rx t0:r0, t5:r0, 256, i8", [], 3, "deadlock"),
    ("mult r16, i16, r0, i8, r8, i8", ["-O", "max_cycles=10"], 4, "time limit"),
    ("add r16, i9, r0, i8, r8, i8", ["-O", "bogus=1"], 2, "unknown option"),
    ("add r16, i9, r0, i8, r8, i8", ["--config", "nope"], 2, "not a preset"),
    ("add r16, i9, r0, i8, r8, i8", ["--mode", "fast"], 2, "unknown simulation mode"),
    ("max r16, f32, r0, f32, r40, f32", ["--mode", "timing"], 2, "bitexact"),
])
def test_errors_are_one_line(tmp_path, capsys, text, args, code, message):
    src = tmp_path / "bad.s"
    src.write_text(".tile 0\n" + text + "\n")
    got, out, err = run_cli(["sim", "-t", "pimsab", src, *args], capsys)
    assert got == code
    line = err.strip().splitlines()[0]
    assert line.startswith("nnisa: error:") and message in err
    assert "Traceback" not in err


def test_malformed_image_and_missing_file(tmp_path, capsys):
    bad = tmp_path / "bad.psab"
    bad.write_bytes(b"PSAB\x01\x00\x00\x00" + b"\xff" * 10)
    code, _, err = run_cli(["disasm", "-t", "pimsab", bad], capsys)
    assert code == 2 and "truncated" in err
    code, _, err = run_cli(["disasm", "-t", "pimsab", tmp_path / "nope.psab"], capsys)
    assert code == 2 and "not found" in err
    bad.write_bytes(b"PSAB" + bytes(60))
    code, _, err = run_cli(["sim", "-t", "pimsab", bad, "--json"], capsys)
    assert code == 2 and "version" in err


def test_area_proxy_counts_cram_bits():
    """Sweep Pareto fronts: CRAM bit cells of the tiles a configuration uses."""
    import nnisa
    t = nnisa.target("pimsab")
    area, unit = t.area_proxy("base", {})
    cfg = t.load_config("base")
    assert unit == "CRAM bits"
    assert area == cfg.tiles_used * cfg.crams_per_tile * cfg.cram_rows * cfg.cram_cols > 0
    small, _ = t.area_proxy("base,crams_per_tile=64", {})
    assert small == area / 4
