"""``--calibration FILE`` through the CLI (issue 13): the file's data sets the scales, on run and compile."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nnisa.cli import main
from nnisa.frontend.models import bundled_model_path, bundled_testset

MLP = str(bundled_model_path("digits_mlp"))


def _cli(args, capsys):
    with pytest.raises(SystemExit) as ei:
        main(args)
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def _scales(folder) -> dict:
    man = json.loads((folder / "manifest.json").read_text())
    return {t["name"]: t["scale"] for t in man["inputs"] + man["outputs"]}


@pytest.mark.parametrize("target", ["pim", "dais"])
def test_compile_with_calibration_file_sets_the_scales(target, tmp_path, capsys):
    x, _ = bundled_testset("digits_mlp")
    small = tmp_path / "small.npy"
    np.save(small, (x[:16] * 0.01).astype(np.float32))      # a 100× smaller range → finer input scale
    code, _, err = _cli(["compile", "-t", target, MLP, "-o", str(tmp_path / "a"), "--calibration", str(small)], capsys)
    assert code == 0, err
    code, _, err = _cli(["compile", "-t", target, MLP, "-o", str(tmp_path / "b")], capsys)
    assert code == 0, err
    a, b = _scales(tmp_path / "a"), _scales(tmp_path / "b")
    assert a["input"] < b["input"] / 32


def test_run_with_calibration_file_is_bit_exact(tmp_path, capsys):
    x, _ = bundled_testset("digits_mlp")
    npz = tmp_path / "calib.npz"
    np.savez(npz, input=x[-32:].astype(np.float32))            # named after the model input
    code, out, err = _cli(["run", "-t", "pim", MLP, "--calibration", str(npz), "--samples", "4", "--json"], capsys)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["bit_exact"] is True and rep["top1_agreement"] >= 0.75
