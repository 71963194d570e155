"""Where the shared reference data lives, and how tests that need it skip or fail.

``../shared`` next to the repository root holds the conformance artifacts.  A test that needs it
calls :func:`require_shared`: it skips with a clear reason when the data is absent (a user's
fresh clone) but fails when the environment variable ``CI`` is set, so CI can never pass by
skipping.
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
