"""DAIS program files by extension (binary, JSON, text) and the compiled-model bundle.

The one dispatcher behind ``DaisTarget.read/write`` and the network compiler's output folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.bundle import Manifest, is_bundle_dir, member, read_manifest
from ....core.errors import UnsupportedError
from ....core.fileio import decode_text, read_maybe_compressed, write_atomic
from ..program import Program
from .binary import check_head, read_binary, to_bytes
from .jsonio import from_da4ml_json, from_nnisa_json, to_nnisa_json
from .text import assemble

TEXT_EXT = (".dais.txt", ".s", ".txt", ".asm")
BINARY_EXT = (".bin", ".dais")
#: write-only RTL forms (spec §10): extension → hdl
RTL_EXT = {".v": "verilog", ".vhd": "vhdl", ".vhdl": "vhdl"}


def file_kind(path: str | Path) -> str:
    """``"text"``, ``"json"`` or ``"binary"`` from the file name."""
    path = Path(path)
    name = path.name.lower()
    if any(name.endswith(e) for e in TEXT_EXT):
        return "text"
    if name.endswith(".json"):
        return "json"
    if any(name.endswith(e) for e in BINARY_EXT):
        return "binary"
    if path.suffix.lower() in RTL_EXT:
        return RTL_EXT[path.suffix.lower()]
    raise UnsupportedError(f"unknown DAIS file type {path.suffix!r} (use .bin/.dais, .json, .dais.txt, "
                           "or .v/.vhd to write RTL)", file=str(path))


def decode(data: bytes, *, format: str = "auto", file: str | None = None, legacy_data_order: str = "lo-hi",
           **_ignored: Any) -> Program:
    """A DAIS binary (v1/v0/legacy, detected with ``format="auto"``)."""
    return read_binary(data, format, file=file, legacy_data_order=legacy_data_order)


def encode(program: Program, *, format: str = "v1", firmware_version: int | None = None, **_ignored: Any) -> bytes:
    return to_bytes(program, format, firmware_version)


def read_program(path: str | Path, **options: Any) -> Program:
    """Read a binary/JSON/text program, or the program of a compiled bundle folder."""
    path = Path(path)
    if is_bundle_dir(path):
        man = read_manifest(path)
        if man.program is None:
            raise UnsupportedError("the bundle names no program", file=str(path))
        path = member(path, man.program, what="program file")
    kind = file_kind(path)
    if kind in ("verilog", "vhdl"):
        raise UnsupportedError(f"{kind} files are written from DAIS programs, not read", file=str(path))
    raw = read_maybe_compressed(path, head=(lambda h, size: check_head(h, size, str(path))) if kind == "binary"
                                else None)
    if kind == "binary":
        return decode(raw, file=str(path), **options)
    text = decode_text(raw, str(path))
    if kind == "text":
        return assemble(text, file=str(path))
    if text.lstrip().startswith("{"):
        return from_nnisa_json(text, file=str(path))
    prog = from_da4ml_json(text, file=str(path))
    if isinstance(prog, list):
        raise UnsupportedError("da4ml Pipeline JSON holds several programs; read it with "
                               "nnisa.targets.dais.formats.jsonio.from_da4ml_json", file=str(path))
    return prog


def program_bytes(program: Program, path: str | Path, **options: Any) -> bytes | str:
    """The file content for ``path``'s format."""
    kind = file_kind(path)
    if kind == "binary":
        return encode(program, **options)
    if kind in ("verilog", "vhdl"):
        from ..rtl import emit, module_name
        return emit(program, kind, latency_cutoff=options.get("latency_cutoff"),
                    name=options.get("top") or module_name(path))[0]
    from .fastrender import disassemble_fast, to_da4ml_json_fast  # numba: only when writing these forms
    if kind == "text":
        return disassemble_fast(program, encoded=True)
    if options.get("json") == "nnisa":
        return to_nnisa_json(program)
    return to_da4ml_json_fast(program, encoded=True)


def write_program(program: Program, path: str | Path, **options: Any) -> None:
    """Write by extension, atomically."""
    write_atomic(path, program_bytes(program, path, **options))


class DaisManifest(Manifest):
    """``manifest.json`` of a compiled DAIS model: ``program`` is the binary, ``files`` has the
    text and da4ml JSON forms; the one input and output tensor carry the quantization scales."""

    format: str = "nnisa-bundle"
    target: str | None = "dais"
