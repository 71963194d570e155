"""``CherryTarget``: the Cherry ISA (cisa) behind nnisa's Target API (spec ``cherry.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...core.bundle import is_bundle_dir
from ...core.options import OptionSpec as O
from ...core.target import CompileResult, SimResult, Target
from . import isa
from .config import PRESETS, CherryConfig, load_config
from .formats import files
from .formats.binary import decode_image, encode_image
from .formats.text import assemble, disassemble
from .program import Program, program_stats


class CherryTarget(Target):
    """Cherry: 16-bit tile instructions, loops and address formulas in a 186-byte header.

    Programs are :class:`~nnisa.targets.cherry.program.Program`; compiled models are
    :class:`~nnisa.targets.cherry.compiler.bundle.CompiledModel` (a bundle folder on disk).
    """

    name = "cherry"
    description = "Cherry cisa: SZxSZ tile registers, looped address formulas, superscalar queues (float)"
    demo_model = "digits_cnn"
    formats = dict(files.FORMATS)
    demo_workloads = (("fast_relu", None), ("matmul1024", "sz32"))
    options = (
        O("encoding", str, None, ("canonical", "cherrycore"), "instruction encoding written (default: config)",
          ("asm", "convert")),
        O("engine", str, "fast", ("fast", "reference"), "batched numpy path or the per-copy reference", ("sim",)),
        O("race_check", bool, False, None, "re-run independent loops iteration-major and compare", ("sim",)),
        O("host_link", bool, False, None, "model the host link for mem_read/mem_write (§4.5)", ("sim", "run")),
        O("element_format", str, None, ("cherry18", "fp32"), "element format (default: config)",
          ("sim", "compile", "run")),
        O("max_cycles", int, None, None, "simulated-time limit (exit 4 when reached; default: config, 10^7)",
          ("sim", "run"), minimum=1, maximum=1 << 62, nullable=True),
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

    def _cfg(self, config: Any, options: dict[str, Any]) -> CherryConfig:
        cfg = load_config(config)
        changes = {k: options[k] for k in ("race_check", "host_link", "element_format", "max_cycles")
                   if options.get(k) is not None}
        return cfg.with_(**changes) if changes else cfg

    # ------------------------------------------------------------------ ISA and text
    def isa_markdown(self, config: Any = None, **options: Any) -> str:
        cfg = load_config(config)
        return isa.cherry_isa(cfg.sz).markdown()

    def assemble(self, text: str, *, file: str | None = None, config: Any = None, **options: Any) -> Program:
        cfg = load_config(config) if config is not None else None
        enc = options.get("encoding") or (cfg.encoding if cfg is not None and cfg.encoding != "canonical" else None)
        return assemble(text, file=file, sz=cfg.sz if cfg is not None else None, encoding=enc)

    def disassemble(self, program: Program, **options: Any) -> str:
        return disassemble(program)

    def encode(self, program: Program, **options: Any) -> bytes:
        return encode_image(program, options.get("encoding"))

    def decode(self, data: bytes, *, config: Any = None, **options: Any) -> Program:
        cfg = load_config(config)
        return decode_image(data, cfg.sz, options.get("encoding") or cfg.encoding)

    # ------------------------------------------------------------------ files
    def read(self, path: str | Path, *, config: Any = None, **options: Any):
        """A program file (by extension) or a compiled bundle folder."""
        if is_bundle_dir(path):
            from .compiler.bundle import read_bundle
            return read_bundle(path)
        cfg = load_config(config)
        return files.read_program(path, sz=cfg.sz, encoding=options.get("encoding") or cfg.encoding,
                                  sz_given=config is not None)

    def write(self, program: Program, path: str | Path, **options: Any) -> None:
        files.write_program(program, path, encoding=options.get("encoding"))

    def stats(self, program: Program, **options: Any) -> dict[str, Any]:
        if not isinstance(program, Program):
            return program.stats()
        return program_stats(program)

    # ------------------------------------------------------------------ simulation
    def simulate(self, program: Any, *, config: Any = None, inputs: dict[str, np.ndarray] | None = None,
                 **options: Any) -> SimResult:
        """Run a program (device memory from ``inputs``: ``dram``/``dram_<tile>``/``cache``...) or a
        compiled model (inputs by tensor name).  ``mode``: both (default), functional or timing."""
        from .sim.run import simulate_program
        if isinstance(program, (str, Path)):
            program = self.read(program, config=config)
        mode = options.get("mode") or "both"
        engine = options.get("engine", "fast")
        if not isinstance(program, (Program, list)):
            from .compiler.runtime import simulate_compiled
            cfg = self._cfg(program.config if config is None else config, options)
            outs, st, details = simulate_compiled(program, cfg, inputs, mode=mode, engine=engine,
                                                  trace=options.get("trace"), gantt=options.get("gantt"))
            return SimResult(outs, st, details)
        cfg = self._cfg(config if config is not None else {"sz": (program[0] if isinstance(program, list)
                                                                   else program).sz}, options)
        progs = program if isinstance(program, list) else [program]
        outs, st, machine = simulate_program(progs, cfg, inputs, mode=mode, engine=engine,
                                             trace=options.get("trace"), gantt=options.get("gantt"))
        return SimResult(outs, st, machine)

    # ------------------------------------------------------------------ compiler
    def compile(self, model: str | Path, *, config: Any = None, out_dir: str | Path | None = None,
                **options: Any) -> CompileResult:
        from .compiler.graph import compile_model
        cfg = self._cfg(config, options)
        return compile_model(model, cfg, out_dir=out_dir)

    def run_compiled(self, compiled: CompileResult, inputs: dict[str, np.ndarray], progress: Any = None):
        from .compiler.runtime import run_batch
        return run_batch(compiled, inputs, progress)

    # ------------------------------------------------------------------ workloads
    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return {k: v[0] for k, v in WORKLOADS.items()}

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> dict[str, Any]:
        from .workloads import WORKLOADS, run_workload
        if workload not in WORKLOADS:
            self._unknown_workload(workload)
        return run_workload(workload, self._cfg(config, options))
