"""The bad-input catalogue: every case of the robustness campaign, as data.

``build_cases(workdir)`` writes the input files each case needs into ``workdir`` and returns
:class:`Case` records (an id, the target, the CLI arguments, the expected exit status and what the
error line must mention).  The tests (``test_cli_cases.py``) run them in-process; the campaign
script (``benchmarks/robustness_campaign.py``) runs them and tabulates the outcomes per target.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
MLP = REPO / "src" / "nnisa" / "data" / "digits_mlp.onnx"
PIM_SMALL = ".core 0\nsetbw 8, 8\nsldi $r1, 100\nvvadd $r0, $r1, $r2, 64\n"
PIM_CONFIG = {
    "chip_config": {"core_cnt": 4, "core_config": {"period": 1, "local_memory_config": {"memory_size": 4096}},
                    "global_memory_config": {"memory_size": 1 << 20},
                    "network_config": {"bus_width": 32, "net_config_file_path": ""}},
    "sim_config": {"sim_mode": 1, "sim_time": 1},
    "nnisa": {"noc_latency": 1.0, "noc_energy": 1.0},
}


@dataclass(frozen=True)
class Case:
    """One bad input: ``nnisa <args>`` must exit with ``code`` and one error line containing ``says``."""

    id: str
    target: str
    area: str
    args: tuple[str, ...]
    code: int = 2
    says: str = ""


def _gemm(path: Path, W: np.ndarray, dyn: bool = False) -> Path:
    n_in, n_out = W.shape
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N" if dyn else 1, "K" if dyn else n_in])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n_out])
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W"], ["y"])], "g", [x], [y],
                          [numpy_helper.from_array(W.astype(np.float32), "W")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _npy_header_only(path: Path, shape) -> Path:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    path.write_bytes(buf.getvalue() + bytes(64))
    return path


def _npz_bomb(path: Path, nbytes: int) -> Path:
    buf = io.BytesIO()
    np.save(buf, np.zeros(nbytes // 8))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", buf.getvalue())
    return path


def _dais_files(d: Path) -> dict[str, Path]:
    """A small valid DAIS program in text, nnisa JSON and da4ml JSON form, plus bad variants."""
    from nnisa.core.target import get_target
    t = get_target("dais")
    text = (".dais 1\n.firmware 0\n.inputs 2 shifts 0 0\n.outputs 1\n"
            "%0 = input 0 : (1,7,0)\n%1 = input 1 : (1,7,0)\n%2 = add %0, %1, 0 : (1,8,0)\n"
            "%3 = const 3 : (0,2,0)\nout 0 = %2\n")
    prog = t.assemble(text)
    files = {"txt": d / "ok.dais.txt", "json": d / "ok.json", "bin": d / "ok.dais"}
    files["txt"].write_text(text)
    t.write(prog, files["bin"])
    t.write(prog, files["json"], json="nnisa")
    doc = json.loads(files["json"].read_text())
    da4ml = d / "da4ml.json"
    t.write(prog, da4ml)
    raw_da4ml = da4ml.read_text()

    def variant(name: str, content: str | dict) -> Path:
        p = d / name
        p.write_text(content if isinstance(content, str) else json.dumps(content))
        return p

    def with_doc(**changes) -> dict:
        x = copy.deepcopy(doc)
        x.update(changes)
        return x

    ops = copy.deepcopy(doc["ops"])
    ops[0][1] = 10 ** 30
    files.update({
        "hugeint": variant("hugeint.json", with_doc(ops=ops)),
        "fw": variant("fw.json", with_doc(firmware_version=2 ** 32 + 5)),
        "deep": variant("deep.json", "[" * 100_000),
        "meta": variant("meta.json", with_doc(meta=[])),
        "float": variant("float.json", with_doc(out_shifts=[1.5])),
        "inf": variant("inf.json", raw_da4ml.replace("[-128.0,127.0,1.0]", "[-Infinity,127.0,1.0]", 1)),
        "bigq": variant("bigq.json", raw_da4ml.replace("[-128.0,127.0,1.0]", "[-1e400,127.0,1.0]", 1)),
        "const": variant("const.dais.txt", text.replace("const 3 ", "const 999999999999999999999999999 ")),
        "outputs": variant("outputs.dais.txt", text.replace(".outputs 1", ".outputs 100000000")),
        "arabic": variant("arabic.dais.txt", text.replace("const 3", "const \u0663")),
        "trunc": d / "trunc.dais",
        "v": variant("design.v", "module dais_top; endmodule\n"),
        "notjson": variant("notjson.json", "{this is not json"),
    })
    files["trunc"].write_bytes(files["bin"].read_bytes()[:37])
    return files


def build_cases(d: Path) -> list[Case]:
    """Write every input file into ``d``; return the cases."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "adir").mkdir(exist_ok=True)
    (d / "afile").write_text("x")
    (d / "empty").write_bytes(b"")
    (d / "p.s").write_text(PIM_SMALL)
    cfg = d / "cfg.json"
    cfg.write_text(json.dumps(PIM_CONFIG))
    x_ok = d / "x.npy"
    np.save(x_ok, np.zeros((1, 1, 8, 8), np.float32))
    np.save(d / "nan.npy", np.full((1, 1, 8, 8), np.nan, np.float32))
    np.save(d / "strings.npy", np.array(["a", "b"]))
    np.save(d / "scalar.npy", np.float32(1))
    np.save(d / "objects.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(d / "flat2.npy", np.zeros((1, 2), np.float32))
    np.save(d / "nan2.npy", np.full((1, 2), np.nan))
    (d / "corrupt.npz").write_bytes(b"PK\x03\x04 not really a zip")
    _npy_header_only(d / "liar.npy", (10 ** 12, 64))
    _npz_bomb(d / "bomb.npz", 300 << 20)
    (d / "bomb.json.gz").write_bytes(gzip.compress(b" " * (300 << 20), compresslevel=9))
    rng = np.random.default_rng(0)
    _gemm(d / "dynamic.onnx", rng.normal(size=(8, 4)), dyn=True)
    w = rng.normal(size=(8, 4))
    w[0, 0] = np.inf
    _gemm(d / "infw.onnx", w)
    _gemm(d / "zero.onnx", rng.normal(size=(8, 0)))
    dais = _dais_files(d)
    _issue13_files(d)

    def cfg_with(name: str, path: list[str], value) -> str:
        c = copy.deepcopy(PIM_CONFIG)
        o = c
        for k in path[:-1]:
            o = o.setdefault(k, {})
        o[path[-1]] = value
        p = d / name
        p.write_text(json.dumps(c))
        return str(p)

    s = str
    P, D = "pim", "dais"
    cases = [
        # options (declared per target and command)
        Case("opt-unknown", P, "options", ("convert", "-t", P, s(d / "p.s"), s(d / "o.nnpi"), "-O", "bogus=1"),
             says="unknown option 'bogus'"),
        Case("opt-bool", P, "options", ("convert", "-t", P, s(d / "p.s"), s(d / "o.nnpi"), "-O", "extended=maybe"),
             says="expected bool"),
        Case("opt-choice", P, "options", ("convert", "-t", P, s(d / "p.s"), s(d / "o.nnpi"), "-O", "word_bits=48"),
             says="not one of 32, 64"),
        Case("opt-engine", D, "options", ("sim", "-t", D, s(dais["txt"]), "-O", "engine=gpu"), says="not one of"),
        Case("opt-latency-cutoff", D, "options", ("convert", "-t", D, s(dais["txt"]), s(d / "o.v"), "-O",
                                                  "latency_cutoff=0"), says="latency_cutoff"),
        Case("opt-rtl-top", D, "options", ("convert", "-t", D, s(dais["txt"]), s(d / "o.v"), "-O", "top=signal"),
             says="identifier"),
        Case("opt-hdl", D, "options", ("compile", "-t", D, s(MLP), "-o", s(d / "hdl_out"), "-O", "hdl=systemc"),
             says="not one of"),
        Case("dais-rtl-read", D, "dais files", ("disasm", "-t", D, s(dais["v"])), says="not read"),
        Case("opt-format", D, "options", ("convert", "-t", D, s(dais["txt"]), s(d / "o.json"), "-O", "format=foo"),
             says="not one of"),
        Case("opt-int", D, "options", ("convert", "-t", D, s(dais["txt"]), s(d / "o.dais"), "-O",
                                       "firmware_version=abc"), says="expected int"),
        Case("opt-range", D, "options", ("convert", "-t", D, s(dais["txt"]), s(d / "o.dais"), "-O",
                                         "firmware_version=4294967301"), says="above the maximum"),
        Case("opt-wrong-command", P, "options", ("disasm", "-t", P, s(d / "p.s"), "-O", "timing=native"),
             says="does not apply"),
        Case("opt-no-equals", P, "options", ("disasm", "-t", P, s(d / "p.s"), "-O", "timing"),
             says="expected -O key=value"),
        Case("samples-zero", P, "options", ("run", "-t", P, s(MLP), "--samples", "0"), says="samples"),
        Case("pim-images-range", P, "options", ("run", "-t", P, s(MLP), "-O", "images=300"),
             says="above the maximum"),
        Case("pim-schedule-choice", P, "options", ("compile", "-t", P, s(MLP), "-o", s(d / "o-sched"), "-O",
                                                   "schedule=pipelined"), says="not one of"),
        Case("pim-lint-wrong-command", P, "options", ("disasm", "-t", P, s(d / "p.s"), "-O", "lint=false"),
             says="does not apply"),
        Case("max-memory-bad", P, "options", ("--max-memory", "lots", "targets"), says="--max-memory"),
        # output paths
        Case("out-dir-as-file", P, "outputs", ("convert", "-t", P, s(d / "p.s"), s(d / "adir") + "/"),
             says="adir"),
        Case("out-under-file", P, "outputs", ("convert", "-t", P, s(d / "p.s"), s(d / "afile" / "x.nnpi")),
             says="cannot write"),
        Case("out-unwritable", P, "outputs", ("convert", "-t", P, s(d / "p.s"), "/proc/nnisa/x.nnpi"),
             says="cannot write"),
        Case("compile-out-is-file", P, "outputs", ("compile", "-t", P, s(MLP), "-o", s(d / "afile")),
             says="afile"),
        Case("compile-out-foreign-dir", P, "outputs", ("compile", "-t", P, s(MLP), "-o", s(d)),
             says="not an nnisa bundle"),
        Case("sim-outputs-dir", D, "outputs", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "flat2.npy"),
                                               "--outputs", s(d / "adir")), says="adir"),
        # DAIS files
        Case("dais-json-hugeint", D, "dais files", ("disasm", "-t", D, s(dais["hugeint"])), says="outside"),
        Case("dais-json-firmware", D, "dais files", ("disasm", "-t", D, s(dais["fw"])), says="firmware_version"),
        Case("dais-json-deep", D, "dais files", ("disasm", "-t", D, s(dais["deep"])), says="nested"),
        Case("dais-json-meta-list", D, "dais files", ("disasm", "-t", D, s(dais["meta"])), says="meta"),
        Case("dais-json-fraction", D, "dais files", ("disasm", "-t", D, s(dais["float"])), says="integers"),
        Case("dais-json-infinity", D, "dais files", ("disasm", "-t", D, s(dais["inf"])), says="Infinity"),
        Case("dais-json-overflow-qint", D, "dais files", ("disasm", "-t", D, s(dais["bigq"])), says="finite"),
        Case("dais-json-invalid", D, "dais files", ("disasm", "-t", D, s(dais["notjson"])), says="JSON"),
        Case("dais-text-const-int64", D, "dais files", ("disasm", "-t", D, s(dais["const"])), says="int64"),
        Case("dais-text-outputs-count", D, "dais files", ("disasm", "-t", D, s(dais["outputs"])), says=".outputs"),
        Case("dais-text-foreign-digit", D, "dais files", ("disasm", "-t", D, s(dais["arabic"])),
             says="expected an integer"),
        Case("dais-binary-truncated", D, "dais files", ("disasm", "-t", D, s(dais["trunc"]))),
        Case("dais-devzero", D, "dais files", ("disasm", "-t", D, "/dev/zero"), says="unknown DAIS file type"),
        # PIM files
        Case("pim-foreign-digit", P, "pim files", ("disasm", "-t", P, s(_w(d / "arabic.s", ".core 0\nsldi $r1, \u0665\n"))),
             says="expected an integer"),
        Case("pim-core-id", P, "pim files", ("disasm", "-t", P, s(_w(d / "core.s", ".core 99999999999999999999\n"))),
             says="out of range"),
        Case("pim-chip-cores", P, "pim files", ("disasm", "-t", P, s(_w(d / "chip.s", ".chip_cores 99999999999999999999\n"))),
             says="out of range"),
        Case("pim-long-name", P, "pim files", ("disasm", "-t", P, s(_w(d / "long.s", ".core 0\n" + "x" * 100_000 + " $r1\n"))),
             says="characters cut"),
        Case("pim-nnpi-metadata", P, "pim files", ("disasm", "-t", P, s(_nnpi_with_meta(d)))), 
        Case("pim-json-core-id", P, "pim files", ("disasm", "-t", P, s(_w(d / "bigcore.json", json.dumps(
            {"config": {"core_cnt": 2, "array_group_map": {}}, "core99999999999999999999": [{"op": "setbw"}]})))),
             says="out of range"),
        Case("pim-json-bomb", P, "pim files", ("stats", "-t", P, s(d / "bomb.json.gz")), says="decompression bomb"),
        Case("pim-json-huge-number", P, "pim files", ("stats", "-t", P, s(_w(d / "huge.json", '{"config": {"core_cnt": 1, '
             '"array_group_map": {}}, "core0": [{"op": "lldi", "imm": 0.020408162847161293}, {"op": "lldi", "imm": 1e400}]}'))),
             says="infinity"),
        Case("pim-config-extra-json", P, "pim files", ("disasm", "-t", P, s(_w(d / "cfg.s", '.config_extra {"a": "x#y"}\n'))),
             says="u0023"),
        Case("pim-nocode-instruction", P, "pim files", ("disasm", "-t", P, s(_w(d / "nocode.s", ".core 1\n.nocode\nsldi $r0, 1\n"))),
             says="declared .nocode"),
        Case("pim-cfg-period-tiny", P, "pim config", ("sim", "-t", P, s(d / "p.s"), "--mode", "timing", "--config",
                                                      cfg_with("c1.json", ["chip_config", "core_config", "period"], 1e-300)),
             says="period"),
        Case("pim-cfg-period-huge", P, "pim config", ("sim", "-t", P, s(d / "p.s"), "--mode", "timing", "--config",
                                                      cfg_with("c2.json", ["chip_config", "core_config", "period"], 1e300)),
             says="period"),
        Case("pim-cfg-sim-time", P, "pim config", ("sim", "-t", P, s(d / "p.s"), "--mode", "timing", "--config",
                                                   cfg_with("c3.json", ["sim_config", "sim_time"], 1e308)),
             says="sim_time"),
        Case("pim-cfg-zero-memory", P, "pim config", ("sim", "-t", P, s(d / "p.s"), "--config",
                                                      cfg_with("c4.json", ["chip_config", "core_config",
                                                                           "local_memory_config", "memory_size"], 0)),
             says="memory_size"),
        Case("pim-cfg-noc-dir", P, "pim config", ("sim", "-t", P, s(_w(d / "two.s", _TWO_CORES)), "--mode", "timing",
                                                  "--config", cfg_with("c5.json", ["chip_config", "network_config",
                                                                                   "net_config_file_path"], s(d / "adir"))),
             says="directory"),
        Case("pim-cfg-noc-device", P, "pim config", ("sim", "-t", P, s(d / "two.s"), "--mode", "timing", "--config",
                                                     cfg_with("c6.json", ["chip_config", "network_config",
                                                                          "net_config_file_path"], "/dev/zero")),
             says="not a regular file"),
        # Cherry files and configurations
        Case("cherry-loop-count", "cherry", "cherry files", ("disasm", "-t", "cherry", s(_w(d / "c1.casm",
             ".sz 4\n.loop 0 iterations=999999999\nstart_independent_loop 0\n    relu\nend_loop 0\n"))),
             says="iterations"),
        Case("cherry-formula-range", "cherry", "cherry files", ("disasm", "-t", "cherry", s(_w(d / "c2.casm",
             ".sz 4\n.apu 0 = 2*i + 999999999\n"))), says="18 bits"),
        Case("cherry-short-image", "cherry", "cherry files", ("disasm", "-t", "cherry", s(_b(d / "c3.cisa",
             bytes(100)))), says="186-byte header"),
        Case("cherry-unknown-arch", "cherry", "cherry files", ("disasm", "-t", "cherry", s(d / "c2.casm"), "--arch",
                                                               "nosuch"), says="nosuch"),
        Case("cherry-element-format", "cherry", "options", ("run", "-t", "cherry", s(MLP), "-O",
                                                            "element_format=fp16"), says="not one of"),
        # Tensil files and architectures
        Case("tensil-no-arch", "tensil", "tensil files", ("disasm", "-t", "tensil", s(_b(d / "t1.tprog", bytes(4)))),
             says="architecture is needed"),
        Case("tensil-reserved-opcode", "tensil", "tensil files", ("sim", "-t", "tensil", "--arch", "tiny2x2",
                                                                  s(_b(d / "t2.tprog", bytes.fromhex("00000070")))),
             says="reserved opcode 0x7"),
        Case("tensil-past-depth", "tensil", "tensil files", ("asm", "-t", "tensil", "--arch", "tiny2x2", s(_w(
            d / "t3.s", "datamove local[300] <- dram0[0], 1\n")), "-o", s(d / "t3.tprog")), says="local_depth 256"),
        Case("tensil-bad-tarch", "tensil", "tensil files", ("disasm", "-t", "tensil", "--arch", s(_w(
            d / "t4.tarch", '{"data_type": "FP16BP8", "array_size": 1e999}')), s(d / "t1.tprog")), says="missing key"),
        Case("tensil-bad-strategy", "tensil", "options", ("compile", "-t", "tensil", s(MLP), "-o", s(d / "t5"), "-O",
                                                          "strategy=remote"), says="not one of"),
        # PIMSAB files and configurations
        Case("pimsab-bad-precision", "pimsab", "pimsab files", ("asm", "-t", "pimsab", s(_w(d / "p1.s",
             ".tile 0\nadd r0, i65, r0, i8, r8, i8\n")), "-o", s(d / "p1.psab")), says="width must be 1..64"),
        Case("pimsab-past-cram", "pimsab", "pimsab files", ("asm", "-t", "pimsab", s(_w(d / "p2.s",
             ".tile 0\nload r250, 0, all, i8\n")), "-o", s(d / "p2.psab")), says="256 wordlines"),
        Case("pimsab-short-image", "pimsab", "pimsab files", ("disasm", "-t", "pimsab", s(_b(d / "p3.psab",
             b"PSAB" + bytes(20)))), says="truncated"),
        Case("pimsab-unknown-config", "pimsab", "pimsab files", ("sim", "-t", "pimsab", s(_w(d / "p4.s",
             ".tile 0\nnop\n")), "--config", "nosuch"), says="nosuch"),
        Case("pimsab-compile-unknown-config", "pimsab", "options", ("compile", "-t", "pimsab", s(MLP), "-o",
             s(d / "pc1"), "--config", "nosuch"), says="nosuch"),
        Case("pimsab-compile-bad-option", "pimsab", "options", ("compile", "-t", "pimsab", s(MLP), "-o",
             s(d / "pc2"), "-O", "bits=3"), says="bits"),
        # arrays
        Case("arrays-corrupt-npz", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "corrupt.npz")),
             says=".npz"),
        Case("arrays-strings", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "strings.npy")),
             says="expected numbers"),
        Case("arrays-objects", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "objects.npy")),
             says="object"),
        Case("arrays-scalar", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "scalar.npy")),
             says="not divisible"),
        Case("arrays-nan-dais", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "nan2.npy")),
             says="non-finite"),
        Case("arrays-header-lies", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "liar.npy")),
             says="header declares"),
        Case("arrays-npz-bomb", D, "arrays", ("sim", "-t", D, s(dais["txt"]), "--inputs", s(d / "bomb.npz")),
             says="decompression bomb"),
        # ONNX models and run inputs
        Case("onnx-missing", P, "onnx", ("run", "-t", P, s(d / "none.onnx")), says="not found"),
        Case("onnx-devnull", P, "onnx", ("run", "-t", P, "/dev/null"), says="not a regular file"),
        Case("onnx-not-onnx", D, "onnx", ("run", "-t", D, s(d / "afile")), says="ONNX"),
        Case("onnx-empty", D, "onnx", ("compile", "-t", D, s(d / "empty"), "-o", s(d / "o-empty")), says="ONNX"),
        Case("onnx-dynamic", P, "onnx", ("run", "-t", P, s(d / "dynamic.onnx")), says="dynamic dimension"),
        Case("onnx-dynamic-dais", D, "onnx", ("run", "-t", D, s(d / "dynamic.onnx")), says="dynamic dimension"),
        Case("onnx-inf-weights", P, "onnx", ("run", "-t", P, s(d / "infw.onnx")), says="NaN or infinity"),
        Case("onnx-inf-weights-dais", D, "onnx", ("run", "-t", D, s(d / "infw.onnx")), says="NaN or infinity"),
        Case("onnx-zero-size", P, "onnx", ("run", "-t", P, s(d / "zero.onnx")), says="zero-size"),
        Case("onnx-zero-size-dais", D, "onnx", ("run", "-t", D, s(d / "zero.onnx")), says="zero-size"),
        Case("run-nan-inputs", P, "onnx", ("run", "-t", P, s(MLP), "--inputs", s(d / "nan.npy")), says="NaN"),
        Case("run-wrong-shape", D, "onnx", ("run", "-t", D, s(MLP), "--inputs", s(d / "flat2.npy")), says="shape"),
        Case("run-strings", D, "onnx", ("run", "-t", D, s(MLP), "--inputs", s(d / "strings.npy")),
             says="expected numbers"),
        # issue 13: calibration files, every unsupported node at once, opsets newer than onnx
        Case("calib-missing", P, "calibration", ("run", "-t", P, s(MLP), "--calibration", s(d / "none.npy")),
             says="not found"),
        Case("calib-nan", P, "calibration", ("run", "-t", P, s(MLP), "--calibration", s(d / "calib_nan.npy")),
             says="finite numbers"),
        Case("calib-shape", D, "calibration", ("compile", "-t", D, s(MLP), "-o", s(d / "o-cal"), "--calibration",
                                               s(d / "calib_flat.npy")), says="expected (samples, 1, 8, 8)"),
        Case("calib-wrong-names", P, "calibration", ("run", "-t", P, s(MLP), "--calibration", s(d / "calib_two.npz")),
             says="missing model input"),
        Case("calib-not-arrays", D, "calibration", ("run", "-t", D, s(MLP), "--calibration", s(d / "afile"))),
        Case("calib-directory", P, "calibration", ("run", "-t", P, s(MLP), "--calibration", s(d / "adir")),
             says="directory"),
        Case("onnx-unsupported-listed", P, "onnx", ("run", "-t", P, s(d / "twobad.onnx")),
             says="2 nodes cannot be compiled for pim"),
        Case("onnx-opset-too-new", D, "onnx", ("run", "-t", D, s(d / "opset99.onnx")), says="opset 99"),
    ]
    from cases_surface import surface_cases  # issue 25: the newer surface
    return cases + _sweep_cases(d) + surface_cases(d, Case)


