"""The PIM target's face: the :class:`~nnisa.core.target.Target` interface over the parts.

Parts: ``isa`` (tables), ``program``/``config``/``stats``, ``formats/`` (JSON, NNPI, text, bundles),
``sim/`` (functional values, timing, energy, traces) and ``compiler/`` (ONNX lowering).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.bundle import is_bundle_dir
from ...core.options import OptionSpec as O
from ...frontend.prepare import QUANT_OPTIONS
from ...core.target import Target
from .formats import files
from .formats.nnpi import decode_nnpi
from .formats.text import assemble_text, disassemble
from .isa import build_isa
from .program import PimProgram
from .stats import program_stats

class PimTarget(Target):
    """The crossbar processing-in-memory ISA (X. Chen), pimsim-nn dialect included."""

    name = "pim"
    lowerings = "nnisa.targets.pim.compiler.lowerings:LOWERINGS"
    description = "Processing-in-memory crossbar ISA (pimsim-nn / PIMCOMP-NN compatible)"
    formats = {".json": "pimsim-nn JSON program", ".json.gz": "gzipped pimsim-nn JSON program",
               ".nnpi": "NNPI binary container", ".bin": "NNPI binary container",
               ".s": "PIM assembly", ".asm": "PIM assembly", ".txt": "PIM assembly"}
    demo_variants = (("throughput, 16 images", {"schedule": "throughput", "images": 16}),)
    demo_workloads = (("resnet18-pimcomp", None),)
    options = (
        O("word_bits", int, 64, (32, 64), "instruction word size of NNPI binaries", ("isa", "asm", "convert")),
        O("extended", bool, False, None, "extended encoding (wider fields; needed for > 16 array groups)",
          ("isa", "asm", "convert")),
        O("keep_nop", bool, False, None, "keep nop instructions when writing pimsim-nn JSON", ("asm", "convert")),
        O("lenient", bool, False, None, "decode NNPI words with nonzero reserved bits", ("disasm", "stats")),
        O("legacy_groups", str, None, ("by-size",), "group map for old JSON without array_group_map",
          ("disasm", "stats")),
        O("schedule", str, "batch", ("batch", "element", "throughput"),
          "batch (layer barriers), element (low-latency row pipeline) or throughput (layer pipeline across images)"),
        O("mode", str, "batch", ("batch", "element", "throughput"), "alias of schedule"),
        O("replication", str, "balance", ("balance", "none"), "replicate slow layers onto free crossbars"),
        O("fill", float, 0.9, None, "fraction of the chip's crossbars replication may use", minimum=0.0,
          maximum=1.0),
        O("mapping", str, "balanced", ("balanced", "first_fit", "locality"), "array-group to core placement"),
        O("links", bool, None, None, "core-to-core send/recv available (default: the config's core_links)",
          nullable=True),
        O("batch", int, None, None, "output windows per vector batch (default 32; element schedule 2)",
          minimum=1, maximum=1 << 20, nullable=True),
        O("bits", int, 8, None, "activation/weight bit width of the quantized model", minimum=2, maximum=16),
        O("gmem_reuse", bool, None, None, "reuse global-memory buffers (default: on for batch)", nullable=True),
        O("rounds", int, 1, None, "element schedule: window chunks per replica", minimum=1, maximum=4096),
        O("interleave", bool, True, None, "element schedule: interleave the layers' chunks"),
        O("c2c", bool, True, None, "element schedule: activations core to core (global memory for "
          "the model's input/output and spills)"),
        O("fuse_pool", bool, None, None, "fold MaxPool into the producing conv's requantization (default: "
          "with the balanced mapping)", nullable=True),
        O("fuse_add", bool, True, None, "fold a residual Add(+ReLU) into the second conv of a block"),
        O("fuse_gap", bool, True, None, "fold GlobalAveragePool into the last conv"),
        O("images", int, 1, None, "images in the stream: compiled into the program (compile/run), or the "
          "times an unmarked program is repeated (sim); latency = first image, period = time per image",
          ("compile", "run", "sim"), minimum=1, maximum=256),
        O("timing", str, "pimsim", ("pimsim", "native"), "pimsim (reproduces pimsim-nn) or native timing",
          ("sim",)),
        O("global_address_mode", str, None, ("pair", "single32"), "global addresses from a register pair "
          "or one register (default: the bundle's/config's)", ("sim",)),
        O("weights", str, None, None, "array-group weights: a .npz file, zeros or random", ("sim",)),
        O("weight_seed", int, 0, None, "seed of -O weights=random", ("sim",), minimum=0, maximum=2**32 - 1),
        O("path", str, "fast", ("fast", "reference"), "functional interpreter: numba fast path or reference",
          ("sim",)),
        O("lint", bool, True, None, "check the program (bit widths 0, unmatched messages, cores that never "
          "finish, unused array groups; functional mode: reads of never-written local memory)", ("stats", "sim")),
        O("gantt", str, None, None, "resnet18-pimcomp: draw the per-core timeline to this PNG", ("bench",)),
        *QUANT_OPTIONS,
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
        return build_isa(word_bits, extended).markdown()

    def assemble(self, text: str, *, file: str | None = None, **options: Any) -> PimProgram:
        return assemble_text(text, file=file)

    def disassemble(self, program: PimProgram, **options: Any) -> str:
        return disassemble(program)

    def encode(self, program: PimProgram, *, word_bits: int | None = None, extended: bool | None = None,
               **options: Any) -> bytes:
        """NNPI container; ``word_bits``/``extended`` override the program's mode."""
        return files.encode(program, word_bits, extended)

    def decode(self, data: bytes, *, lenient: bool = False, file: str | None = None, **options: Any) -> PimProgram:
        return decode_nnpi(data, lenient=lenient, file=file)

    def read(self, path: str | Path, *, legacy_groups: str | None = None, lenient: bool = False,
             **options: Any) -> PimProgram:
        """A program file (by extension), a PIMB folder, or a compiled bundle folder."""
        if is_bundle_dir(path):  # program + weights + gmem + manifest
            from .formats.bundle import read_bundle
            return read_bundle(path)
        return files.read_program(path, legacy_groups=legacy_groups, lenient=lenient)

    def write(self, program: PimProgram, path: str | Path, *, keep_nop: bool = False, **options: Any) -> list[str]:
        """Write by extension; returns warnings (e.g. nops dropped from JSON)."""
        return files.write_program(program, path, keep_nop=keep_nop, word_bits=options.get("word_bits"),
                                   extended=options.get("extended"))

    def stats(self, program: PimProgram, *, lint: bool = True, **options: Any) -> dict[str, Any]:
        return program_stats(program, lint=lint)

    def warm_up(self) -> list[str]:
        from .warmup import warm_up
        return warm_up()

    def simulate(self, program, *, config=None, inputs=None, **options: Any):
        """Values and/or timing+energy (``nnisa.targets.pim.sim.simulate.simulate_pim``)."""
        from .sim.simulate import simulate_pim
        return simulate_pim(program, config=config, inputs=inputs, **options)

    def compile(self, model, *, config=None, out_dir=None, **options: Any):
        """Compile an ONNX model (``nnisa.targets.pim.compiler``, ``docs/pim_compiler.md``)."""
        from .compiler.output import compile_result
        return compile_result(model, config=config, out_dir=out_dir, **options)

    def run_compiled(self, compiled, inputs, progress=None):
        """Samples through the compiled program, ``images`` samples per simulation for a stream."""
        from .compiler.run import run_stream
        return run_stream(self.simulate, compiled, inputs, progress)

    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return dict(WORKLOADS)

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> dict[str, Any]:
        """Run a built-in workload (:mod:`nnisa.targets.pim.workloads`)."""
        from .workloads import WORKLOADS, run_workload
        if workload not in WORKLOADS:
            self._unknown_workload(workload)
        return run_workload(workload, config, gantt=options.get("gantt"))
