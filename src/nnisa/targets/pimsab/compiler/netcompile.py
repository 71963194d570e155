"""``nnisa compile/run -t pimsab model.onnx``: quantize (frontend), lower (:mod:`.network`), write a bundle.

The compiled folder holds one program image per device program (``NN_<layer>_<role>.psab``, the
spec §2.6 container), the compile report (``compile_report.json``) and ``manifest.json``.
:func:`simulate_batch` runs samples through the layers, ``CompileResult.samples_per_run`` at a
time (each device program simulated once for the whole batch by the batched functional machine,
host layers with the frontend's integer semantics per sample); the run's first batch is also
timed, giving per-layer and total cycles and energy (the programs are data-independent in the
``simulator`` cycle mode).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from ....core.errors import FormatError
from ....core.target import CompileResult, RunResult, Stats, run_samples
from ..config import PimsabConfig, load_config, preset_for_hash
from .netlayers import layer_table
from .network import lower_model, run_network, run_network_batch


def quantized_graph(model, calib=None, bits: int = 8):
    """The frontend's quantized graph of a model: pow2 scales and per-tensor weights (spec Decision
    13: the device requantizes a tensor with one shift), calibrated like every integer target
    (:func:`nnisa.frontend.prepare.prepare_qgraph`: ``calib`` or the frontend's default set, which
    is drawn like ``run``'s inputs but disjoint from them; a bundled model's test-set tail).  The
    spec's 8 samples of N(0, 1) gave input and activation ranges about 3x those of the inputs the
    models run on (uniform in [-1, 1)), a coarser grid that cost top-1 on the zoo."""
    from ....frontend.prepare import prepare_qgraph
    return prepare_qgraph(model, "pimsab", calib=calib, bits=bits, per_channel=False, scale_mode="pow2")


def compile_network(model, *, config: Any = None, out_dir=None, calib=None, bits: int = 8) -> CompileResult:
    """ONNX model → quantized graph → per-layer DSL programs (see the module docstring)."""
    t0 = time.perf_counter()
    cfg = load_config(config)
    qg = quantized_graph(model, calib, bits)
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
    names = [t.name for t in qg.inputs]

    def encode(sample):  # one sample of every input (several: a recurrent cell and its state)
        if len(names) == 1 and names[0] not in sample:
            sample = {names[0]: next(iter(sample.values()))}
        missing = [k for k in names if k not in sample]
        if missing:
            raise FormatError(f"missing model input(s) {missing}; the model's inputs are {names}")
        # token ids / masks (``raw``: the embedding lookup runs on the host) stay exact integers
        return {k: np.asarray(sample[k])[None].astype(np.int64) if qg.tensors[k].raw else
                qg.quantize_input(k, np.asarray(sample[k])[None]) for k in names}

    def reference(sample):
        from ....frontend import evaluate_quantized
        return evaluate_quantized(qg, encode(sample))

    return CompileResult(program=[p.compiled.program for _, p in programs], files=files, report=report,
                         encode_inputs=encode, reference=reference,
                         decode_outputs=lambda outs: {k: qg.dequantize(k, v)[0] for k, v in outs.items()},
                         qgraph=qg, layers=layers, config=cfg, samples_per_run=BATCH_CHUNK,
                         layer_table=layer_table(layers, cfg))


def _brief(r: dict) -> dict:
    return {k: r[k] for k in ("distribution", "occupancy", "wordlines", "instructions", "search_s", "codegen_s")}


def _write_bundle(out_dir, model, cfg: PimsabConfig, qg, programs, report) -> dict[str, str]:
    import orjson

    from ....core.bundle import BundleWriter, Manifest
    from ..formats.image import encode_image
    names = {}
    with BundleWriter(out_dir) as w:
        for k, (L, p) in enumerate(programs):
            name = f"{k:03d}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', L.node.name).strip('_')}_{p.role}.psab"
            w.write(name, encode_image(p.compiled.program))
            names[f"program_{k:03d}"] = name
        from .netbundle import GRAPH_JSON, GRAPH_NPZ, save_qgraph
        doc, arrays = save_qgraph(qg)   # the host glue and host layers of `nnisa sim FOLDER` (.netbundle)
        w.write(GRAPH_JSON, doc)
        w.write(GRAPH_NPZ, arrays)
        names["graph"], names["graph_arrays"] = GRAPH_JSON, GRAPH_NPZ
        names["report"] = "compile_report.json"
        w.write(names["report"], orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
        man = Manifest(target="pimsab", program=names.get("program_000"), files=names,
                       inputs=[_spec(t) for t in qg.inputs], outputs=[_spec(t) for t in qg.outputs],
                       config=cfg.as_dict())
        out = w.commit(man)
    return {role: str(out / n) for role, n in names.items()} | {"manifest": str(out / "manifest.json")}


def _spec(t):
    """The manifest entry of a graph input/output; a float tensor (the output of a host Softmax:
    ``bits`` 0) is a float32 array, not an integer with a scale."""
    from ....core.bundle import TensorSpec
    shape = [int(d) for d in t.shape]
    if not t.bits:
        return TensorSpec(name=t.name, shape=shape, bits=32, layout="float32")
    return TensorSpec(name=t.name, shape=shape, bits=t.bits, scale=float(t.scale))


#: samples one batched functional pass takes (``CompileResult.samples_per_run``)
BATCH_CHUNK = 64


def simulate_batch(compiled: CompileResult, samples: list[dict[str, np.ndarray]], first: int, *,
                   batched: bool = True) -> tuple[list[dict[str, np.ndarray]], Stats | None]:
    """``PimsabTarget.simulate_batch``: the samples through the layers in one batched pass
    (:func:`.network.run_network_batch`), or one by one on the reference machine when
    ``batched`` is false; the run's first batch (``first == 0``) is also timed, its figures the
    run's statistics (``None`` otherwise)."""
    qg, layers, cfg = compiled.qgraph, compiled.layers, compiled.config
    t0 = time.perf_counter()
    mode = "both" if first == 0 else "functional"
    if batched:
        runs = run_network_batch(qg, layers, [compiled.encode_inputs(s) for s in samples], mode=mode)
    else:
        runs = [run_network(qg, layers, compiled.encode_inputs(s), mode=mode if i == 0 else "functional")
                for i, s in enumerate(samples)]
    stats = None
    if first == 0:
        r = runs[0]
        stats = Stats(cycles=r.cycles, latency_ns=r.cycles / cfg.clock_ghz, energy_pj=r.energy_j * 1e12,
                      instructions=r.instructions, wall_s=time.perf_counter() - t0,
                      layers=layer_table(layers, cfg, r.layers),
                      extra={"timing_model": f"pimsab-{cfg.cycle_mode} (spec 3.2-3.5), layers back to back "
                                             "from an idle machine; host layers 0 cycles",
                             "network_layers": r.layers, "energy_j": r.energy_j})
    return [r.outputs for r in runs], stats


def run_compiled(compiled: CompileResult, inputs: dict[str, np.ndarray], progress: Any = None, *,
                 batched: bool = True) -> RunResult:
    """``Target.run_compiled`` with the choice of machine: the batched one (the default, what the
    target runs) or the per-sample reference machine (``batched=False``), for A/B checks."""
    return run_samples(lambda c, samples, first: simulate_batch(c, samples, first, batched=batched),
                       compiled, inputs, progress)
