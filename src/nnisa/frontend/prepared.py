"""A model imported once and handed to every target: :class:`PreparedModel`, and the model-level
helpers of ``nnisa run/compare`` (declared inputs, checked inputs, default inputs, the onnxruntime
reference, accuracy figures).

``nnisa compare`` and the sweeps import, check and quantize a model once: a :class:`PreparedModel`
is a path (``os.PathLike``, so every target's compiler takes it where it took the file) that
carries the imported float graph, quantized graphs by their settings, the checked float inputs
and the onnxruntime outputs of those inputs.  :func:`load_model` and
:func:`~nnisa.frontend.prepare.prepare_qgraph` return copies of what it holds instead of
importing the file again; each target gets its own copy (compilers may rewrite their graph).
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..core.bundle import as_samples
from ..core.errors import FormatError, NnisaError, UnsupportedError
from .ir import Graph

__all__ = ["PreparedModel", "check_inputs", "compare_outputs", "default_inputs", "integer_inputs", "load_model", "model_inputs",
           "onnx_reference", "model_io", "whole_batch"]


class PreparedModel(os.PathLike):
    """An ONNX model file imported at most once, with what every target's run of it shares.

    Parameters
    ----------
    path
        The ONNX file.
    inputs
        Float inputs (name → array, samples first) the runs use; checked against the model's
        declared inputs (:func:`check_inputs`).  ``None``: only the graph is shared.
    """

    def __init__(self, path: str | os.PathLike, inputs: dict[str, np.ndarray] | None = None):
        self.path = Path(path)
        self.inputs = None if inputs is None else check_inputs(self.path, inputs)
        self._graph: Graph | None = None
        self._error: NnisaError | None = None
        self._quantized: dict[Any, Any] = {}
        self._reference: dict[str, np.ndarray] | None = None

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"PreparedModel({str(self.path)!r})"

    def _imported(self) -> Graph:
        """The imported graph (not a copy: do not change it); an import error is raised again on
        every call, so each target reports it."""
        if self._error is not None:
            raise self._error
        if self._graph is None:
            from .onnx_import import load_model as import_onnx
            try:
                self._graph = import_onnx(self.path)
            except NnisaError as exc:
                self._error = exc
                raise
        return self._graph

    def graph(self) -> Graph:
        """A copy of the imported float graph (a compiler may rewrite its own)."""
        return copy.deepcopy(self._imported())

    def check(self, check: Callable[[Graph], None]) -> None:
        """Run a read-only check on the imported graph (no copy)."""
        check(self._imported())

    def quantized(self, key: Any, make: Callable[[Graph], Any]) -> Any:
        """A copy of ``make(graph)``, computed once per ``key`` (the quantization settings)."""
        if key not in self._quantized:
            self._quantized[key] = make(self.graph())
        return copy.deepcopy(self._quantized[key])

    def reference(self) -> dict[str, np.ndarray]:
        """onnxruntime's outputs for :attr:`inputs` (computed once)."""
        if self.inputs is None:
            raise UnsupportedError("the prepared model has no inputs to run")
        if self._reference is None:
            self._reference = onnx_reference(self.path, self.inputs)
        return self._reference


def load_model(model: Any, *, declared_batch: bool = False) -> Graph:
    """:func:`~nnisa.frontend.onnx_import.load_model`, or a copy of a prepared model's graph
    (``declared_batch``: a fixed first dimension kept as declared; a prepared model is imported again)."""
    from .onnx_import import load_model as import_onnx
    if isinstance(model, PreparedModel):
        return import_onnx(model.path, declared_batch=True) if declared_batch else model.graph()
    return import_onnx(model, declared_batch=declared_batch)


_ORT_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


def integer_inputs(model_path: str | Path) -> dict[str, np.dtype]:
    """Graph inputs of an integer or boolean type (token ids, attention masks) → numpy dtype."""
    import onnx
    from onnx import helper

    model = onnx.load(str(model_path), load_external_data=False)
    init = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name not in init and vi.type.tensor_type.elem_type:
            dt = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
            if dt.kind in "biu":
                out[vi.name] = dt
    return out


def model_inputs(model_path: str | Path) -> dict[str, list[int | None]]:
    """Graph input name → declared shape (``None`` for a symbolic dimension) of an ONNX file.

    Missing, special (``/dev/null``) and non-ONNX files are one-line :class:`FormatError` s."""
    import onnx
    from google.protobuf.message import DecodeError as ProtoDecodeError

    from ..core.fileio import check_regular_file
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

def model_io(model_path: str | Path):
    """The model's own input and output names and shapes (:class:`nnisa.core.bundle.ModelIO`),
    which a compiled folder's manifest records so ``nnisa sim`` takes and gives those shapes."""
    import onnx

    from ..core.bundle import ModelIO, ModelTensor
    model = onnx.load(str(model_path), load_external_data=False)
    outs = [ModelTensor(name=vi.name, shape=[d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                                             for d in vi.type.tensor_type.shape.dim]) for vi in model.graph.output]
    return ModelIO(inputs=[ModelTensor(name=k, shape=v) for k, v in model_inputs(model_path).items()],
                   outputs=outs, whole_batch=whole_batch(model_path))


