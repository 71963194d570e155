"""The Tensil target's face: the :class:`~nnisa.core.target.Target` interface over its parts.

Parts: ``config`` (architectures), ``isa`` (layout and tables), ``program``, ``numerics``,
``formats/`` (binary, canonical text, ``.tasm``, ``.tmodel``/``.tdata``/CSV), ``sim/`` (emulator,
estimator, detailed and SCALE-Sim cycle models) and ``compiler/`` (ONNX lowering).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...core.options import OptionSpec as O
from ...core.options import option_specs
from ...core.target import Example, ENGINES, CompileResult, Stats, Target, simulate_stacked
from .compiler import TensilCompileOptions, compile_model
from .config import PRESETS, load_arch
from .formats import files
from .formats.binary import decode_program, encode_program
from .formats.text import assemble, disassemble
from .isa import Layout, build_isa
from .program import TensilProgram
from .sim.layers import LAYER_UTILIZATION
from .sim.simulate import simulate
from .stats import program_stats

__all__ = ["TensilTarget"]

_SIM = ("sim",)
_SIM_RUN = ("sim", "run")  # simulation options run (and compare) pass on to the simulation
#: the run options that choose the simulation rather than the compilation
RUN_SIM_OPTIONS = ("timing", "profile")


def _one_program(program: Any, what: str) -> None:
    """Refuse a segmented model where one Tensil program is needed, naming what to do instead."""
    from .pipeline import TensilPipeline
    if isinstance(program, TensilPipeline):
        from ...core.errors import UnsupportedError
        raise UnsupportedError(f"a segmented model is {len(program.devices)} Tensil programs and host steps: "
                               f"{what} one segment's folder (seg*/ in the bundle)")


class TensilTarget(Target):
    """Tensil's weight-stationary systolic-array TCU (v1.0.15), architecture-parameterised."""

    name = "tensil"
    lowerings = "nnisa.targets.tensil.compiler.lower:LOWERINGS"
    description = "Tensil systolic-array TCU (v1.0.15): .tmodel/.tprog/.tdata, emulator, estimator"
    file_formats = files.FORMATS
    has_timeline = True
    layer_utilization = LAYER_UTILIZATION
    demo_model = "digits_mlp"
    demo_workloads = (("resnet20-baseline", None),)
    example = Example("loadweights local[0], 5\nmatmul local[5], acc[0], 2\n", config="tiny4x4",
                      sim_options={"timing": "detailed"}, workload="scalesim-test")
    options = (
        O("extended", bool, False, None, ".tasm: spell instructions Tensil's dialect cannot (lossy otherwise)",
          ("asm", "convert")),
        O("comments", bool, False, None, "disassembly: add '; [index] bytes' to every line", ("disasm",)),
        O("timing", str, "estimator", ("estimator", "detailed", "scalesim"),
          "cycle model (docs/tensil.md: which to trust for what)", _SIM_RUN),
        O("profile", str, "zcu104-single", ("zcu104-single", "zcu104-dual", "pynqz1", "ultra96v2"),
          "platform profile of the detailed model", _SIM_RUN),
        O("runs", int, None, None, "number of runs (default: as many as the inputs hold)", _SIM, minimum=1,
          maximum=1 << 20, nullable=True),
        O("local_consts", bool, None, None, "load consts into local memory (default: the model's flag)", _SIM,
          nullable=True),
        O("engine", str, "fast", ENGINES, "emulator: numba kernel or reference interpreter", _SIM),
        O("path", str, "fast", ENGINES, "old name of engine", _SIM, alias_of="engine", deprecated=True),
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
        *option_specs(TensilCompileOptions),
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
        from .pipeline import TensilPipeline
        if isinstance(program, TensilPipeline):  # a listing per device segment, host steps as comments
            return "".join(f"; host step: {', '.join(s.nodes)}\n" if not hasattr(s, "program") else
                           f"; device segment {s.folder}\n" + disassemble(s.program, comments=comments)
                           for s in program.steps)
        return disassemble(program, comments=comments)

    def encode(self, program: TensilProgram, **options: Any) -> bytes:
        _one_program(program, "encode")
        return encode_program(program)

    def write(self, program: Any, path: Any, **options: Any) -> list[str]:
        _one_program(program, "convert")
        return super().write(program, path, **options)

    def decode(self, data: bytes, *, config: Any = None, file: str | None = None, **options: Any) -> TensilProgram:
        return decode_program(data, load_arch(config), file=file)

    def stats(self, program: TensilProgram, **options: Any) -> dict[str, Any]:
        from .pipeline import TensilPipeline
        if isinstance(program, TensilPipeline):  # per device segment; host steps listed
            segs = {s.folder: program_stats(s.program) for s in program.devices}
            return {"segments": len(segs), "instructions": sum(v["instructions"] for v in segs.values()),
                    "estimator_cycles": sum(v["estimator_cycles"] for v in segs.values()),
                    "host_steps": [", ".join(s.nodes) for s in program.steps if not hasattr(s, "program")],
                    "per_segment": segs}
        return program_stats(program)

    # ------------------------------------------------------------------ simulate / compile
    def simulate(self, program, *, config=None, inputs=None, **options: Any):
        """Emulator values and cycles (:func:`nnisa.targets.tensil.sim.simulate.simulate`); a segmented
        model (device segments and host steps, :mod:`.pipeline`) runs step by step."""
        from .pipeline import TensilPipeline, simulate_pipeline
        if isinstance(program, TensilPipeline):
            if config is not None and load_arch(config) != program.arch:
                from ...core.errors import SimError
                raise SimError("--arch differs from the architecture of the program")
            return simulate_pipeline(program, inputs=inputs, **options)
        return simulate(program, config=config, inputs=inputs, **options)

    def simulate_batch(self, compiled: CompileResult, samples: list[dict[str, Any]], first: int):
        """A segmented model runs all samples at once (each segment emulates them as runs)."""
        from .pipeline import TensilPipeline
        if isinstance(compiled.program, TensilPipeline):
            return simulate_stacked(self.simulate, compiled, samples)
        return super().simulate_batch(compiled, samples, first)

    def run_compiled(self, compiled: CompileResult, inputs: dict[str, Any], progress: Any = None):
        """As every target; outputs that are 0 for every sample say why in one warning (their values
        fell under half an ulp of the data type on the way: nothing to compare)."""
        run = super().run_compiled(compiled, inputs, progress)
        zero = [k for k, v in run.outputs.items() if np.size(v) and not np.any(np.asarray(v))]
        if zero:
            arch = getattr(compiled.program, "arch", None)
            dt = getattr(arch, "data_type", "the data type")
            ulp = f" (ulp {2.0 ** -arch.bp:g})" if getattr(arch, "bp", None) is not None else ""
            warnings.warn(f"output {', '.join(zero)} is 0 for every sample in {dt}{ulp}: the model's values fall "
                          "under half an ulp on the way (untrained or badly scaled weights?); an architecture whose "
                          "data_type has more fraction bits (FP32BP16) resolves smaller values", stacklevel=2)
        return run

    def compile(self, model, *, config=None, out_dir=None, **options: Any) -> CompileResult:
        """ONNX → ``.tmodel``/``.tprog``/``.tdata`` bundle (:func:`nnisa.targets.tensil.compiler.compile_model`)."""
        res = compile_model(model, config=config, out_dir=out_dir, **options)
        res.sim_options.update({k: options[k] for k in RUN_SIM_OPTIONS if options.get(k) is not None})
        return res

    # ------------------------------------------------------------------ workloads
    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return dict(WORKLOADS)

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> Stats:
        from .workloads import run_workload
        self.check_workload(workload)
        return run_workload(workload)
