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
from ....core.fileio import decode_text, read_bytes, special_kind, write_atomic
from ..config import TensilArch, load_arch
from ..program import TensilProgram
from .binary import decode_program, encode_program
from .bundle import TensilManifest
from .model import read_tmodel, write_tmodel
from .tasm import parse_tasm, write_tasm
from .text import assemble, disassemble

TEXT_SUFFIXES = (".s", ".nasm", ".asm", ".txt")


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
    data = read_bytes(prog_path)
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


def read_program(path: str | Path, arch: Any = None) -> TensilProgram:
    """Any supported program file; ``arch`` (preset, file, object) is needed except for models."""
    p = Path(path)
    if p.is_dir():
        man = read_manifest(p, TensilManifest) if is_bundle_dir(p) else None  # names confined to the folder
        m = member(p, man.tmodel, what="tmodel file") if man is not None and man.tmodel else find_model(p)
        if m is None:
            raise FormatError("folder holds no .tmodel", file=str(p))
        prog = read_model_program(m)
        if man is not None:
            _attach_manifest(prog, man)
        return prog
    suffix = p.suffix.lower()
    if suffix == ".tmodel":
        return read_model_program(p)
    if suffix not in (".tprog", ".tasm") + TEXT_SUFFIXES:
        raise FormatError(f"unknown Tensil file type {suffix or '(none)'} "
                          "(.tmodel, .tprog, .tasm, .s/.nasm/.asm/.txt)", file=str(p))
    if not p.exists():
        raise FormatError("file not found", file=str(p))
    a: TensilArch = load_arch(arch)
    a.check_supported()
    if suffix == ".tprog":
        return decode_program(read_bytes(p), a, file=str(p))
    text = decode_text(read_bytes(p), str(p))
    if suffix == ".tasm":
        return parse_tasm(text, a, file=str(p))
    return assemble(text, a, file=str(p))


def write_program(prog: TensilProgram, path: str | Path, *, extended: bool = False) -> None:
    """Write by extension (atomic).  A ``.tmodel`` also writes its ``.tprog`` and copies the consts."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".tprog":
        write_atomic(p, encode_program(prog))
    elif suffix == ".tasm":
        write_atomic(p, write_tasm(prog, extended=extended))
    elif suffix in TEXT_SUFFIXES:
        write_atomic(p, disassemble(prog))
    elif suffix == ".tmodel":
        _write_model(prog, p)
    else:
        raise OutputError(f"cannot write Tensil programs as {suffix or '(no extension)'} "
                          "(.tmodel, .tprog, .tasm, .s/.nasm/.asm/.txt)", file=str(p))


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
