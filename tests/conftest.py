"""Shared pytest fixtures; helpers importable by module name from every test folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/shared_data.py

from shared_data import SHARED_DIR, require_shared  # noqa: E402


@pytest.fixture
def shared_dir() -> Path:
    """The shared data directory (skips when absent, fails under CI)."""
    return require_shared()
