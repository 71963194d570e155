"""The Python API shared by all targets: one entry point per job.

>>> import nnisa
>>> prog = nnisa.read("pim", "resnet18.json.gz")           # any supported file
>>> nnisa.write("pim", prog, "resnet18.nnpi")                # format from the extension
>>> report = nnisa.run_model("dais", "mlp.onnx")             # compile + simulate + compare

Every function takes the target name first and only speaks the :class:`~nnisa.core.target.Target`
interface, so the same code drives all five ISAs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .core.errors import FormatError
from .core.target import Target, get_target, target_names

if TYPE_CHECKING:
    from .frontend.prepared import PreparedModel

#: names this module re-exports from :mod:`nnisa.frontend.prepared`, imported on first use (the
#: ONNX frontend and onnx load only when a model is involved, not for ``nnisa.read``/``write``)
_FROM_FRONTEND = ("PreparedModel", "check_inputs", "compare_outputs", "default_inputs", "integer_inputs",
                  "model_inputs", "onnx_reference")


def __getattr__(name: str) -> Any:
    if name in _FROM_FRONTEND:
        from .frontend import prepared
        value = getattr(prepared, name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def target(name: str) -> Target:
    """The :class:`~nnisa.core.target.Target` called ``name``."""
    return get_target(name)


def read(target_name: str, path: str | Path, **options: Any) -> Any:
    """Read a program file of ``target_name`` (format chosen by extension/content)."""
    return get_target(target_name).read(path, **options)


def write(target_name: str, program: Any, path: str | Path, **options: Any) -> None:
    """Write a program (format chosen by extension), atomically."""
    get_target(target_name).write(program, path, **options)


def prepare_model(model_path: str | Path, *, inputs: dict[str, np.ndarray] | None = None,
                  samples: int = 1) -> PreparedModel:
    """The model imported once with its checked float inputs (``inputs``, default
    :func:`default_inputs` with ``samples`` samples): hand it to :func:`run_model` for every target."""
    if samples < 1:
        raise FormatError(f"samples must be at least 1, got {samples}")
    from .frontend.models import resolve_model
    from .frontend.prepared import PreparedModel, default_inputs
    model_path = resolve_model(model_path)
    return PreparedModel(model_path, default_inputs(model_path, samples) if inputs is None else inputs)


def run_model(target_name: str, model_path: str | Path | PreparedModel, *,
              inputs: dict[str, np.ndarray] | None = None, samples: int = 1, config: str | Path | None = None,
              out_dir: str | Path | None = None, save_outputs: str | Path | None = None, progress: Any = None,
              **options: Any) -> dict[str, Any]:
    """Compile an ONNX model for a target, simulate it and compare with onnxruntime.

    Parameters
    ----------
    target_name
        Target to compile for.
    model_path
        The ONNX model (a file or a bundled model's name, ``"digits_cnn"``), or a :class:`PreparedModel` (:func:`prepare_model`: imported once,
        with its inputs; ``inputs``/``samples`` are then not used).
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
    Report
        A ``dict`` (with ``.to_dict()`` and ``.to_pandas()``), JSON-serialisable: ``cycles``, ``latency_ns``, ``energy_pj`` (where modelled),
        ``max_abs_error``, ``top1_agreement``, ``bit_exact``, ``wall_s``, ``compile_s``, ``sim_s``
        and the target's compile report.
    """
    from .frontend.prepared import PreparedModel
    from .report.results import Report
    from .sweep.measure import run_prepared
    get_target(target_name)  # an unknown target before any work
    prepared = model_path if isinstance(model_path, PreparedModel) and model_path.inputs is not None else \
        prepare_model(model_path, inputs=inputs, samples=samples)
    return Report(run_prepared(target_name, prepared, config=config, out_dir=out_dir, save_outputs=save_outputs,
                               progress=progress, **options))


def compare(model_path: str | Path, targets: list[str] | str | None = None, *, samples: int = 8,
            configs: dict[str, Any] | None = None, options: dict[str, dict[str, Any]] | None = None) -> Any:
    """``nnisa compare`` as a function: one row per target (a list with ``.to_pandas()``).

    ``configs`` maps a target to its configuration (preset or file), ``options`` a target to its
    ``-O`` options."""
    from .report.results import Rows
    from .sweep.compare import compare_model, resolve_targets
    from .frontend.models import resolve_model
    names = resolve_targets(targets if isinstance(targets, str) or targets is None else ",".join(targets))
    return Rows(compare_model(resolve_model(model_path), names, samples=samples, configs=configs,
                              options=options))


def sweep_results(results: str | Path) -> Any:
    """A sweep's results folder (or ``results.parquet``) as a pandas DataFrame."""
    from .report.results import results_frame
    return results_frame(results)


__all__ = ["target", "target_names", "read", "write", "run_model", "compare", "sweep_results", "prepare_model", "PreparedModel",
           "onnx_reference", "default_inputs", "check_inputs", "model_inputs", "integer_inputs", "compare_outputs"]
