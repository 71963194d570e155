"""Issue 28 (a researcher's first hour): bundled models by name, the one input convention,
compare's per-target settings, notebook objects, pictures and benchmark outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from cli_runner import run_cli
from nnisa.core.bundle import as_samples
from nnisa.core.errors import FormatError, OptionError
from nnisa.frontend.models import bundled_model_path, bundled_models, resolve_model
from nnisa.frontend.prepared import check_inputs

REPO = Path(__file__).resolve().parents[2]


def test_models_lists_every_bundled_model(capsys):
    code, out, _ = run_cli(["models", "--json"], capsys)
    rows = {r["name"]: r for r in json.loads(out)["models"]}
    assert code == 0 and set(rows) == {"digits_cnn", "digits_mlp", "digits_vit", "digits_bert"}
    assert rows["digits_cnn"]["inputs"]["input"]["shape"][1:] == [1, 8, 8] and rows["digits_cnn"]["description"]
    assert rows["digits_bert"]["inputs"]["input"]["dtype"] == "int64"
    code, out, _ = run_cli(["models"], capsys)
    assert code == 0 and "digits_vit" in out


def test_bundled_names_resolve_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_model("digits_cnn") == bundled_model_path("digits_cnn")
    assert resolve_model("digits_cnn.onnx") == bundled_model_path("digits_cnn")  # the README's old spelling
    (tmp_path / "digits_cnn.onnx").write_bytes(b"mine")
    assert resolve_model("digits_cnn.onnx") == "digits_cnn.onnx"  # a file of that name wins
    assert resolve_model("nothing.onnx") == "nothing.onnx"
    assert len(bundled_models()) == 4


def test_run_compile_compare_take_a_name_and_run_has_a_default(capsys, monkeypatch):
    seen = {}

    def fake_run(target, model, **kw):
        seen["run"] = (target, str(model))
        return {"target": target, "model": str(model)}
    monkeypatch.setattr("nnisa.api.run_model", fake_run)
    code, out, err = run_cli(["run", "-t", "dais", "--json"], capsys)
    assert code == 0 and seen["run"] == ("dais", str(bundled_model_path("digits_mlp")))
    assert "no model given; running the bundled model digits_mlp" in err
    code, _, err = run_cli(["run", "-t", "pim", "digits_cnn", "--json"], capsys)
    assert code == 0 and seen["run"] == ("pim", str(bundled_model_path("digits_cnn"))) and "no model" not in err

    def fake_compare(model, names, **kw):
        seen["compare"] = (str(model), names, kw["configs"], kw["options"])
        return [{"target": n, "model": "digits_cnn", "status": "error", "error": "x"} for n in names]
    monkeypatch.setattr("nnisa.sweep.compare.compare_model", fake_compare)
    code, out, err = run_cli(["compare", "digits_cnn", "--targets", "pim,tensil", "--config", "tensil=tiny4x4",
                              "-O", "pim:schedule=element", "--json"], capsys)
    assert code == 0, err
    model, names, cfgs, opts = seen["compare"]
    assert model == str(bundled_model_path("digits_cnn")) and names == ["pim", "tensil"]
    assert cfgs == {"tensil": "tiny4x4"} and opts == {"pim": {"schedule": "element"}}


@pytest.mark.parametrize("args", [["--config", "cherry=sz16"], ["--config", "pim"], ["-O", "schedule=element"],
                                  ["-O", "pim:no_such_option=1"]])
def test_compare_per_target_settings_are_checked(args, capsys):
    code, _, err = run_cli(["compare", "digits_cnn", "--targets", "pim", *args], capsys)
    assert code == 2 and err.startswith("nnisa: error:") and len(err.strip().splitlines()) == 1


def test_one_input_convention():
    x = np.zeros((1, 1, 8, 8), np.float32)
    assert as_samples("x", x, [1, 1, 8, 8]).shape == (1, 1, 8, 8)          # the model's shape: one sample
    assert as_samples("x", np.zeros((5, 1, 1, 8, 8)), [1, 1, 8, 8]).shape == (5, 1, 8, 8)   # (N, *shape)
    assert as_samples("x", np.zeros((5, 1, 8, 8)), [1, 1, 8, 8]).shape == (5, 1, 8, 8)      # (N, *shape[1:])
    assert as_samples("x", np.zeros((3, 1, 8, 8)), [None, 1, 8, 8]).shape == (3, 1, 8, 8)
    with pytest.raises(FormatError, match=r"got shape \(8, 8\); expected \(1, 1, 8, 8\) \(one sample\)"):
        as_samples("x", np.zeros((8, 8)), [1, 1, 8, 8])
    # a fixed first dimension (issue 26): exactly that many rows per inference, as onnxruntime takes them
    assert as_samples("x", np.zeros((65, 130)), [65, 130]).shape == (65, 130)
    assert as_samples("x", np.zeros((65, 130)), [65, 130], whole=True).shape == (1, 65, 130)
    with pytest.raises(FormatError, match=r"expected \(65, 130\) \(one inference\) or \(N, 65, 130\)"):
        as_samples("x", np.zeros((64, 130)), [65, 130])
    got = check_inputs(bundled_model_path("digits_cnn"), {"whatever": np.zeros((4, 1, 1, 8, 8))})
    assert got["input"].shape == (4, 1, 8, 8) and got["input"].dtype == np.float32


def test_run_inputs_shape_error_is_one_line(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((8, 8), np.float32))
    code, _, err = run_cli(["run", "-t", "pim", "digits_cnn", "--inputs", tmp_path / "x.npy"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "expected (N, 1, 8, 8)" in err


def _rows():
    return [{"target": "pim", "model": "m", "status": "ok", "latency_ns": 1e4, "energy_pj": 1.6e7, "inputs": 16,
             "instructions": 10, "compile_s": 1.0, "sim_s": 2.0},
            {"target": "tensil", "model": "m", "status": "ok", "latency_ns": 2e4, "energy_pj": None,
             "instructions": 20, "compile_s": 1.0, "sim_s": 1.0}]


def test_plots_return_the_figure_say_what_is_missing_and_keep_colours(tmp_path):
    from nnisa.report.plots import energy_per_input, plot_breakdown, plot_latency_energy, target_colour
    assert energy_per_input(_rows()[0]) == 1e6  # per input, not per run of 16
    fig = plot_latency_energy(_rows())
    assert fig.points_drawn == 1 and not (tmp_path / "a.png").exists()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("not drawn" in t and "tensil/m" in t for t in texts) and "pim/m" in texts
    assert fig.axes[0].collections[0].get_facecolor()[0][:3] == pytest.approx(
        tuple(int(target_colour("pim")[i:i + 2], 16) / 255 for i in (1, 3, 5)))
    fig = plot_breakdown(_rows(), tmp_path / "b.png")
    assert fig.points_drawn == 2 and (tmp_path / "b.png").stat().st_size > 1000
    assert target_colour("pim (element)") == target_colour("pim") != target_colour("tensil")


def test_results_open_as_dataframes(tmp_path):
    pd = pytest.importorskip("pandas")
    from nnisa.report.results import Report, Rows
    rep = Report({"target": "pim", "cycles": 5, "layers": [{"a": 1}]})
    assert rep.to_dict()["layers"] == [{"a": 1}] and list(rep.to_pandas().columns) == ["target", "cycles"]
    df = Rows(_rows()).to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df["target"]) == ["pim", "tensil"]
    from nnisa.api import sweep_results
    from nnisa.sweep.store import write_table
    write_table([{"id": "a", "target": "pim", "status": "ok", "latency_ns": 1.0}], tmp_path / "results.parquet")
    got = sweep_results(tmp_path)
    assert list(got["target"]) == ["pim"] and got["latency_ns"][0] == 1.0


def test_benchmarks_write_into_out_unless_update_docs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    monkeypatch.setattr(sys, "argv", ["x"])
    sys.modules.pop("_results", None)
    import _results
    try:
        assert not _results.UPDATE_DOCS and _results.RESULTS == _results.OUT_DIR / "RESULTS.md"
        monkeypatch.setattr(_results, "OUT_DIR", tmp_path)
        monkeypatch.setattr(_results, "RESULTS", tmp_path / "RESULTS.md")
        before = _results.TRACKED.read_text()
        _results.update_section("A test section", "body")
        assert _results.TRACKED.read_text() == before and "## A test section\n\nbody" in (tmp_path / "RESULTS.md").read_text()
        monkeypatch.setattr(sys, "argv", ["x", "--update-docs"])
        sys.modules.pop("_results", None)
        import _results as again
        assert again.UPDATE_DOCS and again.RESULTS == again.TRACKED and sys.argv == ["x"]
    finally:
        sys.modules.pop("_results", None)


def test_bundle_values_in_and_out():
    from nnisa.core.bundle import TensorSpec, dequantize_outputs, quantize_inputs
    spec_in = TensorSpec(name="input", shape=[1, 1, 8, 8], bits=8, scale=1 / 64)
    spec_out = TensorSpec(name="logits", shape=[1, 10], bits=8, scale=0.25)
    x = np.full((1, 1, 8, 8), 0.5, np.float32)
    q = quantize_inputs([spec_in], {"x": x})  # one array: matched by position
    assert q["x"].dtype == np.int64 and (q["x"] == 32).all()
    assert np.array_equal(quantize_inputs([spec_in], {"input": q["x"]})["input"], q["x"])  # integers pass unchanged
    y = dequantize_outputs([spec_out], {"y": np.arange(10.0)[None]})  # a simulator's name, integer values
    assert list(y) == ["logits"] and y["logits"].shape == (1, 10) and y["logits"][0, 4] == 1.0
    many = dequantize_outputs([spec_out], {"logits": np.zeros((3, 10), np.int64)})
    assert many["logits"].shape == (3, 10) and many["logits"].dtype == np.float64


@pytest.mark.slow
def test_sim_on_a_compiled_folder_gives_model_values(tmp_path, capsys):
    """dais (which computes on the manifest's integers): float in, float logits out; --raw: integers."""
    import onnxruntime as ort
    out = tmp_path / "b"
    assert run_cli(["compile", "-t", "dais", "digits_mlp", "-o", out], capsys)[0] == 0
    x = np.load(REPO / "examples" / "pim" / "x.npz")["input"]
    code, _, err = run_cli(["sim", "-t", "dais", out, "--inputs", REPO / "examples" / "pim" / "x.npz",
                            "--outputs", tmp_path / "y.npz"], capsys)
    assert code == 0, err
    y = np.load(tmp_path / "y.npz")["logits"]
    ref = ort.InferenceSession(str(bundled_model_path("digits_mlp"))).run(None, {"input": x})[0]
    assert y.shape == ref.shape and np.argmax(y) == np.argmax(ref) and np.abs(y - ref).max() < 0.5
