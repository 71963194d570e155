"""The PIMSAB target's face: the :class:`~nnisa.core.target.Target` interface over the parts.

Parts: ``isa``/``precision`` (tables), ``config`` (architecture and presets), ``program``/``stats``,
``formats/`` (images, assembly, broadcast expansion), ``sim/`` (values, bit-level micro-ops, timing,
energy) and ``workloads/`` (the paper's replay generators and ``nnisa bench``).
"""

from __future__ import annotations

from typing import Any

from ...core.options import OptionSpec as O
from ...core.target import Example, ENGINES, CompileResult, Stats, Target
from .compiler import compile_model
from .config import PRESETS, load_config
from .formats.files import FORMATS, decode, program_config
from .formats.image import encode_image
from .formats.text import assemble_text, disassemble
from .isa import build_isa
from .program import PimsabProgram
from .sim.simulate import simulate
from .stats import program_stats
from .workloads.params import BENCH_OPTIONS

__all__ = ["PimsabTarget"]


class PimsabTarget(Target):
    """PIMSAB (bit-serial compute-in-SRAM tiles on a mesh) with the paper's workloads."""

    name = "pimsab"
    lowerings = "nnisa.targets.pimsab.compiler.network:LOWERINGS"
    description = "PIMSAB bit-serial processing-in-SRAM (128-bit ISA, cycle/energy simulator, paper workloads)"
    file_formats = FORMATS
    has_timeline = True
    demo_workloads = (("vadd", None), ("gemv", None))
    demo_model = "digits_cnn"
    bundle_quantized_io = True
    layer_utilization = "CRAMs the layer's programs distribute the work over / CRAMs on the chip, cycle-weighted"
    example = Example(".tile 0\nadd r16, i9, r0, i8, r8, i8\n", workload="vadd")
    options = (
        O("lenient", bool, False, None, "decode words with nonzero reserved bits", ("disasm", "stats", "convert")),
        O("engine", str, "fast", ENGINES, "timing engine: numba (fast) or the Python reference",
          ("sim", "bench")),
        O("log", str, None, None, "write the per-instruction timing log (CSV) here", ("sim",)),
        O("dump", str, None, None, "also output DRAM ranges ADDR:LEN[,ADDR:LEN]", ("sim",)),
        O("max_cycles", int, 2_000_000_000, None, "simulated-time limit (exit 4 when reached)", ("sim",),
          minimum=1, maximum=2**60),
        O("microops", bool, False, None, "also run compute instructions bit-serially on a bit-plane model and "
          "check them (small configurations)", ("sim",)),
        O("scale", float, 1.0, None, "workload size factor (0.5 = half, 2 = double; Fig. 20a)", ("bench",),
          minimum=0.01, maximum=16.0),
        O("bits", int, None, None, "element precision of the workload (int4..int8 sweeps, Fig. 20b)", ("bench",),
          minimum=1, maximum=32, nullable=True),
        O("check", bool, False, None, "also compute values and check them (vadd, gemv, fir)", ("bench",)),
        *BENCH_OPTIONS,
    )

    def config_presets(self) -> dict[str, str]:
        return {k: v[0] for k, v in PRESETS.items()}

    def load_config(self, config: Any):
        return load_config(config)

    def area_proxy(self, config: Any, report: dict[str, Any]) -> tuple[float, str] | None:
        """SRAM bit cells of the compute RAMs (tiles used × CRAMs × rows × columns; networks,
        controllers and register files not counted)."""
        cfg = load_config(config if config is not None else "base")
        return float(cfg.tiles_used * cfg.crams_per_tile * cfg.cram_rows * cfg.cram_cols), "CRAM bits"

    def isa_markdown(self, **options: Any) -> str:
        return build_isa().markdown()

    def assemble(self, text: str, *, file: str | None = None, config: Any = None, **options: Any) -> PimsabProgram:
        return assemble_text(text, file=file, config=config)

    def disassemble(self, program: PimsabProgram, **options: Any) -> str:
        """Assembly text; a compiled folder's programs one after the other, each under a comment
        naming its layer and role."""
        from .compiler.netbundle import PimsabNetwork
        if isinstance(program, PimsabNetwork):
            return "".join(f"; layer {L.node.name} ({L.node.op}), program {p.role}\n" + disassemble(p.compiled.program)
                           for L in program.layers for p in L.programs)
        return disassemble(program)

    def encode(self, program: PimsabProgram, **options: Any) -> bytes:
        return encode_image(program)

    def decode(self, data: bytes, *, lenient: bool = False, file: str | None = None, config: Any = None,
               **options: Any) -> PimsabProgram:
        return decode(data, lenient=lenient, file=file, config=config)

    def stats(self, program: PimsabProgram, *, config: Any = None, **options: Any) -> dict[str, Any]:
        return program_stats(program, program_config(program, config))

    def read(self, path, **options: Any):
        """A program image or assembly file, or a compiled folder (a :class:`.compiler.netbundle.PimsabNetwork`)."""
        from ...core.bundle import is_bundle_dir
        if is_bundle_dir(path):
            from .compiler.netbundle import read_network
            return read_network(path)
        return super().read(path, **options)

    def simulate(self, program: PimsabProgram, *, config: Any = None, inputs=None, **options: Any):
        """Values and/or cycles + energy (``--mode functional|timing|both``); see
        :func:`nnisa.targets.pimsab.sim.simulate.simulate`.  A compiled folder
        (:meth:`read`) runs its network on the integer inputs its manifest declares
        (:func:`nnisa.targets.pimsab.compiler.netbundle.simulate_network`)."""
        from .compiler.netbundle import PimsabNetwork, simulate_network
        if isinstance(program, PimsabNetwork):
            return simulate_network(program, inputs, **options)
        return simulate(program, config=config, inputs=inputs, **options)

    def compile(self, model: Any, *, config: Any = None, out_dir=None, **options: Any) -> CompileResult:
        """ONNX model → the frontend's quantized graph → per-layer DSL programs (spec §4.11); see
        :func:`nnisa.targets.pimsab.compiler.compile_model`."""
        return compile_model(model, config=config, out_dir=out_dir, **options)

    def simulate_batch(self, compiled: CompileResult, samples, first: int):
        """Samples through the compiled layers, the run's first one also timed."""
        from .compiler.netcompile import simulate_batch
        return simulate_batch(compiled, samples, first)

    def workloads(self) -> dict[str, str]:
        from .workloads.registry import WORKLOADS
        return {k: v.description for k, v in WORKLOADS.items()}

    def bench(self, workload: str, *, config: Any = None, scale: float = 1.0, check: bool = False,
              engine: str = "fast", **params: Any) -> Stats:
        """Generate and simulate one of the paper's workloads (timing mode; values with check);
        ``params``: the workload's parameters (``-O n=``, ``m=``, ``bits=``, ...)."""
        from .workloads.registry import run_workload
        if workload not in self.workloads():
            self._unknown_workload(workload)
        return run_workload(workload, load_config(config), scale=scale, check=check, engine=engine, **params)

    def warm_up(self) -> list[str]:
        """Compile the numba timing engine (:mod:`.sim.engine_nb`) with a small vadd replay, the
        argument types every timing run uses."""
        from .workloads.registry import run_workload
        run_workload("vadd", load_config("base"), scale=0.01)
        return ["timing engine (vadd replay at 1 % scale)"]
