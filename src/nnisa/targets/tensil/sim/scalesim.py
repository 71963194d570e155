"""SCALE-Sim-compatible closed form (spec §8.3): compute cycles of WS/OS/IS systolic dataflows.

For an R×C array and a layer with P output pixels, K = Fh·Fw·Cin and F filters:

==========  ======  ======  ======  =====================  ===================
dataflow    Sr      Sc      T       cycles per fold        folds
==========  ======  ======  ======  =====================  ===================
WS          K       F       P       2R + C + T − 2         ⌈K/R⌉·⌈F/C⌉
OS          P       F       K       R + C + T − 2          ⌈P/R⌉·⌈F/C⌉
IS          K       P       F       2R + C + T − 2         ⌈K/R⌉·⌈P/C⌉
==========  ======  ======  ======  =====================  ===================

A layer costs ``folds × cycles_per_fold − 1``; the network is the sum (SCALE-Sim's CALC-mode
"Total Cycles", no padding: feed padded input sizes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....core.errors import FormatError, OptionError
from ....core.fileio import read_text

DATAFLOWS = ("ws", "os", "is")


@dataclass(frozen=True)
class ConvLayer:
    """One topology row (SCALE-Sim conv CSV columns)."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride: int = 1

    @property
    def ofmap(self) -> tuple[int, int]:
        s = self.stride
        return -(-(self.ifmap_h - self.filter_h + s) // s), -(-(self.ifmap_w - self.filter_w + s) // s)

    @classmethod
    def gemm(cls, name: str, m: int, n: int, k: int) -> "ConvLayer":
        """GEMM row ``M, N, K``: ifmap M×K, filter 1×K, one channel, N filters."""
        return cls(name, m, k, 1, k, 1, n, 1)


def layer_cycles(layer: ConvLayer, rows: int, cols: int, dataflow: str = "ws") -> int:
    oh, ow = layer.ofmap
    P, K, F = oh * ow, layer.filter_h * layer.filter_w * layer.channels, layer.filters
    if dataflow == "ws":
        sr, sc, t, per = K, F, P, 2 * rows + cols + P - 2
    elif dataflow == "os":
        sr, sc, t, per = P, F, K, rows + cols + K - 2
    elif dataflow == "is":
        sr, sc, t, per = K, P, F, 2 * rows + cols + F - 2
    else:
        raise OptionError(f"unknown dataflow {dataflow!r} (choose {', '.join(DATAFLOWS)})")
    folds = -(-sr // rows) * -(-sc // cols)
    return folds * per - 1


def network_cycles(layers: list[ConvLayer], rows: int, cols: int, dataflow: str = "ws") -> dict[str, Any]:
    per = {l.name: layer_cycles(l, rows, cols, dataflow) for l in layers}
    return {"cycles": sum(per.values()), "dataflow": dataflow, "array": [rows, cols], "layers": per}


#: the numbers of a conv row after its name (stride may be left out) and of a GEMM row
_CONV_FIELDS = ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "filters", "stride")
_GEMM_FIELDS = ("m", "n", "k")
#: largest dimension accepted (a topology row is a layer, not a number to overflow with)
_MAX_DIM = 1 << 31


def _checked_layer(name: str, nums: list[int], gemm: bool) -> ConvLayer:
    """A layer from a row's numbers, every one a positive dimension and filters within the ifmap
    (raises ValueError with the reason)."""
    fields = _GEMM_FIELDS if gemm else _CONV_FIELDS
    need = len(fields) if gemm else len(fields) - 1
    if not need <= len(nums) <= len(fields):
        raise ValueError(f"expected {need}{'' if gemm else ' or ' + str(len(fields))} numbers "
                         f"({', '.join(fields)}), got {len(nums)}")
    for f, v in zip(fields, nums):
        if not 1 <= v <= _MAX_DIM:
            raise ValueError(f"{f} = {v} outside 1..{_MAX_DIM:,}")
    layer = ConvLayer.gemm(name, *nums) if gemm else ConvLayer(name, *nums)
    if layer.filter_h > layer.ifmap_h or layer.filter_w > layer.ifmap_w:
        raise ValueError(f"filter {layer.filter_h}x{layer.filter_w} larger than the ifmap "
                         f"{layer.ifmap_h}x{layer.ifmap_w}")
    return layer


def read_topology(path: str | Path) -> list[ConvLayer]:
    """A SCALE-Sim topology CSV (conv columns, or GEMM ``Layer Name, M, N, K``); every row is
    checked (count of numbers, positive dimensions) with its line in the error."""
    text = read_text(path)
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        raise FormatError("empty topology", file=str(path))
    head = [h.strip().lower() for h in lines[0].split(",")]
    gemm = head[1:4] == ["m", "n", "k"]
    out = []
    for lineno, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split(",")]
        while len(cells) > 1 and not cells[-1]:
            cells.pop()  # SCALE-Sim's rows end with a comma
        try:
            if any(not c.isdigit() or len(c) > 12 for c in cells[1:]):
                raise ValueError("expected positive integers after the layer name")
            out.append(_checked_layer(cells[0], [int(c) for c in cells[1:]], gemm))
        except ValueError as exc:
            raise FormatError(str(exc), file=str(path), line=lineno) from None
    if not out:
        raise FormatError("the topology has a header but no layer", file=str(path))
    return out


