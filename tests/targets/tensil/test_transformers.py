"""Transformer encoders on Tensil (issue 27): device segments chained through host steps.

Every lowering of a segmented model is checked against onnxruntime: the host-step operators between
device work (generated Gemm → op → Gemm models), activation×activation products on the array, the
bundled encoders and encoders of generated shapes (``make_bert``/``make_vit``), the bundle folder
``nnisa sim`` runs, and the figures (device segments only; host steps listed apart).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import run_model, target
from nnisa.cli import main
from nnisa.core.errors import FormatError, UnsupportedError
from nnisa.frontend import load_model
from nnisa.frontend.transformers import make_bert, make_vit
from nnisa.targets.tensil.compiler.lower import LOWERINGS
from nnisa.targets.tensil.compiler.output import compile_model
from nnisa.targets.tensil.compiler.segments import partition
from nnisa.targets.tensil.pipeline import DeviceStep, HostStep, TensilPipeline


def _sandwich(op: str, rng: np.random.Generator, rows: int, width: int, opset: int = 20, **attrs) -> onnx.ModelProto:
    """x (1, rows, width) → MatMul → ``op`` → MatMul → y: the operator between two device segments."""
    w1 = rng.normal(0, 1 / np.sqrt(width), (width, width)).astype(np.float32)
    w2 = rng.normal(0, 1 / np.sqrt(width), (width, 5)).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1")]
    if op == "LayerNormalization":
        inits += [numpy_helper.from_array(rng.normal(1, 0.1, width).astype(np.float32), "g"),
                  numpy_helper.from_array(rng.normal(0, 0.1, width).astype(np.float32), "b")]
        nodes.append(helper.make_node(op, ["h", "g", "b"], ["a"], name="mid", axis=-1))
    elif op in ("Div", "Pow", "Sqrt"):  # of a positive activation h·h + 1 (device), by an activation
        inits.append(numpy_helper.from_array(np.array(1.0, np.float32), "c"))
        nodes.append(helper.make_node("Mul", ["h", "h"], ["hh"], name="sq"))
        nodes.append(helper.make_node("Add", ["hh", "c"], ["hp"], name="pos"))
        ins = {"Div": ["h", "hp"], "Pow": ["hp", "h"], "Sqrt": ["hp"]}[op]
        nodes.append(helper.make_node(op, ins, ["a"], name="mid"))
    else:
        nodes.append(helper.make_node(op, ["h"], ["a"], name="mid", **attrs))
    nodes.append(helper.make_node("MatMul", ["a", "w2"], ["y"], name="mm2"))
    g = helper.make_graph(nodes, op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, rows, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


HOST_OPS = [("LayerNormalization", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Erf", {}), ("Exp", {}),
            ("Softmax", {"axis": -1}), ("Sigmoid", {}), ("Tanh", {}), ("Div", {}), ("Sqrt", {}), ("Pow", {})]


@pytest.mark.parametrize("op,attrs", HOST_OPS, ids=[o + ''.join('-' + str(v) for v in a.values()) for o, a in HOST_OPS])
def test_host_step_between_device_segments(op, attrs, tmp_path):
    rng = np.random.default_rng(len(op))
    rows, width = int(rng.integers(2, 11)), int(rng.integers(5, 41))
    m = _sandwich(op, rng, rows, width, **attrs)
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    x = rng.uniform(-1, 1, (3, rows, width)).astype(np.float32)
    res = compile_model(p, config="zcu104", out_dir=tmp_path / "b")
    assert isinstance(res.program, TensilPipeline) and res.report["segments"] == 2
    host = [h["ops"] for h in res.report["host_steps"]]
    assert len(host) == 1 and host[0] and res.report["host_share"] > 0
    got = target("tensil").simulate(res.program, inputs={"x": x}).outputs["y"]
    sess = ort.InferenceSession(m.SerializeToString())
    ref = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(3)])
    assert got.shape == ref.shape and np.abs(got - ref).max() <= 0.05 + 0.05 * np.abs(ref).max(), (op, rows, width)


def test_partition_alternates_and_keeps_moves_with_their_side():
    g = load_model(make_bert(0, seq=6, hidden=16, heads=2, layers=1))
    steps = partition(g, LOWERINGS, None)
    kinds = [s.kind for s in steps]
    assert all(a != b for a, b in zip(kinds, kinds[1:]))
    where = {n.name: s.kind for s in steps for n in s.nodes}
    ops = {n.name: n.op for n in g.nodes}
    assert {ops[k] for k, v in where.items() if v == "host"} >= {"Gather", "LayerNorm", "Softmax", "Gelu"}
    # the attention products (two activations) stay on the array
    act_mm = [n.name for n in g.nodes if n.op == "MatMul" and n.inputs[1] not in g.initializers]
    assert len(act_mm) == 2 and all(where[k] == "device" for k in act_mm)
    for i, s in enumerate(steps):  # every read is an earlier step's write or a graph input
        before = {t.name for t in g.inputs} | {o for s2 in steps[:i] for o in s2.outputs}
        assert set(s.inputs) <= before


def test_activation_products_load_one_operand_as_weights(tmp_path):
    """Q·Kᵀ and P·V: lowered in their device segment as array jobs whose weights are one operand's
    rows (``actmatmul``: LoadWeights from local memory), with no constant weights of their own."""
    from nnisa.targets.tensil.compiler.lower import Lowering
    from nnisa.targets.tensil.compiler.segments import sub_graph
    g = load_model(make_bert(1, seq=7, hidden=16, heads=2, layers=1))
    act = {n.name for n in g.nodes if n.op == "MatMul" and n.inputs[1] not in g.initializers}
    jobs = []
    for i, st in enumerate(partition(g, LOWERINGS, None)):
        if st.kind == "device" and act & {n.name for n in st.nodes}:
            low = Lowering(sub_graph(g, st, f"s{i}"), 32).run()
            jobs += [o for o in low.ops if getattr(o, "kind", None) == "actmatmul"]
            # their only constants are the 0/1 lane-move matrices that bring operands into rows
            assert all(c.name.endswith(".lanes") for c in low.consts if c.name.split(".")[0] in act)
    assert len(act) == 2 and {j.node.name for j in jobs} == act


@pytest.mark.parametrize("name", ["digits_bert", "digits_vit"])
def test_bundled_encoders_agree_with_onnxruntime(name):
    rep = run_model("tensil", name, samples=16)
    assert rep["top1_agreement"] >= 0.75, rep["top1_agreement"]
    assert rep["host_steps"] and rep["cycles"] == sum(s["cycles"] for s in rep["segments"])


GENERATED = [("bert", dict(seed=1, seq=9, hidden=24, heads=3, layers=1)),
             ("bert", dict(seed=2, seq=12, hidden=48, heads=4, layers=2, ln="decomposed", gelu="tanh", mask=True)),
             ("vit", dict(seed=6, image=9, channels=1, patch=3, hidden=20, heads=2, layers=2, pool="mean",
                          ln="decomposed", gelu="tanh"))]
GENERATED_SLOW = [("bert", dict(seed=3, seq=5, hidden=16, heads=1, layers=1, ffn=40, classes=7)),
                  ("bert", dict(seed=4, seq=33, hidden=40, heads=5, layers=1, gelu="op", opset=20)),
                  ("vit", dict(seed=5, image=8, channels=3, patch=2, hidden=32, heads=4, layers=1)),
                  ("vit", dict(seed=7, image=12, channels=2, patch=4, hidden=36, heads=3, layers=1, ffn=50, classes=5))]


def _generated(kind, kw, tmp_path):
    p = tmp_path / f"{kind}.onnx"
    onnx.save((make_bert if kind == "bert" else make_vit)(**kw), p)
    rep = run_model("tensil", p, samples=16)
    assert rep["top1_agreement"] >= 0.75, (kind, kw, rep["top1_agreement"])


@pytest.mark.parametrize("kind,kw", GENERATED, ids=[f"{k}{kw['seed']}" for k, kw in GENERATED])
def test_generated_encoders(kind, kw, tmp_path):
    _generated(kind, kw, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind,kw", GENERATED_SLOW, ids=[f"{k}{kw['seed']}" for k, kw in GENERATED_SLOW])
def test_generated_encoders_more_shapes(kind, kw, tmp_path):
    _generated(kind, kw, tmp_path)


def test_segmented_folder_runs_under_nnisa_sim(tmp_path, capsys):
    m = make_vit(3, image=6, patch=2, hidden=16, heads=2, layers=1)
    p = tmp_path / "vit.onnx"
    onnx.save(m, p)
    with pytest.raises(SystemExit) as exc:
        main(["compile", "-t", "tensil", str(p), "-o", str(tmp_path / "out"), "--json"])
    assert exc.value.code == 0
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    kinds = [s["kind"] for s in man["steps"]]
    assert "host" in kinds and all((tmp_path / "out" / s["folder"] / "manifest.json").is_file()
                                   for s in man["steps"] if s["kind"] == "device")
    x = np.random.default_rng(0).uniform(0, 1, (4, 1, 1, 6, 6)).astype(np.float32)  # 4 samples of (1, 1, 6, 6)
    np.save(tmp_path / "x.npy", x)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(tmp_path / "out"), "--inputs", str(tmp_path / "x.npy"),
              "--outputs", str(tmp_path / "y.npy"), "--json"])
    assert exc.value.code == 0
    stats = json.loads(capsys.readouterr().out)
    y = np.load(tmp_path / "y.npy")
    sess = ort.InferenceSession(m.SerializeToString())
    ref = np.concatenate([sess.run(None, {"input": x[i]})[0] for i in range(4)])
    assert y.shape == ref.shape == (4, 10) and np.abs(y - ref).max() < 0.3
    assert stats["cycles"] == sum(s["cycles"] for s in stats["segments"]) > 0
    assert len(stats["host_steps"]) == kinds.count("host") and stats["host_share"] > 0
    # a --raw read of a segmented model says why not, in one line
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(tmp_path / "out"), "--inputs", str(tmp_path / "x.npy"), "--raw"])
    assert exc.value.code == 2 and "device segments" in capsys.readouterr().err


def test_segmented_folder_errors_are_one_line(tmp_path):
    res = compile_model(make_bert(2, seq=4, hidden=8, heads=1, layers=1).SerializeToString(), config="zcu104",
                        out_dir=tmp_path / "b", name="bert")
    assert isinstance(res.program, TensilPipeline)
    pipe = target("tensil").read(tmp_path / "b")
    assert isinstance(pipe, TensilPipeline)
    st = target("tensil").stats(pipe)  # stats and listings per segment; one Tensil file of it is refused
    assert st["segments"] == len(pipe.devices) and st["instructions"] == len(pipe) and st["host_steps"]
    assert target("tensil").disassemble(pipe).count("; device segment") == len(pipe.devices)
    with pytest.raises(UnsupportedError, match="segment's folder"):
        target("tensil").write(pipe, tmp_path / "x.tprog")
    man = json.loads((tmp_path / "b" / "manifest.json").read_text())
    man["steps"][0]["kind"] = "gpu"
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(FormatError, match="kind 'gpu'"):
        target("tensil").read(tmp_path / "b")
    man["steps"][0] = {"kind": "host", "nodes": ["nope"]}
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(FormatError, match="lacks: nope"):
        target("tensil").read(tmp_path / "b")


def test_model_without_device_work_is_refused(tmp_path):
    g = helper.make_graph([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=-1)], "ln",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
                          [numpy_helper.from_array(np.ones(8, np.float32), "g"),
                           numpy_helper.from_array(np.zeros(8, np.float32), "b")])
    p = tmp_path / "ln.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    with pytest.raises(UnsupportedError, match="no node runs on the device"):
        compile_model(p, config="zcu104", out_dir=tmp_path / "o")


def test_pipeline_steps_types(tmp_path):
    res = compile_model(make_bert(5, seq=4, hidden=8, heads=2, layers=1).SerializeToString(), config="zcu104",
                        out_dir=tmp_path / "b", name="bert")
    steps = res.program.steps
    assert isinstance(steps[0], HostStep) and steps[0].nodes  # the embedding Gather of int64 token ids
    assert any(isinstance(s, DeviceStep) for s in steps)
