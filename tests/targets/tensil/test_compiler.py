"""The Tensil ONNX compiler (spec §9.9): XOR golden, layouts, functional matrix, bundled models."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from .tensil_data import xor
from .tensil_models import concat_model, conv_model, resize_linear_model, resize_model, stride_model, xor_model

from nnisa.api import run_model, target as get_target
from nnisa.cli import main
from nnisa.core.errors import UnsupportedError
from nnisa.frontend import evaluate_float, load_model
from nnisa.frontend.models import bundled_model_path
from nnisa.targets.tensil import layout as L
from nnisa.targets.tensil.compiler.codegen import rollup
from nnisa.targets.tensil.compiler.output import compile_model
from nnisa.targets.tensil.formats.model import read_csv_vectors
from nnisa.targets.tensil.sim.emulator import emulate_model


@pytest.mark.parametrize("opset", [10, 17])
def test_xor_compiles_byte_identical_and_bit_exact(opset, tmp_path):
    path = tmp_path / "xor.onnx"
    onnx.save(xor_model(opset), path)
    res = compile_model(path, config=str(xor(".tmodel")), out_dir=tmp_path / "out", reuse=False, declared_batch=True)
    assert open(res.files["program"], "rb").read() == xor(".tprog").read_bytes()
    assert open(res.files["tdata"], "rb").read() == xor(".tdata").read_bytes()
    run = emulate_model(res.program.model, res.program, {"x": read_csv_vectors(xor("_in.csv"), 2)})
    assert run.raw["y"][0].tolist() == [[1, 0], [254, 0], [254, 0], [1, 0]]
    fused = compile_model(path, config=str(xor(".tmodel")), out_dir=tmp_path / "out2",
                          declared_batch=True)  # hidden layer stays local
    assert len(fused.program) < len(res.program)
    run = emulate_model(fused.program.model, fused.program, {"x": read_csv_vectors(xor("_in.csv"), 2)})
    assert run.raw["y"][0].tolist() == [[1, 0], [254, 0], [254, 0], [1, 0]]


@pytest.mark.parametrize("N", [4, 8, 32])
def test_layout_formulas(N):
    rng = np.random.default_rng(N)
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    v = L.activation_to_vectors(x, N)
    assert v.shape == (L.vector_count(x.shape, N), N)
    for n, c, h, w in [(0, 0, 0, 0), (1, 2, 4, 3), (0, 1, 2, 1)]:
        vi, lane = L.nhwc_index(n, h, w, c, 5, 4, 3, N)
        assert v[vi, lane] == x[n, c, h, w]
    assert np.array_equal(L.vectors_to_activation(v, x.shape, N), x)
    wt = rng.standard_normal((10, 3, 3, 2)).astype(np.float32)
    wv = L.conv_weight_vectors(wt, 1, N)
    for co, ci, kh, kw in [(0, 0, 0, 0), (9, 2, 2, 1), (5, 1, 1, 0)]:
        vi, lane = L.hwcco_index(kh, kw, ci, co, 2, 3, 10, N)
        assert wv[vi, lane] == wt[co, ci, kh, kw]
    d = rng.standard_normal((7, 10)).astype(np.float32)
    dv = L.dense_weight_vectors(d, N)
    for i, o in [(0, 0), (6, 9), (3, 4)]:
        vi, lane = L.hw_index(i, o, 10, N)
        assert dv[vi, lane] == d[i, o]
    assert len(dv) == L.blocks(7, N) * N * L.blocks(10, N)
    # a Gemm over a flattened NCHW tensor reads the NHWC vectors with re-ordered rows
    w = rng.standard_normal((3 * 5 * 4, 6)).astype(np.float32)
    rows = L.flattened_dense_rows(w, 3, 5, 4, N)
    flat_nhwc = L.activation_to_vectors(x[:1], N).reshape(-1)
    assert np.allclose(flat_nhwc @ rows, x[:1].reshape(1, -1) @ w, atol=1e-4)


def test_rollup_merges_power_of_two_strides():
    assert rollup([(10, 0), (12, 1), (14, 2), (15, 3)], 8, 8) == [(10, 1, 0, 0, 3), (15, 0, 3, 0, 1)]
    assert rollup([(0, 0), (3, 1)], 8, 8) == [(0, 0, 0, 0, 1), (3, 0, 1, 0, 1)]
    assert rollup([(0, 0), (4, 1), (8, 2)], 2, 8) == [(0, 0, 0, 0, 1), (4, 0, 1, 0, 1), (8, 0, 2, 0, 1)]


def _run(model_path, arch, strategy, x, tmp_path):
    res = compile_model(model_path, config=arch, out_dir=tmp_path / f"{arch}_{strategy}", strategy=strategy)
    g = load_model(model_path)
    name = g.inputs[0].name
    run = emulate_model(res.program.model, res.program, res.encode_inputs({name: x}))
    out = {k: v for k, v in run.raw.items()}
    return res, out, res.decode_outputs({k: run.floats[k][0] for k in run.floats})


MODELS = {"conv": conv_model, "stride": stride_model, "concat": concat_model, "resize": resize_model,
          "bilinear": resize_linear_model}
ARCHS = ["zcu104", pytest.param("pynqz1", marks=pytest.mark.slow), pytest.param("ultra96v2", marks=pytest.mark.slow),
         pytest.param("zcu104_uram", marks=pytest.mark.slow)]
STRATS = ["local-isolated", "local-vars", "local-consts", "local-vars-and-consts"]


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("arch", ARCHS)
def test_functional_matrix(model, arch, tmp_path):
    path = tmp_path / f"{model}.onnx"
    onnx.save(MODELS[model](), path)
    g = load_model(path)
    x = np.random.default_rng(3).uniform(-1, 1, g.inputs[0].shape).astype(np.float32)
    ref = evaluate_float(g, {g.inputs[0].name: x})
    raws = []
    for strategy in STRATS:
        res, raw, dec = _run(path, arch, strategy, x, tmp_path)
        for k, v in ref.items():
            assert np.abs(dec[k] - v[0]).max() <= 0.2, (strategy, k, np.abs(dec[k] - v[0]).max())
        raws.append(raw)
    for r in raws[1:]:
        assert all(np.array_equal(r[k], raws[0][k]) for k in r)  # strategies bit-identical


@pytest.mark.parametrize("name", ["digits_cnn", "digits_mlp"])
def test_run_bundled_models(name, tmp_path):
    rep = run_model("tensil", bundled_model_path(name), samples=30, out_dir=tmp_path / "o")
    assert rep["top1_agreement"] == 1.0
    assert rep["max_abs_error"] <= 0.2


def test_estimator_snapshot_of_synthetic_model(tmp_path):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), path)
    rep = compile_model(path, config="zcu104", out_dir=tmp_path / "o").report
    assert rep["estimator_cycles"] == compile_model(path, config="zcu104", out_dir=tmp_path / "o2").report[
        "estimator_cycles"]
    assert rep["true_macs"] > 0 and 0 < rep["mac_efficiency"] < 1
    assert set(rep["instructions_per_kind"]) >= {"MatMul", "LoadWeights", "SIMD"}


def test_unsupported_and_too_small(tmp_path):
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"], name="sig")], "s",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    p = tmp_path / "sig.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), p)
    with pytest.raises(UnsupportedError, match="node sig \\(Sigmoid\\)"):
        compile_model(p, config="zcu104", out_dir=tmp_path / "o")
    with pytest.raises(SystemExit) as exc:
        main(["compile", "-t", "tensil", str(p), "--arch", "zcu104", "-o", str(tmp_path / "o2")])
    assert exc.value.code == 2
    big = tmp_path / "conv.onnx"
    onnx.save(conv_model(), big)
    with pytest.raises(UnsupportedError):
        compile_model(big, config="formal", out_dir=tmp_path / "o3")


@pytest.mark.slow
def test_resnet20v2_beats_tensil_baseline(tmp_path):
    from nnisa.frontend.models import make_resnet20v2
    p = tmp_path / "r20.onnx"
    onnx.save(make_resnet20v2(), p)
    for strategy in ("local-isolated", "local-vars"):  # Tensil's baseline build: 293,590 cycles, 77,210 vectors
        rep = compile_model(p, config="zcu104", out_dir=tmp_path / strategy, strategy=strategy).report
        assert rep["estimator_cycles"] <= 293_590 and rep["dram_vectors"] <= 77_210, (strategy, rep)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 1, 3, 32, 32)).astype(np.float32)
    rep = run_model("tensil", p, inputs={"input": x[:, 0]}, out_dir=tmp_path / "run")
    assert rep["top1_agreement"] == 1.0


def test_sigmoid_tanh_through_the_lut_extension(tmp_path):
    from .tensil_models import smooth_model
    p = tmp_path / "smooth.onnx"
    onnx.save(smooth_model(), p)
    g = load_model(p)
    x = np.random.default_rng(1).uniform(-2, 2, g.inputs[0].shape).astype(np.float32)
    host = compile_model(p, config="zcu104", out_dir=tmp_path / "no")  # without: host steps, named
    assert [h["ops"] for h in host.report["host_steps"]] == [["Sigmoid"], ["Tanh"]]
    assert all("lut=true" in h["why"][0] for h in host.report["host_steps"])
    got = get_target("tensil").simulate(host.program, inputs={g.inputs[0].name: x}).outputs
    ref = evaluate_float(g, {g.inputs[0].name: x})
    assert all(np.abs(got[k] - v).max() < 0.05 for k, v in ref.items())
    res = compile_model(p, config="zcu104", out_dir=tmp_path / "o", lut=True)
    assert res.program.arch.lut == (2, 64) and res.program.arch.simd_registers_depth == 3
    op = res.program.rows["hdr"] >> 4
    assert (op == 5).sum() == 6  # LoadLUT: three tables per activation
    run = emulate_model(res.program.model, res.program, res.encode_inputs({g.inputs[0].name: x}))
    out = res.decode_outputs({k: v[0] for k, v in run.floats.items()})
    ref = evaluate_float(g, {g.inputs[0].name: x})
    for k, v in ref.items():
        assert np.abs(out[k] - v[0]).max() < 0.05


def test_sim_of_a_compiled_folder_takes_model_shaped_inputs(tmp_path):
    from nnisa.frontend.models import bundled_model_path
    path = bundled_model_path("digits_cnn")
    with pytest.raises(SystemExit) as exc:
        main(["compile", "-t", "tensil", str(path), "-o", str(tmp_path / "out"), "--json"])
    assert exc.value.code == 0
    g = load_model(path)
    x = np.random.default_rng(2).uniform(0, 1, (3, 1, 8, 8)).astype(np.float32)  # a batch of 3 = 3 runs
    np.save(tmp_path / "x.npy", x)
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(tmp_path / "out"), "--inputs", str(tmp_path / "x.npy"),
              "--outputs", str(tmp_path / "y.npy"), "--json"])
    assert exc.value.code == 0
    y = np.load(tmp_path / "y.npy")  # float logits in the model's output shape, one row per sample
    ref = evaluate_float(g, {g.inputs[0].name: x})["logits"]
    assert y.shape == (3, 10) and np.abs(y - ref).max() <= 0.2
    with pytest.raises(SystemExit) as exc:  # --raw: Tensil's fixed-point output vectors
        main(["sim", "-t", "tensil", str(tmp_path / "out"), "--inputs", str(tmp_path / "x.npy"), "--raw",
              "--outputs", str(tmp_path / "raw.npy"), "--json"])
    assert exc.value.code == 0
    raw = np.load(tmp_path / "raw.npy")
    assert raw.shape == (3, 32) and np.abs(raw[:, :10] / 256 - ref).max() <= 0.2
    np.save(tmp_path / "x5.npy", x[:, None])  # (N, *shape): N samples, the same outputs
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(tmp_path / "out"), "--inputs", str(tmp_path / "x5.npy"),
              "--outputs", str(tmp_path / "y5.npy"), "--json"])
    assert exc.value.code == 0 and np.array_equal(np.load(tmp_path / "y5.npy"), y)
    np.save(tmp_path / "bad.npy", np.zeros((3, 1, 9, 9), np.float32))  # a wrong shape: one line naming the shapes
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(tmp_path / "out"), "--inputs", str(tmp_path / "bad.npy")])
    assert exc.value.code == 2


def test_output_selection(tmp_path):
    from nnisa.frontend.models import bundled_model_path
    path = bundled_model_path("digits_cnn")
    with pytest.raises(UnsupportedError, match="did you mean logits"):
        compile_model(path, config="zcu104", out_dir=tmp_path / "a", outputs="logit")
    res = compile_model(path, config="zcu104", out_dir=tmp_path / "b", outputs="relu1")  # an inner tensor
    assert [e.name for e in res.program.model.outputs] == ["relu1"]
    g = load_model(path)
    x = np.random.default_rng(4).uniform(0, 1, (1, 1, 8, 8)).astype(np.float32)
    run = emulate_model(res.program.model, res.program, res.encode_inputs({"input": x}))
    got = res.decode_outputs({k: v[0] for k, v in run.floats.items()})["relu1"]
    ref = evaluate_float(g, {"input": x}, return_all=True)["relu1"][0]
    assert np.abs(got - ref).max() <= 0.2
