"""Issue 25's bad inputs on the newer surface (Tensil, Cherry, PIMSAB images, DAIS input ranges,
calibration, sweep specs): each one a :class:`cases.Case` of the catalogue, so the tests
(``test_cli_cases.py``) and the campaign (``benchmarks/robustness_campaign.py``) run them.

Every builder writes its files into the case folder ``d`` and returns cases; nothing here reads
outside ``d`` except the bundled models.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np

MLP = Path(__file__).resolve().parents[2] / "src" / "nnisa" / "data" / "digits_mlp.onnx"


def _w(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _tensil(d: Path, Case) -> list:
    """A compiled Tensil bundle, then copies with one defect each."""
    from harness import run_cli
    T = "tensil"
    base = d / "t-bundle"
    if not (base / "manifest.json").exists():
        res = run_cli(["compile", "-t", T, str(MLP), "-o", str(base)])
        assert res.code == 0, res.err
    tmodel = json.loads((base / "manifest.json").read_text())["tmodel"]
    x = d / "t-x.npy"
    np.save(x, np.random.default_rng(0).random((1, 64), np.float32))

    def variant(name: str, fn) -> str:
        v = d / name
        if v.exists():
            shutil.rmtree(v)
        shutil.copytree(base, v)
        fn(v)
        return str(v)

    secret = _w(d / "t-secret.tprog", "not yours")
    cases = [
        Case("tensil-manifest-tmodel-escapes", T, "tensil bundles", ("sim", "-t", T, variant(
            "t-v1", lambda v: _edit_json(v / "manifest.json", lambda m: m.update(tmodel="../t-bundle/" + tmodel))),
            "--inputs", str(x)), says="plain name inside the bundle"),
        Case("tensil-manifest-tdata-absolute", T, "tensil bundles", ("sim", "-t", T, variant(
            "t-v2", lambda v: _edit_json(v / "manifest.json", lambda m: m.update(tdata="/etc/passwd"))),
            "--inputs", str(x)), says="plain name inside the bundle"),
        Case("tensil-consts-escape", T, "tensil bundles", ("sim", "-t", T, variant(
            "t-v3", lambda v: _edit_json(v / tmodel, lambda m: m["consts"][0].update(file_name="../../etc/passwd"))),
            "--inputs", str(x)), says="plain name inside its folder"),
        Case("tensil-prog-absolute", T, "tensil bundles", ("sim", "-t", T, variant(
            "t-v4", lambda v: _edit_json(v / tmodel, lambda m: m["prog"].update(file_name=secret))),
            "--inputs", str(x)), says="plain name inside its folder"),
        Case("tensil-prog-symlink-out", T, "tensil bundles", ("sim", "-t", T, variant(
            "t-v5", lambda v: (os.symlink(secret, v / "evil.tprog"),
                               _edit_json(v / tmodel, lambda m: m["prog"].update(file_name="evil.tprog")))),
            "--inputs", str(x)), says="leads outside its folder"),
        Case("tensil-input-size-zero", T, "tensil bundles", ("sim", "-t", T, variant(
            "t-v6", lambda v: _edit_json(v / tmodel, lambda m: m["inputs"][0].update(size=0))),
            "--inputs", str(x)), says="0 vectors"),
    ]
    nan = d / "t-nan.npy"
    a = np.random.default_rng(1).random((1, 64))
    a[0, 5] = np.nan
    np.save(nan, a)
    inf_csv = d / "t-inf.csv"
    b = np.random.default_rng(2).random((1, 64))
    b[0, 7] = -np.inf
    np.savetxt(inf_csv, b, delimiter=",")
    cases += [
        Case("tensil-nan-input", T, "tensil inputs", ("sim", "-t", T, str(base), "--inputs", str(nan)),
             says="nan at index [0, 0, 0, 5] is not a finite number"),
        Case("tensil-inf-csv-input", T, "tensil inputs", ("sim", "-t", T, str(base), "--inputs", str(inf_csv)),
             says="-inf at index [0, 0, 0, 7] is not a finite number"),
    ]
    head = "Layer,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,\n"
    for cid, row, says in (("short", "conv1,224,224,\n", "expected 6 or 7 numbers"),
                           ("zero", "conv1,0,0,0,0,0,0,0,\n", "ifmap_h = 0 outside"),
                           ("filter", "conv1,3,3,7,7,3,8,1,\n", "larger than the ifmap")):
        topo = _w(d / f"t-topo-{cid}.csv", head + row)
        cases.append(Case(f"tensil-scalesim-{cid}-row", T, "tensil options",
                          ("sim", "-t", T, str(base), "--inputs", str(x), "-O", "timing=scalesim", "-O",
                           f"topology={topo}"), says=says))
    arch = ("--arch", "tiny2x2")
    tasm = [("bracket", "[0]\n", "1:1: expected a mnemonic"),
            ("size-bare", "LoadWeights Local(0) 5\n", "1:22: expected a size written N(+1)"),
            ("size-word", "LoadWeights Local(0) banana\n", "expected a size written N(+1), got 'banana'"),
            ("paren-operand", "MatMul (3) Acc(0)\n", "1:8: source: expected Local(n) or Zeroes(n)"),
            ("missing-operand", "MatMul Local(0)\n", "missing accumulator"),
            ("huge-address", "DataMove(<-) Local(99999999999999999999999999) DRAM0(0)\n", "out of range"),
            ("extra-token", "LoadWeights Local(0) 2(+1) 7\n", "unexpected '7'")]
    for cid, text, says in tasm:
        cases.append(Case(f"tensil-tasm-{cid}", T, "tensil files",
                          ("disasm", "-t", T, *arch, _w(d / f"t-{cid}.tasm", text)), says=says))
    asm = [("asm-int64", "datamove local[99999999999999999999999] <- dram0[0], 1\n", "out of range (23 digits)"),
           ("asm-5000-digits", "datamove local[" + "9" * 5000 + "] <- dram0[0], 1\n", "5,000 digits"),
           ("asm-count-5000-digits", "matmul local[0], acc[0], " + "9" * 5000 + "\n", "5,000 digits")]
    for cid, text, says in asm:
        cases.append(Case(f"tensil-{cid}", T, "tensil files",
                          ("asm", "-t", T, *arch, _w(d / f"t-{cid}.s", text), "-o", str(d / f"t-{cid}.tprog")),
                          says=says))
    from nnisa.targets.tensil.config import PRESETS
    lut = PRESETS["tiny2x2"][0].to_dict()
    lut["x_nnisa_lut"] = {"tables": 10 ** 12, "depth": 10 ** 12}
    cases.append(Case("tensil-lut-size", T, "tensil options", ("disasm", "-t", T, "--arch", _w(
        d / "t-lut.tarch", json.dumps(lut)), _w(d / "t-ok.s", "datamove local[0] <- dram0[0], 1\n")),
        says="x_nnisa_lut.tables = 1000000000000 outside 1..16"))
    return cases


def _cherry(d: Path, Case) -> list:
    C = "cherry"
    ok = _w(d / "c-ok.casm", ".sz 4\n.apu 0 = ((2*i) + 3)\n")
    hang = _w(d / "c-hang.casm", ".sz 4\n" + "".join(f".loop {k} iterations=262142\n" for k in range(3))
              + "start_loop 0\nstart_loop 1\nstart_loop 2\n    relu\nend_loop 2\nend_loop 1\nend_loop 0\n")
    cases = [
        Case("cherry-formula-500-parens", C, "cherry files", ("disasm", "-t", C, _w(
            d / "c-deep.casm", ".sz 4\n.apu 0 = " + "(" * 500 + "i" + ")" * 500 + "\n")), says="nested more than"),
        Case("cherry-formula-5000-signs", C, "cherry files", ("disasm", "-t", C, _w(
            d / "c-signs.casm", ".sz 4\n.apu 0 = " + "-" * 5000 + "i\n")), says="nested more than"),
        Case("cherry-formula-5000-digits", C, "cherry files", ("disasm", "-t", C, _w(
            d / "c-digits.casm", ".sz 4\n.apu 0 = " + "7" * 5000 + "\n")), says="digits"),
        Case("cherry-time-limit", C, "cherry limits", ("sim", "-t", C, hang, "-O", "max_cycles=200000"), code=4,
             says="simulated time limit of 200,000 cycles reached"),
        Case("cherry-time-limit-functional", C, "cherry limits", ("sim", "-t", C, hang, "--mode", "functional",
                                                                  "-O", "max_cycles=200000"), code=4,
             says="simulated time limit"),
        Case("cherry-time-limit-option", C, "cherry limits", ("sim", "-t", C, ok, "-O", "max_cycles=0"),
             says="max_cycles"),
    ]
    for key, value in (("dram_tiles", 10 ** 40), ("threads", 10 ** 8), ("cache_tiles", 4_000_000_000),
                       ("clock_ghz", "Infinity")):
        cfg = _w(d / f"c-{key}.json", '{"%s": %s}' % (key, value))
        cases.append(Case(f"cherry-absurd-{key}", C, "cherry limits", ("sim", "-t", C, ok, "--arch", cfg), says=key))
    big = d / "c-huge.cisa"
    with open(big, "wb") as f:
        f.truncate(3 << 30)  # sparse: 3 GiB claimed, no disk used
    cases.append(Case("cherry-huge-image", C, "cherry files", ("disasm", "-t", C, str(big)),
                      says="has at most 696"))
    # a compiled model whose manifest names a constants file that is not there
    from harness import run_cli
    b = d / "c-bundle"
    if not (b / "manifest.json").exists():
        assert run_cli(["compile", "-t", C, str(MLP), "-o", str(b)]).code == 0
    _edit_json(b / "manifest.json", lambda m: m.update(consts="nope.npz"))
    cases.append(Case("cherry-bundle-missing-consts", C, "cherry files", ("sim", "-t", C, str(b)),
                      says="nope.npz: file not found"))
    return cases


def _pimsab(d: Path, Case) -> list:
    from nnisa.core.target import get_target
    P = "pimsab"
    t = get_target(P)
    prog = t.assemble(".tile 0\nload r0, 0x100, 256, i8\nmult r16, i16, r0, i8, r0, i8\nstore 0x200, r16, 256, i16\n")
    ok = d / "p-ok.psab"
    t.write(prog, ok)
    data = bytearray(ok.read_bytes())
    head = struct.Struct("<4sHHI32sI")
    _, _, _, n_streams, sha, _ = head.unpack_from(data, 0)
    tile, n_words, off = struct.unpack_from("<IIQ", data, head.size)
    bad_tile = bytearray(data)
    struct.pack_into("<IIQ", bad_tile, head.size, 0xFFFFFFFF, n_words, off)
    (d / "p-tile.psab").write_bytes(bytes(bad_tile))
    payload = bytes(data[off:off + 16 * n_words])
    n = 4000  # every stream points at the same 48 bytes: 192 kB of table, 200x the payload
    table_end = head.size + 16 * n
    amp = bytearray(head.pack(b"PSAB", 1, 0, n, sha, 0))
    for k in range(n):
        amp += struct.pack("<IIQ", k, n_words, table_end)
    (d / "p-amp.psab").write_bytes(bytes(amp) + payload)
    seg = bytearray(head.pack(b"PSAB", 1, 0, 0, sha, 20000))
    seg_end = head.size + 24 * 20000
    for k in range(20000):
        seg += struct.pack("<QQQ", k << 20, 4096, seg_end)
    (d / "p-segamp.psab").write_bytes(bytes(seg) + bytes(4096))
    big = d / "p-huge.psab"
    with open(big, "wb") as f:
        f.truncate(3 << 30)
    return [
        Case("pimsab-stream-tile-id", P, "pimsab files", ("disasm", "-t", P, str(d / "p-tile.psab")),
             says="tile 4294967295, outside 0..4095"),
        Case("pimsab-stream-amplification", P, "pimsab files", ("disasm", "-t", P, str(d / "p-amp.psab")),
             says="entries overlap"),
        Case("pimsab-segment-amplification", P, "pimsab files", ("disasm", "-t", P, str(d / "p-segamp.psab")),
             says="entries overlap"),
        Case("pimsab-huge-garbage", P, "pimsab files", ("disasm", "-t", P, str(big)),
             says="not a PIMSAB program image"),
    ]


def _dais_and_calibration(d: Path, Case) -> list:
    from nnisa.core.target import get_target
    t = get_target("dais")
    prog = t.assemble(".dais 1\n.firmware 0\n.inputs 2 shifts 0 0\n.outputs 2\n%0 = input 0 : (1,7,0)\n"
                      "%1 = input 1 : (0,4,2)\nout 0 = %0\nout 1 = %1\n")
    p = d / "d-range.dais"
    t.write(prog, p)
    for name, rows in (("d-300.npy", [[300.0, 5.25]]), ("d-1e30.npy", [[1e30, 1.0]]),
                       ("d-neg.npy", [[0.0, -1.0]])):
        np.save(d / name, np.array(rows))
    cases = [
        Case("dais-input-300", "dais", "dais inputs", ("sim", "-t", "dais", str(p), "--inputs", str(d / "d-300.npy")),
             says="input 0, sample 0: 300 is outside the input's range -128..127"),
        Case("dais-input-1e30-exact", "dais", "dais inputs", ("sim", "-t", "dais", str(p), "--inputs",
                                                              str(d / "d-1e30.npy"), "-O", "engine=exact"),
             says="1e+30 is outside"),
        Case("dais-input-negative-unsigned", "dais", "dais inputs", ("sim", "-t", "dais", str(p), "--inputs",
                                                                     str(d / "d-neg.npy")),
             says="input 1, sample 0: -1 is outside the input's range 0..15.75"),
        Case("dais-input-range-option", "dais", "dais inputs", ("sim", "-t", "dais", str(p), "--inputs",
                                                                str(d / "d-300.npy"), "-O", "input_range=clip"),
             says="not one of"),
    ]
    calib = [("calib-3e38", "pim", np.full((8, 1, 8, 8), 3e38, np.float32), "range 3e+38"),
             ("calib-1e300", "pim", np.full((8, 1, 8, 8), 1e300), "overflows the float model"),
             ("calib-1e-30-dais", "dais", np.full((8, 1, 8, 8), 1e-30), "range 1e-30"),
             ("calib-3e38-dais", "dais", np.full((8, 1, 8, 8), 3e38, np.float32), "range 3e+38")]
    for cid, target, arr, says in calib:
        np.save(d / f"{cid}.npy", arr)
        cases.append(Case(cid, target, "calibration", ("run", "-t", target, str(MLP), "--calibration",
                                                       str(d / f"{cid}.npy")), says=says))
    return cases


def _sweep_specs(d: Path, Case) -> list:
    def axis(line: str) -> str:
        return f"targets:\n  dais:\n    options:\n      {line}\n"

    specs = [("sweep-range-inf", axis("bits: {from: 3, to: .inf}"), "finite numbers"),
             ("sweep-range-nan", axis("bits: {from: .nan, to: 5}"), "finite numbers"),
             ("sweep-range-float-inf", "targets:\n  pim:\n    options:\n      fill: {from: 0.1, to: .inf, step: 0.1}\n",
              "finite numbers"),
             ("sweep-yaml-5000-digits", axis("bits: [" + "9" * 5000 + "]"), "invalid YAML"),
             ("sweep-yaml-range-5000-digits", axis("bits: {from: 3, to: " + "9" * 5000 + "}"), "invalid YAML"),
             ("sweep-yaml-50000-brackets", axis("bits: " + "[" * 50000 + "]" * 50000), "nested too deeply")]
    return [Case(cid, "sweep", "sweep spec", ("sweep", _w(d / f"{cid}.yaml", text), "--dry-run"), says=says)
            for cid, text, says in specs]


def _sparse(path: Path, size: int = 3 << 30) -> str:
    """A file claiming ``size`` bytes of zeros (sparse: no disk used)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return str(path)


