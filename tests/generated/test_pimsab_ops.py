"""Generated models on PIMSAB (issue 26 item 1): every operator PIMSAB lowers, random shapes,
strides 1–3, paddings, dilations, groups, odd channel counts and several samples per run (the
batched functional machine), bit-exact against the frontend's integer reference.

The default run takes a fast subset; the full sweep (every generator x 6 seeds) is marked slow.
An operator the lowering table puts on the device must run there: a host fallback of it fails the
test unless its reason names a hardware limit (bitlines, CRAM width, channel counts).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.targets.pimsab.compiler.network import LOWERINGS
from nnisa.core.lowering import OnHost

from .harness import run_generated
from .modelgen import GENERATORS, Generated, generate

#: generators whose operator (or pattern) the PIMSAB table lowers to device programs
DEVICE = {op for op in GENERATORS if op in LOWERINGS and not isinstance(LOWERINGS[op], OnHost)} | {"MatMulActivations"}
#: host-fallback reasons that name a hardware limit (allowed even for device operators)
LIMITS = ("bitlines", "not a multiple of", "reciprocal too wide", "ceil_mode", "> 256 channels", "rank")


def check(gen: Generated, samples: int = 2) -> None:
    out = run_generated("pimsab", gen, samples=samples)
    assert out.kind in ("exact", "refused"), f"{gen}: {out.kind}: {out.message}"
    if out.kind == "refused":
        assert out.message and "\n" not in out.message.strip(), f"{gen}: refusal is not one line"
        return
    host = out.report["compile_report"]["host_layers"]
    op = "MatMul" if gen.op == "MatMulActivations" else gen.op
    if op in DEVICE:
        bad = [h for h in host if h["op"] == op and not any(k in h["reason"] for k in LIMITS)]
        assert not bad, f"{gen}: {op} ran on the host: {bad}"


FAST = [("Conv", s) for s in range(4)] + [("MatMulActivations", 0), ("MatMul", 1), ("Mul", 2), ("Add", 3),
                                           ("Sub", 1), ("Gemm", 0), ("MaxPool", 1), ("Softmax", 3),
                                           ("GlobalAveragePool", 3), ("Clip", 2), ("Max", 1)]


@pytest.mark.parametrize("op,seed", FAST, ids=[f"{o}-{s}" for o, s in FAST])
def test_generated_fast(op, seed):
    check(generate(op, seed), samples=3)


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(GENERATORS))
def test_generated_sweep(op):
    for seed in range(6):
        check(generate(op, seed), samples=2)


def _conv_model(cin, cout, k, stride, hw, softmax=False, group=1) -> Generated:
    rng = np.random.default_rng(cin * 100 + cout)
    w = numpy_helper.from_array(rng.normal(0, 0.3, (cout, cin // group, k, k)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[1, 1, 1, 1], group=group)]
    out = "y"
    if softmax:
        nodes += [helper.make_node("GlobalAveragePool", ["y"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
                  helper.make_node("Softmax", ["f"], ["p"], axis=1)]
        out = "p"
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return Generated("Conv", 0, onnx.shape_inference.infer_shapes(m), f"{cin}->{cout} k{k} s{stride} {hw}x{hw}")


@pytest.mark.parametrize("cin,cout,k,stride", [(13, 29, 3, 2), (5, 7, 3, 3)])
def test_strided_window_conv_odd_channels(cin, cout, k, stride):
    """Issue 26: a strided convolution with odd input channels stopped in code generation (the
    channel reduction pinned to the CRAMs was not a power of two; now padded with zero channels)."""
    check(_conv_model(cin, cout, k, stride, 17))


def test_depthwise_more_channels_than_bitlines():
    """EfficientNet-B0's 480-channel depthwise layers: the requantization over whole CRAMs (zero channels)."""
    check(_conv_model(300, 300, 3, 1, 4, group=300))


def test_softmax_output_bundle(tmp_path):
    """Issue 26: a model ending in Softmax stopped writing its bundle (float output, ``bits`` 0)."""
    from nnisa.core.bundle import read_manifest
    from nnisa.targets.pimsab.compiler.netcompile import compile_network
    gen = _conv_model(3, 6, 3, 1, 8, softmax=True)
    path = tmp_path / "m.onnx"
    onnx.save(gen.model, path)
    compile_network(str(path), out_dir=tmp_path / "out")
    man = read_manifest(tmp_path / "out")
    assert man.outputs[0].layout == "float32" and man.outputs[0].bits == 32
    check(gen)
