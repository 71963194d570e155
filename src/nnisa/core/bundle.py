"""Compiled output folders ("bundles"): program + weights/data + ``manifest.json``, for every target.

A bundle is what ``nnisa compile -o DIR`` writes and ``nnisa sim -t T DIR`` reads::

    DIR/
      manifest.json   format, version, target, the files below by role, input/output tensors, config
      <program>       the program in the target's own format
      ...             weights, memory images, reports (target-specific, named in the manifest)

Writing is all-or-nothing: :class:`BundleWriter` fills a temporary sibling folder and renames it
into place only when complete (``manifest.json`` last), so a reader never sees a half-written or
mixed bundle, even with two compiles writing the same folder at once.  Reading confines every file
the manifest names to the folder (no absolute paths, no ``..``, no symlinks leading out).
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import uuid
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import FormatError, OutputError
from .fileio import apply_umask, make_temp, read_bytes, temp_prefix, write_atomic
from .formats import MANIFEST, is_bundle_dir  # noqa: F401 - is_bundle_dir re-exported here

GENERIC_FORMAT = "nnisa-bundle"
#: largest manifest read (a manifest is a few kB; anything bigger is not one)
MAX_MANIFEST_BYTES = 64 << 20


class TensorSpec(BaseModel):
    """One network input or output tensor of a compiled program.

    The integer value ``q`` of an element represents the real value ``scale * (q - zero_point)``.
    ``layout`` names the element order in the program's memory; ``address`` is where it lives
    (targets that place tensors in a memory set it).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=4096)
    shape: list[int] = Field(max_length=16)
    bits: int = Field(8, ge=1, le=32)
    scale: float = Field(1.0, gt=0, allow_inf_nan=False)
    zero_point: int = 0
    layout: str = "NCHW"
    address: int | None = Field(None, ge=0, lt=1 << 64)

    def model_post_init(self, _context: Any) -> None:
        if any(d < 0 for d in self.shape):
            raise ValueError(f"tensor {self.name!r}: negative dimension in shape {self.shape}")

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def byte_width(self) -> int:
        return (self.bits + 7) // 8

    @property
    def nbytes(self) -> int:
        return self.size * self.byte_width

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """Integer tensor for ``x``: integers pass unchanged (range-checked); floats are
        ``clip(round_half_away(x / scale) + zero_point)`` in the signed ``bits`` range.

        Non-finite floats are refused (they have no integer value)."""
        a = np.asarray(x)
        if tuple(a.shape) != tuple(self.shape):
            raise FormatError(f"input {self.name!r}: shape {list(a.shape)} differs from the manifest {self.shape}")
        lo, hi = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if np.issubdtype(a.dtype, np.integer):
            q = a.astype(np.int64)
            if q.size and (q.min() < lo or q.max() > hi):
                raise FormatError(f"input {self.name!r}: values outside the signed {self.bits}-bit range")
            return q
        if not (np.issubdtype(a.dtype, np.floating) or a.dtype == np.bool_):
            raise FormatError(f"input {self.name!r}: expected numbers, got dtype {a.dtype}")
        v = a.astype(np.float64)
        if v.size and not np.isfinite(v).all():
            raise FormatError(f"input {self.name!r}: contains NaN or infinity")
        v = v / self.scale
        q = (np.sign(v) * np.floor(np.abs(v) + 0.5))
        q = np.clip(q + self.zero_point, lo, hi)
        return q.astype(np.int64)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """Real values ``scale * (q - zero_point)``."""
        return self.scale * (np.asarray(q, dtype=np.float64) - self.zero_point)


