"""The DAIS ``simulate()`` entry point: a program on a batch of integer inputs → ``SimResult``.

DAIS programs are combinational: the figures are the program's static ones (ops, adders, depth),
the interpreter's wall time, and energy and latency from the per-action table of :mod:`..energy`
(``config``).  ``cycles`` are adder levels (the design pipelined one adder per clock of
``adder_delay_ns``: ``latency_ns = cycles · adder_delay_ns``); a compiled network's program also
gives per-layer rows (:mod:`..layers`).  Engines: ``auto``/``compiled`` (numba),
``exact`` (the integer reference) and ``rtl`` (the emitted Verilog run by Verilator).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....core.target import SimResult, Stats
from ..program import Program

__all__ = ["simulate"]


def simulate(program: Program, *, config: Any = None, inputs: dict[str, np.ndarray] | None = None,
             engine: str = "auto", da4ml_compat: bool = False, semantics: str = "default", n_threads: int = 1,
             check: bool = False, latency_cutoff: float | None = None, input_range: str | None = None,
             **_: Any) -> SimResult:
    """Run ``program`` on ``inputs["x"]`` (any name accepted if there is one input), samples first.

    ``da4ml_compat`` reproduces da4ml's C++ interpreter quirks; ``check`` also runs the exact
    reference and compares; ``latency_cutoff`` pipelines the RTL of ``engine="rtl"``; ``input_range``
    (``error``/``saturate``/``wrap``, default ``wrap`` with ``da4ml_compat`` else ``error``) says what
    an input outside its declared type does.
    ``instructions`` is the program length, as for every target (``executed_ops`` counts the batch).
    """
    from .interp import default_input_range, interpreter_for
    if not inputs:
        raise FormatError("DAIS simulation needs an input array (inputs={'x': array})")
    names = program.meta.get("input_names") or []
    if len(names) > 1 and set(names) <= set(inputs):
        # a compiled folder's graph inputs (token ids and a mask; a GRU cell's state): each sample's
        # codes concatenated in the manifest's order, as the compiler laid out the program's inputs
        n = len(np.asarray(inputs[names[0]]))
        x = np.concatenate([np.asarray(inputs[k], np.float64).reshape(n, -1) for k in names], axis=1)
    else:
        x = inputs["x"] if "x" in inputs else next(iter(inputs.values()))
    input_range = input_range or default_input_range(bool(da4ml_compat))
    if engine == "rtl":
        from .rtl_engine import simulate_rtl
        y, extra = simulate_rtl(program, x, latency_cutoff=latency_cutoff, da4ml_compat=bool(da4ml_compat),
                                input_range=input_range)
        return SimResult(outputs={"y": y}, stats=Stats(instructions=int(program.n_ops), wall_s=extra["wall_s"],
                                                       extra=extra))
    semantics = "da4ml-compat" if da4ml_compat else semantics
    t0 = time.perf_counter()
    interp = interpreter_for(program, semantics, engine)  # lowered once per program
    y = interp.run(x, n_threads=n_threads, check=check, input_range=input_range)
    wall = time.perf_counter() - t0
    extra: dict[str, Any] = {k: program.stat(k) for k in ("n_ops", "n_adders", "adder_bits", "depth", "adder_depth")}
    extra["samples"] = int(y.shape[0])
    extra["executed_ops"] = int(program.n_ops * y.shape[0])
    extra["semantics"] = semantics
    return SimResult(outputs={"y": y}, stats=_stats(program, config, int(y.shape[0]), wall, extra))


def _stats(program: Program, config: Any, samples: int, wall: float, extra: dict[str, Any]) -> Stats:
    """The figures of a run of ``samples`` inputs: energy from the per-action table (``config``,
    :mod:`..energy`), ``latency_ns`` of one input through the combinational logic."""
    from ..energy import energy_figures
    from ..layers import program_layer_rows
    f = energy_figures(program, config, samples)
    extra.update({k: v for k, v in f.items() if k not in ("energy_pj", "latency_ns")})
    extra["timing_model"] = "adder levels: one adder per clock of adder_delay_ns (latency_cutoff=1 pipeline)"
    return Stats(cycles=int(program.stat("adder_depth")), instructions=int(program.n_ops), wall_s=wall,
                 energy_pj=f["energy_pj"], latency_ns=f["latency_ns"], extra=extra,
                 layers=program_layer_rows(program, config))