def _huge_text(d: Path, Case) -> list:
    """3 GiB of binary zeros under text names, and a ``.tmodel`` naming a 3 GiB program: refused
    from the first bytes or the declared size, before the file is read whole."""
    from harness import run_cli
    tiny = ("--arch", "tiny2x2")
    cases = [
        Case("pim-huge-text", "pim", "pim files", ("disasm", "-t", "pim", _sparse(d / "h-pim.s")),
             says="not text: a NUL byte at byte 0"),
        Case("dais-huge-text", "dais", "dais files", ("disasm", "-t", "dais", _sparse(d / "h-dais.dais.txt")),
             says="not text: a NUL byte at byte 0"),
        Case("dais-huge-json", "dais", "dais files", ("disasm", "-t", "dais", _sparse(d / "h-dais.json")),
             says="not text: a NUL byte at byte 0"),
        Case("tensil-huge-text", "tensil", "tensil files", ("disasm", "-t", "tensil", *tiny,
                                                            _sparse(d / "h-tensil.s")), says="NUL byte at byte 0"),
        Case("tensil-huge-tasm", "tensil", "tensil files", ("disasm", "-t", "tensil", *tiny,
                                                            _sparse(d / "h-tensil.tasm")), says="NUL byte at byte 0"),
        Case("pimsab-huge-text", "pimsab", "pimsab files", ("disasm", "-t", "pimsab", _sparse(d / "h-pimsab.s")),
             says="neither a PIMSAB program image nor assembly text"),
        Case("sweep-huge-spec", "sweep", "sweep spec", ("sweep", _sparse(d / "h-spec.yaml"), "--dry-run"),
             says="NUL byte at byte 0"),
    ]
    b = d / "h-tbundle"
    if not (b / "manifest.json").exists():
        assert run_cli(["compile", "-t", "tensil", str(MLP), "-o", str(b)]).code == 0
    tmodel = b / json.loads((b / "manifest.json").read_text())["tmodel"]
    prog = tmodel.parent / json.loads(tmodel.read_text())["prog"]["file_name"]
    _sparse(prog)
    cases.append(Case("tensil-huge-tprog", "tensil", "tensil bundles", ("disasm", "-t", "tensil", str(tmodel)),
                      says="has at most"))
    return cases


def surface_cases(d: Path, Case) -> list:
    """Every issue-25 case, files written into ``d``."""
    return (_tensil(d, Case) + _cherry(d, Case) + _pimsab(d, Case) + _dais_and_calibration(d, Case)
            + _sweep_specs(d, Case) + _huge_text(d, Case))
