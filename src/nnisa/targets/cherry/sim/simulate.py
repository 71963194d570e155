"""The Cherry ``simulate()`` entry point: raw programs or a compiled model → ``SimResult``.

A raw program (or a list run back to back) takes device memory as inputs (``dram``,
``dram_<tile>``, ``cache``...: :func:`.run.load_inputs`); a compiled model
(:class:`~nnisa.targets.cherry.formats.bundle.CompiledModel`, a bundle folder) takes its inputs by
tensor name (:mod:`.runtime`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.options import split_options
from ....core.target import SimResult, check_mode
from ..config import CherryCompileOptions
from ..formats.bundle import CompiledModel
from ..program import Program
from .run import simulate_program
from .runtime import simulate_compiled, simulate_samples

__all__ = ["simulate", "simulate_batch"]


def simulate(program: Program | list[Program] | CompiledModel, *, config: Any = None,
             inputs: dict[str, np.ndarray] | None = None, mode: str | None = None, engine: str = "fast",
             timeline: bool = False, **options: Any) -> SimResult:
    """Run ``program``: values and/or cycles (``mode``: both, functional or timing).

    ``config`` defaults to the compiled model's configuration, else to SZ of the program;
    ``options`` are :class:`~nnisa.targets.cherry.config.CherryCompileOptions` fields
    (``element_format``, ``host_link``, ``race_check``).  ``timeline``: ``SimResult.timeline``,
    one track per unit.
    """
    mode = check_mode(mode)
    overrides, _ = split_options(CherryCompileOptions, options)
    if isinstance(program, CompiledModel):
        cfg = overrides.apply(program.config if config is None else config)
        outs, st, dev, tl = simulate_compiled(program, cfg, inputs, mode=mode, engine=engine, timeline=timeline)
        return SimResult(outs, st, dev, timeline=tl)
    progs = program if isinstance(program, list) else [program]
    cfg = overrides.apply(config if config is not None else {"sz": progs[0].sz})
    outs, st, machine, tl = simulate_program(progs, cfg, inputs, mode=mode, engine=engine, timeline=timeline)
    return SimResult(outs, st, machine, timeline=tl)


def simulate_batch(model: CompiledModel, samples: list[dict[str, np.ndarray]], *, config: Any = None,
                   mode: str | None = None, engine: str = "fast", **options: Any) -> tuple[list[dict], Any]:
    """Run a compiled model on many samples (one dict of inputs each) in batched passes
    (:func:`~nnisa.targets.cherry.sim.runtime.simulate_samples`): each sample's outputs and the
    Stats per input."""
    mode = check_mode(mode)
    overrides, _ = split_options(CherryCompileOptions, options)
    cfg = overrides.apply(model.config if config is None else config)
    outs, st, _, _ = simulate_samples(model.plan, cfg, samples, mode=mode, engine=engine)
    return outs, st
