"""Issues 26/27 on PIM: phased programs (models larger than the chip, host steps), encoder layers,
and the lowerings they need — each bit-exact against the frontend's integer reference."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx import numpy_helper as nh

from .compiler_helpers import one_input_model, small_config
from nnisa.api import run_model
from nnisa.core.errors import NnisaError
from nnisa.frontend.transformers import make_bert, make_vit
from nnisa.frontend.zoo import ZOO, make_gru

rng = np.random.default_rng(7)


def _save(m, path):
    onnx.save(m, path)
    return path


def _config(tmp_path, cores: int, xbars: int):
    p = tmp_path / f"chip{cores}x{xbars}.json"
    p.write_text(json.dumps(small_config(cores, xbars).to_json_dict()))
    return p


def _mlp(widths):
    nodes, inits, x = [], [], "x"
    for k, (a, b) in enumerate(zip(widths, widths[1:])):
        inits.append(nh.from_array(rng.normal(0, 1 / np.sqrt(a), (a, b)).astype(np.float32), f"w{k}"))
        y = f"h{k}" if k < len(widths) - 2 else "y"
        nodes.append(helper.make_node("MatMul", [x, f"w{k}"], [y + ("r" if y != "y" else "")]))
        if y != "y":
            nodes.append(helper.make_node("Relu", [y + "r"], [y]))
        x = y
    return one_input_model(nodes, inits, [1, widths[0]], [1, widths[-1]])


def test_model_larger_than_the_chip_is_time_multiplexed(tmp_path):
    """Four 256x256 layers (4 crossbars each) on a 2-core chip of 4 crossbars: four device phases,
    crossbar reloads in the figures, bit-exact."""
    p = _save(_mlp([256, 256, 256, 256, 256]), tmp_path / "mlp.onnx")
    cfg = _config(tmp_path, 2, 2)
    r = run_model("pim", p, samples=3, config=cfg)
    assert r["bit_exact"] is True
    rep = r["compile_report"]
    assert rep["multiplexed"] and rep["device_phases"] >= 2 and rep["crossbars_needed"] > rep["crossbars_total"]
    assert r["reload_ns"] > 0 and r["reload_pj"] > 0
    assert r["latency_ns"] > r["reload_ns"]
    assert sum(ph["reload_ns"] for ph in r["phases"]) == pytest.approx(r["reload_ns"])


def test_multiplex_off_names_the_limit_and_the_fix(tmp_path):
    p = _save(_mlp([256, 256, 256, 256, 256]), tmp_path / "mlp.onnx")
    with pytest.raises(NnisaError) as ei:
        run_model("pim", p, config=_config(tmp_path, 2, 2), multiplex=False)
    msg = str(ei.value)
    assert "needs 16 crossbars" in msg and "has 4" in msg and "multiplex=true" in msg and "at least 8 cores" in msg


def test_a_layer_larger_than_the_chip_names_the_config_that_fits(tmp_path):
    p = _save(_mlp([600, 300]), tmp_path / "wide.onnx")     # 5 x 3 = 15 crossbars for one copy
    with pytest.raises(NnisaError) as ei:
        run_model("pim", p, config=_config(tmp_path, 2, 2))
    msg = str(ei.value)
    assert "needs 15 crossbars" in msg and "at least 8 cores" in msg and "\n" not in msg


def test_phased_compile_writes_one_bundle_per_phase(tmp_path):
    from nnisa.targets.pim.compiler import compile_model
    p = _save(_mlp([256, 256, 256]), tmp_path / "mlp.onnx")
    res = compile_model(p, config=small_config(2, 2), out_dir=tmp_path / "out")
    phases = json.loads((tmp_path / "out" / "phases.json").read_text())
    assert phases["device_phases"] == 2 and [ph["kind"] for ph in phases["phases"]] == ["device", "device"]
    assert (tmp_path / "out" / "phase1" / "program.json.gz").exists() and "phase0.program" in res.files
    from nnisa.targets.pim.formats.nnpi import read_pimb_dir
    with pytest.raises(NnisaError, match="a phased compile .2 device phases"):
        read_pimb_dir(tmp_path / "out")


@pytest.mark.parametrize("build", [
    lambda: make_bert(3, seq=7, hidden=24, heads=3, layers=1, ffn=40, vocab=20, classes=5),
    lambda: make_bert(4, seq=5, hidden=16, heads=2, layers=1, mask=True, ln="decomposed", gelu="tanh"),
    lambda: make_vit(5, image=9, channels=2, patch=3, hidden=20, heads=2, layers=1, pool="mean"),
    lambda: make_vit(6, image=8, patch=2, hidden=16, heads=4, layers=2, pool="cls"),
], ids=["bert_3heads", "bert_mask_decomposed", "vit_mean", "vit_cls_2layers"])
def test_encoders_bit_exact_with_named_host_steps(build, tmp_path):
    p = _save(build(), tmp_path / "enc.onnx")
    r = run_model("pim", p, samples=4)
    assert r["bit_exact"] is True
    assert r["top1_agreement"] >= 0.75
    hosts = r["host_steps"]
    assert hosts and all(h.split("(")[-1].rstrip(")") in ("LayerNorm", "Softmax", "MaskedSoftmax", "Gather", "Where",
                                                          "Cast", "Sub", "Mul", "Unsqueeze", "Equal", "Expand")
                         for h in hosts)
    assert not any("MatMul" in h for h in hosts)     # attention products run on the vector unit


def test_gru_cell_with_its_state_runs(tmp_path):
    p = _save(make_gru(0, seq=3, features=2, hidden=3, classes=3), tmp_path / "gru.onnx")
    r = run_model("pim", p, samples=3)
    assert r["bit_exact"] is True


def test_add_of_a_fine_scaled_constant_is_folded_exactly(tmp_path):
    """A bias of tiny values (scale much finer than the activation's): the activation would need a
    left shift beyond 31 bits; the constant, its rescale and the rounding fold into one wide vector."""
    c = nh.from_array((rng.normal(0, 1e-6, (1, 5, 37))).astype(np.float32), "c")
    m = one_input_model([helper.make_node("Add", ["x", "c"], ["y"])], [c], [1, 5, 37], [1, 5, 37])
    r = run_model("pim", _save(m, tmp_path / "a.onnx"), samples=3)
    assert r["bit_exact"] is True
    s = nh.from_array(np.float32(3e-7), "s")
    m = one_input_model([helper.make_node("Sub", ["s", "x"], ["y"])], [s], [1, 41], [1, 41])
    assert run_model("pim", _save(m, tmp_path / "s.onnx"), samples=3)["bit_exact"] is True


def test_act_matmul_broadcasts_batch_axes(tmp_path):
    """(1, 3, 4, 6) @ (1, 1, 6, 4): the second operand broadcast over the heads."""
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["xs"]),
             helper.make_node("Transpose", ["xs"], ["b"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["x", "b"], ["y"])]
    inits = [nh.from_array(np.array(v, np.int64), k) for k, v in (("st", [0]), ("en", [1]), ("ax", [1]))]
    m = one_input_model(nodes, inits, [1, 3, 4, 6], [1, 3, 4, 4])
    assert run_model("pim", _save(m, tmp_path / "mm.onnx"), samples=3)["bit_exact"] is True


def test_remaining_refusals_are_listed_up_front(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Div", ["x", "r"], ["m"]),
             helper.make_node("ReduceMax", ["m"], ["y"], axes=[1], keepdims=1)]
    m = one_input_model(nodes, [], [1, 6], [1, 1])
    with pytest.raises(NnisaError) as ei:
        run_model("pim", _save(m, tmp_path / "mx.onnx"))
    msg = str(ei.value)
    assert "Div" in msg and "ReduceMax" in msg and "\n" not in msg


@pytest.mark.slow
@pytest.mark.parametrize("name", ["efficientnet_b0", "mobilenet_v2"])
def test_zoo_models_on_a_small_chip_multiplexed(name, tmp_path):
    p = _save(ZOO[name][0](), tmp_path / f"{name}.onnx")
    r = run_model("pim", p, samples=2, config=_config(tmp_path, 4, 8))
    assert r["bit_exact"] is True
