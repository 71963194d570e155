"""``--gantt`` on ``run`` and ``compare`` for every target (issue 28 item 6): a picture, or exactly one
warning saying why not; never a failed run or a traceback."""

from __future__ import annotations

import pytest

from nnisa.core.target import target_names
from tests.cli_runner import run_cli


def _warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("nnisa: warning:")]


@pytest.mark.parametrize("target", target_names())
def test_run_gantt_draws_or_says_why(target, tmp_path, capsys):
    png = tmp_path / "g.png"
    code, _, err = run_cli(["run", "-t", target, "digits_mlp", "--gantt", png], capsys)
    assert code == 0, err
    assert "Traceback" not in err
    if png.exists():
        assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
        assert not [w for w in _warnings(err) if "gantt" in w]
    else:
        warned = [w for w in _warnings(err) if "--gantt" in w]
        assert len(warned) == 1 and "not drawn:" in warned[0], err


def test_compare_gantt_says_why_once(tmp_path, capsys):
    png = tmp_path / "g.png"
    code, _, err = run_cli(["compare", "digits_mlp", "--targets", "all", "--samples", "2", "--gantt", png], capsys)
    assert code == 0, err
    warned = [w for w in _warnings(err) if "--gantt" in w]
    assert len(warned) == 1 and "nnisa run -t TARGET MODEL --gantt FILE" in warned[0] and not png.exists()
