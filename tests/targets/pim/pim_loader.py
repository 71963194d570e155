"""Test/benchmark helper: load a pimsim-nn JSON program into a PimProgram.

Uses ``nnisa.targets.pim.formats.jsonio.read_json`` when it exists; otherwise a tiny orjson-based
fallback (test-only, field mapping per spec §6.2).  Also builds programs from short
assembly-like tuples for micro-program tests.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import orjson

from nnisa.targets.pim.isa import OPCODE
from nnisa.targets.pim.program import DTYPE, PimProgram


def _fallback_read(path) -> PimProgram:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = orjson.loads(raw)
    del raw
    cfg = data.pop("config", {})
    agm = {int(k[4:]): list(v) for k, v in cfg.get("array_group_map", {}).items()}
    cores = {}
    for key in sorted(k for k in data if k.startswith("core")):
        insts = data.pop(key)
        n = len(insts)
        cols = {name: np.zeros(n, dtype=DTYPE[name]) for name in DTYPE.names}
        op = cols["op"]
        for i, d in enumerate(insts):
            o = OPCODE[d["op"]]
            op[i] = o
            g = d.get
            if o == 1:  # sldi
                cols["rd"][i] = g("rd", 0)
                cols["imm"][i] = int(g("imm", 0))
                continue
            ofs = g("offset")
            if ofs:
                cols["ofs_sel"][i] = ofs.get("offset_select", 0)
                cols["ofs_val"][i] = ofs.get("offset_value", 0)
            if o == 28:  # send: source register in JSON rd
                cols["rs1"][i] = g("rd", 0)
            else:
                cols["rd"][i] = g("rd", 0)
                cols["rs1"][i] = g("rs1", 0)
            cols["rs2"][i] = g("rs2", 0)
            if o in (26, 27):
                cols["len"][i] = g("len", g("size", 0))
                cols["imm"][i] = int(g("imm", 0))
            elif o in (24, 25, 28, 29):
                cols["len"][i] = g("size", 0)
            else:
                cols["len"][i] = g("len", 0)
            if o == 8:
                cols["ibiw"][i] = g("ibiw", 0)
                cols["obiw"][i] = g("obiw", 0)
            elif o == 9:
                cols["mbiw"][i] = g("mbiw", 0)
                cols["relu"][i] = g("relu", 0)
                cols["group"][i] = g("group", 0)
            elif o in (28, 29, 31):
                cols["core"][i] = g("core", 0)
            if o in (30, 31):
                cols["ev"][i] = g("event_register", 0)
                cols["val"][i] = g("wait_value", 0)
            elif o == 2:
                cols["ofs_val"][i] = g("offset_value", 0)
        rows = np.zeros(n, dtype=DTYPE)
        for name, col in cols.items():
            rows[name] = col
        cores[int(key[4:])] = rows
    return PimProgram(cores=cores, array_group_map=agm, chip_cores=cfg.get("core_cnt"), extended=True)


def read_program(path) -> PimProgram:
    """Read a pimsim-nn JSON program (``jsonio.read_json`` if available)."""
    try:
        from nnisa.targets.pim.formats.jsonio import read_json
    except ImportError:
        return _fallback_read(path)
    return read_json(path)


def make_program(cores: dict[int, list[tuple]], agm: dict[int, list[int]] | None = None,
                 chip_cores: int | None = None) -> PimProgram:
    """Build a program from ``{core: [(mnemonic, {field: value}), ...]}`` or bare mnemonics."""
    out = {}
    for c, insts in cores.items():
        rows = np.zeros(len(insts), dtype=DTYPE)
        for i, item in enumerate(insts):
            mnem, fields = (item, {}) if isinstance(item, str) else item
            rows[i]["op"] = OPCODE[mnem]
            for k, v in fields.items():
                rows[i][k] = v
        out[c] = rows
    if agm is None:
        agm = {c: [1] * 64 for c in cores}
    return PimProgram(cores=out, array_group_map=agm, chip_cores=chip_cores)
