"""DAIS demo step: a small generated MLP → DAIS → interpreted, compared with onnxruntime and with the
frontend's quantized reference (for ``nnisa demo``)."""

from __future__ import annotations

import numpy as np


def small_mlp(sizes=(16, 32, 16, 5), seed: int = 0):
    """A Gemm/ReLU MLP as an ``onnx.ModelProto`` (random weights, fixed seed)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, cur = [], [], "x"
    for li, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits += [numpy_helper.from_array(rng.normal(0, 0.5, (a, b)).astype(np.float32), f"W{li}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, b).astype(np.float32), f"B{li}")]
        nodes.append(helper.make_node("Gemm", [cur, f"W{li}", f"B{li}"], [f"h{li}"]))
        cur = f"h{li}"
        if li < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [cur], [f"a{li}"]))
            cur = f"a{li}"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, sizes[0]])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, sizes[-1]])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run_demo(n: int = 1000) -> dict:
    """Compile, interpret, compare; returns a JSON-able summary."""
    import onnxruntime as ort

    from ...frontend import evaluate_quantized, load_model, quantize
    from .interp import run
    from .netcompile import compile_qgraph
    model = small_mlp()
    x = np.random.default_rng(1).uniform(-1, 1, (n, 16)).astype(np.float32)
    qg = quantize(load_model(model), x[:64], scale_mode="pow2")
    prog, layers = compile_qgraph(qg)
    qx = qg.quantize_input(qg.inputs[0].name, x).reshape(n, -1)
    y = run(prog, qx)
    ref = evaluate_quantized(qg, {qg.inputs[0].name: x})[qg.outputs[0].name].reshape(y.shape)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    yo = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(n)])
    yd = y * qg.outputs[0].scale
    st = prog.stats()
    return {"ops": st["n_ops"], "adders": st["n_adders"], "adder_bits": st["adder_bits"], "depth": st["adder_depth"],
            "bit_exact_vs_quantized_reference": bool(np.array_equal(y, ref)),
            "argmax_agreement_vs_onnxruntime": float(np.mean(yd.argmax(1) == yo.argmax(1))),
            "max_abs_err_vs_onnxruntime": float(np.abs(yd - yo).max()), "layers": layers}


if __name__ == "__main__":
    import json
    print(json.dumps(run_demo(), indent=1))
