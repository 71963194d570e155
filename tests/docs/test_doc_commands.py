"""Every ```sh block of README.md and docs/*.md runs as written (issue 28 item 1).

Each block runs with bash (``set -e``: the first failing command fails the test and is named) in a
temporary folder laid out like a fresh clone in CI: ``examples/`` of this repository and
``../shared`` beside it.  ``nnisa`` is this tree's CLI; ``python`` this interpreter (both first on PATH).

A block may be marked by an HTML comment on the line before its fence:

* ``<!-- doctest: slow (reason) -->``   a long run: only under ``-m slow`` (``make test-all``);
* ``<!-- doctest: skip (reason) -->``   never run here (e.g. needs a cluster); the reason is shown;
* ``<!-- doctest: needs TOOL -->``      skipped with the reason when ``TOOL`` is not on PATH.

Blocks run in parallel (pytest-xdist); each has its own folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import REPO_ROOT, require_shared

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
MARK = re.compile(r"<!--\s*doctest:\s*(slow|skip|needs)\s*(.*?)\s*-->")
#: seconds a fast block may take before the test fails (a doc command that hangs)
TIMEOUT = 900


def doc_blocks() -> list[tuple[str, str, str | None, str]]:
    """(id ``file:line``, script, mark kind or None, mark argument) of every shell block."""
    out = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            if FENCE.match(lines[i]):
                start = i
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                mark = MARK.search(lines[start - 1]) if start else None
                out.append((f"{path.relative_to(REPO_ROOT)}:{start + 1}", "\n".join(lines[start + 1:j]),
                            mark.group(1) if mark else None, mark.group(2) if mark else ""))
                i = j
            i += 1
    return out


def _param(block):
    ident, script, kind, arg = block
    marks = [pytest.mark.slow] if kind == "slow" else []
    return pytest.param(script, kind, arg, id=ident, marks=marks)


PRELUDE = """set -eo pipefail
trap 'echo "doc command failed (exit $?): $BASH_COMMAND" >&2' ERR
"""


def _bin(folder: Path) -> Path:
    """``nnisa`` and ``python`` of this interpreter and tree, first on PATH."""
    folder.mkdir()
    for name, cmd in (("nnisa", f'exec "{sys.executable}" -m nnisa "$@"'), ("python", f'exec "{sys.executable}" "$@"')):
        (folder / name).write_text(f"#!/bin/sh\n{cmd}\n")
        (folder / name).chmod(0o755)
    return folder


def test_blocks_found():
    blocks = doc_blocks()
    assert len(blocks) >= 10, "the docs lost their command blocks"
    for ident, script, kind, arg in blocks:
        assert script.strip(), f"{ident}: empty block"
        assert kind != "skip" or arg, f"{ident}: a skipped block must say why"


@pytest.mark.parametrize("script,kind,arg", [_param(b) for b in doc_blocks()])
def test_doc_block(script, kind, arg, tmp_path):
    if kind == "skip":
        pytest.skip(f"marked in the doc: {arg}")
    if kind == "needs":
        tool = arg.split()[0]
        if shutil.which(tool) is None:
            pytest.skip(f"needs {arg} (not on PATH)")
    shared = require_shared()
    work = tmp_path / "nnisa"
    work.mkdir()
    (tmp_path / "shared").symlink_to(shared, target_is_directory=True)
    shutil.copytree(REPO_ROOT / "examples", work / "examples")  # a copy: a command may write beside its input
    env = {**os.environ, "MPLBACKEND": "Agg", "PATH": f"{_bin(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(["bash", "-c", PRELUDE + script], cwd=work, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, (proc.stderr[-3000:] or proc.stdout[-2000:])
