"""PimTarget.simulate and the CLI `sim`/`run` on PIM: the common interface end to end."""

import json

import numpy as np
import pytest

from nnisa.api import run_model
from nnisa.core.errors import DeadlockError
from nnisa.core.target import get_target
from nnisa.frontend.models import bundled_model_path, bundled_testset
from nnisa.targets.pim.formats.bundle import Bundle

from .compiler_helpers import cli

PIM = get_target("pim")


def test_timing_only_program_matches_calibration():
    # spec §8.10 first row: setbw; vvadd 64 -> 83 ns with the conformance parameters
    prog = PIM.assemble(".core 0\nsetbw 8, 8\nvvadd $r0, $r1, $r2, 64\n")
    res = PIM.simulate(prog, mode="timing")
    assert res.stats.latency_ns == 83 and res.stats.cycles == 83
    assert res.stats.extra["per_core"][0]["finish_ns"] == 83
    assert res.outputs == {}


def test_functional_values_via_interface():
    prog = PIM.assemble(".core 0\nsetbw 8, 8\nsldi $r1, 0\nsldi $r2, 16\nsldi $r3, 32\n"
                        "sldi $r4, 0\nsldi $r5, 256\n"
                        "ld $r1, $r4, 16\nvvadd $r3, $r1, $r1, 16\nst $r4, $r3, 16, ofs(rd, 256)\n")
    x = np.arange(-8, 8, dtype=np.int8)
    res = PIM.simulate(prog, inputs={"seg@0x0": x.view(np.uint8)}, mode="both",
                       outputs=[{"name": "y", "shape": [16], "bits": 8, "address": 256}],
                       global_address_mode="single32")
    assert res.outputs["y"].tolist() == (2 * x).tolist()
    assert res.stats.latency_ns > 0 and res.stats.energy_pj > 0


def test_compiled_bundle_roundtrip_bit_exact(tmp_path):
    path = bundled_model_path("digits_cnn")
    compiled = PIM.compile(path, out_dir=tmp_path)
    bundle = PIM.read(tmp_path)
    assert isinstance(bundle, Bundle)
    x, labels = bundled_testset("digits_cnn")
    name = bundle.manifest.inputs[0].name
    for i in range(3):
        res = PIM.simulate(bundle, inputs=compiled.encode_inputs({name: x[i]}))
        ref = compiled.reference({name: x[i]})
        for k, v in ref.items():
            assert np.array_equal(res.outputs[k], v)
        assert res.stats.cycles > 0


def test_run_model_reports_contract_keys():
    rep = run_model("pim", bundled_model_path("digits_cnn"), samples=2)
    for key in ("cycles", "energy_pj", "max_abs_error", "top1_agreement", "wall_s", "bit_exact"):
        assert key in rep
    assert rep["bit_exact"] is True and rep["top1_agreement"] == 1.0


def test_cli_sim_bundle_with_inputs_outputs(tmp_path, capsys):
    out_dir = tmp_path / "bundle"
    code, _, err = cli(["compile", "-t", "pim", str(bundled_model_path("digits_cnn")), "-o", str(out_dir),
                        "--json"], capsys)
    assert code == 0, err
    man = json.loads((out_dir / "manifest.json").read_text())
    x, _ = bundled_testset("digits_cnn")
    np.savez(tmp_path / "x.npz", **{man["inputs"][0]["name"]: x[:1]})  # the model's shape: one sample
    code, out, err = cli(["sim", "-t", "pim", str(out_dir), "--inputs", str(tmp_path / "x.npz"),
                          "--outputs", str(tmp_path / "y.npz"), "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["cycles"] > 0 and data["energy_pj"] > 0 and len(data["per_core"]) >= 1
    y = np.load(tmp_path / "y.npz")
    want = man["model"]["outputs"][0]["shape"]  # the model's own output shape (a symbolic batch: one sample)
    assert y[man["outputs"][0]["name"]].shape == tuple(1 if d is None else d for d in want)


def test_cli_deadlock_exit_3(tmp_path, capsys):
    src = tmp_path / "dead.s"
    src.write_text(".core 0\nsetbw 8, 8\nrecv $r0, 1, 64\n.core 1\nsetbw 8, 8\nrecv $r0, 0, 64\n")
    code, out, err = cli(["sim", "-t", "pim", str(src), "--mode", "functional"], capsys)
    assert code == 3
    assert "nnisa: error:" in err and "core 0" in err and "core 1" in err
    assert "Traceback" not in err
    with pytest.raises(DeadlockError):
        PIM.simulate(PIM.read(src), mode="timing")


def test_cli_trace_and_gantt(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text(".core 0\nsetbw 8, 8\nvvadd $r0, $r1, $r2, 64\nsend $r0, 1, 32\n"
                   ".core 1\nsetbw 8, 8\nrecv $r0, 0, 32\nvvadd $r0, $r1, $r2, 64\n")
    trace, png = tmp_path / "t.json", tmp_path / "g.png"
    code, out, err = cli(["sim", "-t", "pim", str(src), "--mode", "timing", "--trace", str(trace),
                          "--gantt", str(png), "--json"], capsys)
    assert code == 0, err
    events = json.loads(trace.read_text())
    assert any(e.get("ph") == "X" for e in (events["traceEvents"] if isinstance(events, dict) else events))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
