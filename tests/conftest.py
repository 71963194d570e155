"""Shared pytest fixtures.

``shared_dir`` gives the path of the shared data directory (``../shared`` next to the repo
root).  Tests needing it skip with a clear reason when it is absent, but fail when the
environment variable ``CI`` is set (CI must have the data).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"


def require_shared(*parts: str) -> Path:
    """Return ``SHARED_DIR / parts``; skip (or fail under CI) if it does not exist."""
    path = SHARED_DIR.joinpath(*parts)
    if not path.exists():
        msg = f"shared data not available: {path} (expected ../shared next to the repo root)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture
def shared_dir() -> Path:
    """The shared data directory (skips when absent, fails under CI)."""
    return require_shared()