def _laughs(levels: int = 9) -> str:
    """A 'billion laughs' sweep spec: a few hundred bytes of YAML aliases that expand to 10^9 values."""
    lines = ["name: x", "targets:", "  cherry:", "    grid:", "      sz: &l0 [[x, x, x, x, x, x, x, x, x, x]]"]
    for i in range(1, levels):
        lines.append(f"      k{i}: &l{i} [[" + ", ".join([f"*l{i - 1}"] * 10) + "]]")
    return "\n".join(lines) + "\n"


def axis(target: str, section: str, line: str) -> str:
    """A sweep spec with one axis: targets.TARGET.SECTION.LINE."""
    return f"targets:\n  {target}:\n    {section}:\n      {line}\n"


def _sweep_cases(d: Path) -> list[Case]:
    """``nnisa sweep`` specs and results folders, ``nnisa compare`` (issue 17)."""
    w = _w
    S = "sweep"
    ok = w(d / "sw-ok.yaml", axis("dais", "options", "bits: [3]"))
    (d / "sw-garbage").mkdir(exist_ok=True)
    (d / "sw-garbage" / "points.jsonl").write_text('not json\n{"point_id": "a", "target": 5, "status": "ok"}\n')
    foreign = []
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.table({"a": [1, 2], "target": [1, 2]}), d / "foreign.parquet")
        foreign = [Case("sweep-report-foreign-parquet", "sweep", "sweep results",
                        ("sweep", "report", str(d / "foreign.parquet")), says="not a sweep results table")]
    except ImportError:  # the sweep extra is missing: tests/sweep says so
        pass

    def spec(name: str, text: str) -> str:
        return str(w(d / name, text))

    bad_specs = [  # (id, file name, spec text, what the error line names)
        ("sweep-yaml", "sw1.yaml", "targets: [pim\n", "invalid YAML"),
        ("sweep-json", "sw2.json", '{"targets": ', "invalid JSON"),
        ("sweep-not-mapping", "sw3.yaml", "- 1\n- 2\n", "must be a mapping"),
        ("sweep-unknown-key", "sw4.yaml", "targets:\n  pim:\n    gird: {a: [1]}\n", "targets.pim.gird"),
        ("sweep-unknown-target", "sw5.yaml", "targets:\n  nosuch: {}\n", "unknown target(s) nosuch"),
        ("sweep-config-key", "sw6.yaml", axis("pim", "grid", "chip_config.core_cnnt: [4]"), "no key 'chip_config.core_cnnt'"),
        ("sweep-config-value", "sw7.yaml", axis("pim", "grid", "chip_config.core_cnt: [-4]"), "chip_config.core_cnt"),
        ("sweep-option-type", "sw8.yaml", axis("dais", "options", "bits: [x]"), "targets.dais.options"),
        ("sweep-option-unknown", "sw9.yaml", axis("dais", "options", "nosuch: [1]"), "unknown option 'nosuch'"),
        ("sweep-huge-range", "sw10.yaml", axis("dais", "options", "bits: {from: 0, to: 1000000000}"), "targets.dais.options.bits"),
        ("sweep-bad-range", "sw11.yaml", axis("dais", "options", "bits: {from: 3, step: 1}"), "targets.dais.options.bits"),
        ("sweep-samples-inf", "sw12.json", '{"targets": {"pim": {}}, "samples": 1e999}', "samples"),
        ("sweep-no-workload", "sw13.yaml", "models: [bench:nosuch]\ntargets:\n  pim: {}\n", "no workload 'nosuch'"),
        ("sweep-no-model", "sw14.yaml", "models: [nosuch_model]\ntargets:\n  pim: {}\n", "no bundled model"),
        ("sweep-yaml-laughs", "sw15.yaml", _laughs(), "more than 1,000,000 values"),
        ("sweep-yaml-recursive", "sw16.yaml", "targets: &a\n  cherry:\n    grid:\n      sz: [*a]\n", "contains itself"),
    ]
    return [Case(cid, S, "sweep spec", ("sweep", spec(name, text), "--dry-run"), says=says)
            for cid, name, text, says in bad_specs] + [
        Case("sweep-missing", S, "sweep spec", ("sweep", str(d / "none.yaml"), "--dry-run"), says="not found"),
        Case("sweep-no-spec", S, "sweep spec", ("sweep",), says="missing argument SPEC"),
        Case("sweep-out-unwritable", S, "sweep results", ("sweep", str(ok), "-o", "/proc/nnisa-sweep"),
             says="cannot write"),
        Case("sweep-out-is-file", S, "sweep results", ("sweep", str(ok), "-o", str(d / "afile")), says="afile"),
        Case("sweep-no-output", S, "sweep results", ("sweep", str(ok)), says="--output"),
        Case("sweep-report-empty", S, "sweep results", ("sweep", "report", str(d / "adir")),
             says="not a sweep results folder"),
        Case("sweep-report-garbage", S, "sweep results", ("sweep", "report", str(d / "sw-garbage")),
             says="no finished point"),
        Case("sweep-report-not-parquet", S, "sweep results", ("sweep", "report", str(d / "afile")),
             says="not a Parquet"),
        Case("compare-unknown-target", S, "compare", ("compare", str(MLP), "--targets", "pim,nosuch"),
             says="unknown target(s) nosuch"),
        Case("compare-not-onnx", S, "compare", ("compare", str(d / "afile")), says="ONNX"),
    ] + foreign


