"""The Python API shared by all targets: one entry point per job.

>>> import nnisa
>>> prog = nnisa.read("pim", "resnet18.json.gz")           # any supported file
>>> nnisa.write("pim", prog, "resnet18.nnpi")                # format from the extension
>>> report = nnisa.run_model("dais", "mlp.onnx")             # compile + simulate + compare

Every function takes the target name first and only speaks the :class:`~nnisa.core.target.Target`
interface, so the same code drives all five ISAs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from .core.errors import FormatError, UnsupportedError
from .core.fileio import private_temp_folder
from .core.target import Target, get_target, target_names


def target(name: str) -> Target:
    """The :class:`~nnisa.core.target.Target` called ``name``."""
    return get_target(name)


def read(target_name: str, path: str | Path, **options: Any) -> Any:
    """Read a program file of ``target_name`` (format chosen by extension/content)."""
    return get_target(target_name).read(path, **options)


def write(target_name: str, program: Any, path: str | Path, **options: Any) -> None:
    """Write a program (format chosen by extension), atomically."""
    get_target(target_name).write(program, path, **options)


def onnx_reference(model_path: str | Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a model with onnxruntime on float inputs (batch first, one run per sample).

    Running per sample keeps models with a fixed batch dimension of 1 working.
    """
    # onnxruntime >= 1.30 on Linux starts Microsoft's 1DS telemetry when it is loaded, which leaves a
    # `.ses` session file in $TMPDIR (or the working folder) on every run; nnisa opts out
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    # onnxruntime's PadFusion folds a zero Pad into MaxPool, which changes results (a padded 0
    # can win the max); the reference must be the model's own semantics, so no graph rewrites.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise FormatError(f"onnxruntime cannot load the model: {exc}", file=str(model_path)) from None
    names = [o.name for o in sess.get_outputs()]
    n = len(next(iter(inputs.values())))
    outs: dict[str, list[np.ndarray]] = {k: [] for k in names}
    for i in range(n):
        feed = {k: np.asarray(v[i:i + 1], dtype=np.float32) for k, v in inputs.items()}
        for k, v in zip(names, sess.run(names, feed)):
            outs[k].append(v[0])
    return {k: np.stack(v) for k, v in outs.items()}


def model_inputs(model_path: str | Path) -> dict[str, list[int | None]]:
    """Graph input name → declared shape (``None`` for a symbolic dimension) of an ONNX file.

    Missing, special (``/dev/null``) and non-ONNX files are one-line :class:`FormatError` s."""
    import onnx
    from google.protobuf.message import DecodeError as ProtoDecodeError

    from .core.fileio import check_regular_file
    path = check_regular_file(model_path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (ProtoDecodeError, ValueError, OSError, RuntimeError) as exc:
        raise FormatError(f"not an ONNX model ({str(exc)[:120]})", file=str(path)) from None
    if not model.HasField("graph") or not model.graph.node:
        raise FormatError("not an ONNX model (no graph)", file=str(path))
    init = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                for d in vi.type.tensor_type.shape.dim]
        out[vi.name] = dims
    if not out:
        raise FormatError("the model has no graph inputs", file=str(path))
    return out


def check_inputs(model_path: str | Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Match user inputs to the model's graph inputs: names (one array for a one-input model is
    taken whatever its name, e.g. ``x.npy``), numeric finite values, a leading sample axis and
    the declared per-sample shape.  Returns float32 arrays by model input name."""
    declared = model_inputs(model_path)
    given = dict(inputs)
    if len(declared) == 1 and len(given) == 1 and next(iter(declared)) not in given:
        given = {next(iter(declared)): next(iter(given.values()))}
    missing = [k for k in declared if k not in given]
    extra = [k for k in given if k not in declared]
    if missing or extra:
        raise FormatError(f"inputs {sorted(given)} do not match the model's inputs {list(declared)}"
                          + (f" (missing {missing})" if missing else "") + (f" (unknown {extra})" if extra else ""))
    out: dict[str, np.ndarray] = {}
    n = None
    for name, dims in declared.items():
        a = np.asarray(given[name])
        if a.dtype.kind not in "biuf":
            raise FormatError(f"input {name!r}: expected numbers, got dtype {a.dtype}")
        if a.ndim != len(dims) or a.shape[0] == 0:
            want = "(samples, " + ", ".join("?" if d is None else str(d) for d in dims[1:]) + ")"
            raise FormatError(f"input {name!r}: shape {a.shape} does not fit {want} (a leading sample axis "
                              "with at least one sample, then the model's input shape)")
        bad = [i for i, d in enumerate(dims[1:], 1) if d is not None and a.shape[i] != d]
        if bad:
            raise FormatError(f"input {name!r}: shape {a.shape}, but the model declares {dims[1:]} per sample")
        a = a.astype(np.float32)
        if not np.isfinite(a).all():
            raise FormatError(f"input {name!r}: contains NaN or infinity")
        if n is not None and len(a) != n:
            raise FormatError(f"inputs have different sample counts ({n} and {len(a)})")
        n = len(a)
        out[name] = a
    return out


def default_inputs(model_path: str | Path, samples: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for a model: the bundled test set when the model is bundled, else random data.

    Random inputs are uniform in [-1, 1) with the model's declared input shape (batch axis
    replaced by ``samples``).
    """
    try:
        from .frontend.models import bundled_inputs_for  # the frontend knows its bundled models
        found = bundled_inputs_for(model_path, samples)
        if found is not None:
            return found
    except ImportError:
        pass
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-1, 1, size=[samples] + [1 if d is None else d for d in dims[1:]]).astype(np.float32)
            for name, dims in model_inputs(model_path).items()}


