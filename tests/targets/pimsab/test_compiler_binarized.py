"""SIMDRAM binarized kernels (spec §5.5, PIMSAB-S): XOR + bit-serial add-tree popcounts, thresholds
and pools as DSL programs; LeNet end to end against a NumPy ±1 network, VGG layer lists compile."""

from __future__ import annotations

import numpy as np
import pytest

from nnisa.targets.pimsab.compiler import binarized as B
from nnisa.targets.pimsab.compiler import dsl as T
from nnisa.targets.pimsab.config import load_config


def pm(bits):
    """Bits → ±1 values (1 = +1, 0 = −1)."""
    return 2 * np.asarray(bits, np.int64) - 1


def conv_pm(x, w):
    """Valid 2-D convolution (cross-correlation) of ±1 values: x (C, H, W), w (M, C, K, K)."""
    M, C, K, _ = w.shape
    E, F = x.shape[1] - K + 1, x.shape[2] - K + 1
    out = np.zeros((M, E, F), np.int64)
    for r in range(K):
        for s in range(K):
            out += np.einsum("mc,cef->mef", w[:, :, r, s], x[:, r:r + E, s:s + F])
    return out


def pool_max(b, k):
    C, H, W = b.shape
    return b[:, :H // k * k, :W // k * k].reshape(C, H // k, k, W // k, k).max(axis=(2, 4))


def lenet_numpy(img, W):
    """The binarized LeNet in ±1 arithmetic: sign(x) = 1 iff x ≥ 0; the last layer's dot products."""
    a1 = conv_pm(pm(img), pm(W["conv1"]))
    p1 = pool_max((a1 >= 0).astype(np.int64), 2)
    a2 = conv_pm(pm(p1), pm(W["conv2"]))
    p2 = pool_max((a2 >= 0).astype(np.int64), 2)
    f1 = (pm(p2.reshape(-1)) @ pm(W["fc1"]) >= 0).astype(np.int64)
    f2 = (pm(f1) @ pm(W["fc2"]) >= 0).astype(np.int64)
    return {"pool1": p1, "pool2": p2, "act1": f1, "act2": f2, "scores": pm(f2) @ pm(W["fc3"])}


@pytest.fixture(scope="module")
def lenet_programs():
    return B.compile_network("lenet")


@pytest.mark.parametrize("seed", [0, 1])
def test_lenet_bit_exact(lenet_programs, seed):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 2, (1, 32, 32))
    W = {"conv1": rng.integers(0, 2, (6, 1, 5, 5)), "conv2": rng.integers(0, 2, (16, 6, 5, 5)),
         "fc1": rng.integers(0, 2, (400, 120)), "fc2": rng.integers(0, 2, (120, 84)),
         "fc3": rng.integers(0, 2, (84, 10))}
    got = B.run_network(lenet_programs, img, W)
    ref = lenet_numpy(img, W)
    for name in ("pool1", "pool2", "act1", "act2", "scores"):
        assert np.array_equal(np.asarray(got[name]).reshape(ref[name].shape), ref[name]), name
    # both signs occur, so the thresholds are really tested
    assert 0 < ref["act1"].sum() < ref["act1"].size and 0 < ref["pool1"].sum() < ref["pool1"].size


def test_lenet_programs_use_xor_and_add_trees(lenet_programs):
    names = [p.layer.name for p in lenet_programs]
    assert names == ["conv1", "pool1", "conv2", "pool2", "fc1", "act1", "fc2", "act2", "fc3"]
    for p in lenet_programs:
        mn = p.compiled.program.mnemonics()
        if p.layer.kind in ("conv", "mv"):
            assert "xor" in mn and "add" in mn and "mult" not in mn
            # adaptive precision: a popcount of n terms needs 1 + ceil(log2 n) bits, not the declared 16
            assert p.compiled.candidate.nest.out_width.bits < 16
        assert p.compiled.report["wordlines_codegen"] <= 256
    timing = B.time_network(lenet_programs)
    assert timing["cycles"] == sum(r["cycles"] for r in timing["layers"]) > 0


def test_conv_stride_and_padding_layout_is_affine():
    """A strided conv on the row-major pixel order (p = e·W + f) matches NumPy on the valid pixels."""
    L = B.BinLayer("conv", "c", 2, 4, 11, 11, 3, stride=2)
    prog = T.build(B.conv_program(L), "pimsab_s")
    rng = np.random.default_rng(3)
    x, w = rng.integers(0, 2, (2, 11, 11)), rng.integers(0, 2, (4, 2, 3, 3))
    shape = prog.layout.inputs["c_in"][0]
    flat = np.pad(x.reshape(2, -1), ((0, 0), (0, shape[1] - 121)))
    pc = prog.run({"c_in": flat, "c_w": w})[0]["c"]
    ref = np.zeros((4, L.e, L.f), np.int64)
    for r in range(3):
        for s in range(3):
            ref += np.einsum("mc,cef->mef", pm(w[:, :, r, s]), pm(x[:, r:r + 2 * L.e - 1:2, s:s + 2 * L.f - 1:2]))
    got = pc[:, :L.e * L.w].reshape(4, L.e, L.w)[:, :, :L.f]
    assert np.array_equal(18 - 2 * got, ref)


@pytest.mark.parametrize("name", ["vgg13", "vgg16"])
def test_vgg_layer_lists(name):
    layers = B.NETWORKS[name]()
    convs = [(L.channels, L.out) for L in layers if L.kind == "conv"]
    body = [(96, 256), (256, 384), (384, 384), (384, 256)]
    assert convs == [(3, 96)] + body + (body[1:] if name == "vgg16" else [])
    assert [(L.channels, L.out) for L in layers if L.kind == "mv"] == [(256 * 74 * 74, 4096), (4096, 4096),
                                                                       (4096, 4096)]
    for L, s in B.schedules(layers)[:4]:  # the schedules build and pass the DSL checks
        assert T.analyse(s, load_config("pimsab_s")).bitline.extent <= 256


def test_unknown_network():
    with pytest.raises(T.CompileError, match="unknown binarized network"):
        B.compile_network("alexnet")
    with pytest.raises(T.CompileError, match="13 or 16"):
        B.vgg(19)
