"""The jobs a lowering produces (array and SIMD ops over activation vars and const blocks) and
the error every lowering raises; shared by :mod:`.lower`, the job modules and :mod:`.codegen`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ....frontend.ir import Node


@dataclass
class Var:
    """An activation tensor in Tensil's layout (NHWC or rows of features)."""

    name: str
    shape: tuple[int, ...]
    size: int
    home: str = "dram0"
    addr: int = -1
    view_of: "Var | None" = None  # a flattened NCHW tensor (same vectors)
    first: int = -1  # op index producing it (-1: graph input)
    last: int = -1  # last op index reading it
    is_input: bool = False
    is_output: bool = False

    @property
    def root(self) -> "Var":
        return self.view_of.root if self.view_of is not None else self

    @property
    def pixels(self) -> tuple[int, int, int]:
        """(H, W, channel blocks-as-C) of the vector layout: 2-D tensors are n × 1 pixels."""
        s = self.shape
        return (s[0] * s[2], s[3], s[1]) if len(s) == 4 else (s[0], 1, s[1])


@dataclass
class Const:
    """A constant block (float32 vectors) in first-use order; ``addr`` is its DRAM1/local address."""

    name: str
    vectors: np.ndarray
    addr: int = -1

    @property
    def size(self) -> int:
        return len(self.vectors)


@dataclass
class Act:
    """A fused activation: ``relu``, ``leaky`` (alpha const) or ``clip`` (min, max consts)."""

    kind: str
    consts: tuple[Const, ...] = ()
    alpha: float = 0.0


@dataclass
class ArrayOp:
    """Conv/Gemm on the array: ``y = act(conv(x, W) + b)``; consts = [bias block, weight rows]."""

    node: Node
    x: Var
    y: Var
    const: Const
    geom: dict[str, int]
    act: Act | None = None
    has_bias: bool = True
    macs: int = 0
    residual: Var | None = None  # a fused Add: y = act(conv(x) + residual)
    descale: Const | None = None  # 2^-p when the weights and bias were scaled by 2^p (compiler/precision.py)


@dataclass
class SimdOp:
    """Accumulator/SIMD job: ``add|sub|mul`` (inputs Var or Const), ``max_pool|avg_pool``, ``act``."""

    node: Node
    kind: str
    inputs: list[Any]
    y: Var
    act: Act | None = None
    geom: dict[str, Any] = field(default_factory=dict)
    consts: list[Const] = field(default_factory=list)


def _err(node: Node, msg: str, hint: str | None = None) -> UnsupportedError:
    return UnsupportedError(msg, where=f"node {node.name} ({node.op})", hint=hint)


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers: (first, count)."""
    out: list[list[int]] = []
    for r in rows:
        if out and out[-1][0] + out[-1][1] == r:
            out[-1][1] += 1
        else:
            out.append([r, 1])
    return [tuple(o) for o in out]