class ModelTensor(BaseModel):
    """A model input or output as the ONNX model declares it (its own layout and shape)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=4096)
    shape: list[int | None] = Field(max_length=16)


class ModelIO(BaseModel):
    """The model's own inputs and outputs (issue 28 item 3): ``nnisa sim`` on the folder takes and
    gives arrays in these shapes, whatever layout the program uses; ``whole_batch``: the model's
    fixed batch is one sample (see :func:`as_samples`)."""

    model_config = ConfigDict(extra="forbid")
    inputs: list[ModelTensor] = Field(default_factory=list, max_length=1 << 12)
    outputs: list[ModelTensor] = Field(default_factory=list, max_length=1 << 12)
    whole_batch: bool = False


class Manifest(BaseModel):
    """``manifest.json``: the generic part every target's manifest has.

    Targets subclass it for their own fields; ``FILE_FIELDS`` lists the fields holding file names
    (all are confined to the bundle on reading), ``files`` maps further roles to file names.
    """

    model_config = ConfigDict(extra="allow")
    FILE_FIELDS: ClassVar[tuple[str, ...]] = ("program",)

    format: str = GENERIC_FORMAT
    version: int = 1
    target: str | None = None
    program: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    inputs: list[TensorSpec] = Field(default_factory=list)
    outputs: list[TensorSpec] = Field(default_factory=list)
    config: dict[str, Any] | None = None
    #: the model's own input/output names and shapes (written by ``nnisa compile``/``run -o``)
    model: ModelIO | None = None
    #: every file the writer put into the folder (set by :meth:`BundleWriter.commit`); replacing a
    #: bundle deletes these and nothing else
    contents: list[str] = Field(default_factory=list, max_length=1 << 16)

    def file_names(self) -> dict[str, str]:
        """Role → file name of every file the manifest refers to."""
        out = {f: getattr(self, f) for f in self.FILE_FIELDS if getattr(self, f, None)}
        out.update(self.files)
        return out

    def tensor(self, name: str) -> TensorSpec:
        for t in self.inputs + self.outputs:
            if t.name == name:
                return t
        raise KeyError(name)


def expected_shapes(shape: list[int | None]) -> str:
    """The array shapes :func:`as_samples` takes for a model input of ``shape``, for messages."""
    dims = ["N" if d is None else str(d) for d in shape]
    one = "(" + ", ".join(dims) + ")"
    rest = ", ".join(dims[1:])
    if shape and shape[0] is None:
        return f"(N, {rest})" if rest else "(N,)"
    if shape and shape[0] == 1:
        return f"{one} (one sample), (N, {', '.join(dims)}) or (N, {rest}) (N samples)"
    return f"{one} (one inference) or (N, {', '.join(dims)}) (N inferences)"


def as_samples(name: str, array: np.ndarray, shape: list[int | None], *, whole: bool = False) -> np.ndarray:
    """The one input convention (issue 28 item 3): ``array`` for a model input of ``shape`` (the
    model's own layout, ``None`` a symbolic dimension) as samples, first axis = samples.

    An array whose shape equals ``shape`` is one inference; ``(N, *shape)`` are N; for a batch-1
    (or symbolic-batch) input ``(N, *shape[1:])`` are N too, and so are N rows of ``prod(shape[1:])``
    values (a CSV file: one flattened sample per row).  Anything else is a one-line
    :class:`FormatError` naming the expected shapes.  A model whose first dimension is fixed at
    B > 1 takes exactly B rows per inference, as onnxruntime does (issue 26); its samples are the
    rows ``(N*B, *shape[1:])``, or with ``whole`` (the graph mixes its B rows, see
    :mod:`nnisa.frontend.batch`) one sample per inference ``(N, *shape)``."""
    a = np.asarray(array)
    dims = list(shape)

    def fits(got, want) -> bool:
        return len(got) == len(want) and all(w is None or g == w for g, w in zip(got, want))
    if not dims:
        if a.ndim <= 1:
            return a.reshape(-1)
    elif whole or dims[0] is not None and dims[0] != 1:  # fixed batch B: exactly B rows per inference
        if fits(a.shape, dims):
            return a[None] if whole else a
        if a.ndim == len(dims) + 1 and fits(a.shape[1:], dims) and a.shape[0] > 0:
            return a if whole else a.reshape((-1, *a.shape[2:]))
    elif a.ndim == len(dims) + 1 and fits(a.shape[1:], dims):  # (N, *shape): N samples of a batch-1 input
        if a.shape[0] > 0:
            return a.reshape((a.shape[0],) + a.shape[2:])
    elif fits(a.shape, [None, *dims[1:]]) and a.shape[0] > 0:  # (N, *shape[1:]), or exactly shape: one sample
        return a
    elif (a.ndim == 2 and len(dims) > 2 and a.shape[0] > 0 and None not in dims[1:]
          and a.shape[1] == int(np.prod(dims[1:]))):  # rows of a CSV: one flattened sample per row
        return a.reshape((a.shape[0], *dims[1:]))
    raise FormatError(f"input {name!r}: got shape {tuple(a.shape)}; expected {expected_shapes(dims)}")


def _match(specs: list[TensorSpec], arrays: Mapping[str, np.ndarray]) -> list[tuple[str, TensorSpec | None]]:
    """(array name, its spec): by name, else by position when the counts agree, else no spec."""
    by_name = {s.name: s for s in specs}
    if all(k in by_name for k in arrays):
        return [(k, by_name[k]) for k in arrays]
    if len(arrays) == len(specs):
        return list(zip(arrays, specs))
    return [(k, None) for k in arrays]


def quantize_inputs(specs: list[TensorSpec], arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Float inputs → the integers a bundle's input specs declare (``scale``, ``zero_point``,
    ``bits``; elementwise, any sample count); integer arrays pass unchanged (range-checked)."""
    out = {}
    for k, spec in _match(specs, arrays):
        a = np.asarray(arrays[k])
        out[k] = a if spec is None else spec.model_copy(update={"shape": list(a.shape)}).quantize(a)
    return out


def dequantize_outputs(specs: list[TensorSpec], outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A bundle's integer outputs (whatever their dtype) → float values in the model's output shapes,
    named as the manifest names them: ``(N, *shape[1:])`` for N samples (the model's shape for one).
    Outputs no spec describes pass unchanged."""
    out = {}
    for k, spec in _match(specs, outputs):
        a = np.asarray(outputs[k])
        if spec is None:
            out[k] = a
            continue
        v = spec.dequantize(a)
        per = int(np.prod(spec.shape[1:], dtype=np.int64)) if spec.shape else 1
        if spec.shape and per and v.size % per == 0:
            v = v.reshape((v.size // per, *spec.shape[1:]))
        out[spec.name] = v
    return out


def record_model_io(root: str | os.PathLike, io: ModelIO) -> None:
    """Add the model's own inputs and outputs to a written bundle's manifest (atomically)."""
    mpath = Path(root) / MANIFEST
    data = orjson.loads(read_bytes(mpath))
    data["model"] = io.model_dump(mode="json")
    write_atomic(mpath, orjson.dumps(data, option=orjson.OPT_INDENT_2))


def _by_model_names(names: list[str], arrays: Mapping[str, np.ndarray], what: str) -> dict[str, np.ndarray]:
    given = dict(arrays)
    if len(names) == len(given) == 1:  # one array for a one-input model, whatever its name (x.npy)
        return {names[0]: next(iter(given.values()))}
    if set(given) != set(names):
        raise FormatError(f"{what} {sorted(given)} do not match the model's {what} {names}")
    return given


def bundle_samples(manifest: Manifest, arrays: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """The one input convention on a compiled folder: arrays in the model's own shapes
    (:func:`as_samples`; the manifest's ``model``, else its input tensors) → one dict per sample,
    each array with a leading axis of 1 (the batch of one the program was compiled for)."""
    io = manifest.model
    shapes = {t.name: t.shape for t in io.inputs} if io else {t.name: list(t.shape) for t in manifest.inputs}
    if not shapes:
        return [dict(arrays)]
    per = {k: as_samples(k, np.asarray(v), shapes[k], whole=bool(io and io.whole_batch))
           for k, v in _by_model_names(list(shapes), arrays, "inputs").items()}
    counts = {len(v) for v in per.values()}
    if len(counts) != 1:
        raise FormatError(f"inputs have different sample counts ({sorted(counts)})")
    return [{k: v[i][None] for k, v in per.items()} for i in range(counts.pop())]


def _fit(name: str, a: np.ndarray, want: list[int]) -> np.ndarray:
    """One sample's output ``a`` in the shape ``want``; trailing lanes a program pads each vector
    with (a systolic array's width) are dropped."""
    size = int(np.prod(want, dtype=np.int64))
    if a.size == size:
        return a.reshape(want)
    if want and a.ndim and a.shape[-1] > want[-1] and a.size // a.shape[-1] == size // max(want[-1], 1):
        return a.reshape(-1, a.shape[-1])[:, :want[-1]].reshape(want)
    raise FormatError(f"output {name!r}: the program gave shape {list(a.shape)}; the model's output is {want}")


def model_outputs(manifest: Manifest, samples: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One output dict per sample (the program's, dequantized where it computes on integers) → the
    model's outputs in its own shapes, the samples one after another along axis 0 (one sample of a
    batch-1 model: exactly the model's output shape)."""
    io = manifest.model
    specs = [(t.name, [d or 1 for d in t.shape]) for t in (io.outputs if io else manifest.outputs)]
    whole = bool(io and io.whole_batch)
    out: dict[str, list[np.ndarray]] = {}
    for got in samples:
        named = dict(zip([n for n, _ in specs], got.values())) if set(got) != {n for n, _ in specs} \
            and len(got) == len(specs) else dict(got)
        for name, shape in specs:
            if name not in named:
                raise FormatError(f"the program gave outputs {sorted(got)}; the model's are {[n for n, _ in specs]}")
            want = shape if whole or not shape else [1, *shape[1:]]
            out.setdefault(name, []).append(_fit(name, np.asarray(named[name]), want))
    return {k: np.concatenate(v) if v[0].ndim else np.stack(v) for k, v in out.items()}


def is_nnisa_manifest(data: Any) -> bool:
    """A parsed ``manifest.json`` that nnisa wrote: an object whose ``format`` is one of nnisa's
    (``nnisa-...``) and whose ``version`` is an integer.  A web app's or another tool's
    ``manifest.json`` is not one."""
    return (isinstance(data, dict) and isinstance(data.get("format"), str) and data["format"].startswith("nnisa-")
            and isinstance(data.get("version"), int) and not isinstance(data.get("version"), bool))


def written_names(data: dict[str, Any]) -> set[str]:
    """The entries of a bundle folder its writer put there, from its parsed manifest: the
    ``contents`` list (bundles written since it exists), else every file name the manifest
    mentions (top-level strings and the ``files`` map), plus ``manifest.json``."""
    names = {MANIFEST}
    contents = data.get("contents")
    if isinstance(contents, list) and contents:
        names.update(n for n in contents if isinstance(n, str))
        return names
    names.update(v for v in data.values() if isinstance(v, str))
    files = data.get("files")
    if isinstance(files, dict):
        names.update(v for v in files.values() if isinstance(v, str))
    return names


def member(root: str | os.PathLike, name: str, *, what: str = "file", source: str | os.PathLike | None = None) -> Path:
    """``root/name`` after checking that ``name`` stays inside ``root`` (raises FormatError): no
    absolute path, no ``..``, no symlink leading out.  ``source`` is the file that names it
    (default ``root/manifest.json``)."""
    rootp = Path(root)
    src = Path(source) if source is not None else rootp / MANIFEST
    where = "the manifest" if source is None else src.name
    if not isinstance(name, str) or not name or "\x00" in name:
        raise FormatError(f"bad {what} name {name!r} in {where}", file=str(src))
    p = Path(name)
    if p.is_absolute() or ".." in p.parts:
        raise FormatError(f"{what} {name!r} in {where} must be a plain name inside {'the bundle folder' if source is None else 'its folder'}",
                          file=str(src))
    full = rootp / p
    try:
        inside = full.resolve().is_relative_to(rootp.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        inside = False
    if not inside:
        raise FormatError(f"{what} {name!r} in {where} leads outside {'the bundle folder' if source is None else 'its folder'}",
                          file=str(src))
    return full


def read_manifest(root: str | os.PathLike, cls: type[Manifest] = Manifest) -> Manifest:
    """Read and validate ``root/manifest.json`` as ``cls``; every named file is confined to ``root``."""
    rootp = Path(root)
    mpath = rootp / MANIFEST
    if not mpath.is_file():
        raise FormatError("not a bundle: manifest.json missing", file=str(rootp))
    if mpath.stat().st_size > MAX_MANIFEST_BYTES:
        raise FormatError(f"manifest larger than {MAX_MANIFEST_BYTES >> 20} MB", file=str(mpath))
    raw = read_bytes(mpath)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON: {exc}", file=str(mpath)) from None
    if not isinstance(data, dict):
        raise FormatError("the manifest must be a JSON object", file=str(mpath))
    try:
        man = cls.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise FormatError(f"invalid manifest: {loc}: {first['msg']}", file=str(mpath)) from None
    for role, name in man.file_names().items():
        member(rootp, name, what=f"{role} file")
    return man


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` image (weights barely compress; deflate costs seconds)."""
    buf = io.BytesIO()
    np.savez(buf, **dict(arrays))
    return buf.getvalue()


def manifest_bytes(manifest: Manifest) -> bytes:
    return orjson.dumps(manifest.model_dump(mode="json"), option=orjson.OPT_INDENT_2)


class BundleWriter:
    """Write a bundle folder all at once.

    Files go into a temporary sibling folder; :meth:`commit` writes the manifest last and renames
    the folder into place.  An existing bundle (or empty folder) at the destination is replaced
    whole; any other existing folder is refused, so a user's files are never deleted: a folder is a
    bundle only when its ``manifest.json`` is nnisa's (:func:`is_nnisa_manifest`) and it holds
    nothing but the files that manifest says were written (:func:`written_names`).  Leaving the
    ``with`` block without :meth:`commit` (an error) removes the temporary folder; temporary and
    old folders of killed writers are removed by the next writer.

    >>> with BundleWriter("out") as w:                      # doctest: +SKIP
    ...     w.write("model.bin", data)
    ...     w.commit(Manifest(target="x", program="model.bin"))
    """

    def __init__(self, out_dir: str | os.PathLike):
        self.dest = Path(out_dir)
        self._check_dest()
        parent = self.dest.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.path = Path(make_temp(parent, self.dest.name, folder=True))
        except OSError as exc:
            raise OutputError(f"cannot create the output folder: {exc.strerror or exc}", file=str(self.dest)) from None
        apply_umask(self.path, 0o777)
        self.committed = False

    def _check_dest(self) -> None:
        """Refuse a destination that is a file or a folder of someone else's files.

        One ``lstat``, one ``listdir`` and one manifest read each: concurrent writers swap bundles
        in and out of the path, and a vanished destination is fine."""
        d = self.dest
        for _ in range(50):
            try:
                st = os.lstat(d)
                if not stat.S_ISDIR(st.st_mode):
                    raise OutputError("exists and is not a folder", file=str(d))
                names = os.listdir(d)
                foreign = self._foreign(d, names)
                # a writer that swapped the folder out deletes the old one file by file: a listing
                # taken meanwhile may lack the manifest; the path then names another folder
                if os.lstat(d).st_ino == st.st_ino:
                    break
            except FileNotFoundError:
                foreign = None
                break
        if foreign:
            raise OutputError(foreign + "; refusing to replace it (choose a new or empty folder)", file=str(d))
        for parent in d.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise OutputError(f"{parent} is not a folder", file=str(d))
                break

    @staticmethod
    def _foreign(d: Path, names: list[str]) -> str | None:
        """Why the folder ``d`` (holding ``names``) is not an nnisa bundle to replace, or ``None``."""
        if not names:
            return None
        if MANIFEST not in names:
            return "exists, is not empty and is not an nnisa bundle"
        mpath = d / MANIFEST
        try:
            if not stat.S_ISREG(os.stat(mpath).st_mode) or os.stat(mpath).st_size > MAX_MANIFEST_BYTES:
                return "holds a manifest.json that is not an nnisa bundle's"
            data = orjson.loads(mpath.read_bytes())
        except orjson.JSONDecodeError:
            data = None
        except FileNotFoundError:
            raise  # swapped out meanwhile: look again
        except OSError as exc:
            return f"holds a manifest.json that cannot be read ({exc.strerror or exc})"
        if not is_nnisa_manifest(data):
            return "holds a manifest.json that is not an nnisa bundle's"
        extra = sorted(n for n in names if n not in written_names(data))
        if extra:
            shown = ", ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
            return f"is an nnisa bundle that also holds files nnisa did not write ({shown})"
        return None

    def __enter__(self) -> "BundleWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.committed:
            shutil.rmtree(self.path, ignore_errors=True)

    def file(self, name: str) -> Path:
        """Path of ``name`` inside the folder being written (for writers that take a path)."""
        return member(self.path, name)

    def write(self, name: str, data: bytes | str) -> Path:
        p = self.file(name)
        write_atomic(p, data)
        return p

    def write_arrays(self, name: str, arrays: Mapping[str, np.ndarray]) -> Path:
        return self.write(name, npz_bytes(arrays))

    def commit(self, manifest: Manifest) -> Path:
        """Write the manifest, move the folder into place; returns the destination."""
        missing = [n for n in manifest.file_names().values() if not (self.path / n).exists()]
        if missing:
            raise FormatError(f"bundle files named by the manifest were not written: {', '.join(missing)}")
        manifest = manifest.model_copy(update={"contents": sorted(os.listdir(self.path))})
        write_atomic(self.path / MANIFEST, manifest_bytes(manifest))
        self._check_dest()
        olds: list[Path] = []
        for _ in range(50):
            try:
                if self.dest.exists():
                    old = self.dest.with_name(f"{temp_prefix(self.dest.name)}old-{uuid.uuid4().hex[:8]}.tmp")
                    os.rename(self.dest, old)
                    olds.append(old)
                os.rename(self.path, self.dest)
                break
            except FileNotFoundError:
                continue  # another writer moved the destination meanwhile: try again
            except OSError as exc:
                if exc.errno in (39, 66):  # ENOTEMPTY: a concurrent writer put its bundle in place
                    continue
                raise OutputError(f"cannot move the bundle into place: {exc.strerror or exc}",
                                  file=str(self.dest)) from None
        else:
            raise OutputError("the output folder kept changing under concurrent writers", file=str(self.dest))
        self.committed = True
        for old in olds:
            shutil.rmtree(old, ignore_errors=True)
        return self.dest