def program_scalesim(program, *, topology: str | None = None, dataflow: str = "ws", **_: Any) -> dict[str, Any]:
    """Closed-form cycles of the layers a compiled program computes (``x_nnisa_topology`` in its
    ``.tmodel``) or of an explicit topology file, on the program's N×N array."""
    n = program.arch.array_size
    if topology is not None:
        layers = read_topology(topology)
    else:
        topo = program.model.extensions.get("x_nnisa_topology") if program.model is not None else None
        if topo is None:
            raise OptionError("the scalesim model needs the layer topology: compile with nnisa (it records "
                              "x_nnisa_topology in the .tmodel) or pass -O topology=FILE.csv")
        layers = _recorded_layers(topo, None if program.model.path is None else str(program.model.path))
    return network_cycles(layers, n, n, dataflow)


def _recorded_layers(topo: Any, file: str | None) -> list[ConvLayer]:
    """The ``x_nnisa_topology`` list of a ``.tmodel`` (or a manifest) as checked layers."""
    try:
        items = json.loads(topo) if isinstance(topo, str) else topo
        if not isinstance(items, list):
            raise ValueError("expected a list of layers")
        out = []
        for i, d in enumerate(items):
            if not isinstance(d, dict) or not isinstance(d.get("name"), str) or \
                    any(not isinstance(d.get(f), int) or isinstance(d.get(f), bool) for f in _CONV_FIELDS[:-1]) or \
                    set(d) - {"name", *_CONV_FIELDS}:
                raise ValueError(f"layer {i}: expected name and the integers {', '.join(_CONV_FIELDS)}")
            out.append(_checked_layer(d["name"], [d[f] for f in _CONV_FIELDS if f in d], False))
        return out
    except ValueError as exc:
        raise FormatError(f"x_nnisa_topology: {exc}", file=file) from None


#: ResNet-18 (ImageNet, 224×224) as SCALE-Sim's conv topology: name, H, W, Fh, Fw, Cin, Cout, stride
RESNET18 = [ConvLayer(*row) for row in [
    ("Conv1", 224, 224, 7, 7, 3, 64, 2),
    ("Conv2_1a", 56, 56, 3, 3, 64, 64, 1), ("Conv2_1b", 56, 56, 3, 3, 64, 64, 1),
    ("Conv2_2a", 56, 56, 3, 3, 64, 64, 1), ("Conv2_2b", 56, 56, 3, 3, 64, 64, 1),
    ("Conv3_1a", 56, 56, 3, 3, 64, 128, 2), ("Conv3_1b", 28, 28, 3, 3, 128, 128, 1),
    ("Conv3_s", 56, 56, 1, 1, 64, 128, 2), ("Conv3_2a", 28, 28, 3, 3, 128, 128, 1),
    ("Conv3_2b", 28, 28, 3, 3, 128, 128, 1),
    ("Conv4_1a", 28, 28, 3, 3, 128, 256, 2), ("Conv4_1b", 14, 14, 3, 3, 256, 256, 1),
    ("Conv4_s", 28, 28, 1, 1, 128, 256, 2), ("Conv4_2a", 14, 14, 3, 3, 256, 256, 1),
    ("Conv4_2b", 14, 14, 3, 3, 256, 256, 1),
    ("Conv5_1a", 14, 14, 3, 3, 256, 512, 2), ("Conv5_1b", 7, 7, 3, 3, 512, 512, 1),
    ("Conv5_s", 14, 14, 1, 1, 256, 512, 2), ("Conv5_2a", 7, 7, 3, 3, 512, 512, 1),
    ("Conv5_2b", 7, 7, 3, 3, 512, 512, 1),
    ("FC", 1, 1, 1, 1, 512, 1000, 1),
]]
#: SCALE-Sim's own test topology (Inception 5b 3×3 branch)
INC5B = [ConvLayer("Inc5b_3x3", 7, 7, 3, 3, 192, 384, 1)]
