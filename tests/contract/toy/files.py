"""Toy programs and their files: the program model, the text assembler, and the format table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nnisa.core.asm import Assembler, make_formatter
from nnisa.core.errors import DecodeError
from nnisa.core.fileio import decode_text, read_bytes
from nnisa.core.formats import FileFormat, FormatTable

from .isa import ISA_TABLE

MAGIC = b"TOY1"


class ToyAssembler(Assembler):
    """The core assembler as is: no directives, no labels (the toy language has neither)."""

    labels = "the toy assembler takes instructions only"


def assemble(text: str, *, file: str | None = None) -> np.ndarray:
    """Assembly text → program rows, through the ISA table."""
    return ToyAssembler(ISA_TABLE, file=file).assemble(text)


def disassemble(program: np.ndarray) -> str:
    fmt = make_formatter(ISA_TABLE)
    return "".join(fmt(tuple(int(v) for v in row)) + "\n" for row in program)


def encode(program: np.ndarray) -> bytes:
    return MAGIC + ISA_TABLE.encode_array(program).astype("<u2").tobytes()


def decode(data: bytes, *, file: str | None = None) -> np.ndarray:
    if data[:4] != MAGIC or len(data) % 2:
        raise DecodeError("not a toy program image (magic TOY1, then 16-bit words)", file=file)
    return ISA_TABLE.decode_array(np.frombuffer(data[4:], "<u2"))


FORMATS = FormatTable("toy", [
    FileFormat((".toy",), "toy program image", lambda p, **_: decode(read_bytes(p), file=str(p)),
               lambda prog, p, **_: encode(prog)),
    FileFormat((".tasm", ".s"), "toy assembly", lambda p, **_: assemble(decode_text(read_bytes(p), str(p)), file=str(p)),
               lambda prog, p, **_: disassemble(prog)),
])


def read_program(path: str | Path, **options: Any) -> np.ndarray:
    return FORMATS.read(path, **options)


def write_program(program: np.ndarray, path: str | Path, **options: Any) -> None:
    FORMATS.write(program, path, **options)