def _issue13_files(d: Path) -> None:
    """Calibration files for the digits MLP (input ``(N, 1, 8, 8)``) and two models PIM/onnx refuse."""
    np.save(d / "calib_nan.npy", np.full((4, 1, 8, 8), np.nan, np.float32))
    np.save(d / "calib_flat.npy", np.zeros((4, 2), np.float32))
    np.savez(d / "calib_two.npz", a=np.zeros((4, 1, 8, 8), np.float32), b=np.zeros((4, 1, 8, 8), np.float32))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3])
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1], name="tr"),
             helper.make_node("ReduceMax", ["xt"], ["a"], name="rmax0", axes=[2], keepdims=1),
             helper.make_node("ReduceMax", ["a"], ["y"], name="rmax", axes=[1], keepdims=1)]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]),
              str(d / "twobad.onnx"))
    y2 = helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 4, 3])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y2"])], "g", [x], [y2])
    onnx.save(helper.make_model(relu, opset_imports=[helper.make_opsetid("", 99)]), str(d / "opset99.onnx"))


_TWO_CORES = (".core 0\nsetbw 8, 8\nsldi $r0, 0\nsend $r0, 1, 32\n"
              ".core 1\nsetbw 8, 8\nsldi $r0, 0\nrecv $r0, 0, 32\n")


def _b(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _w(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _nnpi_with_meta(d: Path) -> Path:
    """An NNPI container whose metadata claims 10^30 crossbars and cores."""
    from nnisa.core.target import get_target
    t = get_target("pim")
    prog = t.assemble(PIM_SMALL)
    data = bytearray(t.encode(prog))
    import struct
    magic, version, word_bits, flags, ncores, meta_len = struct.unpack_from("<4sHBBII", data, 0)
    meta = json.loads(bytes(data[16:16 + meta_len]) or b"{}")
    meta["array_group_map"] = {"core0": [10 ** 30]}
    meta["chip_core_count"] = 10 ** 30
    new = json.dumps(meta).encode()
    out = bytes(data[:12]) + struct.pack("<I", len(new)) + new + bytes(data[16 + meta_len:])
    p = d / "meta.nnpi"
    p.write_bytes(out)
    return p