def record_model(out_dir: str | Path, model_path: str | Path) -> None:
    """Record the model's own shapes (:func:`model_io`) in the manifest of the folder it was
    compiled into (``nnisa compile``, ``run -o``), when the target wrote one."""
    from ..core.bundle import is_bundle_dir, record_model_io
    if is_bundle_dir(out_dir):
        record_model_io(out_dir, model_io(model_path))


def whole_batch(model_path: str | Path) -> bool:
    """True when the model's first dimension is fixed at B > 1 and its graph mixes the B rows, so
    one sample is a whole ``[B, ...]`` inference (:mod:`nnisa.frontend.batch`); False when its
    samples are rows (every batch-1 model)."""
    if all(not d or d[0] in (None, 1) for d in model_inputs(model_path).values()):
        return False
    path = Path(model_path)
    return _whole_batch(str(path.resolve()), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _whole_batch(path: str, _mtime: int) -> bool:
    from .onnx_import import load_model as import_onnx
    try:
        return import_onnx(path).whole_batch
    except NnisaError:  # the run reports the import error itself
        return False


def check_inputs(model_path: str | Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Match user inputs to the model's graph inputs: names (one array for a one-input model is
    taken whatever its name, e.g. ``x.npy``), numeric finite values and shapes by
    :func:`nnisa.core.bundle.as_samples` (the model's input shape: one sample; ``(N, *shape)`` or
    ``(N, *shape[1:])``: N samples).  Returns float32 arrays (integer inputs — token ids, masks —
    keep their integer type) by model input name."""
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
    ints = integer_inputs(model_path)
    whole = whole_batch(model_path)
    for name, dims in declared.items():
        a = np.asarray(given[name])
        if a.dtype.kind not in "biuf":
            raise FormatError(f"input {name!r}: expected numbers, got dtype {a.dtype}")
        a = as_samples(name, a, dims, whole=whole)  # the one input convention (core.bundle)
        a = a.astype(ints.get(name, np.float32))
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
    replaced by ``samples``); a model with a fixed batch B > 1: ``samples`` inferences ``(samples, B, ...)``.
    """
    try:
        from .models import bundled_inputs_for  # the frontend knows its bundled models
        found = bundled_inputs_for(model_path, samples)
        if found is not None:
            return found
    except ImportError:
        pass
    declared = model_inputs(model_path)
    # a fixed batch B > 1: ``samples`` inferences of the model's own shape (B rows each)
    fixed = max((d[0] or 1 for d in declared.values() if d), default=1)
    if integer_inputs(model_path):  # token ids over the embedding table, masks all ones
        from .float_eval import random_inputs
        from .onnx_import import load_model as import_onnx
        g = import_onnx(model_path)
        rows = samples if fixed == 1 or g.whole_batch else samples * fixed
        got = random_inputs(g, rows, seed)
        return got if fixed == 1 else {k: v.reshape(samples, *declared[k]) for k, v in got.items()}
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-1, 1, size=[samples] + [1 if d is None else d for d in dims[fixed == 1:]]
                              ).astype(np.float32) for name, dims in declared.items()}


def onnx_reference(model_path: str | Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a model with onnxruntime on float inputs (samples first).

    One run per sample, so models with a fixed batch dimension of 1 work; a model with a fixed
    batch B > 1 runs B samples at a time."""
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
    types = {i.name: _ORT_INT_TYPES.get(i.type, np.float32) for i in sess.get_inputs()}  # token ids stay ints
    # a model exported with a fixed batch B > 1 takes B rows at a time (the last chunk padded by
    # repeating its final row, whose extra outputs are dropped), or one whole inference per sample
    shapes = {i.name: i.shape or [] for i in sess.get_inputs()}
    dims = [s[0] for s in shapes.values() if s]
    chunk = dims[0] if dims and isinstance(dims[0], int) and dims[0] > 1 else 1
    whole = chunk > 1 and any(np.ndim(v) == len(shapes.get(k, [])) + 1 for k, v in inputs.items())
    for i in range(0, n, 1 if whole else chunk):
        feed = {}
        for k, v in inputs.items():
            part = np.asarray(v[i] if whole else v[i:i + chunk], dtype=types.get(k, np.float32))
            if len(part) < chunk:
                part = np.concatenate([part, np.repeat(part[-1:], chunk - len(part), axis=0)])
            feed[k] = part
        for k, v in zip(names, sess.run(names, feed)):
            if whole:
                outs[k].append(v)
            else:
                outs[k].extend(v[:min(chunk, n - i)])
    return {k: np.stack(v) for k, v in outs.items()}


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
