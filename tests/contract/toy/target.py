"""The toy target's face: binds the table, the formats and the simulator to the Target interface."""

from __future__ import annotations

from typing import Any

from nnisa.core.target import Example, Target

from . import files
from .isa import ISA_TABLE
from .sim import simulate

__all__ = ["ToyTarget"]


class ToyTarget(Target):
    """A four-register accumulator machine (the worked example of docs/architecture.md)."""

    name = "toy"
    description = "toy accumulator ISA (4 registers, 16-bit words): the sixth-target example"
    file_formats = files.FORMATS
    has_timeline = True
    options = ()
    example = Example("li r0, 3\nli r1, -4\nmul r2, r0, r1\nadd r3, r2, r0\nout r3\n", inputs={"r": [0, 0, 0, 0]})

    def isa_markdown(self, **options: Any) -> str:
        return ISA_TABLE.markdown()

    def assemble(self, text: str, *, file: str | None = None, **options: Any):
        return files.assemble(text, file=file)

    def disassemble(self, program, **options: Any) -> str:
        return files.disassemble(program)

    def encode(self, program, **options: Any) -> bytes:
        return files.encode(program)

    def decode(self, data: bytes, **options: Any):
        return files.decode(data, file=options.get("file"))

    def stats(self, program, **options: Any) -> dict[str, Any]:
        mix = {s.mnemonic: int((program["op"] == s.opcode).sum()) for s in ISA_TABLE.instrs}
        return {"instructions": len(program), "instruction_mix": mix}

    def simulate(self, program, *, config: Any = None, inputs=None, **options: Any):
        return simulate(program, inputs=inputs, **options)
