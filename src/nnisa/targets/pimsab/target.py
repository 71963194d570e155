"""The PIMSAB target's face: the :class:`~nnisa.core.target.Target` interface over the parts.

Parts: ``isa``/``precision`` (tables), ``config`` (architecture and presets), ``program``/``stats``,
``formats/`` (images, assembly, broadcast expansion), ``sim/`` (values, bit-level micro-ops, timing,
energy) and ``workloads/`` (the paper's replay generators and ``nnisa bench``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.options import OptionSpec as O
from ...core.target import Target
from .config import PRESETS, load_config
from .formats.files import FORMATS, check, program_config, read_program, write_program
from .formats.image import decode_image, encode_image
from .formats.text import assemble_text, disassemble
from .isa import build_isa
from .program import PimsabProgram
from .stats import program_stats


class PimsabTarget(Target):
    """PIMSAB (bit-serial compute-in-SRAM tiles on a mesh) with the paper's workloads."""

    name = "pimsab"
    description = "PIMSAB bit-serial processing-in-SRAM (128-bit ISA, cycle/energy simulator, paper workloads)"
    formats = dict(FORMATS)
    options = (
        O("lenient", bool, False, None, "decode words with nonzero reserved bits", ("disasm", "stats", "convert")),
    )

    def config_presets(self) -> dict[str, str]:
        return {k: v[0] for k, v in PRESETS.items()}

    def load_config(self, config: Any):
        return load_config(config)

    def isa_markdown(self, **options: Any) -> str:
        return build_isa().markdown()

    def assemble(self, text: str, *, file: str | None = None, config: Any = None, **options: Any) -> PimsabProgram:
        return assemble_text(text, file=file, config=config)

    def disassemble(self, program: PimsabProgram, **options: Any) -> str:
        return disassemble(program)

    def encode(self, program: PimsabProgram, **options: Any) -> bytes:
        return encode_image(program)

    def decode(self, data: bytes, *, lenient: bool = False, file: str | None = None, config: Any = None,
               **options: Any) -> PimsabProgram:
        prog = decode_image(data, lenient=lenient, file=file)
        return check(prog, program_config(prog, config), file)

    def read(self, path: str | Path, *, config: Any = None, lenient: bool = False, **options: Any) -> PimsabProgram:
        return read_program(path, config, lenient=lenient)

    def write(self, program: PimsabProgram, path: str | Path, *, config: Any = None, **options: Any) -> None:
        write_program(program, path, config)

    def stats(self, program: PimsabProgram, *, config: Any = None, **options: Any) -> dict[str, Any]:
        return program_stats(program, program_config(program, config))
