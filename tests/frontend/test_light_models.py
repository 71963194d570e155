"""Float evaluator vs onnxruntime on the ``light_*`` models shipped inside the onnx package.

Their weights come from ConstantOfShape (all equal), so the logits are huge and nearly equal
across classes and the final Softmax is ill-conditioned (float32 ulp noise of the logits
changes the probabilities completely).  We therefore compare the Softmax *input* (logits),
which exercises every other op of the model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from frontend_helpers import assert_close, ort_run

from nnisa.frontend import evaluate_float, load_model

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
# Measured under ~2.5 s each on 2 cores; the others (4-9 s each) are marked slow.
FAST = {"squeezenet", "shufflenet", "zfnet512", "inception_v1"}
ALL = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet", "vgg19", "zfnet512"]


def _compare_name(g, original: onnx.ModelProto) -> str:
    """The logits tensor: the Softmax input, walked back to a tensor of the original model."""
    names = {o for n in original.graph.node for o in n.output}
    sm = [n for n in g.nodes if n.op == "Softmax"]
    name = sm[-1].inputs[0] if sm else g.outputs[0].name
    while name not in names:  # the opset converter adds Flatten/Reshape around old Softmax
        name = g.producer(name).inputs[0]
    return name


@pytest.mark.parametrize("model", [m if m in FAST else pytest.param(m, marks=pytest.mark.slow) for m in ALL])
def test_light_model_matches_ort(model):
    path = LIGHT / f"light_{model}.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not shipped by this onnx version")
    g = load_model(path)
    assert g.nodes and all(n.op != "BatchNormalization" for n in g.nodes)
    name = _compare_name(g, onnx.load(path))
    x = np.random.default_rng(0).standard_normal(g.inputs[0].shape).astype(np.float32)
    out = evaluate_float(g, x, return_all=True)[name]
    m = onnx.load(path)
    m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    ref = ort_run(m, {g.inputs[0].name: x}, [name])[0]
    assert_close(out, ref)
