"""Batched passes (issue 30): N samples through the device at once against the readable
reference (each sample alone, copy by copy), bit for bit in values, cycles and every figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from generated.modelgen import generate
from nnisa.api import prepare_model, run_model
from nnisa.core.target import get_target
from nnisa.frontend.models import bundled_model_path
from nnisa.targets.cherry.config import CherryConfig
from nnisa.targets.cherry.sim.memory import DeviceMemory
from nnisa.targets.cherry.sim.runtime import samples_per_pass, simulate_samples

EXPORTS = Path(__file__).resolve().parents[2] / "data" / "torch_exports"


def _samples(path, n, fmt):
    pm = prepare_model(path, samples=n)
    comp = get_target("cherry").compile(pm, config=f"element_format={fmt}")
    return comp, [comp.encode_inputs({k: v[i] for k, v in pm.inputs.items()}) for i in range(n)]


def _same_figures(a, b):
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d.pop("wall_s", None)
    assert da == db


def _check(comp, samples, per_pass):
    plan, cfg = comp.program.plan, comp.config
    fast, st_fast, _, _ = simulate_samples(plan, cfg, samples, per_pass=per_pass)
    ref, st_ref, _, _ = simulate_samples(plan, cfg, samples, engine="reference")
    assert len(fast) == len(ref) == len(samples)
    for f, r in zip(fast, ref):
        assert f.keys() == r.keys()
        for k in f:
            assert f[k].shape == r[k].shape and np.array_equal(f[k].view(np.uint32), r[k].view(np.uint32)), k
    assert st_fast.cycles == st_ref.cycles  # None for models of host steps only (Gather, Pad...)
    _same_figures(st_fast, st_ref)
    return fast


@pytest.mark.parametrize("model", ["digits_cnn", "gru_cell_state", "cnn_batch4"])
def test_batched_passes_equal_the_reference(model):
    """A bundled CNN, a two-input GRU cell (state as the 2nd input) and a model of batch 4: 5
    samples in passes of 2 (the last one partial) give each sample's values, the cycles and every
    figure of the reference bit for bit."""
    path = bundled_model_path(model) if model.startswith("digits") else EXPORTS / f"{model}.onnx"
    comp, samples = _samples(path, 5, "cherry18")
    out = _check(comp, samples, per_pass=2)
    assert not all(np.array_equal(out[0][k], out[1][k]) for k in out[0])  # the samples differ


@pytest.mark.parametrize("op", ["Conv", "MaxPool", "Concat", "Split", "Gather", "Softmax", "LayerNormalization",
                                "Pad", "MatMulActivations", "Transpose", "GlobalAveragePool", "Max"])
@pytest.mark.parametrize("fmt", ["cherry18", "fp32"])
def test_batched_generated_models_equal_the_reference(tmp_path, op, fmt):
    """Generated models of random shapes (host steps: im2col, windows, concat, take, pad;
    device reductions and transposes), 3 samples in one pass."""
    gen = generate(op, seed=3, batch=1 + (op == "Conv"))
    path = tmp_path / "m.onnx"
    onnx.save(gen.model, path)
    comp, samples = _samples(path, 3, fmt)
    _check(comp, samples, per_pass=None)


def test_run_model_runs_one_pass_and_matches_per_sample_runs():
    """``run_model`` on 6 samples equals six one-sample runs (outputs, cycles, energy)."""
    path = bundled_model_path("digits_cnn")
    from nnisa.frontend.models import bundled_testset
    x, _ = bundled_testset("digits_cnn")
    x = x[:6]
    tgt = get_target("cherry")
    comp = tgt.compile(path)
    name = next(iter(comp.program.plan.inputs))
    outs, st, _ = tgt.run_compiled(comp, {name: x})
    (out,) = outs
    for i in range(len(x)):
        one, st1, _ = tgt.run_compiled(comp, {name: x[i:i + 1]})
        assert np.array_equal(one[out][0].view(np.uint32), outs[out][i].view(np.uint32))
        assert st1.cycles == st.cycles > 0 and st1.energy_pj == st.energy_pj
    rep = run_model("cherry", path, inputs={name: x})
    assert rep["samples"] == 6 and rep["cycles"] == st.cycles


def test_samples_per_pass_bounds_the_memory():
    """A pass holds the cache and the plan's device memory once per sample, within 1 GB: SZ 32's
    32 MB cache alone gives 32 samples, with 60,000 device tiles 3; SZ 4 the cap of 64."""
    assert samples_per_pass(CherryConfig(sz=32)) == 32
    assert samples_per_pass(CherryConfig(sz=32), 60_000) == 3
    assert samples_per_pass(CherryConfig(sz=4), 65_536) == 64
    assert samples_per_pass(CherryConfig(sz=32, cache_tiles=1 << 20)) == 1


def test_device_memory_shares_constants_and_grows_own_tiles():
    assert len(DeviceMemory(1000, 3, 4, own_tiles=200).own) == 200  # a plan's top, reserved at once
    mem = DeviceMemory(1000, 3, 4)
    assert mem.read(np.array([5, 999])).shape == (2, 1, 4, 4) and len(mem.own) == 0  # shared: broadcast it
    assert mem.range(998, 2).shape == (2, 3, 4, 4)
    mem.upload_shared(10, np.full((2, 4, 4), 7.0, np.float32))
    per = np.arange(2 * 3 * 16, dtype=np.float32).reshape(2, 3, 4, 4)
    mem.upload(11, per)  # tile 11 becomes one value per sample, tile 10 stays shared
    got = mem.read(np.array([10, 11, 12, 10]))
    assert np.array_equal(mem.read(slice(12, 10, -1)), got[2:0:-1])
    assert np.all(got[0] == 7.0) and np.array_equal(got[1:3], per) and np.all(got[3] == 7.0)
    assert 13 <= len(mem.own) < 1000 and mem.is_shared[10] and not mem.is_shared[11]
    mem.set_tile(10, 1, np.ones((4, 4), np.float32))  # one sample writes a shared tile
    assert np.all(mem.tile(10, 0) == 7.0) and np.all(mem.tile(10, 1) == 1.0) and np.all(mem.tile(10, 2) == 7.0)
    twin = mem.copy()
    assert twin.equals(mem)
    twin.set_tile(900, 2, np.ones((4, 4), np.float32))
    assert not twin.equals(mem) and not mem.equals(twin)
