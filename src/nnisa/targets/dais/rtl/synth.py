"""Synthesis with Yosys: LUT, flip-flop and carry counts of an emitted design.

Two scripts, the same for nnisa's Verilog and for any other Verilog (da4ml's, in the benchmark):

* ``xilinx`` — ``synth_xilinx -flatten -nodsp`` (7-series LUT6 + CARRY4 + FDRE; no DSPs so that
  every multiplier and adder shows up as LUTs);
* ``lut6`` — generic ``synth -flatten`` then ``abc -lut 6`` (LUT count of a generic 6-input LUT
  mapping, no carry chains).

Results are cached under the tool cache (keyed by the sources, the script and Yosys' version).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ....core.errors import OptionError
from .tools import cache_root, cached_dir, digest, run, yosys_tool

SCRIPTS = {
    "xilinx": "synth_xilinx -flatten -nodsp -top {top}",
    "lut6": "synth -flatten -top {top}; abc -lut 6; opt_clean",
}


def synthesize(sources: dict[str, str], top: str, script: str = "xilinx", *, timeout: float = 3600,
               cached_only: bool = False) -> dict | None:
    """Synthesize Verilog ``sources`` (file name → text) and count cells.

    Returns
    -------
    dict or None
        ``luts`` (LUT1–LUT6 and INV), ``ffs`` (flip-flops), ``carry`` (carry-chain cells), ``muxf``
        (MUXF7/8), ``dsp``, ``cells`` (all), the per-type histogram, the script, Yosys' version and
        ``yosys_kind`` (``native`` or ``wasm``, see :func:`.tools.yosys_tool`);
        None when ``cached_only`` and the result is not in the cache (Yosys is not run).
    """
    if script not in SCRIPTS:
        raise OptionError(f"synthesis script must be one of {tuple(SCRIPTS)}, not {script!r}")
    kind, exe = yosys_tool()
    cmd = [exe]
    version = run(cmd + ["-V"], cwd=Path.cwd(), what="yosys -V").strip()
    key = "ys-" + digest(top, script, version, *(f"{k}\0{v}" for k, v in sorted(sources.items())))

    def _build(d: Path) -> None:
        for name, text in sources.items():
            (d / name).write_text(text)
        reads = " ".join(n for n in sources if n.endswith((".v", ".sv")))
        ys = f"read_verilog -defer {reads}; {SCRIPTS[script].format(top=top)}; tee -o stat.json stat -json"
        (d / "synth.ys").write_text(ys.replace("; ", "\n") + "\n")
        run(cmd + ["-q", "-s", "synth.ys"], cwd=d, what="Yosys synthesis", timeout=timeout)
        for name in sources:
            (d / name).unlink()

    if cached_only and not (cache_root() / key / ".done").exists():
        return None
    out = cached_dir(key, _build)
    return {**parse_stat((out / "stat.json").read_text(), script=script, version=version), "yosys_kind": kind}


def parse_stat(text: str, *, script: str = "", version: str = "") -> dict:
    """Cell counts from ``stat -json`` output."""
    data = json.loads(text[text.index("{"):])
    design = data.get("design") or {}
    types = {str(k): int(v) for k, v in (design.get("num_cells_by_type") or {}).items()}
    if not types:  # older Yosys: one entry per module
        for mod in (data.get("modules") or {}).values():
            for k, v in (mod.get("num_cells_by_type") or {}).items():
                types[str(k)] = types.get(str(k), 0) + int(v)
    # INV is a LUT1 on Xilinx parts
    luts = sum(v for k, v in types.items() if re.fullmatch(r"\$?_?LUT[1-6]?_?|\$lut|INV", k))
    ffs = sum(v for k, v in types.items() if re.match(r"(FD[A-Z]*|\$_?S?DFF|\$_?DFF|\$dff|\$_?ALDFF)", k))
    return {"luts": luts, "ffs": ffs, "carry": sum(v for k, v in types.items() if k.startswith("CARRY")),
            "muxf": sum(v for k, v in types.items() if k.startswith("MUXF")),
            "dsp": sum(v for k, v in types.items() if k.startswith("DSP")),
            "cells": sum(types.values()), "cell_types": types, "script": script, "yosys": version}
