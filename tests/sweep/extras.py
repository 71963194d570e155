"""Optional dependencies of the sweep tests: skip with a reason outside CI, fail in CI (``CI`` set)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` (from the ``extra`` extra, installed by ``make install``) or skip/fail."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed (the {extra} extra); CI must run these tests", pytrace=False)
        pytest.skip(f"{module} is not installed: pip install 'nnisa[{extra}]' (or make install)",
                    allow_module_level=True)
