"""Small real jobs that compile the PIM target's numba kernels into their on-disk cache.

Kernels: the JSON scanner (``formats.jsonscan``, for a read-only buffer — plain input — and for
the growing buffer of streamed gzip input), the orjson path's field mapping
(``formats.jsonslots.apply_rows``), the row renderer of JSON export and disassembly
(``formats.render``), the text scanner (``formats.textscan``) and the timing model's compiled
loops (``sim.timing_engine_fast``, ``sim.timing_plan_fast``), and the core's bulk word decoder
(``core.bulk_decode``, through an ``.nnpi`` round trip).  Each job goes through the public
reader/writer/simulator, so the argument types are those of real runs.
"""

from __future__ import annotations

import gzip

import orjson

_INSTS = [
    {"ibiw": 8, "obiw": 8, "op": "setbw"},
    {"imm": 8800, "op": "sldi", "rd": 0},
    {"offset": {"offset_select": 0, "offset_value": 0}, "op": "ld", "rd": 0, "rs1": 1, "size": 64},
    {"imm": 0.5, "len": 72, "offset": {"offset_select": 0, "offset_value": 0}, "op": "lldi", "rd": 0},
    {"group": 0, "mbiw": 8, "op": "mvmul", "rd": 0, "relu": 0, "rs1": 1},
    {"core": 1, "offset": {"offset_select": 0, "offset_value": 0}, "op": "send", "rd": 0, "size": 64},
    {"core": 0, "offset": {"offset_select": 0, "offset_value": 0}, "op": "recv", "rd": 0, "size": 64},
]


def warm_up() -> list[str]:
    """Run the jobs; returns one line per job."""
    from .formats.jsonio import dump_json, read_json
    from .formats.text import assemble_text, disassemble

    doc = orjson.dumps({"config": {"core_cnt": 2, "array_group_map": {"core0": [1], "core1": [1]}},
                        "core0": _INSTS, "core1": _INSTS[::-1]})
    prog = read_json(doc)
    read_json(gzip.compress(doc))
    read_json(doc, fast=False)
    data, _ = dump_json(prog)
    read_json(data)
    assemble_text(disassemble(prog))
    from .formats.nnpi import decode_nnpi, encode_nnpi
    decode_nnpi(encode_nnpi(prog))
    from .config import default_config
    from .sim.timing import simulate_timing
    pair = read_json(orjson.dumps({"config": {"core_cnt": 2, "array_group_map": {"core0": [1], "core1": [1]}},
                                   "core0": _INSTS[:6], "core1": [_INSTS[0], _INSTS[6], _INSTS[2]]}))
    simulate_timing(pair, default_config(2, preset="conformance"))
    return ["JSON read (plain, gzip, orjson path) and write", "text disassemble and assemble", ".nnpi round trip",
            "timing model"]
