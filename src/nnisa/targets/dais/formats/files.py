"""DAIS program files by extension (binary, JSON, text, RTL) and the compiled-model bundle.

:data:`FORMATS` is the table behind ``DaisTarget.read/write`` and the network compiler's output
folder (:func:`program_bytes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.bundle import Manifest, member, read_manifest
from ....core.errors import UnsupportedError
from ....core.fileio import check_text_head, decode_text, read_maybe_compressed
from ....core.formats import FileFormat, FormatTable
from ..program import Program
from .binary import check_head, read_binary, to_bytes
from .jsonio import from_da4ml_json, from_nnisa_json, to_nnisa_json
from .text import assemble


def decode(data: bytes, *, format: str = "auto", file: str | None = None, legacy_data_order: str = "lo-hi",
           **_ignored: Any) -> Program:
    """A DAIS binary (v1/v0/legacy, detected with ``format="auto"``)."""
    return read_binary(data, format, file=file, legacy_data_order=legacy_data_order)


def encode(program: Program, *, format: str = "v1", firmware_version: int | None = None, **_ignored: Any) -> bytes:
    return to_bytes(program, format, firmware_version)


def _read_binary(path: Path, **options: Any) -> Program:
    # the header's counts are checked before a big file is read whole
    raw = read_maybe_compressed(path, head=lambda h, size: check_head(h, size, str(path)))
    return decode(raw, file=str(path), **options)


def _text(path: Path) -> str:
    """A text file, plain or compressed; a plain one's start is checked before it is read whole."""
    return decode_text(read_maybe_compressed(path, head=lambda h, size: check_text_head(h, str(path))), str(path))


def _read_text(path: Path, **_: Any) -> Program:
    return assemble(_text(path), file=str(path))


def _read_json(path: Path, **_: Any) -> Program:
    text = _text(path)
    if text.lstrip().startswith("{"):
        return from_nnisa_json(text, file=str(path))
    prog = from_da4ml_json(text, file=str(path))
    if isinstance(prog, list):
        raise UnsupportedError("da4ml Pipeline JSON holds several programs; read it with "
                               "nnisa.targets.dais.formats.jsonio.from_da4ml_json", file=str(path))
    return prog


def _read_bundle(path: Path, **options: Any) -> Program:
    """The program of a compiled bundle folder."""
    man = read_manifest(path, DaisManifest)
    if man.program is None:
        raise UnsupportedError("the bundle names no program", file=str(path))
    prog = FORMATS.read(member(path, man.program, what="program file"), **options)
    if len(man.inputs) > 1:  # several graph inputs: one program input vector, in the manifest's order
        prog.meta["input_names"] = [t.name for t in man.inputs]
    layers = man.layers
    if layers and all(0 <= lo and lo + n <= prog.n_ops for _, _, lo, n in layers):
        prog.meta["layers"] = [list(r) for r in layers]  # the per-layer figures of `nnisa sim` on the folder
    return prog


def _binary_bytes(program: Program, path: Path, **options: Any) -> bytes:
    return encode(program, **options)


def _text_bytes(program: Program, path: Path, **_: Any) -> str:
    from .fastrender import disassemble_fast  # numba: only when writing this form
    return disassemble_fast(program, encoded=True)


def _json_bytes(program: Program, path: Path, *, json: str = "da4ml", **_: Any) -> str:
    if json == "nnisa":
        return to_nnisa_json(program)
    from .fastrender import to_da4ml_json_fast
    return to_da4ml_json_fast(program, encoded=True)


def _rtl_bytes(hdl: str):
    def render(program: Program, path: Path, *, latency_cutoff: float | None = None, top: str | None = None,
               **_: Any) -> str:
        from ..rtl import emit, module_name
        return emit(program, hdl, latency_cutoff=latency_cutoff, name=top or module_name(path))[0]
    return render


#: DAIS files: extension → reader, writer, description (the RTL forms are write-only, spec §10)
FORMATS = FormatTable("dais", [
    FileFormat((".bin", ".dais"), "DAIS binary (v1/v0/legacy, auto-detected)", _read_binary, _binary_bytes),
    FileFormat((".json",), "da4ml CombLogic JSON (or nnisa DAIS JSON on read)", _read_json, _json_bytes),
    FileFormat((".dais.txt", ".s", ".txt", ".asm"), "nnisa DAIS assembly", _read_text, _text_bytes),
    FileFormat((".v",), "Verilog-2005 RTL", render=_rtl_bytes("verilog")),
    FileFormat((".vhd", ".vhdl"), "VHDL-2008 RTL", render=_rtl_bytes("vhdl")),
], bundle=_read_bundle)


def read_program(path: str | Path, **options: Any) -> Program:
    """Read a binary/JSON/text program (by extension), or the program of a compiled bundle folder."""
    return FORMATS.read(path, **options)


def write_program(program: Program, path: str | Path, **options: Any) -> None:
    """Write by extension, atomically."""
    FORMATS.write(program, path, **options)


def program_bytes(program: Program, path: str | Path, **options: Any) -> bytes | str:
    """The file content for ``path``'s format."""
    return FORMATS.render(program, path, **options)


class DaisManifest(Manifest):
    """``manifest.json`` of a compiled DAIS model: ``program`` is the binary, ``files`` has the
    text and da4ml JSON forms; the one input and output tensor carry the quantization scales;
    ``layers`` the program's layer ranges ``[node, op, first_op, ops]`` (:mod:`..layers`)."""

    format: str = "nnisa-bundle"
    target: str | None = "dais"
    layers: list[tuple[str, str, int, int]] | None = None
