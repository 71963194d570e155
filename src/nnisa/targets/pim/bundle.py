"""The PIM program bundle: what the compiler emits and ``nnisa sim --target pim DIR`` consumes.

Layout of a bundle directory (spec ``pim_isa.md`` §5.4 "Decision (program bundle)"; the full
contract is documented in ``docs/pim_bundle.md``)::

    manifest.json      tensors, hardware config, act_frac, global-address mode, file names
    program.json.gz    the instructions (or program.nnpi / program.json / program.s)
    weights.npz        c<core>.g<group> → integer K × N matrices
    gmem.npz           seg@0x<hex address> → uint8 arrays (initial global memory)

Every file is written atomically; the manifest is written last, so a directory with a manifest
is complete.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.errors import FormatError, UnsupportedError
from ...core.fileio import write_atomic
from .functional import FunctionalResult, load_weights, run_functional
from .memory import GlobalMemory, as_bytes
from .program import PimProgram

BUNDLE_FORMAT = "nnisa-pim-bundle"
BUNDLE_VERSION = 1
PROGRAM_NAMES = ("program.nnpi", "program.json.gz", "program.json", "program.s")


class TensorSpec(BaseModel):
    """One network input or output tensor in global memory.

    The integer value ``q`` of an element represents the real value ``scale * (q - zero_point)``.
    Elements are ``bits`` wide, stored in ``⌈bits/8⌉`` bytes each, little-endian, sign-extended
    (D12), contiguously in ``layout`` order starting at ``address``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    shape: list[int]
    bits: int = Field(8, ge=1, le=32)
    scale: float = 1.0
    zero_point: int = 0
    layout: str = "NCHW"
    address: int = Field(ge=0)

    @property
    def byte_width(self) -> int:
        return (self.bits + 7) // 8

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.byte_width

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """Integer tensor for ``x``: integers pass unchanged (range-checked); floats are
        ``clip(round_half_away(x / scale) + zero_point)`` in the signed ``bits`` range."""
        a = np.asarray(x)
        if tuple(a.shape) != tuple(self.shape):
            raise FormatError(f"input {self.name!r}: shape {list(a.shape)} differs from the manifest {self.shape}")
        lo, hi = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if np.issubdtype(a.dtype, np.integer):
            q = a.astype(np.int64)
            if q.size and (q.min() < lo or q.max() > hi):
                raise FormatError(f"input {self.name!r}: values outside the signed {self.bits}-bit range")
            return q
        v = a.astype(np.float64) / self.scale
        q = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64) + self.zero_point
        return np.clip(q, lo, hi)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """Real values ``scale * (q - zero_point)``."""
        return self.scale * (np.asarray(q, dtype=np.float64) - self.zero_point)


class Manifest(BaseModel):
    """``manifest.json`` of a bundle."""

    model_config = ConfigDict(extra="allow")

    format: Literal["nnisa-pim-bundle"] = BUNDLE_FORMAT
    version: int = BUNDLE_VERSION
    program: str | None = None
    weights: str = "weights.npz"
    gmem: str = "gmem.npz"
    inputs: list[TensorSpec] = Field(default_factory=list)
    outputs: list[TensorSpec] = Field(default_factory=list)
    config: dict[str, Any] | None = None
    act_frac: dict[int, tuple[int | None, int | None]] = Field(default_factory=dict)
    global_address_mode: Literal["pair", "single32"] = "pair"

    def tensor(self, name: str) -> TensorSpec:
        for t in self.inputs + self.outputs:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass
class Bundle:
    """A bundle in memory (what :func:`read_bundle` returns)."""

    program: PimProgram | None
    weights: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    gmem_segments: dict[int, np.ndarray] = field(default_factory=dict)
    manifest: Manifest = field(default_factory=Manifest)
    path: Path | None = None

    def config(self):
        """The hardware configuration of the manifest (:class:`PimConfig`) or ``None``."""
        if self.manifest.config is None:
            return None
        from .config import config_from_dict
        return config_from_dict(self.manifest.config, source=str(self.path) if self.path else None)


# ---------------------------------------------------------------------- program files
def _program_io():
    """(read, write) functions for program files, from the newest available module."""
    try:
        from .target import PimTarget  # the formats engineer's dispatcher (all formats)
        t = PimTarget()
        return (lambda p: t.read(p)), (lambda prog, p: t.write(prog, p))
    except ImportError:
        pass
    try:
        from .jsonio import read_json, write_json
    except ImportError:
        return None, None

    def read(p):
        if not str(p).endswith((".json", ".json.gz")):
            raise UnsupportedError(f"cannot read {Path(p).name} yet (only pimsim-nn JSON is available)")
        return read_json(p)

    def write(prog, p):
        if not str(p).endswith((".json", ".json.gz")):
            raise UnsupportedError(f"cannot write {Path(p).name} yet (only pimsim-nn JSON is available)")
        write_json(prog, p)
    return read, write


