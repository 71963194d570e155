"""``nnisa compare`` and the ``nnisa sweep`` commands, in-process."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from extras import require

from nnisa.cli import main
from nnisa.frontend.models import bundled_model_path
from nnisa.sweep.compare import compare_model, resolve_targets

MLP = bundled_model_path("digits_mlp")


def run(args):
    out, err = io.StringIO(), io.StringIO()
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def ghost(monkeypatch):
    """A registered target whose package has not landed (as pimsab was before its part 1)."""
    from nnisa.core import target as target_mod
    monkeypatch.setitem(target_mod._REGISTRY, "ghost", "nnisa.targets.ghost.target:GhostTarget")
    return "ghost"


def test_compare_rows_say_why(ghost):
    rows = compare_model(MLP, ["pim", "pimsab", "cherry", ghost], samples=2)
    by = {r["target"]: r for r in rows}
    assert by["pim"]["status"] == "ok" and by["pim"]["bit_exact"] is True and by["pim"]["energy_pj"] > 0
    assert by["cherry"]["status"] == "ok" and by["cherry"]["latency_ns"] > 0
    for r in (by["pim"], by["cherry"]):
        assert r["top1_agreement"] == 1.0 and r["compile_s"] >= 0 and r["sim_s"] >= 0 and r["instructions"] > 0
    assert by[ghost]["status"] == "unsupported" and "not implemented yet" in by[ghost]["error"]
    from nnisa.core.target import get_target
    if "compile" not in get_target("pimsab").capabilities():  # until its ONNX compiler (issue 15) lands
        assert by["pimsab"]["status"] == "unsupported" and "cannot compile ONNX models yet" in by["pimsab"]["error"]
    else:
        assert by["pimsab"]["status"] in ("ok", "error"), by["pimsab"]


def test_compare_cli_json_and_pictures(tmp_path):
    code, out, err = run(["compare", MLP, "--targets", "pim,tensil", "--samples", "2", "--plot", tmp_path / "le.png",
                          "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert [r["target"] for r in doc["targets"]] == ["pim", "tensil"]
    assert doc["targets"][1]["area_unit"] == "PEs"
    assert Path(doc["pictures"][-1]).name == "le_breakdown.png"
    assert all(Path(p).stat().st_size > 1000 for p in doc["pictures"])


def test_compare_cli_table(ghost):
    code, out, _ = run(["compare", MLP, "--targets", f"cherry,{ghost}", "--samples", "1"])
    assert code == 0
    assert "cherry" in out and "unsupported" in out and "ghost/digits_mlp: target 'ghost' is registered but" in out


@pytest.mark.parametrize("args, says", [
    (["compare", MLP, "--targets", "pim,nosuch"], "unknown target(s) nosuch"),
    (["compare", "/nonexistent.onnx"], "not found"),
    (["compare", MLP, "--samples", "0"], "--samples"),
])
def test_compare_errors(args, says):
    code, out, err = run(args)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_resolve_targets():
    assert resolve_targets("all") == resolve_targets(None)
    assert resolve_targets("dais, pim,dais") == ["dais", "pim"]


SPEC = """\
name: cli
models: [digits_mlp]
samples: 1
targets:
  dais:
    options:
      bits: [3, 4]
"""


def test_sweep_cli(tmp_path):
    require("pyarrow", "sweep")
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    code, out, err = run(["sweep", spec, "--dry-run"])
    assert code == 0 and out.count("dais") == 2 and "2 points" in err
    code, out, err = run(["sweep", spec, "-o", tmp_path / "r", "-j", "1", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] == 2 and doc["executor"] == "local" and Path(doc["table"]).is_file()
    code, out, err = run(["sweep", spec, "-o", tmp_path / "r"])
    assert code == 2 and "--resume" in err
    code, out, err = run(["sweep", spec, "-o", tmp_path / "r", "--resume", "--json"])
    assert code == 0 and json.loads(out)["skipped"] == 2
    code, out, err = run(["sweep", "report", tmp_path / "r"])
    assert code == 0 and "dais: " in out and (tmp_path / "r" / "report" / "report.md").is_file()
    code, out, err = run(["sweep", "report", tmp_path / "r", "-o", tmp_path / "rep", "--json"])
    assert code == 0 and json.loads(out)["fronts"]["dais"]["points"] == 2


def test_sweep_cli_bad_ray_address(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    code, _, err = run(["sweep", "--ray", spec, "-o", tmp_path / "r"])
    assert code == 2 and "--ray" in err
