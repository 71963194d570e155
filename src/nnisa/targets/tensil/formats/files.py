"""Reading and writing Tensil programs by file extension.

``.tmodel`` (with its ``.tprog`` and consts), ``.tprog`` (needs ``--arch``), canonical text
(``.s``, ``.nasm``, ``.asm``, ``.txt``) and Tensil's ``.tasm`` listing.  A folder holding one
``.tmodel`` (a compiler output) reads as that model.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ....core.bundle import is_bundle_dir, member, read_manifest
from ....core.errors import FormatError, OutputError
from ....core.fileio import read_bytes, read_text, special_kind, write_atomic
from ....core.formats import FileFormat, FormatTable
from ..config import TensilArch, load_arch
from ..program import TensilProgram
from .binary import decode_program, encode_program
from .bundle import TensilManifest
from .model import read_tmodel, write_tmodel
from .tasm import parse_tasm, write_tasm
from .text import assemble, disassemble

TEXT_SUFFIXES = (".s", ".nasm", ".asm", ".txt")
__all__ = ["FORMATS", "TEXT_SUFFIXES", "find_model", "read_model_program", "read_program", "write_program"]


def find_model(path: Path) -> Path | None:
    """The single ``.tmodel`` in a folder (compiler output), if any."""
    found = sorted(path.glob("*.tmodel"))
    if len(found) > 1:
        raise FormatError(f"folder holds {len(found)} .tmodel files; name one", file=str(path))
    return found[0] if found else None


def read_model_program(path: str | Path) -> TensilProgram:
    """A ``.tmodel`` and its program file; the model rides along as ``program.model``."""
    model = read_tmodel(path)
    model.arch.check_supported()
    for c in model.consts:
        model.file(c.file_name)  # every file it names stays in its folder
    prog_path = model.file(model.prog_file)
    # a program file bigger than the model declares is refused from its size, before it is read
    data = read_bytes(prog_path, max_size=max(model.prog_size, 0), what="program of this model (prog.size)")
    if len(data) != model.prog_size:
        raise FormatError(f"program is {len(data)} bytes but the model says prog.size = {model.prog_size}",
                          file=str(prog_path))
    prog = decode_program(data, model.arch, file=str(prog_path))
    prog.model = model
    return prog


def _attach_manifest(prog: TensilProgram, man: TensilManifest) -> None:
    """Figures an nnisa compile recorded next to the model (true MACs, layer topology)."""
    if man.true_macs:
        prog.model.extensions["x_nnisa_true_macs"] = int(man.true_macs)
    if man.topology:
        prog.model.extensions["x_nnisa_topology"] = man.topology
    if man.inputs:  # the tensors' shapes: model-shaped input arrays are laid out by the runner
        prog.model.extensions["x_nnisa_input_shapes"] = {t.name: list(t.shape) for t in man.inputs}
    if man.layer_spans:  # per-layer figures of nnisa sim
        prog.model.extensions["x_nnisa_layer_spans"] = man.layer_spans
    if man.outputs:  # ... and the outputs come back as float tensors of these shapes
        prog.model.extensions["x_nnisa_output_shapes"] = {t.name: list(t.shape) for t in man.outputs}


def _arch(config: Any) -> TensilArch:
    a = load_arch(config)
    a.check_supported()
    return a


def _read_folder(path: Path, **_: Any) -> TensilProgram:
    """A folder holding one ``.tmodel`` (a compiler output: its manifest's figures attached; the
    files a manifest names are confined to the folder)."""
    man = read_manifest(path, TensilManifest) if is_bundle_dir(path) else None
    if man is not None and man.steps:
        return _read_segmented(path, man)
    m = member(path, man.tmodel, what="tmodel file") if man is not None and man.tmodel else find_model(path)
    if m is None:
        raise FormatError("folder holds no .tmodel", file=str(path))
    prog = read_model_program(m)
    if man is not None:
        _attach_manifest(prog, man)
    return prog


def _read_segmented(path: Path, man: TensilManifest) -> Any:
    """A segmented model's folder (issue 27): each device segment's sub-folder (a Tensil bundle of
    its own) and the host steps' nodes from the folder's ONNX model."""
    from ....frontend import load_model
    from ..pipeline import DeviceStep, HostStep, TensilPipeline
    if not man.onnx:
        raise FormatError("a segmented model's manifest names no onnx model (its host steps' nodes)",
                          file=str(path / "manifest.json"))
    graph = load_model(member(path, man.onnx, what="onnx file"))
    known = {n.name for n in graph.nodes}
    steps: list[Any] = []
    for i, st in enumerate(man.steps):
        kind, ins, outs = st.get("kind"), list(st.get("inputs") or []), list(st.get("outputs") or [])
        if kind == "device":
            sub = member(path, str(st.get("folder")), what=f"segment {i} folder")
            if not is_bundle_dir(sub):
                raise FormatError(f"segment {i} folder {st.get('folder')!r} is not a Tensil bundle", file=str(sub))
            steps.append(DeviceStep(str(st["folder"]), _read_folder(sub), ins, outs, list(st.get("nodes") or [])))
        elif kind == "host":
            missing = [n for n in st.get("nodes") or [] if n not in known]
            if missing:
                raise FormatError(f"host step {i} names nodes the ONNX model lacks: {', '.join(missing[:3])}",
                                  file=str(path / "manifest.json"))
            steps.append(HostStep(list(st["nodes"]), ins, outs, int(st.get("host_ops") or 0)))
        else:
            raise FormatError(f"step {i} has kind {kind!r} (device or host)", file=str(path / "manifest.json"))
    devices = [s for s in steps if isinstance(s, DeviceStep)]
    arch = devices[0].program.arch if devices else load_arch(man.config)
    return TensilPipeline(arch, graph, steps, [t.name for t in graph.inputs], [t.name for t in graph.outputs])


def _read_tprog(path: Path, *, config: Any = None, **_: Any) -> TensilProgram:
    data = read_bytes(path)
    return decode_program(data, _arch(config), file=str(path))


def _read_tasm(path: Path, *, config: Any = None, **_: Any) -> TensilProgram:
    text = read_text(path)
    return parse_tasm(text, _arch(config), file=str(path))


def _read_text(path: Path, *, config: Any = None, **_: Any) -> TensilProgram:
    text = read_text(path)
    return assemble(text, _arch(config), file=str(path))


#: Tensil files: extension → reader, writer, description (``.tprog`` and text need ``--arch``)
FORMATS = FormatTable("Tensil", [
    FileFormat((".tmodel",), "Tensil model (program + consts + I/O map)", lambda p, **_: read_model_program(p),
               write=lambda prog, p, **_: _write_model(prog, p)),
    FileFormat((".tprog",), "Tensil binary program", _read_tprog, lambda prog, p, **_: encode_program(prog)),
    FileFormat((".tasm",), "Tensil listing dialect", _read_tasm,
               lambda prog, p, *, extended=False, **_: write_tasm(prog, extended=extended)),
    FileFormat(TEXT_SUFFIXES, "canonical Tensil assembly", _read_text, lambda prog, p, **_: disassemble(prog)),
], folder=_read_folder)


def read_program(path: str | Path, arch: Any = None, **options: Any) -> TensilProgram:
    """Any supported program file; ``arch`` (preset, file, object) is needed except for models."""
    return FORMATS.read(path, config=arch, **options)


def write_program(prog: TensilProgram, path: str | Path, **options: Any) -> None:
    """Write by extension (atomic).  A ``.tmodel`` also writes its ``.tprog`` and copies the consts.
    Options: ``extended`` (``.tasm``)."""
    FORMATS.write(prog, path, **options)


def _write_model(prog: TensilProgram, p: Path) -> None:
    model = prog.model
    if model is None:
        raise OutputError("a .tmodel needs the model the program came from (read a .tmodel first)", file=str(p))
    kind = special_kind(p)
    if kind is not None:  # its .tprog and consts would land beside the device
        raise OutputError(f"is a {kind}: a .tmodel is written with its .tprog and consts beside it; "
                          "name a file in a folder", file=str(p))
    data = encode_program(prog)
    prog_name = p.with_suffix(".tprog").name
    for c in model.consts:
        src = model.file(c.file_name)
        dst = p.parent / c.file_name
        if src.resolve() != dst.resolve():
            try:
                shutil.copyfile(src, dst)
            except OSError as exc:
                raise OutputError(f"cannot copy consts {src}: {exc.strerror}", file=str(dst)) from None
    write_atomic(p.parent / prog_name, data)
    from dataclasses import replace
    write_tmodel(replace(model, prog_file=prog_name, prog_size=len(data), arch=prog.arch), p)
