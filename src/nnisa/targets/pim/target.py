"""The PIM target: file formats, text, binary codec and statistics behind one interface.

``compile`` and ``simulate`` are inherited (unsupported) here; the compiler and simulator
modules plug in by overriding them in a subclass or by assignment, e.g.
``PimTarget.simulate = my_simulate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.errors import FormatError
from ...core.fileio import decode_text, read_bytes, write_atomic
from ...core.target import Target
from .isa import build_isa
from .jsonio import read_json, write_json
from .nnpi import decode_nnpi, encode_nnpi, read_pimb_dir
from .program import PimProgram
from .stats import program_stats
from .text import assemble_text, disassemble

_JSON = (".json", ".json.gz", ".json.zz")
_BIN = (".nnpi", ".bin")
_TEXT = (".s", ".asm", ".txt")


def file_kind(path: str | Path) -> str:
    """``"json"``, ``"nnpi"``, ``"text"`` or ``"pimb"`` (a directory) from the file name."""
    p = Path(path)
    name = p.name.lower()
    if p.is_dir():
        return "pimb"
    if name.endswith(_JSON):
        return "json"
    if name.endswith(_BIN):
        return "nnpi"
    if name.endswith(_TEXT):
        return "text"
    raise FormatError("unknown PIM file type (use .json, .json.gz, .nnpi, .bin, .s, .asm or .txt)", file=str(p))


class PimTarget(Target):
    """The crossbar processing-in-memory ISA (X. Chen), pimsim-nn dialect included."""

    name = "pim"
    description = "Processing-in-memory crossbar ISA (pimsim-nn / PIMCOMP-NN compatible)"
    formats = {".json": "pimsim-nn JSON program", ".json.gz": "gzipped pimsim-nn JSON program",
               ".nnpi": "NNPI binary container", ".bin": "NNPI binary container",
               ".s": "PIM assembly", ".asm": "PIM assembly", ".txt": "PIM assembly"}

    def isa_markdown(self, word_bits: int = 64, extended: bool = False, **options: Any) -> str:
        return build_isa(word_bits, extended).markdown()

    def assemble(self, text: str, *, file: str | None = None, **options: Any) -> PimProgram:
        return assemble_text(text, file=file)

    def disassemble(self, program: PimProgram, **options: Any) -> str:
        return disassemble(program)

    def encode(self, program: PimProgram, *, word_bits: int | None = None, extended: bool | None = None,
               **options: Any) -> bytes:
        """NNPI container; ``word_bits``/``extended`` override the program's mode."""
        return encode_nnpi(program.with_mode(word_bits, extended))

    def decode(self, data: bytes, *, lenient: bool = False, file: str | None = None, **options: Any) -> PimProgram:
        return decode_nnpi(data, lenient=lenient, file=file)

    def read(self, path: str | Path, *, legacy_groups: str | None = None, lenient: bool = False,
             **options: Any) -> PimProgram:
        from .simulate import is_bundle_dir
        if is_bundle_dir(path):  # a compiled bundle: program + weights + gmem + manifest
            from .bundle import read_bundle
            return read_bundle(path)
        kind = file_kind(path)
        if kind == "json":
            return read_json(path, legacy_groups=legacy_groups)
        if kind == "pimb":
            return read_pimb_dir(path)
        data = read_bytes(path)
        if kind == "nnpi":
            return decode_nnpi(data, lenient=lenient, file=str(path))
        return assemble_text(decode_text(data, str(path)), file=str(path))

    def write(self, program: PimProgram, path: str | Path, *, keep_nop: bool = False, **options: Any) -> list[str]:
        """Write by extension; returns warnings (e.g. nops dropped from JSON)."""
        kind = file_kind(path)
        if kind == "json":
            return write_json(program, path, keep_nop=keep_nop)
        if kind == "nnpi":
            write_atomic(path, self.encode(program, **options))
        elif kind == "text":
            write_atomic(path, disassemble(program))
        else:
            raise FormatError("cannot write PIMB directories (import only)", file=str(path))
        return []

    def stats(self, program: PimProgram) -> dict[str, Any]:
        return program_stats(program)

    def simulate(self, program, *, config=None, inputs=None, **options: Any):
        """Values and/or timing+energy (``nnisa.targets.pim.simulate.simulate_pim``)."""
        from .simulate import simulate_pim
        return simulate_pim(program, config=config, inputs=inputs, **options)

    def compile(self, model, *, config=None, out_dir=None, **options: Any):
        """Compile an ONNX model (``nnisa.targets.pim.compiler``, ``docs/pim_compiler.md``)."""
        from .compiler.output import compile_result
        return compile_result(model, config=config, out_dir=out_dir, **options)
