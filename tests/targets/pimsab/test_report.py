"""The reproduction report script renders Markdown and figures (quick mode)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_quick_report(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "pimsab_report.py"), "--quick", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "pimsab_report.md").read_text()
    assert "| vadd | 30,944 |" in text and "Geometric mean" in text and "Table 6" in text
    for png in ("fig16_vs_a100.png", "fig18_time.png", "fig18_energy.png"):
        assert (tmp_path / "pimsab_report" / png).stat().st_size > 5000
    again = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "pimsab_report.py"), "--from-json",
                            str(tmp_path / "pimsab_report" / "results.json"), "--out", str(tmp_path / "b")],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and (tmp_path / "b" / "pimsab_report.md").read_text().split("\n", 3)[3] == \
        text.split("\n", 3)[3]