# ---------------------------------------------------------------------- write / read
def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    # Uncompressed: int8 weight matrices barely compress, and deflating ResNet-18's 11.7 M
    # weights cost over a second of a ~3 s compile.
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def write_bundle(out_dir: str | os.PathLike, program: PimProgram | None,
                 weights: Mapping | None = None, gmem_segments: Mapping[int, Any] | None = None,
                 manifest: Manifest | Mapping | None = None, *,
                 program_name: str = "program.json.gz") -> Path:
    """Write a bundle directory (created if needed); returns its path.

    Parameters
    ----------
    out_dir
        Target directory.
    program
        The program (``None`` writes no program file; the manifest then names none).
    weights
        ``{(core, group) or "c<core>.g<group>": K × N integer matrix}``.
    gmem_segments
        ``{address: uint8 array or bytes}`` — the initial global-memory image (constants such
        as biases and shift vectors; inputs are placed by the runner).
    manifest
        :class:`Manifest` or a dict with its fields (``program``/``weights``/``gmem`` file names
        are filled in).
    program_name
        ``program.json.gz`` (default), ``program.nnpi``, ``program.json`` or ``program.s``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    man = manifest if isinstance(manifest, Manifest) else Manifest.model_validate(dict(manifest or {}))
    man = man.model_copy(update={"program": program_name if program is not None else None})
    if program is not None:
        if program_name not in PROGRAM_NAMES:
            raise FormatError(f"program file name must be one of {', '.join(PROGRAM_NAMES)}, got {program_name!r}")
        _, write = _program_io()
        if write is None:
            raise UnsupportedError("no program writer available yet (nnisa.targets.pim.target / jsonio)")
        write(program, out / program_name)
        if program.act_frac and not man.act_frac:
            man = man.model_copy(update={"act_frac": dict(program.act_frac)})
    w = load_weights(weights or {})
    write_atomic(out / man.weights, _npz_bytes({f"c{c}.g{g}": a for (c, g), a in sorted(w.items())}))
    segs = {}
    for addr, seg in sorted((int(a), s) for a, s in (gmem_segments or {}).items()):
        if addr < 0:
            raise FormatError(f"gmem segment at negative address {addr}")
        segs[f"seg@{addr:#x}"] = np.frombuffer(as_bytes(seg), dtype=np.uint8)
    write_atomic(out / man.gmem, _npz_bytes(segs))
    write_atomic(out / "manifest.json", orjson.dumps(man.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    return out


def read_bundle(path: str | os.PathLike) -> Bundle:
    """Read a bundle directory written by :func:`write_bundle` (or by the compiler)."""
    root = Path(path)
    mpath = root / "manifest.json"
    if not mpath.is_file():
        raise FormatError("not a PIM bundle: manifest.json missing", file=str(root))
    try:
        man = Manifest.model_validate(orjson.loads(mpath.read_bytes()))
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON: {exc}", file=str(mpath)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise FormatError(f"invalid manifest: {loc}: {first['msg']}", file=str(mpath)) from None
    program = None
    if man.program is not None:
        ppath = root / man.program
        if not ppath.is_file():
            raise FormatError(f"program file {man.program} named by the manifest is missing", file=str(root))
        read, _ = _program_io()
        if read is None:
            raise UnsupportedError("no program reader available yet (nnisa.targets.pim.target / jsonio)")
        program = read(ppath)
        for c, fr in man.act_frac.items():
            program.act_frac.setdefault(int(c), tuple(fr))
    weights = load_weights(root / man.weights) if (root / man.weights).exists() else {}
    segs: dict[int, np.ndarray] = {}
    gpath = root / man.gmem
    if gpath.exists():
        with np.load(gpath, allow_pickle=False) as z:
            for key in z.files:
                if not key.startswith("seg@0x"):
                    raise FormatError(f"bad gmem key {key!r}: expected 'seg@0x<hex address>'", file=str(gpath))
                try:
                    addr = int(key[4:], 16)
                except ValueError:
                    raise FormatError(f"bad gmem key {key!r}", file=str(gpath)) from None
                arr = z[key]
                if arr.dtype != np.uint8:
                    raise FormatError(f"gmem segment {key} must be uint8, got {arr.dtype}", file=str(gpath))
                segs[addr] = arr.reshape(-1)
    return Bundle(program, weights, segs, man, root)


# ---------------------------------------------------------------------- run
def run_bundle(bundle: Bundle | str | os.PathLike, inputs: Mapping[str, np.ndarray] | None = None,
               **options: Any) -> tuple[FunctionalResult, dict[str, np.ndarray]]:
    """Functional run of a bundle: place ``inputs`` (by manifest name) in global memory, run,
    and read every manifest output as an integer array of its shape.

    ``options`` go to :func:`~nnisa.targets.pim.functional.run_functional` (e.g. ``path``,
    ``config`` to override the manifest's hardware configuration).
    """
    b = bundle if isinstance(bundle, Bundle) else read_bundle(bundle)
    if b.program is None:
        raise FormatError("the bundle has no program", file=str(b.path) if b.path else None)
    man = b.manifest
    inputs = dict(inputs or {})
    unknown = sorted(set(inputs) - {t.name for t in man.inputs})
    if unknown:
        raise FormatError(f"unknown input(s) {', '.join(unknown)}; the manifest has "
                          f"{', '.join(t.name for t in man.inputs) or 'none'}")
    config = options.pop("config", None) or b.config()
    gm = GlobalMemory(1 << 32, None)
    if config is not None and config.gmem_bounded:
        gm = GlobalMemory(int(config.chip_config.global_memory_config.memory_size))
    for addr, seg in sorted(b.gmem_segments.items()):
        gm.write(addr, as_bytes(seg))
    for spec in man.inputs:
        if spec.name in inputs:
            gm.write_tensor(spec.address, spec.quantize(inputs[spec.name]), spec.bits)
    options.setdefault("global_address_mode", man.global_address_mode)
    res = run_functional(b.program, config, weights=b.weights, gmem=gm, **options)
    outs = {t.name: res.read_tensor(t.address, tuple(t.shape), t.bits) for t in man.outputs}
    return res, outs
