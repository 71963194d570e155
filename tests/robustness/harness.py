"""Helpers of the robustness suite: run the CLI in-process, check the one-line-error contract, and the
case catalogue built once per process."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import MLP as MLP_PATH  # noqa: E402,F401
from cases import build_cases  # noqa: E402


@dataclass
class Outcome:
    code: object
    out: str
    err: str
    escaped: str | None  # traceback of an exception that escaped main(), if any


def run_cli(args) -> Outcome:
    """``nnisa <args>`` in this process; exceptions escaping ``main`` are recorded, not raised."""
    from nnisa.cli import main
    out, err = io.StringIO(), io.StringIO()
    code, escaped = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code
        except BaseException as e:  # noqa: BLE001 - the point is to catch anything
            escaped = "".join(traceback.format_exception(e))
            code = "exception"
    return Outcome(code, out.getvalue(), err.getvalue(), escaped)


def assert_clean_error(res: Outcome, code: int = 2, says: str = "") -> None:
    """One ``nnisa: error:`` line, the expected status, no traceback, no Python warning lines."""
    assert res.escaped is None, res.escaped
    assert res.code == code, (res.code, res.err[-2000:])
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err[-2000:]
    assert lines[0].startswith("nnisa: error: "), lines[0]
    assert "Traceback" not in res.err and "Warning:" not in res.err
    assert len(lines[0]) < 1200, len(lines[0])
    if says:
        assert says.lower() in lines[0].lower(), lines[0]


_CATALOGUE: dict | None = None


def catalogue() -> dict:
    """Case id → :class:`cases.Case`, files built once per process in a temporary folder."""
    global _CATALOGUE
    if _CATALOGUE is None:
        import atexit
        import shutil
        import tempfile
        d = Path(tempfile.mkdtemp(prefix="nnisa-robustness-"))
        atexit.register(shutil.rmtree, d, True)
        _CATALOGUE = {c.id: c for c in build_cases(d)}
    return _CATALOGUE


def json_error(res: Outcome) -> dict:
    return json.loads(res.out.strip().splitlines()[-1])
