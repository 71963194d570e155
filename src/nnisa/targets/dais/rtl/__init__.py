"""DAIS → synthesizable RTL (Verilog / VHDL), pipelining by latency cutoff, synthesis reports.

Entry point: :func:`emit` (program → HDL text and the :class:`~.netlist.Netlist` it came from).
"""

from __future__ import annotations

import re

from ....core.errors import OptionError
from ..program import Program
from .netlist import Netlist, build_netlist, depth_stats

HDLS = ("verilog", "vhdl")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,199}")
#: Verilog and VHDL reserved words a module name must avoid (lower case; VHDL is case-insensitive)
RESERVED = frozenset("""abs access after alias all always and architecture array assert assign attribute begin
block body buffer bus case component configuration constant default defparam disconnect downto else elsif end
endcase endfunction endmodule endgenerate entity exit file for force function generate generic genvar group guarded
if impure in inertial initial inout input integer is label library linkage literal localparam loop map mod module
nand negedge new next nor not null of on open or others out output package parameter port posedge postponed
procedure process pure range real record reg register reject rem report return rol ror select severity shared
signal signed sla sll sra srl subtype task then time to transport type unaffected units until unsigned use
variable wait when while wire with xnor xor""".split())
SUFFIX = {"verilog": ".v", "vhdl": ".vhd"}


def emit(program: Program, hdl: str = "verilog", *, latency_cutoff: float | None = None,
         name: str = "dais_top", net: Netlist | None = None) -> tuple[str, Netlist]:
    """Emit ``program`` as one ``hdl`` design.

    Parameters
    ----------
    program
        A validated DAIS program.
    hdl
        ``"verilog"`` (Verilog-2005) or ``"vhdl"`` (VHDL-2008).
    latency_cutoff
        Pipeline by this many adder delays per stage (``None``: combinational).
    name
        Top module / entity name (a Verilog/VHDL identifier).
    net
        A netlist already built for ``program`` (skips the analysis).

    Returns
    -------
    (str, Netlist)
        The source text and the plan (widths, stages, ports).
    """
    if hdl not in HDLS:
        raise OptionError(f"hdl must be one of {HDLS}, not {hdl!r}")
    if not valid_name(name):
        raise OptionError(f"RTL module name {name!r} is not a Verilog/VHDL identifier")
    if net is None:
        net = build_netlist(program, latency_cutoff=latency_cutoff)
    stats = header_stats(program, net)
    if hdl == "verilog":
        from .verilog import emit_verilog
        return emit_verilog(net, stats, name), net
    from .vhdl import emit_vhdl
    return emit_vhdl(net, stats, name), net


def header_stats(program: Program, net: Netlist) -> dict:
    """The program statistics printed in the RTL header (vectorised: emission stays fast)."""
    import numpy as np
    opc = program.opcode
    add = (opc == 0) | (opc == 1)
    return {"n_in": program.n_in, "n_out": program.n_out, "n_ops": program.n_ops, "n_adders": int(add.sum()),
            "adder_bits": int(program.width()[add].sum()), "n_tables": len(program.tables),
            "format": "legacy" if program.spec_version is None else f"v{program.spec_version}",
            "critical_delay": float(max(net.arrival, default=0.0)),
            "wire_bits": int(sum(nd.w for nd in net.nodes)), "n_const": sum(nd.kind == "const" for nd in net.nodes),
            "opcodes": {int(o): int(c) for o, c in zip(*np.unique(opc, return_counts=True))}}


def valid_name(name: str) -> bool:
    """Whether ``name`` is a legal Verilog and VHDL identifier that nnisa's library does not use."""
    return bool(_IDENT.fullmatch(name)) and "__" not in name and not name.endswith("_") and \
        name.lower() not in RESERVED and not name.lower().startswith("nnisa_")


def module_name(path) -> str:
    """Top module name for an output file: its stem if that is a valid name, else ``dais_top``."""
    from pathlib import Path
    stem = Path(str(path)).name.split(".")[0]
    return stem if valid_name(stem) else "dais_top"


def rtl_report(net: Netlist) -> dict:
    """Pipeline depth, latency, register bits and port widths of an emitted design."""
    d = depth_stats(net)
    d["input_bits"] = sum(p.w for p in net.inputs)
    d["output_bits"] = sum(p.w for p in net.outputs)
    return d


__all__ = ["emit", "rtl_report", "module_name", "build_netlist", "Netlist", "HDLS", "SUFFIX"]
