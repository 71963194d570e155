"""``nnisa compile/run -t pimsab model.onnx``: quantize (frontend), lower (:mod:`.network`), write a bundle.

The compiled folder holds one program image per device program (``NN_<layer>_<role>.psab``, the
spec §2.6 container), the compile report (``compile_report.json``) and ``manifest.json``.
:func:`run_compiled` runs a batch: every sample through the layers (device programs in the
functional simulator, host layers with the frontend's integer semantics); the first sample is
also timed, giving per-layer and total cycles and energy (the programs are data-independent in
the ``simulator`` cycle mode).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....core.target import CompileResult, Stats
from ..config import PimsabConfig, load_config, preset_for_hash
from .network import lower_model, run_network


def quantized_graph(model, calib=None, bits: int = 8):
    """The frontend's quantized graph of a model (pow2 scales, per-tensor weights: spec Decision 13)."""
    from ....frontend import load_model, quantize
    from ....frontend.models import bundled_inputs_for
    from ....frontend.prepare import check_graph
    g = load_model(model)
    check_graph(g, "pimsab")  # every node with integer semantics lowers (device or host): refuse the rest now
    if calib is None:
        calib = bundled_inputs_for(model, samples=64) if isinstance(model, (str, Path)) else None
    if calib is None:  # spec §4.11: 8 samples of N(0, 1), seed 0
        shape = (8,) + tuple(g.inputs[0].shape[1:])
        calib = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return quantize(g, calib, bits=bits, scale_mode="pow2", per_channel=False)


def compile_model(model, *, config: Any = None, out_dir=None, calib=None, bits: int = 8,
                  **_: Any) -> CompileResult:
    """ONNX model → quantized graph → per-layer DSL programs (see the module docstring)."""
    t0 = time.perf_counter()
    cfg = load_config(config)
    qg = quantized_graph(model, calib, bits)
    if len(qg.inputs) != 1:
        raise FormatError(f"PIMSAB compiles models with one input, this one has {len(qg.inputs)}")
    layers, lower_s = lower_model(qg, cfg)
    programs = [(L, p) for L in layers for p in L.programs]
    report = {"compile_s": round(time.perf_counter() - t0, 3), "lowering_s": round(lower_s, 3),
              "config": preset_for_hash(cfg.sha256) or "custom", "device_layers": sum(L.on_device for L in layers),
              "host_layers": [{"layer": L.node.name, "op": L.node.op, "reason": L.host_reason}
                              for L in layers if not L.on_device],
              "programs": [{"layer": L.node.name, "op": L.node.op, "role": p.role, **_brief(p.compiled.report)}
                           for L, p in programs],
              "instructions": int(sum(len(p.compiled.program) for _, p in programs)),
              "quantization": "frontend pow2, per-tensor int8 weights and activations"}
    files = _write_bundle(out_dir, model, cfg, qg, programs, report) if out_dir is not None else {}
    t_in = qg.inputs[0]

    def encode(sample):
        x = np.asarray(sample[t_in.name] if t_in.name in sample else next(iter(sample.values())))
        return {t_in.name: qg.quantize_input(t_in.name, x[None])}

    def reference(sample):
        from ....frontend import evaluate_quantized
        return evaluate_quantized(qg, encode(sample))

    res = CompileResult(program=[p.compiled.program for _, p in programs], files=files, report=report,
                        encode_inputs=encode, reference=reference,
                        decode_outputs=lambda outs: {k: qg.dequantize(k, v)[0] for k, v in outs.items()})
    res.qgraph, res.layers, res.config = qg, layers, cfg
    return res


def _brief(r: dict) -> dict:
    return {k: r[k] for k in ("distribution", "occupancy", "wordlines", "instructions", "search_s", "codegen_s")}


def _write_bundle(out_dir, model, cfg: PimsabConfig, qg, programs, report) -> dict[str, str]:
    import orjson

    from ....core.bundle import BundleWriter, Manifest, TensorSpec
    from ..formats.image import encode_image
    names = {}
    with BundleWriter(out_dir) as w:
        for k, (L, p) in enumerate(programs):
            name = f"{k:03d}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', L.node.name).strip('_')}_{p.role}.psab"
            w.write(name, encode_image(p.compiled.program))
            names[f"program_{k:03d}"] = name
        names["report"] = "compile_report.json"
        w.write(names["report"], orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
        tensors = [TensorSpec(name=t.name, shape=[int(d) for d in t.shape], bits=t.bits, scale=float(t.scale))
                   for t in (qg.inputs[0], qg.outputs[0])]
        man = Manifest(target="pimsab", program=names.get("program_000"), files=names, inputs=[tensors[0]],
                       outputs=[tensors[1]], config=cfg.as_dict())
        out = w.commit(man)
    return {role: str(out / n) for role, n in names.items()} | {"manifest": str(out / "manifest.json")}


def run_compiled(compiled: CompileResult, inputs: dict[str, np.ndarray], progress=None):
    """Simulate a batch (leading axis = samples); see the module docstring."""
    qg, layers = compiled.qgraph, compiled.layers
    n = len(next(iter(inputs.values())))
    outs: dict[str, list] = {}
    exact = []
    stats = Stats()
    t0 = time.perf_counter()
    for i in range(n):
        sample = {k: v[i] for k, v in inputs.items()}
        q = compiled.encode_inputs(sample)
        r = run_network(qg, layers, q, mode="both" if i == 0 else "functional")
        if i == 0:
            first = r
        ref = compiled.reference(sample)
        exact.append(all(np.array_equal(r.outputs[k], ref[k]) for k in ref))
        for k, v in compiled.decode_outputs(r.outputs).items():
            outs.setdefault(k, []).append(v)
        if progress is not None:
            progress(i + 1, n)
    cfg = compiled.config
    stats.cycles = first.cycles
    stats.latency_ns = first.cycles / cfg.clock_ghz
    stats.energy_pj = first.energy_j * 1e12
    stats.instructions = first.instructions
    stats.wall_s = time.perf_counter() - t0
    stats.extra = {"timing_model": f"pimsab-{cfg.cycle_mode} (spec 3.2-3.5), layers back to back from an idle "
                                  "machine; host layers 0 cycles",
                   "layers": first.layers, "energy_j": first.energy_j}
    return {k: np.stack(v) for k, v in outs.items()}, stats, {"bit_exact": bool(all(exact))}
