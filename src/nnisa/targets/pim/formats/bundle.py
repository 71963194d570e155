"""The PIM program bundle: what the compiler emits and ``nnisa sim --target pim DIR`` consumes.

Layout of a bundle directory (spec ``pim_isa.md`` §5.4 "Decision (program bundle)"; the full
contract is documented in ``docs/pim_bundle.md``)::

    manifest.json      tensors, hardware config, act_frac, global-address mode, file names
    program.json.gz    the instructions (or program.nnpi / program.json / program.s)
    weights.npz        c<core>.g<group> → integer K × N matrices
    gmem.npz           seg@0x<hex address> → uint8 arrays (initial global memory)

The folder is written all at once by :class:`nnisa.core.bundle.BundleWriter` (a temporary sibling
renamed into place, manifest last); every file name in the manifest is confined to the folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ....core import bundle as core_bundle
from ....core.bundle import BundleWriter, member, read_manifest
from ....core.errors import FormatError
from ....core.fileio import load_npz
from ..program import PimProgram
from ..sim.memory import as_bytes
from ..sim.weights import load_weights
from .program_files import PROGRAM_FILES, encode

BUNDLE_FORMAT = "nnisa-pim-bundle"
BUNDLE_VERSION = 1
PROGRAM_NAMES = ("program.nnpi", "program.json.gz", "program.json", "program.s")
#: the NoC table a bundle carries (its config's net_config_file_path names it)
NOC_FILE = "noc_table.json"


class TensorSpec(core_bundle.TensorSpec):
    """A tensor in global memory: ``address`` is required (the generic spec's other fields).

    Elements are ``bits`` wide, stored in ``⌈bits/8⌉`` bytes each, little-endian, sign-extended
    (D12), contiguously in ``layout`` order starting at ``address``.
    """

    address: int = Field(ge=0, lt=1 << 64)


class StreamSpec(BaseModel):
    """A program compiled for a stream of images (``-O images=N``): image ``k``'s inputs and
    outputs lie ``k · image_stride`` bytes above the manifest addresses; ``image_ends`` gives,
    per core, the end (exclusive pc) of each image's work (0 = none); ``pipeline_depth`` the
    stages of a pipelined stream (the simulator's period uses the images completed while the
    pipeline is full)."""

    model_config = ConfigDict(extra="forbid")

    images: int = Field(ge=1, le=1 << 16)
    image_stride: int = Field(0, ge=0, lt=1 << 40)
    pipeline_depth: int = Field(1, ge=1, le=1 << 16)
    image_ends: dict[int, list[int]] = Field(default_factory=dict)


class LayerSpec(BaseModel):
    """A compiled layer: its ONNX node, op (fused ones joined by ``+``), crossbars and on-chip bytes."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=4096)
    op: str = Field(max_length=256)
    crossbars: int = Field(0, ge=0, lt=1 << 40)
    memory_bytes: int = Field(0, ge=0, lt=1 << 50)


class Manifest(core_bundle.Manifest):
    """``manifest.json`` of a PIM bundle."""

    FILE_FIELDS: ClassVar[tuple[str, ...]] = ("program", "weights", "gmem")

    format: Literal["nnisa-pim-bundle"] = BUNDLE_FORMAT
    version: int = BUNDLE_VERSION
    target: str | None = "pim"
    weights: str = "weights.npz"
    gmem: str = "gmem.npz"
    inputs: list[TensorSpec] = Field(default_factory=list)
    outputs: list[TensorSpec] = Field(default_factory=list)
    act_frac: dict[int, tuple[int | None, int | None]] = Field(default_factory=dict)
    global_address_mode: Literal["pair", "single32"] = "pair"
    stream: StreamSpec | None = None
    #: per-layer figures: the compiled program's layers and, per core, (first pc, layer index) starts
    layers: list[LayerSpec] = Field(default_factory=list)
    layer_starts: dict[int, list[tuple[int, int]]] = Field(default_factory=dict)


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
        from ..config import config_from_dict
        source = str(self.path / "manifest.json") if self.path else None
        cfg = config_from_dict(self.manifest.config, source=source)
        noc = cfg.chip_config.network_config.net_config_file_path
        if noc and self.path is not None:  # relative to the bundle, and confined to it
            member(self.path, noc, what="NoC table")
        return cfg


# ---------------------------------------------------------------------- write / read
def write_bundle(out_dir: str | os.PathLike, program: PimProgram | None,
                 weights: Mapping | None = None, gmem_segments: Mapping[int, Any] | None = None,
                 manifest: Manifest | Mapping | None = None, *,
                 program_name: str = "program.json.gz", extra_files: Mapping[str, bytes | str] | None = None,
                 binary: bool = False) -> Path:
    """Write a bundle directory all at once; returns its path.

    Parameters
    ----------
    out_dir
        Target directory (replaced whole if it is a bundle or empty; any other folder is refused).
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
    extra_files
        Further files (name → content), listed under the manifest's ``files``.
    binary
        Also write ``program.nnpi`` (role ``binary``).
    """
    man = manifest if isinstance(manifest, Manifest) else Manifest.model_validate(dict(manifest or {}))
    man = man.model_copy(update={"program": program_name if program is not None else None})
    if program is not None and program.image_ends and man.stream is not None and not man.stream.image_ends:
        man = man.model_copy(update={"stream": man.stream.model_copy(
            update={"image_ends": program.image_ends, "pipeline_depth": program.pipeline_depth})})
    if program is not None and program.layers and not man.layers:
        man = man.model_copy(update={"layers": [LayerSpec(**d) for d in program.layers],
                                     "layer_starts": dict(program.layer_starts)})
    if program is not None and program_name not in PROGRAM_NAMES:
        raise FormatError(f"program file name must be one of {', '.join(PROGRAM_NAMES)}, got {program_name!r}")
    with BundleWriter(out_dir) as w:
        files = dict(man.files)
        if program is not None:
            PROGRAM_FILES.write(program, w.file(program_name))
            if program.act_frac and not man.act_frac:
                man = man.model_copy(update={"act_frac": dict(program.act_frac)})
            if binary and program_name != "program.nnpi":
                w.write("program.nnpi", encode(program))
                files["binary"] = "program.nnpi"
        wts = load_weights(weights or {})
        w.write_arrays(man.weights, {f"c{c}.g{g}": a for (c, g), a in sorted(wts.items())})
        segs = {}
        for addr, seg in sorted((int(a), s) for a, s in (gmem_segments or {}).items()):
            if addr < 0:
                raise FormatError(f"gmem segment at negative address {addr}")
            segs[f"seg@{addr:#x}"] = np.frombuffer(as_bytes(seg), dtype=np.uint8)
        w.write_arrays(man.gmem, segs)
        for name, data in (extra_files or {}).items():
            w.write(name, data)
            files.setdefault(Path(name).stem, name)
        return w.commit(man.model_copy(update={"files": files}))


def read_bundle(path: str | os.PathLike) -> Bundle:
    """Read a bundle directory written by :func:`write_bundle` (or by the compiler)."""
    root = Path(path)
    man = read_manifest(root, Manifest)
    program = None
    if man.program is not None:
        ppath = member(root, man.program, what="program file")
        if not ppath.is_file():
            raise FormatError(f"program file {man.program} named by the manifest is missing", file=str(root))
        program = PROGRAM_FILES.read(ppath)
        for c, fr in man.act_frac.items():
            program.act_frac.setdefault(int(c), tuple(fr))
        if man.stream is not None:
            program.image_ends = _checked_marks(man.stream, program, root)
            program.pipeline_depth = man.stream.pipeline_depth
        if man.layers:
            program.layers = [d.model_dump() for d in man.layers]
            program.layer_starts = _checked_layer_starts(man, program, root)
    wpath = member(root, man.weights, what="weights file")
    weights = load_weights(wpath) if wpath.exists() else {}
    segs: dict[int, np.ndarray] = {}
    gpath = member(root, man.gmem, what="gmem file")
    if gpath.exists():
        for key, arr in load_npz(gpath).items():
            if not key.startswith("seg@0x"):
                raise FormatError(f"bad gmem key {key!r}: expected 'seg@0x<hex address>'", file=str(gpath))
            try:
                addr = int(key[4:], 16)
            except ValueError:
                raise FormatError(f"bad gmem key {key!r}", file=str(gpath)) from None
            if arr.dtype != np.uint8:
                raise FormatError(f"gmem segment {key} must be uint8, got {arr.dtype}", file=str(gpath))
            segs[addr] = arr.reshape(-1)
    return Bundle(program, weights, segs, man, root)


def _checked_marks(stream: StreamSpec, program: PimProgram, root: Path) -> dict[int, list[int]]:
    """The manifest's image marks, checked against the program (one line per problem)."""
    out = {}
    for c, ends in stream.image_ends.items():
        rows = program.cores.get(int(c))
        n = 0 if rows is None else len(rows)
        if len(ends) != stream.images or any(not 0 <= e <= n for e in ends):
            raise FormatError(f"stream.image_ends of core {c}: expected {stream.images} ends in 0..{n}",
                              file=str(root / "manifest.json"))
        out[int(c)] = [int(e) for e in ends]
    return out


def _checked_layer_starts(man: Manifest, program: PimProgram, root: Path) -> dict[int, list[tuple[int, int]]]:
    """The manifest's layer starts, checked against the program and its layers."""
    out = {}
    for c, starts in man.layer_starts.items():
        rows = program.cores.get(int(c))
        n = 0 if rows is None else len(rows)
        pcs = [pc for pc, _ in starts]
        if pcs != sorted(pcs) or any(not 0 <= pc <= n or not -1 <= li < len(man.layers) for pc, li in starts):
            raise FormatError(f"layer_starts of core {c}: expected ascending (pc in 0..{n}, layer index in "
                              f"-1..{len(man.layers) - 1}) pairs", file=str(root / "manifest.json"))
        out[int(c)] = [(int(pc), int(li)) for pc, li in starts]
    return out
