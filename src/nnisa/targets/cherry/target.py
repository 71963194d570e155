"""``CherryTarget``: the Cherry ISA (cisa) behind nnisa's Target API (spec ``cherry.md``).

The face only binds the parts: ``isa`` (tables), ``config`` (presets, the ``-O`` settings),
``formats/files.py`` (the file table), ``sim/simulate.py``, ``compiler`` and ``workloads``.
"""

from __future__ import annotations

from typing import Any

from ...core.options import OptionSpec as O
from ...core.options import option_specs
from ...core.target import Example, ENGINES, CompileResult, Stats, Target
from . import isa
from .compiler import compile_model
from .config import PRESETS, CherryCompileOptions, CherryConfig, load_config
from .formats import files
from .formats.binary import encode_image
from .program import Program
from .sim.simulate import simulate, simulate_batch

__all__ = ["CherryTarget"]


class CherryTarget(Target):
    """Cherry: 16-bit tile instructions, loops and address formulas in a 186-byte header.

    Programs are :class:`~nnisa.targets.cherry.program.Program`; compiled models are
    :class:`~nnisa.targets.cherry.formats.bundle.CompiledModel` (a bundle folder on disk).
    """

    name = "cherry"
    lowerings = "nnisa.targets.cherry.compiler.graph:LOWERINGS"
    description = "Cherry cisa: SZxSZ tile registers, looped address formulas, superscalar queues (float)"
    demo_model = "digits_cnn"
    file_formats = files.FORMATS
    has_timeline = True
    layer_utilization = ("matmul-unit busy cycles / layer cycles (matmul copies issued per cycle of the "
                         "layer's programs); memory_bytes = device-memory tiles the layer allocates x bytes per tile")
    demo_workloads = (("fast_relu", None), ("matmul1024", "sz32"))
    example = Example(".sz 4\n.loop 0 iterations=4\n.apu 0 = i\n.apu 1 = i\n.apu 2 = i\nstart_independent_loop 0\n"
                      "    mem_read 0, 1\n    load 0, INPUT\n    relu\n    store 0, OUTPUT\n    mem_write 0, 2\n"
                      "end_loop 0\n", inputs={"dram": [[-1.5] * 16, [2.0] * 16, [0.0] * 16]}, workload="fast_relu")
    options = (
        O("encoding", str, None, ("canonical", "cherrycore"), "instruction encoding written (default: config)",
          ("asm", "convert")),
        O("engine", str, "fast", ENGINES, "batched numpy path or the per-copy reference", ("sim",)),
        *option_specs(CherryCompileOptions, first=("race_check", "host_link", "element_format")),
    )

    # ------------------------------------------------------------------ configuration
    def config_presets(self) -> dict[str, str]:
        return {k: v[0] for k, v in PRESETS.items()}

    def load_config(self, config: Any) -> CherryConfig:
        return load_config(config)

    def area_proxy(self, config: Any, report: dict[str, Any]) -> tuple[float, str] | None:
        """Tile ALU lanes: SZ x SZ elements per copy times the superscalar width."""
        cfg = load_config(config)
        return float(cfg.sz * cfg.sz * cfg.superscalar_width), "ALU lanes"

    # ------------------------------------------------------------------ ISA and text
    def isa_markdown(self, config: Any = None, **options: Any) -> str:
        return isa.cherry_isa(load_config(config).sz).markdown()

    def assemble(self, text: str, *, file: str | None = None, config: Any = None, **options: Any) -> Program:
        return files.assemble_for(text, file=file, config=config, encoding=options.get("encoding"))

    def disassemble(self, program: Any, **options: Any) -> str:
        return files.text_of(program)

    def encode(self, program: Program, **options: Any) -> bytes:
        return encode_image(program, options.get("encoding"))

    def decode(self, data: bytes, *, config: Any = None, **options: Any) -> Program:
        return files.decode(data, config=config, encoding=options.get("encoding"))

    def stats(self, program: Any, **options: Any) -> dict[str, Any]:
        return files.stats_of(program)

    # ------------------------------------------------------------------ simulation and compiler
    def simulate(self, program: Any, *, config: Any = None, inputs=None, **options: Any):
        """Run a program or a compiled model (:func:`nnisa.targets.cherry.sim.simulate.simulate`)."""
        return simulate(program, config=config, inputs=inputs, **options)

    def simulate_batch(self, compiled: CompileResult, samples, first: int):
        """All samples in batched passes of the device (the control and the cycle model do not
        depend on the data: one pass computes every sample's values and the figures per input)."""
        outs, st = simulate_batch(compiled.program, [compiled.encode_inputs(s) for s in samples],
                                  **compiled.sim_options)
        return outs, st

    def compile(self, model: Any, *, config: Any = None, out_dir=None, **options: Any) -> CompileResult:
        """ONNX → a compiled model (:func:`nnisa.targets.cherry.compiler.compile_model`)."""
        return compile_model(model, config=config, out_dir=out_dir, **options)

    # ------------------------------------------------------------------ workloads
    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return {k: v[0] for k, v in WORKLOADS.items()}

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> Stats:
        from .workloads import run_workload
        self.check_workload(workload)
        return run_workload(workload, load_config(config))
