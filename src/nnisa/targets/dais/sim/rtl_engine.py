"""The ``rtl`` engine: run a DAIS program as its emitted Verilog, compiled by Verilator.

:class:`RtlEngine` emits the design, builds it once with a generated C++ testbench (cached by a
hash of the Verilog, the testbench and the Verilator version) and runs batches: the host turns
float inputs into the input ports' fixed-point integers, the testbench drives one sample per
evaluation (one per clock in a pipelined design, outputs collected ``latency`` cycles later)
and the host turns the output ports back into floats with the interpreter's own formula
(spec §5.4).  So the outputs are comparable bit for bit with :class:`~.interp.Interpreter`.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from ....core.errors import UnsupportedError
from ....core.fileio import private_temp_folder
from ....core.fixedpoint import pow2
from ..program import Program
from ..rtl import emit
from ..rtl.netlist import Netlist
from ..rtl.tools import cached_dir, check_cxx, digest, run, verilator
from .interp import check_finite, fit_inputs, prepare_inputs

TOP = "dais_top"
#: Verilator runtime sources linked into every model
RUNTIME = ("verilated", "verilated_threads")
CXXFLAGS = ("-std=c++17", "-DVM_COVERAGE=0", "-DVM_SC=0", "-DVM_TIMING=0", "-DVM_TRACE=0", "-DVM_TRACE_FST=0",
            "-DVM_TRACE_VCD=0", "-DVM_TRACE_SAIF=0", "-Wno-attributes")


def _ctype_mask(w: int) -> str:
    return f"0x{(1 << w) - 1:x}ULL"


def testbench(net: Netlist, name: str = TOP) -> str:
    """C++ driver: ``vsim IN OUT N`` reads ``N × n_inputs`` uint64 port values, writes
    ``N × n_outputs`` uint64 port values (raw bit patterns)."""
    ni, no = len(net.inputs), len(net.outputs)
    d = net.latency_cycles
    sets = "\n".join(f"    top->{p.name} = x[{j}] & {_ctype_mask(p.w)};" for j, p in enumerate(net.inputs))
    gets = "\n".join(f"    y[{j}] = (uint64_t)top->{p.name};" for j, p in enumerate(net.outputs))
    if d == 0:
        loop = f"""  for (long t = 0; t < n; ++t) {{
    const uint64_t* x = &X[t * {max(ni, 1)}];
{sets}
    top->eval();
    uint64_t* y = &Y[t * {max(no, 1)}];
{gets}
  }}"""
    else:
        loop = f"""  for (long t = 0; t < n + {d}; ++t) {{
    const uint64_t* x = &X[(t < n ? t : n - 1) * {max(ni, 1)}];
{sets}
    top->clk = 0;
    top->eval();
    if (t >= {d}) {{
      uint64_t* y = &Y[(t - {d}) * {max(no, 1)}];
{gets}
    }}
    top->clk = 1;
    top->eval();
  }}"""
    return f"""// nnisa co-simulation driver for {name} (generated)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "verilated.h"
#include "V{name}.h"

