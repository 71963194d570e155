"""Network compiler: convolutions, pooling, residual adds, the bundled models, and the numba CSE."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.core.errors import UnsupportedError
from nnisa.frontend import evaluate_quantized, load_model, quantize
from nnisa.frontend.models import bundled_model_path, bundled_testset
from nnisa.targets.dais.compiler.cmvm import CMVMCompiler, _to_int_matrix
from nnisa.targets.dais.sim.interp import run
from nnisa.targets.dais.compiler.netcompile import compile_qgraph
from nnisa.targets.dais.program import ProgramBuilder


def _check(model, x, n_calib=64):
    """Compile, run, compare with ``evaluate_quantized``; returns (program, layers, y, qgraph)."""
    g = load_model(model)
    qg = quantize(g, {g.inputs[0].name: x[:n_calib]}, scale_mode="pow2")
    p, layers = compile_qgraph(qg)
    qx = qg.quantize_input(qg.inputs[0].name, x).reshape(len(x), -1)
    y = run(p, qx)
    ref = evaluate_quantized(qg, {qg.inputs[0].name: x})[qg.outputs[0].name]
    assert np.array_equal(y, ref.reshape(y.shape))
    run(p, qx[:8], check=True)  # no op leaves its dtype
    assert sum(l["adders"] for l in layers) == p.stats()["n_adders"]
    return p, layers, y, qg


def _ort(model, x):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else open(model, "rb").read()
    s = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


@pytest.mark.parametrize("name,min_acc", [("digits_cnn", 0.97), ("digits_mlp", 0.94)])
def test_bundled_digits_models_bit_exact_and_top1(name, min_acc):
    x, labels = bundled_testset(name)
    path = bundled_model_path(name)
    p, layers, y, qg = _check(str(path), x)
    ref = _ort(str(path), x)
    agree = np.mean(y.argmax(1) == ref.argmax(1))
    assert agree >= 0.98
    assert np.mean(y.argmax(1) == labels) >= min_acc
    if name == "digits_cnn":
        convs = [l for l in layers if l["op"] == "Conv"]
        assert [c["positions"] for c in convs] == [64, 16] and [c["shape"] for c in convs] == [[9, 16], [144, 32]]
        assert (p.opcode == 6).sum() > 0  # max-pool muxes


def _model(nodes, inits, in_shape, out_name, out_shape):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
                          [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, None if out_shape is None else list(out_shape))], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _init(rng, name, shape, s=0.5):
    return numpy_helper.from_array(rng.normal(0, s, shape).astype(np.float32), name)


def test_conv_net_pools_residual_bit_exact():
    """Strided grouped conv, ceil-mode padded max pool, 3×3 average pool (divisors 4, 6, 9), residual
    Add, global average pool, Gemm."""
    rng = np.random.default_rng(3)
    inits = [_init(rng, "W1", (4, 2, 3, 3)), _init(rng, "B1", (4,), 0.1),
             _init(rng, "W2", (4, 2, 3, 3)), _init(rng, "B2", (4,), 0.1),
             _init(rng, "W3", (4, 5)), _init(rng, "B3", (5,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         ceil_mode=1),
        helper.make_node("Conv", ["p1", "W2", "B2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2),
        helper.make_node("Add", ["c2", "p1"], ["a"]),
        helper.make_node("AveragePool", ["a"], ["ap"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["ap"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "W3", "B3"], ["y"]),
    ]
    m = _model(nodes, inits, (1, 2, 9, 9), "y", (1, 5))
    x = np.random.default_rng(4).uniform(-1, 1, (200, 2, 9, 9)).astype(np.float32)
    p, layers, y, qg = _check(m, x)
    ops = [l["op"] for l in layers]
    assert ops == ["Conv", "MaxPool", "Conv", "Add", "AveragePool", "GlobalAveragePool", "Gemm"]
    assert len(np.unique(y, axis=0)) > 50  # outputs are not degenerate


def test_conv1d_as_1xk_conv2d_and_true_conv1d_imported():
    rng = np.random.default_rng(5)
    inits = [_init(rng, "W", (6, 3, 1, 5)), _init(rng, "B", (6,), 0.1)]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[1, 5], pads=[0, 2, 0, 2],
                              strides=[1, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[1, 2], strides=[1, 2])]
    m = _model(nodes, inits, (1, 3, 1, 16), "y", (1, 6, 1, 4))
    x = np.random.default_rng(6).uniform(-1, 1, (100, 3, 1, 16)).astype(np.float32)
    _check(m, x)
    m1 = _model([helper.make_node("Conv", ["x", "W1d", "B"], ["y"], kernel_shape=[5], pads=[2, 2])],
                [_init(rng, "W1d", (6, 3, 5)), _init(rng, "B", (6,))], (1, 3, 16), "y", (1, 6, 16))
    g1 = load_model(m1)  # issue 13: a 1-D Conv is a 2-D one of height 1 between Unsqueeze/Squeeze
    assert g1.op_counts()["Conv"] == 1 and g1.outputs[0].shape == (1, 6, 16)


def test_unsupported_op_names_node():
    rng = np.random.default_rng(7)
    pads = numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "P")
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["h"]), helper.make_node("Pad", ["h", "P"], ["y"])]
    m = _model(nodes, [_init(rng, "W", (4, 3)), _init(rng, "B", (3,)), pads], (1, 4), "y", (1, 5))
    g = load_model(m)
    qg = quantize(g, np.random.default_rng(0).uniform(-1, 1, (16, 4)).astype(np.float32), scale_mode="pow2")
    with pytest.raises(UnsupportedError, match=r"\(Pad\).*not supported"):
        compile_qgraph(qg)


def _solve(W, engine, method, tb, md):
    M, _ = _to_int_matrix(W)
    b = ProgramBuilder(W.shape[0])
    ins = [(b.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(W.shape[0])]
    res = CMVMCompiler(b, ins, method=method, tiebreak=tb, max_depth=md, engine=engine).solve(M)
    return b.ops_array().tolist(), res


@pytest.mark.parametrize("seed", range(4))
def test_numba_cse_equals_python_reference(seed):
    rng = np.random.default_rng(seed)
    W = rng.integers(-100, 100, (12 + seed, 10)).astype(float)
    W[rng.random(W.shape) < 0.3] = 0
    args = (["wmc", "mc"][seed % 2], seed, [None, 4][seed % 2])
    assert _solve(W, "python", *args) == _solve(W, "numba", *args)


def test_template_instantiation_drops_padding_inputs():
    W = np.array([[3, 5], [7, -1], [6, 2]], dtype=float)
    M, _ = _to_int_matrix(W)
    sb = ProgramBuilder(3)
    tmpl = CMVMCompiler(sb, [(sb.add_op(-1, j, -1, 0, (1, 7, 0)), 1, 7, 0) for j in range(3)])
    tmpl.solve(M)
    b = ProgramBuilder(3)
    s0, s2 = b.add_op(-1, 0, -1, 0, (1, 7, 0)), b.add_op(-1, 2, -1, 0, (1, 7, 0))
    comp = CMVMCompiler(b, [(s0, 1, 7, 0), (-1, 0, 0, 0), (s2, 1, 7, 0)], method="dummy")
    terms = comp.instantiate(tmpl)
    b.set_outputs([t[0] for t in terms], [t[1] for t in terms], [int(t[2]) for t in terms])
    p = b.build()
    x = np.array([[1, 0, 2], [-3, 0, 5], [127, 0, -128]])
    assert np.array_equal(run(p, x), x @ W.astype(np.int64))
    assert all(op.id0 >= 0 for op in p.ops if op.opcode in (0, 1))


def test_target_compile_report_and_run_compiled():
    from nnisa.core.target import get_target
    t = get_target("dais")
    assert t.demo_model == "digits_mlp"
    x, _ = bundled_testset("digits_mlp")
    res = t.compile(bundled_model_path("digits_mlp"))
    for k in ("adders", "adder_bits", "depth"):
        assert isinstance(res.report[k], int) and res.report[k] > 0
    outs, stats, checks = t.run_compiled(res, {"input": x[:64]})
    assert checks["bit_exact"] is True
    assert outs["logits"].shape == (64, 10)
