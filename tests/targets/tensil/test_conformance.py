"""Conformance with Tensil's own artifacts (spec §10.2): files, codec, estimator, emulator."""

from __future__ import annotations

import numpy as np
import pytest
from .tensil_data import BUILDS, ESTIMATOR, GOLDEN_CLASSES, build, tensil_dir, xor

from nnisa.cli import main
from nnisa.targets.tensil.config import PRESETS
from nnisa.targets.tensil.formats.binary import decode_program, encode_program
from nnisa.targets.tensil.formats.files import read_program
from nnisa.targets.tensil.formats.model import read_csv_vectors, read_tdata, read_tmodel
from nnisa.targets.tensil.formats.tasm import parse_tasm, write_tasm
from nnisa.targets.tensil.formats.text import assemble, disassemble
from nnisa.targets.tensil.numerics import Numeric
from nnisa.targets.tensil.sim.emulator import emulate_model
from nnisa.targets.tensil.sim.estimator import estimate

XOR_TEXT = """datamove local[0] <- dram1[0], 3
datamove local[3] <- dram0[0], 4
loadweights local[0], 3
matmul local[3], acc[0], 4
simd R1 = Zero(I, I)
simd.rw O = Max(I, R1), w=acc[4], r=acc[0]
simd.rw O = Max(I, R1), w=acc[5], r=acc[1]
simd.rw O = Max(I, R1), w=acc[6], r=acc[2]
simd.rw O = Max(I, R1), w=acc[7], r=acc[3]
datamove local[7] <- acc[4], 4
datamove local[7] -> dram0[4], 4
datamove local[0] <- dram1[3], 3
datamove local[3] <- dram0[4], 4
loadweights local[0], 3
matmul local[3], acc[0], 4
datamove local[7] <- acc[0], 4
datamove local[7] -> dram0[0], 4
"""

# spec §10.2 item 8: raw FP16BP8 logits of the ten CIFAR images, lanes 0-9
LOGITS = [
    [432, -4281, -2553, -190, -490, -1792, -2046, -3551, -1221, -3188],
    [-4198, -1298, -3679, -3458, -5631, -4428, -3101, -3631, -1040, 4525],
    [-4005, -4841, -2031, -2068, -696, -426, -1365, -2846, -5101, -4567],
    [-3950, -2856, -3426, -2992, -2432, -1332, -1927, 2519, -3560, -3052],
    [-2550, -696, -2500, -3844, -3870, -3676, -3904, -2428, -1134, 2456],
    [-2395, -1312, -1775, -1671, -1704, -2645, 226, -4843, 1794, -2157],
    [-4731, -6088, -2374, -767, -4532, 648, -2785, -667, -4938, -3959],
    [-4983, -3152, -2055, -1562, -1714, -1272, -1954, 494, -2465, -1994],
    [-240, -1422, -1568, -2283, -2705, -3355, 291, -3429, 1488, -1212],
    [-3505, -3164, -2024, -1615, -2124, -3134, 3885, -3850, -2706, -2335],
]
SLOW_BUILDS = [pytest.param(b, marks=pytest.mark.slow) if b != "baseline" else b for b in BUILDS]


def test_xor_disassembly_matches_spec():
    prog = read_program(xor(".tmodel"))
    assert disassemble(prog) == XOR_TEXT
    assert encode_program(assemble(XOR_TEXT, prog.arch)) == xor(".tprog").read_bytes()
    assert write_tasm(prog).splitlines()[5] == "[5] 0 SIMD(RW) O=Max(I,R1) WAcc(4) RAcc(0)"


@pytest.mark.parametrize("name", SLOW_BUILDS)
def test_cli_disasm_asm_byte_identical(name, tmp_path):
    model, tprog = build(name, ".tmodel"), build(name, ".tprog")
    for args in (["disasm", "-t", "tensil", "--arch", str(model), str(tprog), "-o", str(tmp_path / "p.s")],
                 ["asm", "-t", "tensil", "--arch", str(model), str(tmp_path / "p.s"), "-o", str(tmp_path / "q.tprog")]):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 0
    assert (tmp_path / "q.tprog").read_bytes() == tprog.read_bytes()


