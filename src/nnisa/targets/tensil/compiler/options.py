"""The Tensil compile options: one dataclass, from which the ``-O`` table of compile/run comes."""

from __future__ import annotations

from dataclasses import dataclass

from ....core.options import option

STRATEGIES = ("local-isolated", "local-vars", "local-consts", "local-vars-and-consts")


@dataclass
class TensilCompileOptions:
    """How ``nnisa compile/run -t tensil`` lowers a model (Tensil's names where it has them)."""

    strategy: str = option("local-isolated", "memory strategy (Tensil's names)", choices=STRATEGIES)
    softmax: str = option("host", "Softmax at an output: on the host (default), passed through as logits "
                          "(Tensil), or an error", choices=("host", "passthrough", "error"))
    reuse: bool = option(True, "read a job's output from local memory in the next job instead of DRAM0 "
                         "(false: Tensil's DRAM round trips, byte-identical XOR)")
    declared_batch: bool = option(False, "compile a model whose first dimension is fixed at B > 1 as declared "
                                  "(B rows in one program, as Tensil's own compiler does; byte-identical XOR) "
                                  "instead of one row per program")
    outputs: str | None = option(None, "comma-separated tensors to output (default: every graph output)",
                                 commands=("compile",))
    lut: bool = option(False, "Sigmoid/Tanh through nnisa's LoadLUT/Lookup extension (adds x_nnisa_lut and 3 "
                       "SIMD registers to the architecture; not runnable on Tensil hardware)")
