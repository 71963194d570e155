"""One measurement = one row: a model (or a built-in workload) on one target with one configuration.

``nnisa compare``, ``nnisa demo`` and every sweep point go through :func:`measure`, so a row means
the same thing everywhere: the figures of :func:`nnisa.api.run_model` (bit-exactness, top-1
agreement and error against onnxruntime, cycles, latency, energy, instructions, compile and
simulation wall time) plus the target's area proxy — or, when the target cannot take the job,
a ``status`` and the one-line reason.
"""

from __future__ import annotations

import functools
import os
import time
import traceback
from pathlib import Path
from typing import Any

from ..core.errors import NnisaError, UnsupportedError
from ..core.fileio import private_temp_folder
from ..core.layers import layer_dicts
from ..core.target import get_target
from ..frontend.prepared import PreparedModel, compare_outputs, default_inputs

#: figures every row may carry, in table order
METRICS = ("samples", "bit_exact", "top1_agreement", "max_abs_error", "cycles", "latency_ns", "period_ns",
           "energy_pj", "energy_dynamic_pj", "energy_static_pj", "energy_per_input_pj", "inputs", "instructions", "area_proxy", "area_unit", "compile_s", "sim_s", "wall_s", "timing_model")

#: row statuses: ok, error (the target refused the job: unsupported op, bad configuration, ...),
#: exception (an unexpected failure: a bug), timeout and crashed (set by the executors)
STATUSES = ("ok", "error", "exception", "timeout", "crashed")


def _area(target: Any, config: Any, report: dict[str, Any]) -> tuple[float | None, str | None]:
    try:
        got = target.area_proxy(config, report)
    except NnisaError:
        got = None
    return got if got is not None else (None, None)


def _scalars(d: dict[str, Any], skip: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in skip and isinstance(v, (bool, int, float, str)) and v is not None}


def run_prepared(target_name: str, model: PreparedModel, *, config: Any = None, out_dir: str | Path | None = None,
                 save_outputs: str | Path | None = None, progress: Any = None, gantt: str | Path | None = None,
                 trace: str | Path | None = None, **options: Any) -> dict[str, Any]:
    """Compile a prepared model (:class:`~nnisa.frontend.prepared.PreparedModel`, with inputs) for a
    target, simulate its inputs and compare with onnxruntime: the report of :func:`nnisa.api.run_model`.
    ``gantt``/``trace``: draw the first sample's timeline (or one warning saying why not)."""
    t0 = time.perf_counter()
    tgt = get_target(target_name)
    inputs = model.inputs
    with private_temp_folder("nnisa-run") as tmp:  # stale ones of killed runs are removed too
        dest = Path(out_dir) if out_dir else tmp
        c0 = time.perf_counter()
        compiled = tgt.compile(model, config=config, out_dir=dest, **options)
        if out_dir:
            from ..frontend.prepared import record_model
            record_model(dest, model)
        c1 = time.perf_counter()
        outs, stats, checks = tgt.run_compiled(compiled, inputs, progress=progress)
        c2 = time.perf_counter()
        pictures = _timeline(tgt, compiled, inputs, gantt, trace) if (gantt or trace) else {}
    ref = model.reference()
    if set(outs) != set(ref) and len(outs) == len(ref):
        outs = dict(zip(ref, outs.values()))
    if save_outputs:
        from ..core.fileio import save_arrays
        save_arrays(save_outputs, outs)
    report: dict[str, Any] = {"target": target_name, "model": str(model), "samples": len(next(iter(inputs.values())))}
    report.update(stats.to_dict())
    if stats.layers is not None:
        report["layers_source"] = "simulation"
    else:
        if "layers" in report:  # a target's own per-layer list, not (yet) in the common columns
            report["target_layers"] = report.pop("layers")
        if compiled.layer_table is not None:  # the compiler's figures, said as such
            report["layers"], report["layers_source"] = layer_dicts(compiled.layer_table), "compiler"
    report.update(compare_outputs(outs, ref))
    report.update(checks)
    report.update(pictures)
    report.update({"compile_s": c1 - c0, "sim_s": c2 - c1, "wall_s": time.perf_counter() - t0,
                   "compile_report": compiled.report})
    return report