int main(int argc, char** argv) {{
  if (argc != 4) {{ std::fprintf(stderr, "usage: vsim IN OUT N\\n"); return 2; }}
  long n = std::atol(argv[3]);
  std::vector<uint64_t> X((size_t)n * {max(ni, 1)} + 1), Y((size_t)n * {max(no, 1)} + 1);
  FILE* fi = std::fopen(argv[1], "rb");
  if (!fi || std::fread(X.data(), 8, (size_t)n * {ni}, fi) != (size_t)n * {ni}) return 3;
  std::fclose(fi);
  VerilatedContext* ctx = new VerilatedContext;
  V{name}* top = new V{name}{{ctx}};
{loop}
  top->final();
  FILE* fo = std::fopen(argv[2], "wb");
  if (!fo || std::fwrite(Y.data(), 8, (size_t)n * {no}, fo) != (size_t)n * {no}) return 4;
  std::fclose(fo);
  delete top;
  delete ctx;
  return 0;
}}
"""


def encode_ports(p: Program, net: Netlist, X: np.ndarray) -> np.ndarray:
    """Float inputs ``[n, n_in]`` → uint64 input-port patterns ``floor(x·2^(s+f)) mod 2^w``."""
    n = X.shape[0]
    P = np.zeros((n, len(net.inputs)), np.uint64)
    for j, port in enumerate(net.inputs):
        z = np.floor(X[:, j] * pow2(int(p.inp_shifts[j]) + port.f))
        mask = (1 << port.w) - 1
        if np.all(np.abs(z) < 2.0 ** 63):
            P[:, j] = z.astype(np.int64).view(np.uint64) & np.uint64(mask)
        else:  # exact path for huge values (they wrap like the interpreter's exact wrap)
            P[:, j] = np.array([int(v) & mask for v in z], np.uint64)
    return P


def decode_ports(net: Netlist, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """uint64 output patterns → (int64 port values, float64 outputs as the interpreter forms them)."""
    n = Y.shape[0]
    ints = np.zeros((n, len(net.outputs)), np.int64)
    out = np.zeros((n, len(net.outputs)))
    for j, port in enumerate(net.outputs):
        v = Y[:, j].astype(np.uint64) & np.uint64((1 << port.w) - 1 if port.w < 64 else (1 << 64) - 1)
        v = v.view(np.int64) if port.w == 64 else v.astype(np.int64)
        if port.signed and port.w < 64:  # sign-extend: shift the top bit to bit 63 and back
            sh = np.int64(64 - port.w)
            v = (v << sh) >> sh
        ints[:, j] = v
        if port.src >= 0:
            out[:, j] = v.astype(np.float64) * pow2(port.scale_exp)
    return ints, out


class RtlEngine:
    """A program compiled to a Verilator model.

    Parameters
    ----------
    program
        The DAIS program.
    latency_cutoff
        Pipeline the design (``None``: combinational).
    """

    def __init__(self, program: Program, latency_cutoff: float | None = None):
        self.program = program
        t0 = time.perf_counter()
        self.verilog, self.net = emit(program, "verilog", latency_cutoff=latency_cutoff, name=TOP)
        self.emit_s = time.perf_counter() - t0
        wide = [q.name for q in self.net.inputs + self.net.outputs if q.w > 64]
        if wide:
            raise UnsupportedError(f"the RTL engine drives ports of at most 64 bits; {wide[0]} is wider")
        self.tb = testbench(self.net)
        self.build_s = 0.0
        self.cached = True
        self._exe: Path | None = None

    def build(self) -> Path:
        """Compile (or reuse) the Verilator model; returns the executable.

        Verilator translates the design to C++; the generated files and the testbench are
        compiled as one translation unit (one parse of Verilator's headers) and linked with
        Verilator's runtime, itself compiled once per Verilator and compiler version.
        """
        if self._exe is not None:
            return self._exe
        cmd, env = verilator()
        cxx = check_cxx()
        version = run(cmd + ["--version"], cwd=Path.cwd(), env=env, what="verilator --version").strip()
        cxx_version = run([cxx, "--version"], cwd=Path.cwd(), what=f"{cxx} --version").splitlines()[0]
        inc = Path(env.get("VERILATOR_ROOT", "")) / "include"
        if not inc.is_dir():  # a Verilator from PATH: ask it where its kit is
            inc = Path(run(cmd + ["--getenv", "VERILATOR_ROOT"], cwd=Path.cwd(), env=env,
                           what="verilator --getenv").strip()) / "include"
        flags = [*CXXFLAGS, f"-I{inc}", f"-I{inc / 'vltstd'}"]
        t0 = time.perf_counter()

        def _runtime(d: Path) -> None:
            for src in RUNTIME:
                run([cxx, *flags, "-O2", "-c", str(inc / f"{src}.cpp"), "-o", f"{src}.o"], cwd=d,
                    what=f"compiling Verilator's {src}.cpp")

        rt = cached_dir("vlrt-" + digest(version, cxx_version, *flags), _runtime)

        def _build(d: Path) -> None:
            self.cached = False
            (d / f"{TOP}.v").write_text(self.verilog)
            (d / "tb.cpp").write_text(self.tb)
            run(cmd + ["--cc", "--exe", "--top-module", TOP, "-Wno-fatal", "-Wno-lint", "-Wno-style",
                       "--x-assign", "fast", "--x-initial", "fast", "-O3", "--output-split-cfuncs", "200",
                       "-Mdir", "obj", f"{TOP}.v", "tb.cpp"],
                cwd=d, env=env, what="Verilator")
            units = sorted((d / "obj").glob("*.cpp")) + [d / "tb.cpp"]
            (d / "unity.cpp").write_text("".join(f'#include "{u}"\n' for u in units))
            run([cxx, *flags, f"-I{d / 'obj'}", "-O1", "-c", "unity.cpp", "-o", "unity.o"], cwd=d,
                what="compiling the Verilated model")
            run([cxx, "unity.o", *(str(rt / f"{src}.o") for src in RUNTIME), "-o", "vsim", "-pthread"], cwd=d,
                what="linking the Verilated model")
            shutil.rmtree(d / "obj", ignore_errors=True)
            (d / "unity.o").unlink()

        key = "vl-" + digest(self.verilog, self.tb, version, cxx_version, *flags)
        out = cached_dir(key, _build)
        self.build_s = time.perf_counter() - t0
        self._exe = out / "vsim"
        return self._exe

    def run_ports(self, P: np.ndarray) -> np.ndarray:
        """Drive raw input-port patterns ``[n, n_inputs]`` (uint64); returns output patterns."""
        exe = self.build()
        n = P.shape[0]
        with private_temp_folder("nnisa-rtl") as td:
            fi, fo = Path(td) / "in.bin", Path(td) / "out.bin"
            np.ascontiguousarray(P, np.uint64).tofile(fi)
            run([str(exe), str(fi), str(fo), str(n)], cwd=Path(td), what="RTL simulation")
            Y = np.fromfile(fo, np.uint64)
        return Y.reshape(n, len(self.net.outputs))

    def run(self, x, n_samples: int | None = None, input_range: str = "wrap") -> np.ndarray:
        """Float inputs → float64 outputs ``[n, n_out]`` (the interpreter's conventions)."""
        p = self.program
        X = prepare_inputs(p, x, n_samples)
        check_finite(p, X)
        X = fit_inputs(p, X, input_range)
        if X.shape[0] == 0:
            return np.zeros((0, p.n_out))
        X = np.where(np.isfinite(X), X, 0.0)  # live inputs are checked above; dead ones are ignored
        return decode_ports(self.net, self.run_ports(encode_ports(p, self.net, X)))[1]


def vhdl_testbench(net: Netlist, n: int, name: str = TOP) -> str:
    """VHDL-2008 driver for GHDL: reads ``in.txt`` (one sample a line, ports as bit strings),
    writes ``out.txt`` the same way; a pipelined design is clocked and read ``latency`` later."""
    d = net.latency_cycles
    sig = [f"  signal {q.name} : std_logic_vector({q.w - 1} downto 0);" for q in net.inputs + net.outputs]
    var = [f"    variable x{j} : std_logic_vector({q.w - 1} downto 0);" for j, q in enumerate(net.inputs)]
    conn = (["clk => clk"] if d else []) + [f"{q.name} => {q.name}" for q in net.inputs + net.outputs]
    rd = "\n".join(f"        read(li, x{j}); {q.name} <= x{j};" for j, q in enumerate(net.inputs))
    wr = "\n".join(f"        write(lo, {q.name}); write(lo, ' ');" for q in net.outputs)
    return f"""library ieee;
use ieee.std_logic_1164.all;
use std.textio.all;
entity tb is
end entity;
architecture sim of tb is
  signal clk : std_logic := '0';
{chr(10).join(sig)}
begin
  dut : entity work.{name} port map ({", ".join(conn)});
  process
    file fi : text open read_mode is "in.txt";
    file fo : text open write_mode is "out.txt";
    variable li, lo : line;
{chr(10).join(var)}
  begin
    for t in 0 to {n + d - 1} loop
      if t < {n} then
        readline(fi, li);
{rd}
      end if;
      clk <= '0';
      wait for 1 ns;
      if t >= {d} then
{wr}
        writeline(fo, lo);
      end if;
      clk <= '1';
      wait for 1 ns;
    end loop;
    wait;
  end process;
end architecture;
"""


def run_vhdl(program: Program, x, *, latency_cutoff: float | None = None) -> np.ndarray:
    """Co-simulate the VHDL of ``program`` with GHDL (float outputs as the interpreter forms them).

    GHDL is not on PyPI (Debian: ``apt-get install ghdl``); a missing GHDL is
    :class:`~..rtl.tools.HdlToolMissing`.
    """
    from ..rtl.tools import ghdl
    exe = ghdl()
    X = prepare_inputs(program, x)
    check_finite(program, X)
    X = np.where(np.isfinite(X), X, 0.0)
    src, net = emit(program, "vhdl", latency_cutoff=latency_cutoff, name=TOP)
    P = encode_ports(program, net, X)
    n = len(X)
    with private_temp_folder("nnisa-ghdl") as td:
        d = Path(td)
        (d / "design.vhd").write_text(src)
        (d / "tb.vhd").write_text(vhdl_testbench(net, n))
        (d / "in.txt").write_text("".join(
            " ".join(format(int(v), f"0{q.w}b") for v, q in zip(row, net.inputs)) + "\n" for row in P))
        run(exe + ["-a", "--std=08", "design.vhd", "tb.vhd"], cwd=d, what="GHDL analysis")
        run(exe + ["--elab-run", "--std=08", "tb", "--ieee-asserts=disable"], cwd=d, what="GHDL simulation")
        rows = (d / "out.txt").read_text().split("\n")[:n]
    Y = np.array([[int(b, 2) for b in r.split()] for r in rows], dtype=object).reshape(n, len(net.outputs))
    return decode_ports(net, Y.astype(np.uint64))[1]


def simulate_rtl(program: Program, x, *, latency_cutoff: float | None = None,
                 da4ml_compat: bool = False, input_range: str = "wrap") -> tuple[np.ndarray, dict]:
    """``engine=rtl``: outputs of the Verilated design and a report next to the interpreter's.

    The report has ``samples_per_s`` of the RTL model (the batch run, build excluded),
    ``interp_samples_per_s`` of the compiled interpreter on the same batch, ``bit_exact`` (the
    two agree byte for byte), the pipeline depth, the build time and whether the build was cached.
    """
    from .interp import Interpreter
    if da4ml_compat:
        raise UnsupportedError("the RTL engine implements nnisa's default semantics, not da4ml_compat")
    t0 = time.perf_counter()
    eng = RtlEngine(program, latency_cutoff=latency_cutoff)
    eng.build()
    t1 = time.perf_counter()
    y = eng.run(x, input_range=input_range)
    t_rtl = time.perf_counter() - t1
    interp = Interpreter(program)
    t2 = time.perf_counter()
    ref = interp.run(x, input_range=input_range)
    t_int = time.perf_counter() - t2
    n = int(y.shape[0])
    st = program.stats()
    extra = {k: st[k] for k in ("n_ops", "n_adders", "adder_bits", "depth", "adder_depth")}
    extra.update({"engine": "rtl", "timing_model": "RTL (Verilator, cycle-accurate registers)", "samples": n,
                  "pipeline_depth": eng.net.n_stages, "latency_cycles": eng.net.latency_cycles,
                  "latency_cutoff": latency_cutoff, "register_bits": eng.net.n_registers(),
                  "emit_s": round(eng.emit_s, 4), "build_s": round(eng.build_s, 3), "build_cached": eng.cached,
                  "samples_per_s": round(n / t_rtl, 1) if t_rtl > 0 else None,
                  "interp_samples_per_s": round(n / t_int, 1) if t_int > 0 else None,
                  "bit_exact": bool(y.tobytes() == ref.tobytes()),
                  "wall_s": time.perf_counter() - t0})
    return y, extra
