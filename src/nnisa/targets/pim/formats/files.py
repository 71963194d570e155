"""PIM program files by extension: pimsim-nn JSON, NNPI binary, assembly text, PIMB folders.

The one dispatcher behind ``PimTarget.read/write`` and the bundle reader/writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.errors import FormatError
from ....core.fileio import decode_text, read_bytes, write_atomic
from ..program import PimProgram
from .jsonio import read_json, write_json
from .nnpi import check_head as check_nnpi_head, decode_nnpi, encode_nnpi, read_pimb_dir
from .text import assemble_text, disassemble

JSON_EXT = (".json", ".json.gz", ".json.zz")
BINARY_EXT = (".nnpi", ".bin")
TEXT_EXT = (".s", ".asm", ".txt")


def file_kind(path: str | Path) -> str:
    """``"json"``, ``"nnpi"``, ``"text"`` or ``"pimb"`` (a directory) from the file name."""
    p = Path(path)
    name = p.name.lower()
    if p.is_dir():
        return "pimb"
    if name.endswith(JSON_EXT):
        return "json"
    if name.endswith(BINARY_EXT):
        return "nnpi"
    if name.endswith(TEXT_EXT):
        return "text"
    raise FormatError("unknown PIM file type (use .json, .json.gz, .nnpi, .bin, .s, .asm or .txt)", file=str(p))


def encode(program: PimProgram, word_bits: int | None = None, extended: bool | None = None) -> bytes:
    """NNPI container; ``word_bits``/``extended`` override the program's mode."""
    return encode_nnpi(program.with_mode(word_bits, extended))


def read_program(path: str | Path, *, legacy_groups: str | None = None, lenient: bool = False) -> PimProgram:
    """Read a program file or PIMB folder (format from the name)."""
    kind = file_kind(path)
    if kind == "json":
        return read_json(path, legacy_groups=legacy_groups)
    if kind == "pimb":
        return read_pimb_dir(path)
    data = read_bytes(path, head=(lambda h, size: check_nnpi_head(h, size, str(path))) if kind == "nnpi" else None)
    if kind == "nnpi":
        return decode_nnpi(data, lenient=lenient, file=str(path))
    return assemble_text(decode_text(data, str(path)), file=str(path))


def write_program(program: PimProgram, path: str | Path, *, keep_nop: bool = False,
                  word_bits: int | None = None, extended: bool | None = None, **_ignored: Any) -> list[str]:
    """Write by extension, atomically; returns warnings (e.g. nops dropped from JSON)."""
    kind = file_kind(path)
    if kind == "json":
        return write_json(program, path, keep_nop=keep_nop)
    if kind == "nnpi":
        write_atomic(path, encode(program, word_bits, extended))
    elif kind == "text":
        write_atomic(path, disassemble(program))
    else:
        raise FormatError("cannot write PIMB directories (import only)", file=str(path))
    return []
