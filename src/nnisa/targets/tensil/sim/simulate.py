"""``nnisa sim -t tensil``: values (the emulator) and cycles (one of three models) → SimResult.

Modes: ``functional`` (values only), ``timing`` (cycles only) and ``both`` (default).  Cycle
models (``-O timing=``): ``estimator`` (Tensil's, exact), ``detailed`` (our systolic model,
calibrated per platform profile) and ``scalesim`` (SCALE-Sim's weight-stationary closed form of
the layers the program computes, plus the array-only cross-check).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ....core.errors import OptionError, SimError
from ....core.target import SimResult, Stats, check_mode, take_engine
from ..config import load_arch
from ..formats.model import read_csv_vectors
from ..program import TensilProgram
from .emulator import Emulator, emulate_model
from .energy import program_energy
from .estimator import estimate

__all__ = ["TIMING_MODELS", "simulate"]

TIMING_MODELS = ("estimator", "detailed", "scalesim")


def model_outputs(floats: dict[str, np.ndarray], shapes: dict[str, list[int]],
                  postprocess: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Output vectors ``(runs, size, N)`` → float tensors ``(runs·shape[0], *shape[1:])`` in the
    model's layout, with a trailing Softmax (the compile's host tail) applied."""
    from ..layout import vectors_to_activation
    post = {p["output"]: p for p in postprocess}
    out = {}
    for k, v in floats.items():
        shape = tuple(shapes.get(k) or ())
        if not shape:
            out[k] = v.reshape(-1, v.shape[-1])
            continue
        a = np.concatenate([vectors_to_activation(np.asarray(r, np.float64), shape, r.shape[-1]) for r in v])
        if k in post:
            e = np.exp(a - a.max(axis=post[k]["axis"], keepdims=True))
            a = e / e.sum(axis=post[k]["axis"], keepdims=True)
        out[k] = a.astype(np.float32)
    return out


def simulate(program: TensilProgram, *, config: Any = None, inputs: dict[str, np.ndarray] | None = None,
             mode: str = "both", timing: str = "estimator", runs: int | None = None,
             local_consts: bool | None = None, compare: str | None = None,
             conversion: str = "tensil", true_macs: int | None = None, profile: str = "zcu104-single",
             raw_outputs: bool = False, csv: str | None = None, timeline: bool = False,
             shaped: bool | None = None, **options: Any) -> SimResult:
    """Simulate a program (with its model when read from a ``.tmodel``).  ``engine``: the
    emulator's ``fast`` (numba) or ``reference`` interpreter (``path`` is the deprecated old name);
    ``timeline`` (the detailed model only): ``SimResult.timeline``, one track per unit.

    Outputs are Tensil's vectors ``(runs·size, N)``, or, with ``shaped`` (default: when the model
    knows its output shapes, i.e. a compiled folder), float tensors in the model's output shapes
    ``(runs, *shape[1:])`` with the host's Softmax tail applied (issue 28 item 3); ``raw_outputs``
    keeps the raw fixed-point vectors either way."""
    engine = take_engine(options)
    mode = check_mode(mode)
    if timeline and (timing != "detailed" or mode == "functional"):
        raise OptionError("a timeline (--gantt/--trace) comes from the detailed cycle model: -O timing=detailed")
    if timing not in TIMING_MODELS:
        raise OptionError(f"unknown timing model {timing!r} (choose {', '.join(TIMING_MODELS)})")
    if config is not None:
        arch = load_arch(config)
        if arch != program.arch:
            raise SimError("--arch differs from the architecture of the program")
    t0 = time.perf_counter()
    tl = None
    outputs: dict[str, np.ndarray] = {}
    extra: dict[str, Any] = {}
    model = program.model
    if mode in ("both", "functional"):
        if model is not None:
            cmp = None
            if compare:
                cmp = read_csv_vectors(compare, model.arch.array_size)
            res = emulate_model(model, program, inputs, runs=runs, local_consts=local_consts, engine=engine,
                                compare=cmp, conversion=conversion)
            src = res.raw if raw_outputs else res.floats
            outputs = {k: v.reshape(-1, v.shape[-1]) for k, v in src.items()}
            shapes = model.extensions.get("x_nnisa_output_shapes")
            if shapes and not raw_outputs and shaped is not False:
                outputs = model_outputs(res.floats, shapes, model.extensions.get("x_nnisa_postprocess") or [])
            if csv:  # Tensil's output CSV: every output vector of every run, exact decimals, CRLF
                from ....core.fileio import write_atomic
                from ..formats.model import format_csv_vectors
                vecs = [v.reshape(-1, v.shape[-1]) for v in res.floats.values()]
                write_atomic(csv, format_csv_vectors(np.concatenate(vecs) if vecs else np.zeros((0, 1))))
            extra.update(runs=res.runs, emulation_s=res.wall_s, saturation=res.saturation)
            if res.compare is not None:
                extra["compare"] = res.compare
        else:
            if inputs:
                raise SimError("a bare program has no input tensors: simulate its .tmodel to feed inputs")
            emu = Emulator(program.arch, engine)
            for _ in range(runs or 1):
                emu.run(program)
            extra.update(runs=runs or 1, emulation_s=emu.wall_s, saturation=emu.saturation())
    stats = Stats(instructions=len(program), extra=extra)
    macs = true_macs or (model.extensions.get("x_nnisa_true_macs") if model is not None else None)
    est = estimate(program, macs)
    extra["estimator"] = {k: est[k] for k in ("cycles", "classes", "dram_vectors", "dram_vectors_total")}
    if "mac_efficiency" in est:
        extra["mac_efficiency"] = est["mac_efficiency"]
    if mode in ("both", "timing"):
        if timing == "estimator":
            stats.cycles = est["cycles"]
            extra["timing_model"] = "tensil-estimator (reference-compatible)"
        elif timing == "detailed":
            from .detailed import run_detailed
            det = run_detailed(program, profile=profile, true_macs=macs, timeline=timeline, **options)
            tl = det.pop("timeline", None)
            stats.cycles = det["cycles"]
            extra["timing_model"] = f"tensil-detailed ({profile}, nnisa's own)"
            extra["detailed"] = det
        else:
            from .scalesim import program_scalesim
            sc = program_scalesim(program, **options)
            stats.cycles = sc["cycles"]
            extra["timing_model"] = "scalesim-ws (closed form, SCALE-Sim compatible)"
            extra["scalesim"] = sc
        clock = extra.get("detailed", {}).get("clock_mhz", 100.0)
        stats.latency_ns = stats.cycles * 1000.0 / clock
        extra["clock_mhz"] = clock
    runs_done = int(extra.get("runs") or runs or 1)
    en = program_energy(program, runs=runs_done, latency_ns=stats.latency_ns)
    stats.energy_pj = en.pop("energy_pj")
    extra.update(en)
    spans = model.extensions.get("x_nnisa_layer_spans") if model is not None else None
    if spans:
        from .layers import layer_rows
        stats.layers = layer_rows(program, spans, cycles=stats.cycles, clock_mhz=extra.get("clock_mhz", 100.0),
                                  model=timing)
    stats.wall_s = time.perf_counter() - t0
    return SimResult(outputs, stats, details=None, timeline=tl)
