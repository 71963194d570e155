"""The RTL steps behind ``nnisa compile -O hdl=...`` (emit, report, optionally synthesize)."""

from __future__ import annotations

import time

from ..program import Program
from . import SUFFIX, emit, rtl_report


def rtl_outputs(program: Program, hdl: str, *, stem: str, latency_cutoff: float | None = None,
                top: str | None = None, synth: bool = False, synth_script: str = "xilinx") -> tuple[dict, dict]:
    """Emit ``program`` (and synthesize it if ``synth``).

    Returns
    -------
    (dict, dict)
        ``{file name: text}`` for the bundle and the ``rtl`` report section (file, module,
        pipeline depth, latency, register bits, emission time, and with ``synth`` the Yosys
        counts: ``luts``, ``ffs``, ``carry``...).
    """
    from . import module_name
    name = top or module_name(stem)
    t0 = time.perf_counter()
    text, net = emit(program, hdl, latency_cutoff=latency_cutoff, name=name)
    fname = f"{stem}{SUFFIX[hdl]}"
    rep = {"hdl": hdl, "file": fname, "module": name, **rtl_report(net),
           "emit_s": round(time.perf_counter() - t0, 3)}
    if synth:
        from .synth import synthesize
        vtext = text if hdl == "verilog" else emit(program, "verilog", name=name, net=net)[0]
        t1 = time.perf_counter()
        res = synthesize({f"{name}.v": vtext}, name, synth_script)
        rep["synth"] = {k: res[k] for k in ("luts", "ffs", "carry", "muxf", "dsp", "cells", "script", "yosys")}
        rep["synth"]["synth_s"] = round(time.perf_counter() - t1, 3)
    return {fname: text}, rep
