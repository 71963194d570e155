"""Helpers of the PIM compiler tests: compile a model and run it on the functional simulator."""

from __future__ import annotations

import numpy as np

from cli_runner import run_cli as cli  # noqa: F401  (re-exported for the PIM tests)

from nnisa.frontend import evaluate_quantized, load_model, quantize
from nnisa.targets.pim.compiler import compile_program
from nnisa.targets.pim.compiler.io import input_segments, read_output
from nnisa.targets.pim.config import default_config
from nnisa.targets.pim.sim.functional import run_functional


def one_input_model(nodes, inits, xin, yout, opset: int = 17, ir_version: int = 8):
    """A float model of ``nodes`` from input ``x`` (shape ``xin``) to output ``y`` (``yout``)."""
    from onnx import TensorProto, helper
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xin)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, yout)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m


def small_config(cores: int = 16, xbars: int = 64, lmem: int | None = None, links: bool | None = None):
    """Conformance hardware (128x128 crossbars) with ``cores`` cores of ``xbars`` crossbars."""
    over = {"chip_config": {"core_config": {"matrix_config": {"xbar_array_count": xbars}}}}
    if lmem is not None:
        over["chip_config"]["core_config"]["local_memory_config"] = {"memory_size": lmem}
    if links is not None:
        over["nnisa"] = {"core_links": links}
    return default_config(cores, preset="conformance", overrides=over)


def quantized(model, samples: int = 8, seed: int = 0):
    """(QGraph, float samples) for a generated model, calibrated on seeded uniform inputs."""
    g = load_model(model)
    rng = np.random.default_rng(seed)
    x = rng.random((samples,) + tuple(g.inputs[0].shape[1:])).astype(np.float32)
    return quantize(g, {g.inputs[0].name: x}, scale_mode="pow2"), x


def run_sample(c, qg, x: np.ndarray) -> tuple[dict, dict]:
    """Simulate one sample (batch axis kept); returns (simulated, reference) integer outputs."""
    gm = dict(c.gmem)
    for t in c.lowered.inputs:
        gm.update(input_segments(t, qg.quantize_input(t.name, x)))
    res = run_functional(c.program, c.config, c.weights, gm)
    got = {t.name: read_output(t, res.gmem) for t in c.lowered.outputs}
    ref = evaluate_quantized(qg, {qg.inputs[0].name: x})
    return got, ref


def assert_bit_exact(c, qg, xs: np.ndarray) -> None:
    for i in range(len(xs)):
        got, ref = run_sample(c, qg, xs[i:i + 1])
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=f"sample {i}, output {k}")


def compile_q(qg, cfg, **kw):
    return compile_program(qg, cfg, **kw)


def resnet18_quantized():
    """(QGraph, config) of the ResNet-18 tests: generated random weights, pow2 calibration on two
    seeded inputs, the 8×8-core conformance config (64 conformance cores without ``../shared``)."""
    from nnisa.frontend.models import make_resnet18
    from nnisa.targets.pim.config import load_config
    from shared_data import SHARED_DIR
    g = load_model(make_resnet18())
    x = np.random.default_rng(0).random((2, 3, 224, 224)).astype(np.float32)
    qg = quantize(g, {"input": x}, scale_mode="pow2")
    path = SHARED_DIR / "conformance" / "pim" / "pimsim_config.json"
    return qg, (load_config(path) if path.exists() else small_config(64))