def _timeline(tgt: Any, compiled: Any, inputs: dict[str, Any], gantt: Any, trace: Any) -> dict[str, Any]:
    """The first sample simulated again with a timeline and drawn; a target or program that records
    none is one warning with the reason (``run --gantt``/``--trace`` never fail the run)."""
    import warnings
    why = None
    if not tgt.has_timeline:
        why = f"target {tgt.name} records no timeline"
    elif compiled.encode_inputs is None:
        why = f"the {tgt.name} compiler gives no input encoder for a single simulation"
    elif isinstance(compiled.program, (list, tuple)):  # a network of programs the runner chains
        why = (f"the {tgt.name} compiled model is {len(compiled.program)} programs (one per layer step) and a "
               f"timeline is drawn per program: compile with -o DIR, then nnisa sim -t {tgt.name} DIR/<program> --gantt FILE")
    else:
        try:
            sample = {k: v[0] for k, v in inputs.items()}
            res = tgt.simulate(compiled.program, inputs=compiled.encode_inputs(sample), timeline=True,
                               **compiled.sim_options)
            if res.timeline is not None:
                from ..report.timeline import draw_timeline
                return draw_timeline(res.timeline, gantt=gantt, trace=trace)
            why = f"the {tgt.name} simulator recorded no timeline for this compiled program"
        except (NnisaError, TypeError, ValueError, KeyError) as exc:
            why = f"the {tgt.name} compiled program cannot be re-simulated with a timeline ({str(exc)[:120]})"
    warnings.warn(f"--gantt/--trace not drawn: {why}", stacklevel=2)
    return {}


@functools.lru_cache(maxsize=2)
def _prepared(path: str, stamp: tuple[int, int], samples: int) -> PreparedModel:
    return PreparedModel(path, default_inputs(path, samples))


def prepared_model(model_path: str | Path | PreparedModel, samples: int) -> PreparedModel:
    """The model imported once per process (the last two are kept, keyed by path, size and
    modification time), with :func:`~nnisa.frontend.prepared.default_inputs` of ``samples``."""
    if isinstance(model_path, PreparedModel) and model_path.inputs is not None:
        return model_path
    path = str(model_path)
    try:
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = (-1, -1)  # the reader names the problem
    return _prepared(path, stamp, samples)


def model_row(target_name: str, model_path: str | Path | PreparedModel, *, samples: int = 4, config: Any = None,
              **options: Any) -> dict[str, Any]:
    """Compile, simulate and compare one ONNX model (:func:`run_prepared`) → a flat row.

    Target-specific scalar figures of the report go under ``extra``."""
    t = get_target(target_name)
    caps = t.capabilities()
    if "compile" not in caps or "simulate" not in caps:
        raise UnsupportedError(f"target {target_name!r} cannot compile and simulate ONNX models yet")
    rep = run_prepared(target_name, prepared_model(model_path, samples), config=config, **options)
    row = {k: rep.get(k) for k in METRICS if k in rep}
    row["area_proxy"], row["area_unit"] = _area(t, config, rep.get("compile_report") or {})
    row["extra"] = _scalars(rep, METRICS + ("target", "model"))
    return row


def bench_row(target_name: str, workload: str, *, config: Any = None, **options: Any) -> dict[str, Any]:
    """Run a built-in workload (:meth:`Target.bench`, its :class:`~nnisa.core.target.Stats`) → a flat row."""
    t = get_target(target_name)
    t.check_workload(workload)
    t0 = time.perf_counter()
    rep = t.bench(workload, config=config, **options).to_dict()
    row = {k: rep.get(k) for k in METRICS if k in rep}
    if row.get("wall_s") is None:
        row["wall_s"] = time.perf_counter() - t0
    row["area_proxy"], row["area_unit"] = _area(t, config, rep)
    row["extra"] = _scalars(rep, METRICS + ("summary",))
    return row


def measure(target_name: str, model: str, model_path: str | Path | PreparedModel | None, *, samples: int = 4,
            config: Any = None,
            **options: Any) -> dict[str, Any]:
    """One row with ``status``: the figures, or why there are none.

    ``model_path=None`` runs the built-in workload ``model`` (``bench:NAME``).  A refusal by the
    target (:class:`NnisaError`) is status ``error`` with its one-line message; any other exception
    is status ``exception`` with the last lines of its traceback (a bug to report).
    """
    row: dict[str, Any] = {"target": target_name, "model": model}
    t0 = time.perf_counter()
    try:
        if model_path is None:
            row.update(bench_row(target_name, model.split(":", 1)[-1], config=config, **options))
        else:
            row.update(model_row(target_name, model_path, samples=samples, config=config, **options))
        row["status"] = "ok"
    except NnisaError as exc:
        row.update(status="error", error=str(exc))
    except MemoryError:
        row.update(status="error", error="out of memory")
    except Exception as exc:  # noqa: BLE001 - one broken point must not stop a sweep or a comparison
        tail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
        row.update(status="exception", error=f"{type(exc).__name__}: {exc}"[:500], traceback=tail[-2000:])
    row.setdefault("wall_s", time.perf_counter() - t0)
    return row