def compare_outputs(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, Any]:
    """Accuracy figures of simulated float outputs against a float reference.

    Returns ``max_abs_error``, ``max_rel_error`` (relative to the reference's max magnitude) and
    ``top1_agreement`` (fraction of samples whose argmax over the flattened output agrees).
    """
    max_abs, max_rel, agree, total = 0.0, 0.0, 0, 0
    for k, r in ref.items():
        if k not in got:
            # Targets may rename outputs; pair by position when names differ.
            continue
        g = np.asarray(got[k], dtype=np.float64).reshape(len(r), -1)
        rr = np.asarray(r, dtype=np.float64).reshape(len(r), -1)
        err = np.abs(g - rr)
        max_abs = max(max_abs, float(err.max(initial=0.0)))
        scale = float(np.abs(rr).max(initial=0.0)) or 1.0
        max_rel = max(max_rel, float(err.max(initial=0.0)) / scale)
        agree += int((g.argmax(axis=1) == rr.argmax(axis=1)).sum())
        total += len(rr)
    if total == 0:
        raise UnsupportedError("simulated outputs do not name any model output: "
                               f"got {sorted(got)}, model has {sorted(ref)}")
    return {"max_abs_error": max_abs, "max_rel_error": max_rel, "top1_agreement": agree / total}


def run_model(target_name: str, model_path: str | Path, *, inputs: dict[str, np.ndarray] | None = None,
              samples: int = 1, config: str | Path | None = None, out_dir: str | Path | None = None,
              save_outputs: str | Path | None = None, progress: Any = None, **options: Any) -> dict[str, Any]:
    """Compile an ONNX model for a target, simulate it and compare with onnxruntime.

    Parameters
    ----------
    target_name
        Target to compile for.
    model_path
        The ONNX model.
    inputs
        Float inputs, name → array with a leading sample axis; default
        :func:`default_inputs` with ``samples`` samples.
    config
        Target architecture/simulator configuration file.
    out_dir
        Where the compiled files go (a temporary directory by default).
    save_outputs
        Write the simulated float outputs to this ``.npz``/``.npy``/``.csv`` file.
    progress
        ``progress(done, total)`` callback for the simulated samples.

    Returns
    -------
    dict
        JSON-serialisable report: ``cycles``, ``latency_ns``, ``energy_pj`` (where modelled),
        ``max_abs_error``, ``top1_agreement``, ``bit_exact``, ``wall_s``, ``compile_s``, ``sim_s``
        and the target's compile report.
    """
    t0 = time.perf_counter()
    tgt = get_target(target_name)
    if samples < 1:
        raise FormatError(f"samples must be at least 1, got {samples}")
    inputs = check_inputs(model_path, default_inputs(model_path, samples) if inputs is None else inputs)
    with private_temp_folder("nnisa-run") as tmp:  # stale ones of killed runs are removed too
        dest = Path(out_dir) if out_dir else tmp
        c0 = time.perf_counter()
        compiled = tgt.compile(model_path, config=config, out_dir=dest, **options)
        c1 = time.perf_counter()
        outs, stats, checks = tgt.run_compiled(compiled, inputs, progress=progress)
        c2 = time.perf_counter()
    ref = onnx_reference(model_path, inputs)
    if set(outs) != set(ref) and len(outs) == len(ref):
        outs = dict(zip(ref, outs.values()))
    if save_outputs:
        from .core.fileio import save_arrays
        save_arrays(save_outputs, outs)
    report: dict[str, Any] = {"target": target_name, "model": str(model_path),
                              "samples": len(next(iter(inputs.values())))}
    report.update(stats.to_dict())
    report.update(compare_outputs(outs, ref))
    report.update(checks)
    report.update({"compile_s": c1 - c0, "sim_s": c2 - c1, "wall_s": time.perf_counter() - t0,
                   "compile_report": compiled.report})
    return report


__all__ = ["target", "target_names", "read", "write", "run_model", "onnx_reference", "default_inputs",
           "compare_outputs"]