def test_cli_xor_byte_identical(tmp_path):
    for args in (["disasm", "-t", "tensil", "--arch", str(xor(".tmodel")), str(xor(".tprog")), "-o", str(tmp_path / "p.s")],
                 ["asm", "-t", "tensil", "--arch", str(xor(".tmodel")), str(tmp_path / "p.s"), "-o", str(tmp_path / "q.tprog")]):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 0
    assert (tmp_path / "q.tprog").read_bytes() == xor(".tprog").read_bytes()


def test_all_programs_decode_canonically_and_reencode():
    counts = {"baseline": (3552, 883, 1160, 44576), "ultra_ram": (3550, 841, 1158, 44572),
              "local_consts": (3550, 756, 1160, 44572), "local_vars": (4066, 112, 1191, 44572),
              "local_vars_and_consts": (4066, 60, 1160, 44572)}
    total = 0
    for name in BUILDS:
        data = build(name, ".tprog").read_bytes()
        prog = read_program(build(name, ".tmodel"))
        assert not prog.raw
        assert encode_program(prog) == data
        op = prog.rows["hdr"] >> 4
        assert tuple(int((op == k).sum()) for k in (1, 2, 3, 4)) == counts[name]
        total += len(prog)
    assert total == 250129


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUILDS))
def test_tasm_roundtrip(name):
    prog = read_program(build(name, ".tmodel"))
    assert encode_program(parse_tasm(write_tasm(prog), prog.arch)) == build(name, ".tprog").read_bytes()


def test_tmodel_rewrite_byte_identical_and_arch():
    sizes = {"baseline": 565, "ultra_ram": 581, "local_consts": 580, "local_vars": 581, "local_vars_and_consts": 580}
    for name, size in sizes.items():
        path = build(name, ".tmodel")
        m = read_tmodel(path)
        assert m.to_json().encode() == path.read_bytes() and len(path.read_bytes()) == size
        preset = "zcu104" if name == "baseline" else "zcu104_uram"
        assert m.arch.to_tarch() == PRESETS[preset][0].to_tarch()
    x = read_tmodel(xor(".tmodel"))
    assert x.arch == PRESETS["tiny2x2"][0]


def test_cifar_conversion_matches_tdata():
    arch = PRESETS["zcu104"][0]
    x = read_csv_vectors(tensil_dir() / "cifar_1x32.csv", 32)
    assert np.array_equal(Numeric("FP16BP8").from_float(x), read_tdata(tensil_dir() / "cifar_1x32.tdata", arch))


def test_xor_tdata_golden():
    raw = read_tdata(xor(".tdata"), PRESETS["tiny2x2"][0])
    assert raw.tolist() == [[0, -29], [-210, 233], [210, -204], [1, 0], [309, 0], [318, 0]]


@pytest.mark.parametrize("name", list(BUILDS))
def test_estimator_exact(name):
    est = estimate(read_program(build(name, ".tmodel")), 61_476_000)
    assert est["cycles"] == ESTIMATOR[name]


def test_estimator_baseline_breakdown():
    est = estimate(read_program(build("baseline", ".tmodel")), 61_476_000)
    assert abs(est["mac_efficiency"] - 0.2045) < 5e-4
    f = est["by_flags"]
    assert (f["DataMove(DRAM0ToLocal)"]["instructions"], f["DataMove(DRAM0ToLocal)"]["vectors"]) == (685, 30216)
    assert f["DataMove(LocalToDRAM0)"]["vectors"] == 28169 and f["DataMove(DRAM1ToLocal)"]["vectors"] == 18825
    assert f["DataMove(LocalToAcc)"]["vectors"] + f["DataMove(LocalToAccAcc)"]["vectors"] == 13377
    assert f["LoadWeights"]["cycles"] + f["LoadWeights(zeroes)"]["cycles"] == 19338
    assert [f[k]["cycles"] for k in ("MatMul", "MatMul(acc)", "MatMul(zeroes)", "MatMul(acc,zeroes)")] == \
        [20880, 84452, 433, 5155]
    assert [f[k]["instructions"] for k in ("SIMD", "SIMD(r)", "SIMD(rw)")] == [23, 14848, 29705]
    assert est["dram_vectors_total"] == 77210
    assert estimate(read_program(xor(".tmodel")))["cycles"] == 53


