"""Generated models on DAIS (issue 26): every operator DAIS lowers, random shapes, strides 1–3, pads,
dilations, groups, odd channels, batch; each compiled program bit-exact against the frontend's integer
reference.  A fast subset runs by default; the full sweep (8 seeds per operator) is marked slow.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.core.errors import NnisaError

from .harness import run_generated
from .modelgen import GENERATORS, generate

#: generator → what DAIS gives: every operator it lowers runs bit-exact
DAIS_OPS = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Relu", "LeakyRelu", "Sigmoid",
            "Tanh", "HardSigmoid", "HardSwish", "Exp", "Erf", "Clip", "SiLU", "Gelu", "Softmax", "Add", "Mul", "Sub",
            "Concat", "Slice", "Split", "Gather", "Transpose", "Reshape", "Pad", "BatchNormalization", "ReduceMean",
            "LayerNormalization", "MatMulActivations")
#: one seed per operator for the default suite (seeds whose models compile in about a second)
FAST_SEED = {"Conv": 1, "AveragePool": 1, "Gemm": 0, "MatMul": 1, "Concat": 0}
#: operators DAIS refuses with one line (the frontend has no integer semantics for them)
REFUSED = ("Log",)


def _check(op: str, seed: int) -> None:
    gen = generate(op, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run_generated("dais", gen, samples=2)
    assert out.kind == "exact", f"{gen}: {out.kind} {out.message}"


def test_generators_cover_dais_table():
    from nnisa.targets.dais.compiler.netcompile import LOWERINGS
    assert set(DAIS_OPS) <= set(GENERATORS)
    for op in ("Conv", "Gemm", "MatMul", "Pad", "Softmax", "LayerNorm", "Gelu", "Erf", "Exp", "Gather", "Slice"):
        assert op in LOWERINGS


@pytest.mark.parametrize("op", DAIS_OPS)
def test_generated_fast(op):
    _check(op, FAST_SEED.get(op, 0))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 8))
@pytest.mark.parametrize("op", DAIS_OPS)
def test_generated_sweep(op, seed):
    _check(op, seed)


@pytest.mark.parametrize("op", REFUSED)
def test_refused_in_one_line(op):
    out = run_generated("dais", generate(op, 0), samples=1)
    assert out.kind == "refused" and "\n" not in out.message and op in out.message


@pytest.mark.parametrize("op,seed", [("Conv", 1), ("Gemm", 0), ("Add", 1), ("MaxPool", 0), ("LayerNormalization", 1),
                                     ("MatMulActivations", 2)])
def test_batch_axis_is_the_sample_axis(op, seed):
    """A model exported with batch 3: the frontend hands DAIS the batch-1 graph of one row
    (frontend/batch.py); the program runs the three rows as three samples and each equals the
    integer reference of its row."""
    from nnisa.frontend import evaluate_quantized
    from nnisa.targets.dais.compiler import compile_model
    from nnisa.targets.dais.sim.interp import run
    gen = generate(op, seed, batch=3)
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(d) / "m.onnx"
        onnx.save(gen.model, path)
        res = compile_model(path)
    qg = res.qgraph
    name = qg.inputs[0].name
    assert qg.inputs[0].shape[0] == 1, "the compiler sees one row"
    x = np.random.default_rng(seed).uniform(-1, 1, (3, *qg.inputs[0].shape[1:])).astype(np.float32)
    q = qg.quantize_input(name, x)
    y = run(res.program, np.asarray(q, np.float64).reshape(3, -1))
    ref = np.stack([np.asarray(evaluate_quantized(qg, {name: x[i:i + 1]})[qg.outputs[0].name]).reshape(-1)
                    for i in range(3)])
    assert np.array_equal(y, ref), str(gen)


def _gru_cell(seed: int) -> onnx.ModelProto:
    """A GRU cell with its state as a second input (odd sizes), and two outputs (new state, gate)."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 30)), int(rng.integers(1, 30))
    inits, nodes = [], []

    def w(name, shape):
        inits.append(numpy_helper.from_array(rng.normal(0, 0.5, shape).astype(np.float32), name))
        return name

    def node(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    gate = {}
    for g in ("z", "r", "c"):
        gate[g] = (node("Gemm", ["x", w(f"W{g}", (n, m)), w(f"b{g}", (m,))], f"xw{g}"),
                   node("Gemm", ["h", w(f"U{g}", (m, m))], f"hu{g}"))
    z = node("Sigmoid", [node("Add", list(gate["z"]), "sz")], "z")
    r = node("Sigmoid", [node("Add", list(gate["r"]), "sr")], "r")
    c = node("Tanh", [node("Add", [gate["c"][0], node("Mul", [r, gate["c"][1]], "rh")], "sc")], "c")
    inits.append(numpy_helper.from_array(np.ones(1, np.float32), "one"))
    h2 = node("Add", [node("Mul", [z, "h"], "zh"), node("Mul", [node("Sub", ["one", z], "omz"), c], "omzc")], "h2")
    graph = helper.make_graph(nodes, "gru_cell", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n]),
                                                  helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, m])],
                              [helper.make_tensor_value_info(h2, TensorProto.FLOAT, [1, m]),
                               helper.make_tensor_value_info(z, TensorProto.FLOAT, [1, m])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("seed", [0, 1, *(pytest.param(s, marks=pytest.mark.slow) for s in (2, 3))])
def test_two_inputs_two_outputs(seed):
    """A recurrent cell with its state: two graph inputs in one program, two outputs."""
    from nnisa.api import run_model
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(d) / "gru.onnx"
        onnx.save(_gru_cell(seed), path)
        r = run_model("dais", path, samples=4)
    assert r["bit_exact"] is True and r["max_rel_error"] < 0.2


def test_too_large_refused_naming_the_limit():
    """A network above ``max_macs`` is refused before quantization, naming its MACs, the limit,
    the option and a size that would fit."""
    from nnisa.api import run_model
    gen = generate("Conv", 0)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "conv.onnx"
        onnx.save(gen.model, path)
        with pytest.raises(NnisaError) as e:
            run_model("dais", path, samples=1, max_macs=1000)
    msg = str(e.value)
    assert "multiply-accumulates" in msg and "max_macs" in msg and "would fit" in msg and "\n" not in msg
