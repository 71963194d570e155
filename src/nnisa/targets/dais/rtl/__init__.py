"""DAIS → synthesizable RTL (Verilog / VHDL), pipelining by latency cutoff, synthesis reports.

Entry point: :func:`emit` (program → HDL text and the :class:`~.netlist.Netlist` it came from).
"""

from __future__ import annotations

from ....core.errors import OptionError
from ..program import Program
from .netlist import Netlist, build_netlist, depth_stats

HDLS = ("verilog", "vhdl")
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
    if not name.isidentifier() or not name.isascii() or name.startswith("_"):
        raise OptionError(f"RTL module name {name!r} is not a Verilog/VHDL identifier")
    if net is None:
        net = build_netlist(program, latency_cutoff=latency_cutoff)
    stats = program.stats()
    if hdl == "verilog":
        from .verilog import emit_verilog
        return emit_verilog(net, stats, name), net
    from .vhdl import emit_vhdl
    return emit_vhdl(net, stats, name), net


def rtl_report(net: Netlist) -> dict:
    """Pipeline depth, latency, register bits and port widths of an emitted design."""
    d = depth_stats(net)
    d["input_bits"] = sum(p.w for p in net.inputs)
    d["output_bits"] = sum(p.w for p in net.outputs)
    return d


__all__ = ["emit", "rtl_report", "build_netlist", "Netlist", "HDLS", "SUFFIX"]
