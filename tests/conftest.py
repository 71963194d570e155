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


def _interruptible() -> None:
    """Ctrl-C as in a terminal: a test run started in the background by a non-interactive shell
    (`cmd &`, as CI scripts may) inherits SIGINT *ignored*, and so would every `nnisa` child the
    tests start (POSIX keeps an ignored signal ignored across exec; Python then installs no
    KeyboardInterrupt handler).  The interrupt tests need the default behaviour, so restore it."""
    import signal
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_interruptible()
