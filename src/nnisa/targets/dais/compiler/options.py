"""The DAIS compile options: one dataclass, from which the ``-O`` table of compile/run comes."""

from __future__ import annotations

from dataclasses import dataclass

from ....core.options import option
from ....core.quant_options import QuantOptions
from .netsize import DEFAULT_MAX_MACS

#: default CSE work budget per layer, in greedy steps (heap pops): a layer's CSE stops after this
#: many and its remaining terms go to plain adder trees (exact either way); ``cse_budget=None`` for
#: no limit.  Counted in work, not seconds, so the same model gives the same program on every run.
DEFAULT_CSE_BUDGET = 500_000
#: default row-block size of a layer's CSE (:meth:`CMVMCompiler._cse_blocks`; ``None``: one block).
#: LeNet-5 (load 8): 32 rows → 471 MB, 583,544 ops; one block → 985 MB, 562,118 ops
DEFAULT_CSE_BLOCK_ROWS = 32

_RTL = ("compile", "convert")


@dataclass
class DaisCompileOptions(QuantOptions):
    """How ``nnisa compile/run -t dais`` builds a network (quantization options inherited)."""

    method: str = option("wmc", "CSE heuristic (weighted/plain most common pair)", choices=("wmc", "mc", "dummy"))
    max_depth: int | None = option(None, "adder depth limit per layer", minimum=1, maximum=1 << 16)
    bits: int = option(8, "quantization bit width", minimum=2, maximum=16)
    cse_budget: int | None = option(DEFAULT_CSE_BUDGET, "CSE work budget per layer in greedy steps (none: "
                                    "unlimited); deterministic", minimum=0)
    cse_block_rows: int | None = option(DEFAULT_CSE_BLOCK_ROWS, "CSE row-block size (wide layers pair terms "
                                        "within blocks; none: whole matrix)", minimum=1, maximum=1 << 24)
    max_macs: int | None = option(DEFAULT_MAX_MACS, "refuse networks above this many multiply-accumulates per "
                                  "input (DAIS unrolls every MAC; none: no limit)", minimum=1)
    hdl: str | None = option(None, "also emit the network as RTL into the output folder",
                             choices=("verilog", "vhdl"), commands=("compile",))
    latency_cutoff: float | None = option(None, "RTL pipelining: adder delays per stage (none: combinational)",
                                          commands=("compile", "convert", "sim"), minimum=0.001, maximum=1e6)
    top: str | None = option(None, "RTL top module name (default: the file stem, else dais_top)", commands=_RTL)
    synth: bool = option(False, "synthesize the RTL with Yosys and report LUTs and flip-flops",
                         commands=("compile",))
    synth_script: str = option("xilinx", "Yosys flow: synth_xilinx or generic LUT6 mapping",
                               choices=("xilinx", "lut6"), commands=("compile",))
