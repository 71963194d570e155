"""``DaisTarget``: da4ml's Distributed Arithmetic Instruction Set behind nnisa's Target API."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import FormatError
from ...core.options import OptionSpec as O
from ...frontend.prepare import QUANT_OPTIONS
from ...core.target import CompileResult, SimResult, Stats, Target
from . import isa
from .formats import files
from .formats.text import assemble
from .program import Program

class DaisTarget(Target):
    """da4ml's DAIS (spec ``dais.md``).  Programs are :class:`~nnisa.targets.dais.program.Program`."""

    name = "dais"
    #: bundled model used by ``nnisa demo`` / ``nnisa run`` for this target
    demo_model = "digits_mlp"
    description = "da4ml Distributed Arithmetic Instruction Set (combinational fixed-point DA programs)"
    formats = {".bin": "DAIS binary (v1/v0/legacy, auto-detected)", ".dais": "DAIS binary",
               ".json": "da4ml CombLogic JSON (or nnisa DAIS JSON on read)", ".dais.txt": "nnisa DAIS assembly",
               ".v": "Verilog-2005 RTL (write only)", ".vhd": "VHDL-2008 RTL (write only)"}
    demo_workloads = (("cmvm-256", None),)
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
        O("method", str, "wmc", ("wmc", "mc", "dummy"), "CSE heuristic (weighted/plain most common pair)"),
        O("max_depth", int, None, None, "adder depth limit per layer", minimum=1, maximum=1 << 16, nullable=True),
        O("bits", int, 8, None, "quantization bit width", minimum=2, maximum=16),
        O("cse_budget", int, 500_000, None, "CSE work budget per layer in greedy steps (none: unlimited); "
          "deterministic", minimum=0, nullable=True),
        O("cse_block_rows", int, 32, None, "CSE row-block size (wide layers pair terms within blocks; none: "
          "whole matrix)", minimum=1, maximum=1 << 24, nullable=True),
        *QUANT_OPTIONS,
        O("hdl", str, None, ("verilog", "vhdl"), "also emit the network as RTL into the output folder",
          ("compile",), nullable=True),
        O("latency_cutoff", float, None, None, "RTL pipelining: adder delays per stage (none: combinational)",
          ("compile", "convert", "sim"), minimum=0.001, maximum=1e6, nullable=True),
        O("top", str, None, None, "RTL top module name (default: the file stem, else dais_top)",
          ("compile", "convert"), nullable=True),
        O("synth", bool, False, None, "synthesize the RTL with Yosys and report LUTs and flip-flops", ("compile",)),
        O("synth_script", str, "xilinx", ("xilinx", "lut6"), "Yosys flow: synth_xilinx or generic LUT6 mapping",
          ("compile",)),
    )

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

    def read(self, path: str | Path, **options: Any) -> Program:
        """A binary/JSON/text program (by extension) or a compiled bundle folder."""
        return files.read_program(path, **options)

    def write(self, program: Program, path: str | Path, **options: Any) -> None:
        files.write_program(program, path, **options)

    def simulate(self, program: Program, *, config=None, inputs: dict[str, np.ndarray] | None = None,
                 **options: Any) -> SimResult:
        """Run ``program`` on ``inputs["x"]`` (any name accepted if there is one input).

        Options: ``da4ml_compat`` (bool), ``engine`` (``auto``/``compiled``/``exact``), ``n_threads``,
        ``check``, ``input_range`` (``error``/``saturate``/``wrap``).
        """
        from .sim.interp import default_input_range, interpreter_for
        if isinstance(program, (str, Path)):
            program = self.read(program)
        if not inputs:
            raise FormatError("DAIS simulation needs an input array (inputs={'x': array})")
        x = inputs["x"] if "x" in inputs else next(iter(inputs.values()))
        input_range = options.get("input_range") or default_input_range(bool(options.get("da4ml_compat")))
        if options.get("engine") == "rtl":
            from .sim.rtl_engine import simulate_rtl
            y, extra = simulate_rtl(program, x, latency_cutoff=options.get("latency_cutoff"),
                                    da4ml_compat=bool(options.get("da4ml_compat")),
                                    input_range=input_range)
            return SimResult(outputs={"y": y}, stats=Stats(instructions=int(program.n_ops), wall_s=extra["wall_s"],
                                                           extra=extra))
        semantics = "da4ml-compat" if options.get("da4ml_compat") else options.get("semantics", "default")
        t0 = time.perf_counter()
        interp = interpreter_for(program, semantics, options.get("engine", "auto"))  # lowered once per program
        y = interp.run(x, n_threads=options.get("n_threads", 1), check=options.get("check", False),
                       input_range=input_range)
        wall = time.perf_counter() - t0
        extra = {k: program.stat(k) for k in ("n_ops", "n_adders", "adder_bits", "depth", "adder_depth")}
        extra["samples"] = int(y.shape[0])
        extra["executed_ops"] = int(program.n_ops * y.shape[0])
        extra["semantics"] = semantics
        # ``instructions`` is the program length, as for every target (executed_ops counts the batch)
        return SimResult(outputs={"y": y}, stats=Stats(instructions=int(program.n_ops), wall_s=wall, extra=extra))

    def warm_up(self) -> list[str]:
        from .warmup import warm_up
        return warm_up()

    def run_compiled(self, compiled: CompileResult, inputs: dict[str, np.ndarray], progress=None):
        """Batched run of a compiled network: quantize all samples, one interpreter call, compare the
        integers with ``evaluate_quantized`` (``bit_exact``) and dequantize."""
        from ...frontend import evaluate_quantized
        qg = getattr(compiled, "qgraph", None)
        if qg is None:
            return super().run_compiled(compiled, inputs, progress)
        t_in, t_out = qg.inputs[0], qg.outputs[0]
        x = np.asarray(inputs[t_in.name] if t_in.name in inputs else next(iter(inputs.values())))
        qx = qg.quantize_input(t_in.name, x).reshape(len(x), -1)
        res = self.simulate(compiled.program, inputs={"x": qx})
        y = np.asarray(res.outputs["y"])
        ref = evaluate_quantized(qg, {t_in.name: x})[t_out.name].reshape(y.shape)
        if progress is not None:
            progress(len(x), len(x))
        tail = getattr(compiled, "float_tail", None)
        q = y.reshape((len(x),) + tuple(t_out.shape[1:]))
        outs = ({k: np.asarray(v, np.float32) for k, v in tail({t_out.name: q}).items()} if tail is not None
                else {t_out.name: (q * t_out.scale).astype(np.float32)})
        return outs, res.stats, {"bit_exact": bool(np.array_equal(y, ref))}

    def stats(self, program: Program, **options: Any) -> dict[str, Any]:
        return program.stats()

    def compile(self, model: str | Path, *, config=None, out_dir: str | Path | None = None,
                **options: Any) -> CompileResult:
        from .compiler.netcompile import compile_model
        hdl = options.pop("hdl", None)
        rtl_opts = {k: options.pop(k) for k in ("latency_cutoff", "top", "synth", "synth_script") if k in options}
        extra = None
        if hdl:
            from .rtl.flow import rtl_outputs

            def extra(prog, stem):
                files, rep = rtl_outputs(prog, hdl, stem=stem, **rtl_opts)
                return files, {"rtl": rep}
        return compile_model(model, out_dir=out_dir, extra_outputs=extra, **options)

    def workloads(self) -> dict[str, str]:
        from .workloads import WORKLOADS
        return dict(WORKLOADS)

    def bench(self, workload: str, *, config: Any = None, **options: Any) -> dict[str, Any]:
        """Run a built-in workload (:mod:`nnisa.targets.dais.workloads`)."""
        from .workloads import WORKLOADS, run_workload
        if workload not in WORKLOADS:
            self._unknown_workload(workload)
        return run_workload(workload, config)
