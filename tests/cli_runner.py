"""``nnisa <args>`` in-process for tests: one runner for every test folder (importable by module name)."""

from __future__ import annotations

import pytest

from nnisa.cli import main


def run_cli(args, capsys) -> tuple[int, str, str]:
    """Run the CLI with ``args`` (any objects; passed as strings): (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err
