"""How big a network is as DAIS logic, checked before any work.

A DAIS program is fully unrolled combinational logic: every multiply-accumulate of the network is
its own shift-add terms, so program size (and compile time and memory) grows with the network's
multiply-accumulates per input.  Measured: LeNet-5 (≈ 0.42 M MACs) compiles to 583,544 ops in
471 MB; a network above ``max_macs`` is refused naming the figure, the limit and what would fit.
"""

from __future__ import annotations

import math

import numpy as np

from ....core.errors import UnsupportedError

#: default limit of ``-O max_macs`` (≈ 3 M DAIS ops, a few GB and minutes of compile time)
DEFAULT_MAX_MACS = 2_000_000


def network_macs(g) -> int:
    """Multiply-accumulates of one input of float graph ``g`` (batch 1): Conv, Gemm, MatMul."""
    total = 0
    for n in g.nodes:
        if n.op not in ("Conv", "Gemm", "MatMul"):
            continue
        out = g.tensors[n.outputs[0]].shape
        per_out = 0
        if n.op == "Conv":
            w = g.shape(n.inputs[1])
            per_out = int(np.prod(w[1:], dtype=np.int64))
        else:
            per_out = int(g.shape(n.inputs[0])[-1])
        total += per_out * int(np.prod(out, dtype=np.int64))  # batch 1: axis 0 may be a sequence
    return int(total)


def check_size(g, max_macs: int | None) -> int:
    """The network's MACs; raises :class:`UnsupportedError` when they exceed ``max_macs``."""
    macs = network_macs(g)
    if max_macs is None or macs <= max_macs:
        return macs
    fit = ""
    spatial = [t for t in g.inputs if len(t.shape) == 4]
    if spatial:  # a CNN's MACs scale with its input area
        h, w = spatial[0].shape[2:]
        s = math.sqrt(max_macs / macs)
        fit = f"; an input of about {max(1, int(h * s))}x{max(1, int(w * s))} instead of {h}x{w} would fit"
    raise UnsupportedError(
        f"the network needs {macs / 1e6:.1f} M multiply-accumulates per input; DAIS is fully unrolled logic "
        f"(every MAC becomes its own adders) and the compiler's limit is {max_macs / 1e6:.1f} M "
        f"(-O max_macs=N raises it: about 1.4 DAIS ops and 1 kB of compile memory per MAC){fit}",
        file=g.source)
