"""PIM issue 14 on small models: the throughput schedule (a layer pipeline over a stream of
images), fusion (MaxPool, residual Add+ReLU, GlobalAveragePool), core-to-core activations in
the element schedule, and latency vs period figures.  ResNet-18: test_schedules_resnet.py (slow)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import run_model
from nnisa.cli import main
from nnisa.core.errors import ConfigError
from nnisa.frontend.models import make_lenet, make_mlp, make_resnet_block
from nnisa.targets.pim.compiler import compile_program
from nnisa.targets.pim.compiler.throughput import layer_stages
from nnisa.targets.pim.sim.stream import stream_figures
from nnisa.targets.pim.sim.timing import simulate_timing

from .compiler_helpers import assert_bit_exact, quantized, small_config

GM = -10          # the global memory's node in ``TimingResult.noc_bytes``


def gap_model(seed: int = 0) -> onnx.ModelProto:
    """Conv → Relu → GlobalAveragePool → Flatten → Gemm (8×8 input): the GAP fusion case."""
    rng = np.random.default_rng(seed)
    init = [numpy_helper.from_array(rng.normal(0, .3, (8, 3, 3, 3)).astype(np.float32), "w"),
            numpy_helper.from_array(rng.normal(0, .1, (8,)).astype(np.float32), "b"),
            numpy_helper.from_array(rng.normal(0, .3, (5, 8)).astype(np.float32), "f"),
            numpy_helper.from_array(np.zeros(5, np.float32), "fb")]
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["fl"], name="flat"),
             helper.make_node("Gemm", ["fl", "f", "fb"], ["logits"], transB=1, name="fc")]
    g = helper.make_graph(nodes, "gapnet", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])], init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def traffic(c, cfg) -> tuple[int, int, object]:
    """(global-memory bytes, core-to-core bytes, timing result) of one simulated image."""
    tr = simulate_timing(c.program, cfg, mode="pimsim")
    gm = sum(v for (s, d), v in tr.noc_bytes.items() if GM in (s, d))
    return gm, sum(tr.noc_bytes.values()) - gm, tr


# ----------------------------------------------------------------------------- stream figures
def test_stream_figures_latency_and_period():
    done = [100, 150, 200, 250, 300, 330]
    assert stream_figures(done) == (100, 46.0)                   # (330 - 100) / 5
    # a 3-stage pipeline: the last 2 images complete while it drains, not in steady state
    assert stream_figures(done, depth=3) == (100, 50.0)          # (250 - 100) / 3
    assert stream_figures(done, depth=6) == (100, None)          # no full-pipeline interval
    assert stream_figures([70]) == (70, None) and stream_figures(None) == (None, None)


def test_layer_stages_follow_graph_depth():
    qg, _ = quantized(make_resnet_block())
    c = compile_program(qg, small_config(16), fuse_add=False)
    # conv, conv, add(input, conv2): the add is one deeper than the second conv
    assert [type(l).__name__ for l in c.lowered.layers] == ["MatLayer", "MatLayer", "EltLayer"]
    assert layer_stages(c.lowered) == [0, 1, 2]
    c = compile_program(qg, small_config(16))
    assert layer_stages(c.lowered) == [0, 1]                     # add folded into the second conv


# ----------------------------------------------------------------------------- throughput schedule
@pytest.mark.parametrize("name, make", [("lenet", make_lenet), ("resnet_block", make_resnet_block),
                                        ("mlp", make_mlp)])
def test_throughput_stream_bit_exact_per_image(tmp_path, name, make, images=4):
    path = tmp_path / f"{name}.onnx"
    onnx.save(make(), path)
    rep = run_model("pim", path, samples=images, schedule="throughput", images=images)
    assert rep["bit_exact"] is True                  # every image of the stream against the reference
    cr = rep["compile_report"]
    assert cr["options"]["schedule"] == "throughput" and cr["options"]["images"] == images
    ops = cr["op_counts"]
    assert "wait" not in ops and "sync" not in ops   # no global barriers
    assert ops.get("send", 0) == ops.get("recv", 0)
    es = cr["element_schedule"]
    assert es["stages"] == max(layer_stages_of(path)) + 1
    assert es["rounds"] == images + es["stages"] - 1
    assert rep["latency_ns"] > 0
    if images > es["stages"]:
        assert 0 < rep["period_ns"] < rep["latency_ns"]


def layer_stages_of(path) -> list[int]:
    return layer_stages(compile_program(path).lowered)


def test_throughput_period_beats_batch_and_element_on_lenet():
    qg, _ = quantized(make_lenet())
    cfg = small_config(16)
    figs = {}
    for mode in ("batch", "element", "throughput"):
        c = compile_program(qg, cfg, schedule=mode, images=8)
        tr = simulate_timing(c.program, cfg, mode="pimsim")
        figs[mode] = (tr.stream_latency_ps, tr.period_ps)
        assert tr.period_ps is not None and len(tr.image_done_ps) == 8
    # the pipeline trades latency for period (measured over 8 images: period 155 µs vs 196 µs
    # batch and 168 µs element; latency 631 µs vs 202 µs batch and 176 µs element)
    assert figs["throughput"][1] < figs["batch"][1]
    assert figs["throughput"][1] < figs["element"][1]
    assert figs["throughput"][0] > figs["element"][0]


@pytest.mark.parametrize("make", [make_lenet, make_resnet_block, gap_model])
def test_throughput_with_unfused_vector_layers(make):
    # MaxPool / Add / GlobalAveragePool as their own layers: coarse tasks per core, own stages
    qg, x = quantized(make())
    c = compile_program(qg, small_config(16), schedule="throughput", images=3, fuse_pool=False, fuse_add=False,
                      fuse_gap=False)
    assert any(type(l).__name__ in ("PoolLayer", "EltLayer", "GapLayer") for l in c.lowered.layers)
    assert c.program.pipeline_depth == max(layer_stages(c.lowered)) + 1
    stride = c.memory_map["image_stride"]
    from nnisa.frontend import evaluate_quantized
    from nnisa.targets.pim.compiler.io import input_segments
    from nnisa.targets.pim.sim.functional import run_functional
    gm = dict(c.gmem)
    for k in range(3):
        for t in c.lowered.inputs:
            for a, b in input_segments(t, qg.quantize_input(t.name, x[k:k + 1])).items():
                gm[a + k * stride] = b
    res = run_functional(c.program, c.config, c.weights, gm)
    for k in range(3):
        ref = evaluate_quantized(qg, {qg.inputs[0].name: x[k:k + 1]})
        for t in c.lowered.outputs:
            got = from_gmem(res.gmem, t, k * stride)
            np.testing.assert_array_equal(got, ref[t.name], err_msg=f"image {k}")


def from_gmem(gmem, t, ofs: int) -> np.ndarray:
    """Output ``t`` of the image whose buffers lie ``ofs`` bytes up."""
    from nnisa.targets.pim.compiler.io import from_storage
    return from_storage(t, gmem.read_tensor(int(t.buf.addr) + ofs, int(np.prod(t.shape)), t.bits))


def test_throughput_split_replicas_and_no_links():
    # 3 crossbars per core: LeNet's 400x120 FC spreads over cores, its partial sums travel by
    # send/recv inside the round; without core links that is refused with the node's name
    from nnisa.core.errors import UnsupportedError
    qg, x = quantized(make_lenet())
    c = compile_program(qg, small_config(16, xbars=3), schedule="throughput")
    fc = next(l for l in c.report["layers"] if l["K"] == 400)
    assert len(fc["cores"]) >= 2 and c.program.op_counts()["send"] > 0
    assert_bit_exact(c, qg, x[:2])
    with pytest.raises(UnsupportedError, match="gemm.*core links"):
        compile_program(qg, small_config(16, xbars=3, links=False), schedule="throughput")


def test_throughput_program_marks_pipeline_depth_in_bundle(tmp_path):
    from nnisa.targets.pim.formats.bundle import read_bundle
    from nnisa.targets.pim.compiler.output import write_outputs
    qg, _ = quantized(make_lenet())
    c = compile_program(qg, small_config(16), schedule="throughput", images=7)
    depth = c.report["element_schedule"]["stages"]
    assert c.program.pipeline_depth == depth > 1
    write_outputs(c, tmp_path)
    man = json.loads((tmp_path / "manifest.json").read_text())
    assert man["stream"]["pipeline_depth"] == depth and man["stream"]["images"] == 7
    b = read_bundle(tmp_path)
    assert b.program.pipeline_depth == depth and b.program.images == 7


@pytest.mark.parametrize("depth", [0, "x", 1 << 20])
def test_bad_pipeline_depth_in_manifest_is_one_line_error(tmp_path, depth):
    from nnisa.core.errors import NnisaError
    from nnisa.targets.pim.compiler.output import write_outputs
    from nnisa.targets.pim.formats.bundle import read_bundle
    qg, _ = quantized(make_mlp())
    write_outputs(compile_program(qg, small_config(4), schedule="throughput", images=2), tmp_path)
    man = json.loads((tmp_path / "manifest.json").read_text())
    man["stream"]["pipeline_depth"] = depth
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NnisaError, match="pipeline_depth") as ei:
        read_bundle(tmp_path)
    assert "\n" not in str(ei.value)


def test_images_option_range():
    qg, _ = quantized(make_mlp())
    for bad in (0, 257):
        with pytest.raises(ConfigError, match="images must be"):
            compile_program(qg, small_config(4), images=bad)


# ----------------------------------------------------------------------------- fusion
@pytest.mark.parametrize("name, make, folded", [
    ("lenet", make_lenet, ["MaxPool", "MaxPool"]),
    ("resnet_block", make_resnet_block, ["Add"]),
    ("gap", gap_model, ["GlobalAveragePool"]),
])
def test_fusion_bit_exact_and_saves_global_memory_traffic(name, make, folded):
    qg, x = quantized(make())
    cfg = small_config(16)
    fused = compile_program(qg, cfg)
    plain = compile_program(qg, cfg, fuse_pool=False, fuse_add=False, fuse_gap=False)
    assert [f.split("(")[1].split(")")[0] for f in fused.report["fused"]] == folded
    assert plain.report["fused"] == []
    assert len(fused.lowered.layers) < len(plain.lowered.layers) or name == "gap"
    assert_bit_exact(fused, qg, x[:2])
    assert_bit_exact(plain, qg, x[:1])
    gm_fused, _, tr_f = traffic(fused, cfg)
    gm_plain, _, tr_p = traffic(plain, cfg)
    assert gm_fused < gm_plain, (gm_fused, gm_plain)
    # fewer layer barriers in the batch schedule
    assert fused.program.op_counts().get("wait", 0) < plain.program.op_counts().get("wait", 0) or name == "gap"


def test_gap_fusion_in_every_schedule():
    qg, x = quantized(gap_model())
    for mode in ("element", "throughput"):
        c = compile_program(qg, small_config(16), schedule=mode)
        assert [type(l).__name__ for l in c.lowered.layers] == ["MatLayer", "GapFinishLayer", "MatLayer"]
        assert_bit_exact(c, qg, x[:2])


@pytest.mark.parametrize("links", [True, False])
def test_batch_independent_layers_share_a_barrier_phase(links):
    # ResNet-20v2's downsampling blocks: the 1x1 shortcut conv reads the block input like the
    # first 3x3 conv, so both run between the same two barriers
    from nnisa.frontend.models import make_resnet20v2
    qg, x = quantized(make_resnet20v2(softmax=False))
    cfg = small_config(16)
    c = compile_program(qg, cfg, links=links)
    waits = c.program.op_counts()["wait"]
    barriers = waits // len(c.program.cores)          # every core waits once per barrier
    layers = c.lowered.layers

    def reads(l):
        return {id(t.buf) for t in l.inputs} | ({id(l.fused_add.other.buf)} if getattr(l, "fused_add", None) else set())
    joined = sum(1 for a, b in zip(layers, layers[1:]) if id(a.out.buf) not in reads(b))
    assert joined == 3                                     # measured: the shortcut convs
    assert barriers == len(layers) - 1 - joined
    assert_bit_exact(c, qg, x[:1])
    assert simulate_timing(c.program, cfg, mode="pimsim").latency_ps > 0


# ----------------------------------------------------------------------------- core-to-core activations
@pytest.mark.parametrize("make, factor", [(make_lenet, 0.5), (make_resnet_block, 0.6)])
def test_element_schedule_core_to_core_activations(make, factor):
    qg, x = quantized(make())
    cfg = small_config(16)
    c2c = compile_program(qg, cfg, schedule="element")
    viagm = compile_program(qg, cfg, schedule="element", c2c=False)
    es, es_gm = c2c.report["element_schedule"], viagm.report["element_schedule"]
    assert es["messages"] > 0 and es["message_bytes"] > 0 and es["tokens"] == 0 and es["c2c_spilled"] == []
    assert es_gm["messages"] == 0 and es_gm["tokens"] > 0
    ops = c2c.program.op_counts()
    assert "wait" not in ops and "sync" not in ops and ops["send"] == ops["recv"]
    assert_bit_exact(c2c, qg, x[:2])
    assert_bit_exact(viagm, qg, x[:1])
    # the timing simulation completes (deadlock-free) and the activations leave global memory
    # (what stays: the model's input and output; measured 4,464 vs 8,336 bytes for the block)
    gm_c2c, noc_c2c, _ = traffic(c2c, cfg)
    gm_gm, noc_gm, _ = traffic(viagm, cfg)
    assert gm_c2c < gm_gm * factor, (gm_c2c, gm_gm)
    assert noc_c2c > noc_gm


def test_element_c2c_spills_when_local_memory_is_small():
    # 2 cores with 8 KiB of local memory: the second conv's input regions do not fit (3/8 of the
    # memory is the budget), they go through global memory with a token instead
    qg, x = quantized(make_resnet_block())
    c = compile_program(qg, small_config(2, lmem=8 * 1024), schedule="element", batch=4)
    es = c.report["element_schedule"]
    assert es["c2c_spilled"] == ["layer 1 replica 0 (main)", "layer 1 replica 1 (main)"]
    assert es["tokens"] > 0
    assert_bit_exact(c, qg, x[:1])


# ----------------------------------------------------------------------------- CLI: latency and period
def test_cli_run_and_sim_report_latency_and_period(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    onnx.save(make_mlp(), path)
    with pytest.raises(SystemExit) as ei:
        main(["run", "-t", "pim", str(path), "-O", "schedule=throughput", "-O", "images=5", "--samples", "5",
              "--json"])
    out = capsys.readouterr()
    assert ei.value.code == 0, out.err
    rep = json.loads(out.out)
    assert rep["bit_exact"] is True and rep["latency_ns"] > 0 and rep["period_ns"] > 0
    # an unmarked program repeated by the simulator: period = latency of one image (no overlap)
    with pytest.raises(SystemExit) as ei:
        main(["compile", "-t", "pim", str(path), "-o", str(tmp_path / "b"), "--json"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        main(["sim", "-t", "pim", str(tmp_path / "b"), "--mode", "timing", "-O", "images=3", "--json"])
    out = capsys.readouterr()
    assert ei.value.code == 0, out.err
    data = json.loads(out.out)
    assert data["latency_ns"] > 0 and data["period_ns"] > 0
    assert data["period_ns"] <= data["latency_ns"] * 1.01


def test_cli_sim_of_a_throughput_bundle(tmp_path, capsys):
    from .compiler_helpers import cli
    path = tmp_path / "mlp.onnx"
    onnx.save(make_mlp(), path)
    for images in (2, 6):                       # the MLP's pipeline has 3 stages
        out = tmp_path / f"b{images}"
        code, _, err = cli(["compile", "-t", "pim", str(path), "-o", str(out), "-O", "schedule=throughput",
                            "-O", f"images={images}", "--json"], capsys)
        assert code == 0, err
        code, text, err = cli(["sim", "-t", "pim", str(out), "--mode", "timing", "--json"], capsys)
        assert code == 0, err
        data = json.loads(text)
        assert data["images"] == images and len(data["image_done_ns"]) == images
        assert data["pipeline_depth"] == 3 and data["latency_ns"] == data["image_done_ns"][0]
        if images == 2:
            assert data["period_ns"] is None and "compile with more images" in data["period_note"]
        else:
            done = data["image_done_ns"]
            assert data["period_ns"] == pytest.approx((done[3] - done[0]) / 3)
