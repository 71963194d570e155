"""The :class:`~nnisa.core.target.CompileResult` of a phased PIM program (:mod:`.phases`) and its runner.

Files (``out_dir``): one bundle per device phase in ``phase<k>/`` (the same files as a one-phase
compile) and ``phases.json`` (the phases in order: kind, nodes, the tensors each reads and
writes, crossbars, reload time and energy).  ``nnisa sim`` runs one bundle; ``nnisa run``/the API
run the whole sequence (:func:`simulate_phased`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ....core.fileio import write_atomic
from ....core.target import CompileResult
from .options import PimCompileOptions
from .output import _json, compile_result, write_outputs
from .phases import PhasedProgram, host_steps, run_phased


def compile_any(model, *, config=None, out_dir=None, options: PimCompileOptions | None = None) -> CompileResult:
    """The compile entry: quantize, cut the float tail, then one program or a phased one."""
    from ....frontend.prepare import split_float_tail
    from .driver import quantize_model
    o = options or PimCompileOptions()
    full = quantize_model(model, bits=o.bits, **o.quant_kwargs())
    qg, tail, tail_nodes = split_float_tail(full)
    for t in qg.inputs:
        if not t.raw and len(t.shape) > 1 and t.shape[0] != 1:
            raise UnsupportedError(f"model input {t.name} has batch {t.shape[0]}; the PIM compiler compiles batch 1 "
                                   f"(export the model with batch 1: nnisa runs the samples one after the other)")
    phased = _phased_or_none(qg, config, o)
    if phased is not None:
        return phased_result(phased, qg, tail, tail_nodes, out_dir, o)
    return compile_result(qg, tail, tail_nodes, config=config, out_dir=out_dir, options=o)




def _phased_or_none(qg, config, o: PimCompileOptions):
    """A :class:`~.phases.PhasedProgram` when ``qg`` has host steps or needs more crossbars than the
    chip (with ``multiplex``), else ``None`` (one program)."""
    from .driver import resolve_compile_config
    from .mapping import MappingError
    from .options import ChipShape
    from .phases import check_phased_options, compile_phased, is_host_node, node_xbars
    cfg = resolve_compile_config(config)
    hw = ChipShape.of(cfg)
    need = sum(node_xbars(n, hw) for n in qg.nodes)
    total = hw.cores * hw.xbars
    host = any(is_host_node(n, qg) for n in qg.nodes)
    if not host and need <= total:
        return None
    if need > total and not o.multiplex:
        raise MappingError(f"the model needs {need} crossbars without replication; the chip has {total} "
                           f"({hw.cores} cores x {hw.xbars}): use -O multiplex=true (reload the crossbars between "
                           f"layer groups) or a config with at least {-(-need // hw.xbars)} cores")
    check_phased_options(o)
    return compile_phased(qg, cfg, o, hw, o.fill if o.replication != "none" else 1.0)


def _report(prog: PhasedProgram) -> dict[str, Any]:
    dev = prog.device
    first = dev[0].compiled.report if dev else {}
    phases = []
    for p in prog.phases:
        d: dict[str, Any] = {"kind": p.kind, "nodes": [f"{n.name} ({n.op})" for n in p.nodes]}
        if p.kind == "device":
            r = p.compiled.report
            d.update({"crossbars": p.xbars, "crossbars_used": r["crossbars_used"], "instructions": r["instructions"],
                      "reads": [t.name for t in p.qgraph.inputs], "writes": [t.name for t in p.qgraph.outputs],
                      "reload_ns": p.reload_ns, "reload_pj": p.reload_pj})
        phases.append(d)
    return {
        "hardware": first.get("hardware"),
        "crossbars_total": first.get("crossbars_total"),
        "crossbars_needed": sum(p.xbars for p in dev),
        "multiplexed": len(dev) > 1,
        "device_phases": len(dev),
        "phases": phases,
        "host_steps": host_steps(prog),
        "host_note": "host steps run the frontend's integer semantics (bit-exact) between device phases; "
                     "they are not in cycles/energy",
        "instructions": len(prog),
        "layers": [dict(l, phase=k) for k, p in enumerate(dev) for l in p.compiled.report.get("layers", [])],
        "options": first.get("options", {}),
    }


def _write(prog: PhasedProgram, out_dir) -> dict[str, str]:
    out = Path(out_dir)
    files: dict[str, str] = {}
    for k, p in enumerate(prog.device):
        for role, path in write_outputs(p.compiled, out / f"phase{k}").items():
            files[f"phase{k}.{role}"] = path
    write_atomic(out / "phases.json", _json(_report(prog)))
    files["phases"] = str(out / "phases.json")
    return files


def phased_result(prog: PhasedProgram, qg, tail, tail_nodes, out_dir, options) -> CompileResult:
    """The runner glue of a phased program: samples are quantized model inputs (logical), outputs
    the model outputs' integers (logical), checked against the frontend's integer reference."""
    from ....frontend import evaluate_quantized
    report = _report(prog)
    if tail is not None:
        report["host_tail"] = {"nodes": tail_nodes, "note": "the PIM ISA has no exponential: these run on the "
                               "host in float on the program's integer outputs (not in cycles/energy)"}
    files = _write(prog, out_dir) if out_dir is not None else {}
    names = [t.name for t in qg.inputs]

    def feed(sample: dict) -> dict[str, np.ndarray]:
        out = {}
        for t in qg.inputs:
            x = np.asarray(sample[t.name])
            out[t.name] = qg.quantize_input(t.name, x[None] if x.ndim == len(t.shape) - 1 else x)
        return out

    def reference(sample: dict) -> dict[str, np.ndarray]:
        ref = evaluate_quantized(qg, feed(sample))
        return {t.name: np.asarray(ref[t.name], np.int64) for t in qg.outputs}

    def decode_outputs(ints: dict) -> dict[str, np.ndarray]:
        if tail is not None:
            return {k: np.asarray(v, np.float32)[0] for k, v in tail(ints).items()}
        return {t.name: (np.asarray(ints[t.name], np.float64) * t.scale).astype(np.float32)[0] for t in qg.outputs}

    return CompileResult(program=prog, files=files, report=report, encode_inputs=feed, decode_outputs=decode_outputs,
                         reference=reference, sim_options={"phased": True, "inputs": names}, samples_per_run=1,
                         qgraph=qg, config=prog.device[0].compiled.config if prog.device else None)


def simulate_phased(simulate, compiled: CompileResult, samples: list[dict], first: int = 0):
    """Each sample through every phase; the statistics of the run's first sample."""
    prog: PhasedProgram = compiled.program
    outs, stats = [], None
    for k, sample in enumerate(samples):
        timed = first == 0 and k == 0
        env, st = run_phased(simulate, prog, compiled.encode_inputs(sample), timed, compiled.sim_options)
        if timed:
            stats = st
        outs.append({t.name: np.asarray(env[t.name], np.int64) for t in prog.qgraph.outputs})
    return outs, stats
