"""The ``manifest.json`` of a Tensil compile (a bundle folder holding ``.tmodel``/``.tprog``/``.tdata``).

Kept with the formats, so reading a folder confines the files its manifest names (``program``,
``tmodel``, ``tdata``) to it like every other target's bundle.
"""

from __future__ import annotations

from typing import Any

from ....core.bundle import Manifest


class TensilManifest(Manifest):
    """``manifest.json`` of a Tensil compile: the usual fields plus what the runner needs."""

    FILE_FIELDS = ("program", "tmodel", "tdata")
    tmodel: str | None = None
    tdata: str | None = None
    true_macs: int = 0
    postprocess: list[dict[str, Any]] = []
    topology: list[dict[str, Any]] = []
    strategy: str = "local-isolated"
