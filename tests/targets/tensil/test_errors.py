"""Bad input gives one-line errors with exit code 2 and writes nothing (Tensil target)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
from .tensil_data import xor

from nnisa.cli import main

NNISA = [sys.executable, "-m", "nnisa.cli"]
_CAP = {}


@pytest.fixture(autouse=True)
def _capture(capsys):
    _CAP["capsys"] = capsys
    yield


def _cli(*args: str) -> SimpleNamespace:
    """The CLI in-process (its stderr captured), as a subprocess result would be."""
    cap = _CAP["capsys"]
    cap.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = cap.readouterr()
    return SimpleNamespace(returncode=exc.value.code, stderr=out.err, stdout=out.out)


def _one_line_error(r, pattern: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("nnisa: error:") and pattern in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_error_in_a_real_process():
    r = subprocess.run(NNISA + ["disasm", "-t", "tensil", str(xor(".tprog"))], capture_output=True, text=True,
                       timeout=120)
    _one_line_error(r, "architecture is needed")


def test_program_needs_an_architecture(tmp_path):
    _one_line_error(_cli("disasm", "-t", "tensil", str(xor(".tprog"))), "architecture is needed")


def test_reserved_opcode_bad_flags_and_depths_in_assembly(tmp_path):
    src = tmp_path / "p.s"
    out = tmp_path / "p.tprog"
    for text, pattern in [("datamove local[300] <- dram0[0], 1", "local address 300 ≥ local_depth 256"),
                          ("matmul.bogus local[0], acc[0], 1", "unknown matmul flag"),
                          ("simd.wr O = Max(I, I)", "SIMD flags"),
                          ("matmul local[0], acc[0], 300", "size"),
                          ("loadweights local[0]@2^1, 2", "stride field 1 ≥ stride0_depth 1")]:
        src.write_text(text + "\n")
        _one_line_error(_cli("asm", "-t", "tensil", "--arch", "tiny2x2", str(src), "-o", str(out)), pattern)
        assert not out.exists()


def test_emulator_rejects_raw_words_and_runs_past_depth(tmp_path):
    prog = tmp_path / "p.tprog"
    prog.write_bytes(bytes.fromhex("00 00 00 70"))  # reserved opcode 0x7
    _one_line_error(_cli("sim", "-t", "tensil", "--arch", "tiny2x2", str(prog)), "reserved opcode 0x7")
    prog.write_bytes(bytes.fromhex("00 00 00 25"))  # DataMove kind 0x5
    _one_line_error(_cli("sim", "-t", "tensil", "--arch", "tiny2x2", str(prog)), "invalid DataMove kind 0x5")
    prog.write_bytes(bytes.fromhex("fa 00 0a 20"))  # local[250] <- dram0[0], 11: runs past 256
    _one_line_error(_cli("sim", "-t", "tensil", "--arch", "tiny2x2", str(prog)), "local address 260")


def test_short_tdata_and_bad_model_files(tmp_path):
    for ext in (".tmodel", ".tprog", ".tdata"):
        shutil.copy(xor(ext), tmp_path / f"xor{ext}")
    (tmp_path / "xor.tdata").write_bytes(xor(".tdata").read_bytes()[:10])
    _one_line_error(_cli("sim", "-t", "tensil", str(tmp_path / "xor.tmodel"), "--inputs", str(xor("_in.csv"))),
                    "declares 6 vectors")
    (tmp_path / "xor.tprog").write_bytes(xor(".tprog").read_bytes()[:-4])
    _one_line_error(_cli("disasm", "-t", "tensil", str(tmp_path / "xor.tmodel")), "prog.size")
    (tmp_path / "xor.tmodel").write_text('{"name": "xor", "prog": 1')
    _one_line_error(_cli("disasm", "-t", "tensil", str(tmp_path / "xor.tmodel")), "invalid JSON")
    bad = tmp_path / "a.tarch"
    bad.write_text('{"data_type": "FP16BP8"}')
    _one_line_error(_cli("disasm", "-t", "tensil", "--arch", str(bad), str(xor(".tprog"))), "missing key")


def test_bad_inputs_and_options(tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("1,2,3\n")
    _one_line_error(_cli("sim", "-t", "tensil", str(xor(".tmodel")), "--inputs", str(csv)), "whole number of runs")
    _one_line_error(_cli("sim", "-t", "tensil", str(xor(".tmodel")), "-O", "timing=magic"), "timing")


@pytest.mark.parametrize("arch", ["nosuch", "/nonexistent/x.tarch"])
def test_unknown_architecture(arch):
    _one_line_error(_cli("disasm", "-t", "tensil", "--arch", arch, str(xor(".tprog"))), "architecture")
