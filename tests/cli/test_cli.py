"""The CLI contract: one-line errors with exit status 2, JSON output, atomic outputs."""

import json
import subprocess
import sys


from cli_runner import run_cli

from nnisa.core.target import target_names


def test_targets_json(capsys):
    code, out, err = run_cli(["targets", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    names = [t["target"] for t in data["targets"]]
    assert "pim" in names and "dais" in names


def test_unknown_target_is_one_line_error(capsys):
    code, out, err = run_cli(["isa", "--target", "nosuch"], capsys)
    assert code == 2
    assert err.strip().count("\n") == 0
    assert "unknown target 'nosuch'" in err
    assert "Traceback" not in err


def test_isa_table_pim(capsys):
    code, out, err = run_cli(["isa", "-t", "pim"], capsys)
    assert code == 0
    assert "| 9 | `mvmul` |" in out and "| 31 | `sync` |" in out


def test_bad_assembly_reports_file_line_column(tmp_path, capsys):
    src = tmp_path / "bad.s"
    src.write_text(".core 0\nsetbw 8, 8\nvvadd $r0, $r1, $r40, 64\n")
    out_file = tmp_path / "out.nnpi"
    code, out, err = run_cli(["asm", "-t", "pim", str(src), "-o", str(out_file)], capsys)
    assert code == 2
    assert err.startswith("nnisa: error: ") and f"{src}:3:" in err
    assert "Traceback" not in err
    assert not out_file.exists()  # nothing half-written


def test_missing_file(tmp_path, capsys):
    code, out, err = run_cli(["disasm", "-t", "pim", str(tmp_path / "none.json")], capsys)
    assert code == 2
    assert "none.json" in err and "not found" in err


def test_asm_disasm_roundtrip_via_cli(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text(".core 0\n.group 0, 1\nsetbw 8, 8\nsldi $r1, 100\nmvmul $r0, $r1, 8, 0, 0\n"
                   ".core 1\nsync 0, 0\n")
    binary = tmp_path / "p.nnpi"
    code, _, err = run_cli(["asm", "-t", "pim", str(src), "-o", str(binary), "--json"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["disasm", "-t", "pim", str(binary)], capsys)
    assert code == 0, err
    assert "mvmul $r0, $r1, 8, 0, 0" in out and "sync 0, 0" in out


def test_python_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "nnisa", "isa", "-t", "nosuch"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("nnisa: error:")
    assert "Traceback" not in proc.stderr


def test_bench_lists_and_runs_workloads(capsys):
    code, out, err = run_cli(["bench", "-t", "dais", "--json"], capsys)
    assert code == 0
    names = json.loads(out)["workloads"]
    assert {"cmvm-64", "cmvm-256", "digits-mlp"} <= set(names)
    code, out, err = run_cli(["bench", "-t", "dais", "digits-mlp", "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["bit_exact"] is True and res["samples"] == 360 and res["accuracy"] > 0.9
    code, out, err = run_cli(["bench", "-t", "pim", "nosuch"], capsys)
    assert code == 2 and "no workload 'nosuch'" in err


def test_every_target_declares_valid_demo_workloads():
    from nnisa.core.errors import NnisaError
    from nnisa.core.target import get_target, target_names
    for name in target_names():
        try:
            t = get_target(name)
        except NnisaError:
            continue
        for workload, _config in t.demo_workloads:
            assert workload in t.workloads(), (name, workload)


def test_demo_json_story(tmp_path, monkeypatch, capsys):
    """The demo runs every target that compiles and simulates, side by side, and draws its pictures."""
    monkeypatch.setenv("NNISA_DEMO_SAMPLES", "4")
    import nnisa.demo as demo
    monkeypatch.setattr(demo, "DEMO_SAMPLES", 4)
    monkeypatch.setattr(demo, "reference_step", lambda pictures: [])  # the reference jobs have their own tests
    monkeypatch.setenv("NNISA_DEMO_JOBS", "1")    # in this process, where the patch above applies
    code, out, err = run_cli(["demo", "--json", "--out-dir", str(tmp_path)], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["frontend"]["int8_top1_agreement"] > 0.95
    runs = [r for r in doc["targets"] if r["status"] == "ok"]
    assert {r["target"] for r in runs} >= {"pim", "dais"}
    assert all(r["top1_agreement"] >= 0.75 for r in runs)
    assert all(r["error"] for r in doc["targets"] if r["status"] != "ok")  # a target that cannot says why
    assert (tmp_path / "targets_latency_energy_breakdown.png").read_bytes()[:4] == b"\x89PNG"  # nnisa compare's
    # PIM's throughput variant: a stream, so a period beside the latency
    tp = [r for r in runs if r["target"].startswith("pim (throughput")]
    assert tp and all(r["bit_exact"] and 0 < r["period_ns"] < r["latency_ns"] for r in tp)
    assert (tmp_path / "targets_latency_energy.png").read_bytes()[:4] == b"\x89PNG"
    # the transformer (issue 27): a row per target; the ones that run it agree with onnxruntime, the others
    # say why in one line
    vit = {r["target"]: r for r in doc["targets"] if r["model"] == "digits_vit"}
    assert set(vit) == set(target_names())
    assert {t for t, r in vit.items() if r["status"] == "ok"} >= {"pim", "pimsab", "cherry"}
    assert all("\n" not in r["error"] for r in vit.values() if r["status"] != "ok")
    assert vit["dais"]["status"] == "skipped" and "nnisa run -t dais digits_vit" in vit["dais"]["error"]
    assert doc["cpu_s"]["main"] > 0


def test_demo_story_is_short(tmp_path, monkeypatch, capsys):
    """The printed story stays under ~60 lines (the reference jobs add one line each)."""
    import nnisa.demo as demo
    monkeypatch.setattr(demo, "DEMO_SAMPLES", 2)
    refs = [{"target": "pim", "workload": "w", "summary": "one line"}] * 7
    monkeypatch.setattr(demo, "reference_step", lambda pictures: refs)
    monkeypatch.setenv("NNISA_DEMO_JOBS", "1")
    code, out, err = run_cli(["demo", "--out-dir", str(tmp_path)], capsys)
    assert code == 0, err
    assert "digits_vit" in out and len(out.strip().splitlines()) <= 60, out
