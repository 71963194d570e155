"""Network compiler: quantized MLPs (ReLU, Tanh LUT) match the frontend's quantized reference."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.frontend import evaluate_quantized, load_model, quantize
from nnisa.targets.dais.sim.interp import run
from nnisa.targets.dais.compiler.netcompile import compile_qgraph


def _mlp(sizes, act, seed):
    rng = np.random.default_rng(seed)
    nodes, inits, cur = [], [], "x"
    for li, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits += [numpy_helper.from_array(rng.normal(0, 0.5, (a, b)).astype(np.float32), f"W{li}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, b).astype(np.float32), f"B{li}")]
        nodes.append(helper.make_node("Gemm", [cur, f"W{li}", f"B{li}"], [f"h{li}"]))
        cur = f"h{li}"
        if li < len(sizes) - 2:
            nodes.append(helper.make_node(act, [cur], [f"a{li}"]))
            cur = f"a{li}"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, sizes[0]])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, sizes[-1]])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("act,sizes", [("Relu", (16, 32, 16, 5)), ("Tanh", (8, 12, 4)), ("Sigmoid", (6, 10, 3))])
def test_mlp_bit_exact_with_frontend(act, sizes):
    g = load_model(_mlp(sizes, act, len(sizes)))
    x = np.random.default_rng(1).uniform(-1.5, 1.5, (400, sizes[0])).astype(np.float32)
    qg = quantize(g, x[:64], scale_mode="pow2")
    p, layers = compile_qgraph(qg)
    ref = evaluate_quantized(qg, {qg.inputs[0].name: x})[qg.outputs[0].name]
    qx = qg.quantize_input(qg.inputs[0].name, x).reshape(len(x), -1)
    y = run(p, qx)
    assert np.array_equal(y, ref.reshape(y.shape))
    run(p, qx[:50], check=True)  # no op ever leaves its dtype
    assert sum(l["adders"] for l in layers) == p.stats()["n_adders"]
    if act != "Relu":
        assert (p.opcode == 8).sum() == sum(sizes[1:-1])
