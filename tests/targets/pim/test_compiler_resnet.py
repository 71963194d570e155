"""PIM compiler on ResNet-18 (generated, random weights) for the 8×8-core conformance hardware."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nnisa.targets.pim.compiler import compile_program

from .compiler_helpers import resnet18_quantized, run_sample


@pytest.fixture(scope="module")
def resnet18():
    qg, cfg = resnet18_quantized()
    t0 = time.perf_counter()
    c = compile_program(qg, cfg)
    return qg, c, cfg, time.perf_counter() - t0


def test_resnet18_mapping_report(resnet18):
    qg, c, cfg, seconds = resnet18
    r = c.report
    assert r["crossbars_total"] == 4096
    assert r["crossbars_used"] <= 4096 and r["crossbar_utilization"] > 0.5
    layers = r["layers"]
    assert len(layers) == 21      # 20 convolutions + the FC
    conv1 = layers[0]
    assert (conv1["K"], conv1["N"], conv1["windows"]) == (147, 64, 12544)
    # the largest layer gets the most replicas (balance), each on its own core (balanced mapping)
    # (fused with the max pool: replicas own whole pool rows, 112 rows -> 28 replicas of 4)
    assert conv1["replicas"] == max(l["replicas"] for l in layers) >= 24
    assert len(conv1["cores"]) == conv1["replicas"]
    fc = layers[-1]
    assert (fc["K"], fc["N"], fc["replicas"], fc["xbars_per_replica"]) == (512, 1000, 1, 32)
    last = layers[-3]
    assert last["K"] == 4608 and last["acc_bits"] == 31   # 4608·128·127 needs > 24 bits
    for core, groups in c.program.array_group_map.items():
        assert sum(groups) <= 64
    assert c.program.extended          # some cores hold more than 16 groups
    assert sum(v["instructions"] for v in r["per_core"].values()) == len(c.program)
    ops = r["op_counts"]
    # every window once, plus the conv rows two replicas of a pool-fused conv both compute
    need = sum(l["windows"] * l["hbar"] * l["agp"] for l in layers)
    assert need <= ops["mvmul"] <= 1.05 * need
    plain = compile_program(qg, cfg, fuse_pool=False)
    assert plain.report["op_counts"]["mvmul"] == sum(l["windows"] * l["hbar"] * l["agp"]
                                                     for l in plain.report["layers"])
    assert len(c.program) < 1_000_000   # PIMCOMP-NN: 3,119,907
    assert max(c.memory_map["local_memory_peak"].values()) <= 1 << 20


@pytest.mark.slow
def test_resnet18_bit_exact_functional(resnet18):
    qg, c, cfg, _ = resnet18
    x = np.random.default_rng(5).random((1, 3, 224, 224)).astype(np.float32)
    got, ref = run_sample(c, qg, x)
    np.testing.assert_array_equal(got["logits"], ref["logits"])


@pytest.mark.slow
def test_resnet18_element_schedule_bit_exact_and_faster(resnet18):
    from nnisa.targets.pim.sim.timing import simulate_timing
    qg, c_batch, cfg, _ = resnet18
    c = compile_program(qg, cfg, schedule="element")
    ops = c.program.op_counts()
    assert "wait" not in ops and ops["send"] == ops["recv"]
    x = np.random.default_rng(6).random((1, 3, 224, 224)).astype(np.float32)
    got, ref = run_sample(c, qg, x)
    np.testing.assert_array_equal(got["logits"], ref["logits"])
    cfg = cfg.model_copy(deep=True)      # ResNet-18 runs longer than the config's 17 ms sim_time
    cfg.sim_config.sim_time = max(cfg.sim_config.sim_time, 1000)
    lat = {m: simulate_timing(p, cfg, mode="pimsim").latency_ps for m, p in (("batch", c_batch.program),
                                                                            ("element", c.program))}
    assert lat["element"] < lat["batch"], lat
