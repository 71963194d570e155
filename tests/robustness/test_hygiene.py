"""Error hygiene: warnings as one line after success, never before an error; long echoes cut;
a byte-order mark is not content; deadlocks with --json are JSON too."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import assert_clean_error, run_cli  # noqa: E402

# op 3 right-shifts by more than its input's fraction: legal, but §5.8 undefined in da4ml (a warning)
WARNS = (".dais 1\n.inputs 1 shifts 0\n.outputs 1\n%0 = input 0 : (1,7,0)\n%1 = relu %0 : (1,7,2)\n"
         "out 0 = %1\n")


def test_warning_is_one_line_after_success(tmp_path):
    p = tmp_path / "w.dais.txt"
    p.write_text(WARNS)
    res = run_cli(["disasm", "-t", "dais", str(p)])
    assert res.code == 0, res.err
    lines = res.err.strip().splitlines()
    assert lines and all(line.startswith("nnisa: warning: ") for line in lines), res.err
    assert "undefined" in res.err and "Traceback" not in res.err


def test_no_warning_before_an_error(tmp_path):
    p = tmp_path / "w.dais.txt"
    p.write_text(WARNS)
    res = run_cli(["convert", "-t", "dais", str(p), str(tmp_path / "nope" / "x.unknown")])
    assert_clean_error(res)


def test_byte_order_mark_is_ignored(tmp_path):
    p = tmp_path / "bom.s"
    p.write_bytes("\ufeff.core 0\nsetbw 8, 8\n".encode())
    res = run_cli(["disasm", "-t", "pim", str(p)])
    assert res.code == 0, res.err
    assert ".core 0" in res.out


def test_deadlock_json(tmp_path):
    p = tmp_path / "dead.s"
    p.write_text(".core 0\nsetbw 8, 8\nrecv $r0, 1, 8\n.core 1\nsetbw 8, 8\nrecv $r0, 0, 8\n")
    res = run_cli(["sim", "-t", "pim", str(p), "--mode", "functional", "--json"])
    assert res.code == 3 and res.escaped is None
    doc = json.loads(res.out.strip().splitlines()[-1])
    assert doc["exit_code"] == 3 and doc["error_type"] == "DeadlockError" and "core 0" in doc["report"]


def test_long_echo_is_cut(tmp_path):
    p = tmp_path / "long.s"
    p.write_text(".core 0\n" + "y" * 10_000_000 + "\n")
    res = run_cli(["disasm", "-t", "pim", str(p)])
    assert_clean_error(res, says="characters cut")


def test_reader_findings_are_warnings(tmp_path):
    """pimsim-nn truncates a non-integral JSON number; nnisa does too (spec §6.4) but says so."""
    p = tmp_path / "frac.json"
    p.write_text(json.dumps({"config": {"core_cnt": 1, "array_group_map": {}},
                             "core0": [{"op": "sldi", "rd": 1, "imm": 1.5}]}))
    res = run_cli(["disasm", "-t", "pim", str(p)])
    assert res.code == 0 and "sldi $r1, 1" in res.out
    assert "nnisa: warning:" in res.err and "truncated toward zero" in res.err
