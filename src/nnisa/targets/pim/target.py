"""The PIM target's face: the :class:`~nnisa.core.target.Target` interface over the parts.

Parts: ``isa`` (tables), ``program``/``config``/``stats``, ``formats/`` (JSON, NNPI, text, bundles),
``sim/`` (functional values, timing, energy, traces) and ``compiler/`` (ONNX lowering).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.options import OptionSpec as O
from ...core.options import option_specs
from ...core.target import Example, ENGINES, CompileResult, Stats, Target
from .compiler.options import SCHEDULES, PimCompileOptions
from .formats import files

if TYPE_CHECKING:
    from .program import PimProgram

# The parts load in the methods that use them: `nnisa sim FILE` imports the reader of FILE's
# format and the simulator, not the compiler, the assembler or the NNPI codec.

__all__ = ["PimTarget"]

_COMPILE_ORDER = ("schedule", "replication", "fill", "mapping", "links", "batch", "bits", "gmem_reuse", "rounds",
                  "interleave", "c2c", "fuse_pool", "fuse_add", "fuse_gap", "multiplex", "images")


class PimTarget(Target):
    """The crossbar processing-in-memory ISA (X. Chen), pimsim-nn dialect included."""

    name = "pim"
    lowerings = "nnisa.targets.pim.compiler.lowerings:LOWERINGS"
    description = "Processing-in-memory crossbar ISA (pimsim-nn / PIMCOMP-NN compatible)"
    file_formats = files.FORMATS
    has_timeline = True
    bundle_quantized_io = True  # the program computes on the manifest's integers
    layer_utilization = "crossbars holding the layer's weights / crossbars on the chip"
    demo_variants = (("throughput, 16 images", {"schedule": "throughput", "images": 16}),)
    demo_workloads = (("resnet18-pimcomp", None),)
    example = Example(".chip_cores 1\n.core 0\n  setbw 8, 8\n  sldi $r0, 0\n  sldi $r1, 64\n  sldi $r2, 128\n  lldi $r0, 3, 16\n"
                      "  lldi $r1, -5, 16\n  vvadd $r2, $r0, $r1, 16\n  vrelu $r1, $r2, 16\n", workload="functional")
    options = (
        O("word_bits", int, 64, (32, 64), "instruction word size of NNPI binaries", ("isa", "asm", "convert")),
        O("extended", bool, False, None, "extended encoding (wider fields; needed for > 16 array groups)",
          ("isa", "asm", "convert")),
        O("keep_nop", bool, False, None, "keep nop instructions when writing pimsim-nn JSON", ("asm", "convert")),
        O("lenient", bool, False, None, "decode NNPI words with nonzero reserved bits", ("disasm", "stats")),
        O("legacy_groups", str, None, ("by-size",), "group map for old JSON without array_group_map",
          ("disasm", "stats")),
        *option_specs(PimCompileOptions, first=_COMPILE_ORDER),
        O("mode", str, "batch", SCHEDULES, "alias of schedule", alias_of="schedule"),
        O("timing", str, "pimsim", ("pimsim", "native"), "pimsim (reproduces pimsim-nn) or native timing",
          ("sim",)),
        O("global_address_mode", str, None, ("pair", "single32"), "global addresses from a register pair "
          "or one register (default: the bundle's/config's)", ("sim",)),
        O("weights", str, None, None, "array-group weights: a .npz file, zeros or random", ("sim",)),
        O("weight_seed", int, 0, None, "seed of -O weights=random", ("sim",), minimum=0, maximum=2**32 - 1),
        O("engine", str, "fast", ENGINES, "functional interpreter: numba fast path or reference", ("sim",)),
        O("path", str, "fast", ENGINES, "old name of engine", ("sim",), alias_of="engine", deprecated=True),
        O("lint", bool, True, None, "check the program (bit widths 0, unmatched messages, cores that never "
          "finish, unused array groups; functional mode: reads of never-written local memory)", ("stats", "sim")),
        O("gantt", str, None, None, "resnet18-pimcomp: draw the per-core timeline to this PNG", ("bench",)),
    )

    def load_config(self, config: Any) -> Any:
        """``None`` → the compiler's default chip (conformance hardware, 64 cores); a pimsim-nn JSON
        file, a dict (a :meth:`configure` dump round-trips: ``source`` and ``explicit_gmem_size`` kept) or
        a :class:`~nnisa.targets.pim.config.PimConfig`."""
        from .compiler.driver import resolve_compile_config
        return resolve_compile_config(config)

    def area_proxy(self, config: Any, report: dict[str, Any]) -> tuple[float, str] | None:
        """Crossbar cells of the chip: cores x crossbars per core x rows x columns."""
        cfg = self.load_config(config)
        mc = cfg.chip_config.core_config.matrix_config
        rows, cols = (int(v) for v in mc.xbar_size)
        return float(cfg.chip_config.core_cnt * mc.xbar_array_count * rows * cols), "crossbar cells"

    def isa_markdown(self, word_bits: int = 64, extended: bool = False, **options: Any) -> str:
        from .isa import build_isa
        return build_isa(word_bits, extended).markdown()

    def assemble(self, text: str, *, file: str | None = None, **options: Any) -> PimProgram:
        from .formats.text import assemble_text
        return assemble_text(text, file=file)

    def disassemble(self, program: Any, **options: Any) -> str:
        """Canonical text of a program (of a bundle: its program)."""
        from .formats.text import disassemble
        return disassemble(files.program_of(program))

    def encode(self, program: PimProgram, *, word_bits: int | None = None, extended: bool | None = None,
               **options: Any) -> bytes:
        """NNPI container; ``word_bits``/``extended`` override the program's mode."""
        return files.encode(program, word_bits, extended)

    def decode(self, data: bytes, *, lenient: bool = False, file: str | None = None, **options: Any) -> PimProgram:
        from .formats.nnpi import decode_nnpi
        return decode_nnpi(data, lenient=lenient, file=file)

    def stats(self, program: PimProgram, *, lint: bool = True, **options: Any) -> dict[str, Any]:
        from .stats import program_stats
        return program_stats(files.program_of(program), lint=lint)

    def warm_up(self) -> list[str]:
        from .warmup import warm_up
        return warm_up()

    def simulate(self, program, *, config=None, inputs=None, **options: Any):
        """Values and/or timing+energy (:func:`nnisa.targets.pim.sim.simulate.simulate`)."""
        from .sim.simulate import simulate
        return simulate(program, config=config, inputs=inputs, **options)

    def compile(self, model, *, config=None, out_dir=None, **options: Any) -> CompileResult:
        """Compile an ONNX model (:func:`nnisa.targets.pim.compiler.compile_model`, ``docs/pim_compiler.md``)."""
        from .compiler import compile_model
        return compile_model(model, config=config, out_dir=out_dir, **options)

    def simulate_batch(self, compiled: CompileResult, samples, first: int):
        """A compiled stream's samples in one simulation, one per image slot (a phased program:
        one sample after the other, :mod:`~nnisa.targets.pim.compiler.phased_result`)."""
        if compiled.sim_options.get("phased"):
            from .compiler.phased_result import simulate_phased
            return simulate_phased(self.simulate, compiled, samples, first)
        from .compiler.run import simulate_stream
        return simulate_stream(self.simulate, compiled, samples, first)

    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return dict(WORKLOADS)

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> Stats:
        """Run a built-in workload (:mod:`nnisa.targets.pim.workloads`)."""
        from .workloads import run_workload
        self.check_workload(workload)
        return run_workload(workload, config, gantt=options.get("gantt"))
