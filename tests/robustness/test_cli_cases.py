"""Every case of the bad-input catalogue (cases.py): one line, the right exit status, no traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import assert_clean_error, catalogue, json_error, run_cli  # noqa: E402


@pytest.mark.parametrize("case_id", list(catalogue()))
def test_case(case_id):
    case = catalogue()[case_id]
    assert_clean_error(run_cli(case.args), case.code, case.says)


@pytest.mark.parametrize("case_id", ["opt-unknown", "dais-json-deep", "onnx-missing", "samples-zero"])
def test_case_json(case_id):
    """With --json the error is also one JSON object on stdout."""
    case = catalogue()[case_id]
    res = run_cli(case.args + ("--json",))
    assert_clean_error(res, case.code, case.says)
    doc = json_error(res)
    assert doc["exit_code"] == case.code and case.says.lower() in doc["error"].lower()
