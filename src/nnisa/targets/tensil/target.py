"""The Tensil target's face: the :class:`~nnisa.core.target.Target` interface over its parts.

Parts: ``config`` (architectures), ``isa`` (layout and tables), ``program``, ``numerics``,
``formats/`` (binary, canonical text, ``.tasm``, ``.tmodel``/``.tdata``/CSV), ``sim/`` (emulator,
estimator, detailed and SCALE-Sim cycle models) and ``compiler/`` (ONNX lowering).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.options import OptionSpec as O
from ...core.target import Target
from .config import PRESETS, load_arch
from .formats import files
from .formats.binary import decode_program, encode_program
from .formats.text import assemble, disassemble
from .isa import Layout, build_isa
from .program import TensilProgram
from .stats import program_stats

_SIM = ("sim",)


class TensilTarget(Target):
    """Tensil's weight-stationary systolic-array TCU (v1.0.15), architecture-parameterised."""

    name = "tensil"
    lowerings = "nnisa.targets.tensil.compiler.lower:LOWERINGS"
    description = "Tensil systolic-array TCU (v1.0.15): .tmodel/.tprog/.tdata, emulator, estimator"
    formats = {".tmodel": "Tensil model (program + consts + I/O map)", ".tprog": "Tensil binary program",
               ".tasm": "Tensil listing dialect", ".s": "canonical Tensil assembly", ".nasm": "canonical Tensil assembly",
               ".asm": "canonical Tensil assembly"}
    demo_model = "digits_mlp"
    demo_workloads = (("resnet20-baseline", None),)
    options = (
        O("extended", bool, False, None, ".tasm: spell instructions Tensil's dialect cannot (lossy otherwise)",
          ("asm", "convert")),
        O("comments", bool, False, None, "disassembly: add '; [index] bytes' to every line", ("disasm",)),
        O("timing", str, "estimator", ("estimator", "detailed", "scalesim"), "cycle model", _SIM),
        O("profile", str, "zcu104-single", ("zcu104-single", "zcu104-dual", "pynqz1", "ultra96v2"),
          "platform profile of the detailed model", _SIM),
        O("runs", int, None, None, "number of runs (default: as many as the inputs hold)", _SIM, minimum=1,
          maximum=1 << 20, nullable=True),
        O("local_consts", bool, None, None, "load consts into local memory (default: the model's flag)", _SIM,
          nullable=True),
        O("path", str, "fast", ("fast", "reference"), "emulator: numba kernel or reference interpreter", _SIM),
        O("compare", str, None, None, "CSV of expected outputs, checked with the data type's tolerance", _SIM,
          nullable=True),
        O("conversion", str, "tensil", ("tensil", "pynq"), "float→fixed rule of the inputs", _SIM),
        O("true_macs", int, None, None, "true MACs of the model (for MAC efficiency)", _SIM, minimum=0,
          nullable=True),
        O("raw_outputs", bool, False, None, "output raw fixed-point integers instead of floats", _SIM),
        O("csv", str, None, None, "also write the outputs as Tensil's CSV (exact decimals, CRLF)", _SIM,
          nullable=True),
        O("array_only", bool, False, None, "detailed model: array only (no DRAM/SIMD/mover)", _SIM),
        O("topology", str, None, None, "scalesim model: SCALE-Sim topology CSV (default: the model's layers)",
          _SIM, nullable=True),
        O("dataflow", str, "ws", ("ws", "os", "is"), "scalesim model: dataflow", _SIM),
        O("strategy", str, "local-isolated", ("local-isolated", "local-vars", "local-consts",
                                              "local-vars-and-consts"), "memory strategy (Tensil's names)"),
        O("softmax", str, "host", ("host", "passthrough", "error"),
          "Softmax at an output: on the host (default), passed through as logits (Tensil), or an error"),
        O("reuse", bool, True, None, "read a job's output from local memory in the next job instead of DRAM0 "
          "(false: Tensil's DRAM round trips, byte-identical XOR)"),
        O("outputs", str, None, None, "comma-separated tensors to output (default: every graph output)",
          ("compile",), nullable=True),
        O("lut", bool, False, None, "Sigmoid/Tanh through nnisa's LoadLUT/Lookup extension (adds x_nnisa_lut and "
          "3 SIMD registers to the architecture; not runnable on Tensil hardware)"),
    )

    # ------------------------------------------------------------------ configuration
    def config_presets(self) -> dict[str, str]:
        return {k: d for k, (_, d) in PRESETS.items()}

    def load_config(self, config: Any) -> Any:
        return load_arch(config)

    def area_proxy(self, config: Any, report: dict[str, Any]) -> tuple[float, str] | None:
        """Processing elements of the systolic array (array_size squared; memories not counted)."""
        arch = load_arch(config if config is not None else "zcu104")
        return float(arch.array_size ** 2), "PEs"

    def isa_markdown(self, *, config: Any = None, **options: Any) -> str:
        arch = load_arch(config if config is not None else "zcu104")
        return build_isa(arch).markdown() + "\n## Layout\n\n" + Layout.from_arch(arch).table()

    # ------------------------------------------------------------------ text and binary
    def assemble(self, text: str, *, file: str | None = None, config: Any = None, **options: Any) -> TensilProgram:
        return assemble(text, load_arch(config), file=file)

    def disassemble(self, program: TensilProgram, *, comments: bool = False, **options: Any) -> str:
        return disassemble(program, comments=comments)

    def encode(self, program: TensilProgram, **options: Any) -> bytes:
        return encode_program(program)

    def decode(self, data: bytes, *, config: Any = None, file: str | None = None, **options: Any) -> TensilProgram:
        return decode_program(data, load_arch(config), file=file)

    def read(self, path: str | Path, *, config: Any = None, **options: Any) -> TensilProgram:
        """``.tmodel`` (or a compiler output folder), ``.tprog``/``.tasm``/text with ``--arch``."""
        return files.read_program(path, config)

    def write(self, program: TensilProgram, path: str | Path, *, extended: bool = False, **options: Any) -> None:
        files.write_program(program, path, extended=extended)

    def stats(self, program: TensilProgram, **options: Any) -> dict[str, Any]:
        return program_stats(program)

    # ------------------------------------------------------------------ simulate / compile
    def simulate(self, program, *, config=None, inputs=None, **options: Any):
        """Emulator values and cycles (``nnisa.targets.tensil.sim.simulate.simulate``)."""
        from .sim.simulate import simulate
        return simulate(program, config=config, inputs=inputs, **options)

    def compile(self, model, *, config=None, out_dir=None, **options: Any):
        """ONNX → ``.tmodel``/``.tprog``/``.tdata`` bundle (``nnisa.targets.tensil.compiler``)."""
        from .compiler.output import compile_model
        return compile_model(model, config=config, out_dir=out_dir, **options)

    # ------------------------------------------------------------------ workloads
    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return dict(WORKLOADS)

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> dict[str, Any]:
        from .workloads import WORKLOADS, run_workload
        if workload not in WORKLOADS:
            self._unknown_workload(workload)
        return run_workload(workload)
