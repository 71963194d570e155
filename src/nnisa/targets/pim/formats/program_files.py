"""The PIM program file formats (pimsim-nn JSON, NNPI binary, assembly text) as table rows.

:data:`PROGRAM_FILES` reads and writes one program file by extension; ``files.FORMATS`` (the
target's table) adds compiled bundle folders and PIMB folders on top of it, and the bundle
reader/writer use it for the bundle's program file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....core.fileio import read_bytes, read_text
from ....core.formats import FileFormat, FormatTable

if TYPE_CHECKING:
    from ..program import PimProgram

__all__ = ["PROGRAM_FILES", "encode"]

# Each reader/writer imports its format's module when called: reading one kind of file loads
# only that codec (the JSON scanner, the NNPI decoder or the assembler), not the others.


def encode(program: PimProgram, word_bits: int | None = None, extended: bool | None = None) -> bytes:
    """NNPI container; ``word_bits``/``extended`` override the program's mode."""
    from .nnpi import encode_nnpi
    return encode_nnpi(program.with_mode(word_bits, extended))


def _read_json(path: Path, *, legacy_groups: str | None = None, **_: Any) -> PimProgram:
    from .jsonio import read_json
    return read_json(path, legacy_groups=legacy_groups)


def _write_json(program: PimProgram, path: Path, *, keep_nop: bool = False, **_: Any) -> list[str]:
    from .jsonio import write_json
    return write_json(program, path, keep_nop=keep_nop)


def _read_nnpi(path: Path, *, lenient: bool = False, **_: Any) -> PimProgram:
    from .nnpi import check_head, decode_nnpi
    # the header's counts are checked before a big file is read whole
    data = read_bytes(path, head=lambda h, size: check_head(h, size, str(path)))
    return decode_nnpi(data, lenient=lenient, file=str(path))


def _render_nnpi(program: PimProgram, path: Path, *, word_bits: int | None = None, extended: bool | None = None,
                 **_: Any) -> bytes:
    return encode(program, word_bits, extended)


def _read_text(path: Path, **_: Any) -> PimProgram:
    from .text import assemble_text
    return assemble_text(read_text(path), file=str(path))


def _render_text(program: PimProgram, path: Path, **_: Any) -> str:
    from .text import disassemble
    return disassemble(program)


PROGRAM_FILES = FormatTable("PIM", [
    FileFormat((".json", ".json.gz", ".json.zz"), "pimsim-nn JSON program (plain, gzip or zlib)", _read_json,
               write=_write_json),
    FileFormat((".nnpi", ".bin"), "NNPI binary container", _read_nnpi, _render_nnpi),
    FileFormat((".s", ".asm", ".txt"), "PIM assembly", _read_text, _render_text),
])
