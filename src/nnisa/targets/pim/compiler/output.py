"""Compiler outputs: the bundle files, memory map and mapping report, and the
:class:`~nnisa.core.target.CompileResult` glue used by ``PimTarget.compile``.

Files written into ``out_dir`` all at once (:class:`nnisa.core.bundle.BundleWriter`):

* ``program.json.gz`` — pimsim-nn JSON (with ``array_group_map``), the bundle's program;
* ``program.nnpi`` — the NNPI binary (64-bit words; extended mode when a core has > 16 groups);
* ``weights.npz``, ``gmem.npz``, ``manifest.json`` — the program bundle (``docs/pim_bundle.md``);
* ``memory_map.json`` — global buffers, constants, scratch, local-memory peaks;
* ``mapping_report.json`` — crossbar utilisation, replication per layer, instructions per core.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ....core.layers import LayerRow
from ....core.target import CompileResult
from ....core.errors import ConfigError
from ....core.fileio import read_bytes
from ..formats.bundle import NOC_FILE, write_bundle
from .driver import Compiled, compile_program
from .options import PimCompileOptions
from .io import from_storage, input_segments, to_storage


def _json(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def write_outputs(c: Compiled, out_dir: str | Path, *, binary: bool = True) -> dict[str, str]:
    """Write the bundle (with the binary program and the reports) all at once; returns role → path."""
    out = Path(out_dir)
    config = c.config.to_json_dict()
    extra = {"memory_map.json": _json(c.memory_map), "mapping_report.json": _json(c.report)}
    noc = c.config.noc_path()
    if noc is not None:  # the bundle carries its NoC table: it must run wherever it is copied
        extra[NOC_FILE] = read_bytes(noc, ConfigError)
        config["chip_config"]["network_config"]["net_config_file_path"] = NOC_FILE
    manifest = {"global_address_mode": "pair", "config": config,
                "inputs": [_entry(e) for e in c.inputs], "outputs": [_entry(e) for e in c.outputs]}
    stream = stream_info(c)
    if stream is not None:
        manifest["stream"] = {**stream, "image_ends": c.program.image_ends, "pipeline_depth": c.program.pipeline_depth}
    write_bundle(out, c.program, weights=c.weights, gmem_segments=c.gmem, manifest=manifest, binary=binary,
                 extra_files=extra)
    files = {"program": str(out / "program.json.gz"), "weights": str(out / "weights.npz"),
             "gmem": str(out / "gmem.npz"), "manifest": str(out / "manifest.json"),
             "memory_map": str(out / "memory_map.json"), "report": str(out / "mapping_report.json")}
    if binary:
        files["binary"] = str(out / "program.nnpi")
    if noc is not None:
        files["noc_table"] = str(out / NOC_FILE)
    c.files = files
    return files


def stream_info(c: Compiled) -> dict | None:
    """``{"images", "image_stride"}`` of a program compiled for a stream (``None``: one image)."""
    n = c.memory_map.get("images", 1)
    return {"images": n, "image_stride": c.memory_map["image_stride"]} if n > 1 else None


def _entry(e: dict) -> dict:
    return {k: e[k] for k in ("name", "shape", "bits", "scale", "zero_point", "layout", "address")}


def compile_result(qg, tail, tail_nodes, *, config=None, out_dir=None,
                   options: PimCompileOptions | None = None) -> CompileResult:
    """The compile entry's work for a one-program model: compile, write files (when ``out_dir``),
    build the callbacks (``qg``: the integer head, ``tail``: the float tail of
    :func:`~nnisa.frontend.prepare.split_float_tail`).

    ``encode_inputs(sample)`` returns ``{global address: bytes}`` (quantized, storage layout);
    the simulator's outputs are expected as ``{name: int array of the manifest shape}`` read
    at the manifest address (``sim_options["outputs"]``); ``reference(sample)`` returns the
    frontend's integer outputs in that same form; ``decode_outputs`` gives float NCHW/NC arrays.
    """
    o = options or PimCompileOptions()
    c = compile_program(qg, config, o)
    if tail is not None:
        c.report["host_tail"] = {"nodes": tail_nodes, "note": "the PIM ISA has no exponential: these run on the "
                                 "host in float on the program's integer outputs (not in cycles/energy)"}
    files = write_outputs(c, out_dir) if out_dir is not None else {}
    low = c.lowered
    ins = {t.name: t for t in low.inputs}
    outs = {t.name: t for t in low.outputs}
    shapes = {e["name"]: tuple(e["shape"]) for e in c.outputs}

    stream = stream_info(c)
    stride = stream["image_stride"] if stream else 0

    def encode_inputs(sample: dict, image: int = 0) -> dict[int, bytes]:
        """``{address: bytes}`` of one sample, placed in image ``image``'s slot of a stream."""
        segs: dict[int, bytes] = {}
        for name, t in ins.items():
            x = np.asarray(sample[name])
            if x.ndim == len(t.shape) - 1:
                x = x[None]
            for a, data in input_segments(t, qg.quantize_input(name, x)).items():
                segs[a + image * stride] = data
        return segs

    def reference(sample: dict) -> dict[str, np.ndarray]:
        from ....frontend import evaluate_quantized
        feed = {}
        for name, t in ins.items():
            x = np.asarray(sample[name])
            feed[name] = x[None] if x.ndim == len(t.shape) - 1 else x
        ref = evaluate_quantized(qg, feed)
        return {k: to_storage(outs[k], ref[k]).reshape(shapes[k]) for k in outs}

    def decode_outputs(sim_outputs: dict) -> dict[str, np.ndarray]:
        if tail is not None:
            ints = {k: from_storage(t, np.asarray(sim_outputs[k])) for k, t in outs.items()}
            return {k: np.asarray(v, np.float32)[0] for k, v in tail(ints).items()}
        res = {}
        for k, t in outs.items():
            q = from_storage(t, np.asarray(sim_outputs[k]))
            res[k] = (q.astype(np.float64) * t.scale).astype(np.float32)[0]
        return res

    sim_options = {"config": c.config, "weights": c.weights, "gmem": c.gmem,
                   "outputs": [_entry(e) for e in c.outputs], "inputs_layout": [_entry(e) for e in c.inputs]}
    if stream is not None:
        sim_options["stream"] = stream
    # a stream program runs one sample per image slot (``images`` samples per simulation)
    return CompileResult(program=c.program, files=files, report=c.report, encode_inputs=encode_inputs,
                         decode_outputs=decode_outputs, reference=reference, sim_options=sim_options,
                         samples_per_run=stream["images"] if stream else 1, qgraph=qg, config=c.config,
                         layer_table=compile_layer_table(c.program, c.config))


def compile_layer_table(program, config) -> list[LayerRow] | None:
    """What the compiler knows per layer before simulation: crossbars, on-chip bytes and
    instructions (all images of a stream); cycles and energy come from the simulation."""
    if not program.layers:
        return None
    from ..sim.layer_figures import layer_spans
    count = np.zeros(len(program.layers) + 1, dtype=np.int64)
    for c, rows in program.cores.items():
        owner, _ = layer_spans(program, c, len(rows))
        count += np.bincount(np.where(owner >= 0, owner, len(program.layers)), minlength=len(count))
    chip = config.chip_config.core_cnt * config.chip_config.core_config.matrix_config.xbar_array_count
    return [LayerRow(d["name"], d["op"], utilization=min(1.0, d["crossbars"] / max(1, chip)),
                     memory_bytes=d["memory_bytes"], instructions=int(count[k]), extra={"crossbars": d["crossbars"]})
            for k, d in enumerate(program.layers)]
