"""The ``manifest.json`` of a Tensil compile (a bundle folder holding ``.tmodel``/``.tprog``/``.tdata``).

Kept with the formats, so reading a folder confines the files its manifest names (``program``,
``tmodel``, ``tdata``) to it like every other target's bundle.
"""

from __future__ import annotations

from typing import Any

from ....core.bundle import Manifest


class TensilManifest(Manifest):
    """``manifest.json`` of a Tensil compile: the usual fields plus what the runner needs."""

    FILE_FIELDS = ("program", "tmodel", "tdata", "onnx")
    tmodel: str | None = None
    tdata: str | None = None
    true_macs: int = 0
    postprocess: list[dict[str, Any]] = []
    topology: list[dict[str, Any]] = []
    strategy: str = "local-isolated"
    #: a segmented model (issue 27): the ONNX model its host steps' nodes come from, and the steps in
    #: order: ``{"kind": "device", "folder": ..., "inputs": [...], "outputs": [...]}`` (a Tensil
    #: bundle folder) or ``{"kind": "host", "nodes": [...], "ops": [...], "inputs", "outputs", "host_ops"}``
    onnx: str | None = None
    #: per-layer instruction ranges (:mod:`nnisa.targets.tensil.sim.layers`)
    layer_spans: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