def test_xor_emulation_bit_exact():
    prog = read_program(xor(".tmodel"))
    x = read_csv_vectors(xor("_in.csv"), 2)
    for path in ("fast", "reference"):
        res = emulate_model(prog.model, prog, {"x": x}, engine=path)
        assert res.raw["y"][0].tolist() == [[1, 0], [254, 0], [254, 0], [1, 0]]
        assert res.emulator.machine.dram0[4:8].tolist() == [[0, 0], [0, 204], [210, 0], [0, 0]]


def _classify(name, path="fast"):
    prog = read_program(build(name, ".tmodel"))
    x = read_csv_vectors(tensil_dir() / "cifar_10x32.csv", 32)
    res = emulate_model(prog.model, prog, {"x:0": x}, engine=path)
    return res.raw["Identity:0"][:, 0, :]


def test_baseline_classifies_ten_images_bit_exact():
    out = _classify("baseline")
    assert out[:, :10].tolist() == LOGITS
    assert out[:, :10].argmax(axis=1).tolist() == GOLDEN_CLASSES
    assert not out[:, 10:].any()


@pytest.mark.slow
@pytest.mark.parametrize("name", [b for b in BUILDS if b != "baseline"])
def test_every_build_bit_identical(name):
    assert _classify(name).tolist() == _classify("baseline").tolist()


@pytest.mark.slow
def test_reference_interpreter_matches_fast_on_resnet():
    prog = read_program(build("baseline", ".tmodel"))
    x = read_csv_vectors(tensil_dir() / "cifar_1x32.csv", 32)
    fast = emulate_model(prog.model, prog, {"x:0": x}, engine="fast").emulator.machine
    ref = emulate_model(prog.model, prog, {"x:0": x}, engine="reference").emulator.machine
    for mem in ("local", "acc", "dram0", "dram1", "weights", "regs"):
        assert np.array_equal(getattr(fast, mem), getattr(ref, mem)), mem


def test_cli_sim_classifies_and_compares(tmp_path):
    out = tmp_path / "out.npy"
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(build("baseline", ".tmodel")), "--inputs", str(tensil_dir() / "cifar_10x32.csv"),
              "--outputs", str(out), "--json"])
    assert exc.value.code == 0
    logits = np.load(out).reshape(10, 32)
    assert logits[:, :10].argmax(axis=1).tolist() == GOLDEN_CLASSES
    out_csv = tmp_path / "y.csv"
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(xor(".tmodel")), "--inputs", str(xor("_in.csv")), "-O", f"csv={out_csv}"])
    assert exc.value.code == 0
    assert out_csv.read_bytes() == b"0.00390625,0.0\r\n0.9921875,0.0\r\n0.9921875,0.0\r\n0.00390625,0.0\r\n"
    assert read_csv_vectors(out_csv, 2).tolist() == [[0.00390625, 0.0], [0.9921875, 0.0], [0.9921875, 0.0],
                                                      [0.00390625, 0.0]]
    exp = tmp_path / "exp.csv"
    exp.write_text("0.004,0\n0.99,0\n0.99,0\n0.0,0\n")
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(xor(".tmodel")), "--inputs", str(xor("_in.csv")), "-O", f"compare={exp}"])
    assert exc.value.code == 0
    exp.write_text("0.5,0\n0.99,0\n0.99,0\n0.0,0\n")
    with pytest.raises(SystemExit) as exc:
        main(["sim", "-t", "tensil", str(xor(".tmodel")), "--inputs", str(xor("_in.csv")), "-O", f"compare={exp}"])
    assert exc.value.code == 2
