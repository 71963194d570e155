"""``DaisTarget``: da4ml's Distributed Arithmetic Instruction Set behind nnisa's Target API.

The face only binds the parts: ``isa`` (tables), ``formats/files.py`` (the file table),
``sim/simulate.py`` (the interpreter), ``compiler`` (ONNX networks) and ``workloads``.
"""

from __future__ import annotations

from typing import Any

from ...core.options import OptionSpec as O
from ...core.options import option_specs
from ...core.target import Example, CompileResult, Stats, Target, simulate_stacked
from . import isa
from .compiler import DaisCompileOptions, compile_model
from .formats import files
from .formats.text import assemble
from .layers import UTILIZATION
from .program import Program
from .sim.simulate import simulate

__all__ = ["DaisTarget"]


class DaisTarget(Target):
    """da4ml's DAIS (spec ``dais.md``).  Programs are :class:`~nnisa.targets.dais.program.Program`."""

    name = "dais"
    lowerings = "nnisa.targets.dais.compiler.netcompile:LOWERINGS"
    #: bundled model used by ``nnisa demo`` / ``nnisa run`` for this target
    demo_model = "digits_mlp"
    layer_utilization = UTILIZATION
    bundle_quantized_io = True  # the program computes on the manifest's integers
    description = "da4ml Distributed Arithmetic Instruction Set (combinational fixed-point DA programs)"
    file_formats = files.FORMATS
    demo_workloads = (("cmvm-256", None),)
    example = Example(".dais 1\n.inputs 2 shifts 0 0\n.outputs 2\n%0 = input 0 : (1,3,0)\n%1 = input 1 : (1,3,0)\n"
                      "%2 = sub %0, %1, 0 : (1,4,0)\n%3 = add %2, %1, 2 : (1,5,0)\nout 0 = %3\nout 1 = -%2\n",
                      inputs={"x": [[1, 2], [3, -4]]}, workload="cmvm-64")
    options = (
        O("format", str, "v1", ("v1", "v0", "legacy"), "binary format written", ("asm", "convert")),
        O("firmware_version", int, None, None, "firmware version stored in v1 binaries", ("asm", "convert"),
          minimum=0, maximum=2**32 - 1),
        O("json", str, "da4ml", ("da4ml", "nnisa"), "JSON dialect written", ("asm", "convert")),
        O("intervals", bool, True, None, "print each op's value interval in the disassembly", ("disasm",)),
        O("legacy_data_order", str, "lo-hi", ("lo-hi", "hi-lo"), "data word order of legacy binaries",
          ("disasm", "stats")),
        O("da4ml_compat", bool, False, None, "reproduce da4ml's C++ interpreter quirks", ("sim",)),
        O("input_range", str, None, ("error", "saturate", "wrap"), "inputs outside their dtype: refuse, clip "
          "(with a warning) or wrap modulo 2^w as da4ml does (default: wrap with da4ml_compat, else error)",
          ("sim",), nullable=True),
        O("engine", str, "auto", ("auto", "compiled", "exact", "rtl"),
          "numba engine, the exact reference, or the emitted Verilog run by Verilator", ("sim",)),
        O("n_threads", int, 1, None, "interpreter threads", ("sim",), minimum=1, maximum=1024),
        O("check", bool, False, None, "also run the exact reference and compare", ("sim",)),
        *option_specs(DaisCompileOptions, first=("method", "max_depth", "bits", "cse_budget", "cse_block_rows",
                                                 "calibration", "percentile", "per_channel", "calib_samples")),
    )

    def config_presets(self) -> dict[str, str]:
        return {"xc7": "per-action energies of 7-series FPGA logic (docs/dais.md, Energy)"}

    def load_config(self, config: Any) -> Any:
        """The energy table (:class:`~nnisa.targets.dais.energy.DaisEnergyConfig`)."""
        from .energy import load_energy_config
        return load_energy_config(config)

    def area_proxy(self, config: Any, report: dict[str, Any]) -> tuple[float, str] | None:
        """Total adder bits of the compiled network (an LUT-count proxy)."""
        bits = report.get("adder_bits")
        return (float(bits), "adder bits") if isinstance(bits, (int, float)) else None

    def isa_markdown(self, **options: Any) -> str:
        return "# DAIS opcodes (da4ml 0.6.0, spec_version 1)\n\n" + isa.isa_markdown()

    def assemble(self, text: str, *, file: str | None = None, **options: Any) -> Program:
        return assemble(text, file=file)

    def disassemble(self, program: Program, **options: Any) -> str:
        from .formats.fastrender import disassemble_fast
        return disassemble_fast(program, intervals=options.get("intervals", True))

    def encode(self, program: Program, **options: Any) -> bytes:
        return files.encode(program, **options)

    def decode(self, data: bytes, **options: Any) -> Program:
        return files.decode(data, **options)

    def stats(self, program: Program, **options: Any) -> dict[str, Any]:
        return program.stats()

    def simulate(self, program: Program, *, config: Any = None, inputs=None, **options: Any):
        """Run ``program`` on ``inputs["x"]`` (:func:`nnisa.targets.dais.sim.simulate.simulate`)."""
        return simulate(program, config=config, inputs=inputs, **options)

    def simulate_batch(self, compiled: CompileResult, samples, first: int):
        """Every sample in one interpreter call."""
        return simulate_stacked(self.simulate, compiled, samples)

    def compile(self, model: Any, *, config: Any = None, out_dir=None, **options: Any) -> CompileResult:
        """ONNX network → one DAIS program (:func:`nnisa.targets.dais.compiler.compile_model`)."""
        return compile_model(model, config=config, out_dir=out_dir, **options)

    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return dict(WORKLOADS)

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> Stats:
        """Run a built-in workload (:mod:`nnisa.targets.dais.workloads`)."""
        from .workloads import run_workload
        self.check_workload(workload)
        return run_workload(workload, config)

    def warm_up(self) -> list[str]:
        from .warmup import warm_up
        return warm_up()
