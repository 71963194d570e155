"""PIM program bundle: write/read round trip, manifest validation, run with inputs/outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nnisa.core.errors import FormatError
from nnisa.targets.pim.formats.bundle import Manifest, TensorSpec, read_bundle, write_bundle
from nnisa.targets.pim.sim.simulate import run_bundle
from nnisa.targets.pim.isa import build_isa
from nnisa.targets.pim.program import PimProgram

ISA = build_isa(64, True)


def R(m, **kw):
    return ISA.row(m, **kw)


def small_net():
    """y = relu(x @ W) for x: 1×4 int8 at 0x100, W: 4×3, output int8 at 0x200."""
    rows = [R("sldi", rd=0, imm=0), R("sldi", rd=1, imm=0x100), R("setbw", ibiw=8, obiw=8),
            R("ld", rd=0, rs1=1, len=4), R("sldi", rd=2, imm=64),
            R("mvmul", rd=2, rs1=0, mbiw=8, relu=1, group=0),
            R("sldi", rd=3, imm=0x200), R("st", rd=3, rs1=2, len=3)]
    p = PimProgram(extended=True)
    p.cores[0] = ISA.rows(rows)
    p.array_group_map = {0: [1]}
    W = np.array([[1, -1, 2], [0, 3, -2], [4, 0, 1], [-1, 1, 1]], dtype=np.int8)
    man = {"inputs": [{"name": "x", "shape": [1, 4], "bits": 8, "scale": 0.5, "address": 0x100, "layout": "NC"}],
           "outputs": [{"name": "y", "shape": [1, 3], "bits": 8, "scale": 0.25, "address": 0x200, "layout": "NC"}],
           "global_address_mode": "single32", "act_frac": {0: [3, 7]},
           "config": {"chip_config": {"core_config": {"local_memory_config": {"memory_size": 1024}}}}}
    return p, W, man


def test_write_read_without_program(tmp_path):
    _, W, man = small_net()
    out = write_bundle(tmp_path / "b", None, {(0, 0): W}, {0x1000: b"\x01\x02", 0x20: np.arange(3, dtype=np.uint8)}, man)
    files = sorted(p.name for p in out.iterdir())
    assert files == ["gmem.npz", "manifest.json", "weights.npz"]
    with np.load(out / "gmem.npz") as z:
        assert sorted(z.files) == ["seg@0x1000", "seg@0x20"]
    with np.load(out / "weights.npz") as z:
        assert z.files == ["c0.g0"] and z["c0.g0"].tolist() == W.tolist()
    raw = json.loads((out / "manifest.json").read_text())
    assert raw["format"] == "nnisa-pim-bundle" and raw["program"] is None and raw["inputs"][0]["address"] == 256
    b = read_bundle(out)
    assert b.program is None and b.gmem_segments[0x1000].tobytes() == b"\x01\x02"
    assert b.gmem_segments[0x20].tolist() == [0, 1, 2]
    assert b.manifest.tensor("y").scale == 0.25 and b.manifest.act_frac == {0: (3, 7)}
    assert b.config().chip_config.core_config.local_memory_config.memory_size == 1024
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_manifest_errors(tmp_path):
    with pytest.raises(FormatError, match="manifest.json missing"):
        read_bundle(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "nnisa-pim-bundle", "inputs": [{"name": "x"}]}')
    with pytest.raises(FormatError, match=r"invalid manifest: inputs.0.shape: Field required"):
        read_bundle(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(FormatError, match="invalid manifest: format"):
        read_bundle(tmp_path)


def test_tensor_spec_quantize():
    t = TensorSpec(name="x", shape=[3], bits=8, scale=0.5, zero_point=1, address=0)
    assert t.quantize(np.array([0.25, -0.25, 100.0])).tolist() == [2, 0, 127]  # ties away, clip
    assert t.quantize(np.array([1, -2, 3], dtype=np.int16)).tolist() == [1, -2, 3]
    with pytest.raises(FormatError, match="outside the signed 8-bit range"):
        t.quantize(np.array([1, 2, 300]))
    with pytest.raises(FormatError, match="shape"):
        t.quantize(np.zeros(4))
    assert t.dequantize(np.array([3])).tolist() == [1.0]


def test_bundle_roundtrip_and_run(tmp_path):
    p, W, man = small_net()
    out = write_bundle(tmp_path / "net", p, {"c0.g0": W}, {}, man)
    b = read_bundle(out)
    assert b.program is not None and b.program.equals(p)
    x = np.array([[1.0, -0.5, 2.0, 0.5]])  # quantized with scale 0.5 → [2, -1, 4, 1]
    res, outs = run_bundle(out, {"x": x})
    q = np.array([2, -1, 4, 1])
    assert outs["y"].tolist() == [np.maximum(q @ W.astype(np.int64), 0).tolist()]
    assert b.manifest.tensor("y").dequantize(outs["y"]).tolist() == [[4.25, 0.0, 2.75]]
    with pytest.raises(FormatError, match="unknown input"):
        run_bundle(out, {"z": x})


def test_run_bundle_in_memory():
    from nnisa.targets.pim.formats.bundle import Bundle
    p, W, man = small_net()
    b = Bundle(p, {(0, 0): W}, {}, Manifest.model_validate(man))
    res, outs = run_bundle(b, {"x": np.array([[2, -1, 4, 1]], dtype=np.int8)}, engine="reference")
    assert outs["y"].tolist() == [[17, 0, 11]]  # [2+16-1, relu(-2-3+1), 4+2+4+1]
    assert res.instructions == {0: 8}


def test_config_round_trip_keeps_global_memory_unbounded_or_bounded():
    """A default ``memory_size`` does not bound global memory; the bundle's copy of the config must
    not turn it into a bound (compiled folders larger than 1 MB of global memory then failed in
    ``nnisa sim`` with "global address range ... outside [0, 0x100000)")."""
    from nnisa.targets.pim.config import config_from_dict, default_config
    free = default_config(2)
    assert not free.gmem_bounded
    again = config_from_dict(free.to_json_dict())
    assert not again.gmem_bounded and again.to_json_dict() == free.to_json_dict()
    d = free.to_json_dict()
    del d["nnisa"]["global_memory_bounded"]
    bounded = config_from_dict(d)  # memory_size given in the file: a bound
    assert bounded.gmem_bounded and config_from_dict(bounded.to_json_dict()).gmem_bounded


def test_compiled_folder_beyond_one_megabyte_of_global_memory_simulates(tmp_path):
    import onnx
    from onnx import helper
    import nnisa
    from .compiler_helpers import one_input_model
    n = 600_000  # 8-bit input and output: 1.2 MB of global memory
    m = one_input_model([helper.make_node("Relu", ["x"], ["y"])], [], [1, n], [1, n])
    onnx.save(m, tmp_path / "relu.onnx")
    pim = nnisa.target("pim")
    res = pim.compile(str(tmp_path / "relu.onnx"), out_dir=tmp_path / "out")
    x = np.random.default_rng(0).normal(size=(1, n)).astype(np.float32)
    sim = pim.simulate(read_bundle(tmp_path / "out"), inputs={"x": x}, mode="functional", lint=False)
    direct = pim.simulate(res.program, inputs={"x": x}, mode="functional", lint=False, **res.sim_options)
    (name,) = sim.outputs
    assert np.array_equal(sim.outputs[name], direct.outputs[name])
