"""ONNX → ``.tmodel``/``.tprog``/``.tdata`` (a bundle folder) and the runner glue (spec §9.8).

``compile_model`` loads the model with the shared frontend, lowers it (:mod:`.lower`), places
and emits it (:mod:`.codegen`), converts the consts to the architecture's data type, writes the
three Tensil files plus ``manifest.json`` (all-or-nothing) and returns a
:class:`~nnisa.core.target.CompileResult` with a summary in the style of Tensil's
``COMPILER SUMMARY``.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ....core.bundle import BundleWriter, TensorSpec
from ....core.options import split_options
from ....core.target import CompileResult
from ....core.errors import UnsupportedError
from ....frontend import load_model
from ....core.lowering import refusal
from ....frontend.ir import Graph
from ....frontend.prepare import check_graph
from ..config import TensilArch, load_arch
from ..formats.binary import encode_program
from ..formats.bundle import TensilManifest
from ..formats.model import Entry, TensilModel
from ..isa import Layout
from ..numerics import Numeric
from ..program import DTYPE, TensilProgram
from ..sim.energy import program_energy
from ..sim.estimator import estimate
from ..sim.layers import layer_rows, layer_spans
from .. import layout as L
from .codegen import CodeGen, codegen_summary
from .lower import LOWERINGS, ArrayOp, Lowering, select_outputs
from .segments import compile_segments, needs_host, pipeline_result
from .options import TensilCompileOptions
from .precision import warn_coarse_weights


#: the clock the estimator's cycles are turned into time at (the simulator's default without a profile)
ESTIMATOR_CLOCK_MHZ = 100.0


def model_name(model_path: Path, arch: TensilArch) -> str:
    """``<model file stem, non-alphanumerics → _>_<arch name>`` (spec §5.1)."""
    return f"{re.sub(r'[^A-Za-z0-9]', '_', model_path.name)}_{arch.name or 'custom'}"


def compile_model(model: Any, *, config: Any = None, out_dir: str | Path | None = None, name: str | None = None,
                  **options: Any) -> CompileResult:
    """Compile an ONNX model (path or prepared model) for a Tensil architecture (default zcu104);
    ``options`` are :class:`~nnisa.targets.tensil.compiler.options.TensilCompileOptions` fields
    (other keys are ignored), ``name`` the model name (default: from the file name)."""
    o, _ = split_options(TensilCompileOptions, options)
    strategy, softmax, reuse, lut, outputs = o.strategy, o.softmax, o.reuse, o.lut, o.outputs
    t0 = time.perf_counter()
    arch = load_arch(config if config is not None else "zcu104")
    arch.check_supported()
    if lut and arch.lut is None:  # nnisa's LoadLUT/Lookup extension: 2 tables of 64 entries, 3 registers
        arch = arch.with_(simd_registers_depth=max(3, arch.simd_registers_depth),
                          extensions=arch.extensions + (("x_nnisa_lut", {"tables": 2, "depth": 64}),))
    N = arch.array_size
    graph = model if isinstance(model, Graph) else load_model(model, declared_batch=o.declared_batch)
    if outputs:
        select_outputs(graph, [o.strip() for o in outputs.split(",") if o.strip()])
    nm = name or model_name(Path(str(getattr(model, "path", model)) if not isinstance(model, (bytes, Graph))
                                 and not hasattr(model, "SerializeToString") else graph.name or "model"), arch)
    # an operator the table lacks (neither device nor host step) is refused before any work
    check_graph(graph, "tensil", lambda n, _: refusal(LOWERINGS, "Tensil", n.op), quantized=False)
    if not isinstance(model, Graph) and needs_host(graph, LOWERINGS, arch.lut):
        if softmax == "error" and any(n.op == "Softmax" for n in graph.nodes):
            raise UnsupportedError("the model needs host steps (Softmax, LayerNorm, ...) and -O softmax=error "
                                   "refuses them", hint="use -O softmax=host (default)")
        dest = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="nnisa_tensil_")) / nm
        sub = {k: v for k, v in options.items() if k in TensilCompileOptions.__dataclass_fields__ and k != "outputs"}
        pipe, summary, files = compile_segments(model, graph, arch=arch, nm=nm, dest=dest, table=LOWERINGS,
                                                options=sub, compile_graph=compile_model)
        return pipeline_result(pipe, summary, files)
    low = Lowering(graph, N, softmax, arch.lut, value_max=arch.value_max,
                   ulp=None if arch.bp is None else 2.0 ** -arch.bp).run()
    warn_coarse_weights(low.precision, arch)
    gen = CodeGen(low, arch, strategy, reuse)
    rows = gen.generate()
    prog = TensilProgram(arch, np.array(rows, dtype=DTYPE) if rows else np.zeros(0, DTYPE))
    num = Numeric.of(arch)
    consts = np.concatenate([c.vectors for c in low.consts]) if low.consts else np.zeros((0, N), np.float32)
    raw_consts = num.from_float(consts, "consts")
    data = encode_program(prog)
    inputs = [Entry(v.name, v.addr, v.size) for v in low.vars.values() if v.is_input]
    out_vars = []
    for t in graph.outputs:
        src = low.vars[low.output_names.get(t.name, t.name)]
        out_vars.append((t, src))
    outputs = [Entry(t.name, src.root.addr, src.root.size) for t, src in out_vars]
    tmodel = TensilModel(nm, f"{nm}.tprog", len(data), [Entry(f"{nm}.tdata", 0, len(raw_consts), f"{nm}.tdata")],
                         inputs, outputs, arch, gen.local_consts,
                         {"x_nnisa_postprocess": [{k: p[k] for k in ("op", "output", "axis")} for p in low.postprocess]}
                         if low.postprocess else {})
    macs = sum(o.macs for o in low.ops if isinstance(o, ArrayOp))
    topology = [_topology_row(o) for o in low.ops if isinstance(o, ArrayOp)]
    est = estimate(prog, macs)
    spans = layer_spans(low, gen.spans, arch.bits)
    en = program_energy(prog, latency_ns=est["cycles"] * 1000.0 / ESTIMATOR_CLOCK_MHZ)
    lay = Layout.from_arch(arch)
    summary = {
        "model": nm, "data_type": arch.data_type, "array_size": N, "instruction_bytes": lay.instruction_bytes,
        "local_depth": arch.local_depth, "accumulator_depth": arch.accumulator_depth, **codegen_summary(gen),
        "true_macs": macs, "estimator_cycles": est["cycles"],
        **{k: en[k] for k in ("energy_pj", "energy_dynamic_pj", "energy_static_pj")},
        "energy_source": f"{en['energy_model']}, static power over the estimator's cycles at "
                         f"{ESTIMATOR_CLOCK_MHZ:g} MHz",
        "mac_efficiency": est.get("mac_efficiency"), "dram_vectors": est["dram_vectors_total"],
        "dram_traffic": est["dram_vectors"], "instructions_per_kind": {k: v["instructions"] for k, v in
                                                                       est["classes"].items()},
        "consts_scalars": int(consts.size), "consts_conversion": num.stats.get("consts").to_dict(
            1.0 / (1 << num.bp)) if "consts" in num.stats and num.bp else {},
        "postprocess": low.postprocess, "weight_precision": low.precision,
        "input_shapes": {t.name: list(low.vars[t.name].shape) for t in graph.inputs},
        "output_shapes": {t.name: list(src.shape) for t, src in out_vars},
    }
    files: dict[str, str] = {}
    dest = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="nnisa_tensil_")) / nm
    manifest = TensilManifest(target="tensil", program=f"{nm}.tprog", tmodel=f"{nm}.tmodel", tdata=f"{nm}.tdata",
                              true_macs=macs, postprocess=low.postprocess, topology=topology, strategy=strategy,
                              layer_spans=spans,
                              inputs=[TensorSpec(name=t.name, shape=list(low.vars[t.name].shape), bits=arch.bits,
                                                 layout="NHWC-vectors",
                                                 address=low.vars[t.name].addr) for t in graph.inputs],
                              outputs=[TensorSpec(name=t.name, shape=list(src.shape), bits=arch.bits,
                                                  layout="NHWC-vectors", address=src.root.addr)
                                       for t, src in out_vars],
                              config=arch.to_dict())
    with BundleWriter(dest) as w:
        w.write(f"{nm}.tprog", data)
        w.write(f"{nm}.tdata", num.to_bytes(raw_consts.reshape(-1)))
        w.write(f"{nm}.tmodel", tmodel.to_json())
        final = w.commit(manifest)
    for role, fname in (("tmodel", f"{nm}.tmodel"), ("program", f"{nm}.tprog"), ("tdata", f"{nm}.tdata")):
        files[role] = str(final / fname)
    tmodel.directory, tmodel.path = final, final / f"{nm}.tmodel"
    tmodel.extensions = dict(tmodel.extensions, x_nnisa_true_macs=macs, x_nnisa_topology=topology,
                             x_nnisa_layer_spans=spans)
    prog.model = tmodel
    summary["compile_s"] = time.perf_counter() - t0
    shapes_in = {t.name: tuple(low.vars[t.name].shape) for t in graph.inputs}  # the layout's shape
    shapes_out = {t.name: tuple(src.shape) for t, src in out_vars}
    post = {p["output"]: p for p in low.postprocess}

    def encode_inputs(sample: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for k, shape in shapes_in.items():
            x = np.asarray(sample[k], np.float32).reshape(shape)
            out[k] = L.activation_to_vectors(x, N)
        return out

    def decode_outputs(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        res = {}
        for k, shape in shapes_out.items():
            v = L.vectors_to_activation(np.asarray(outputs[k], np.float64).reshape(-1, N), shape, N)
            if k in post:
                v = _softmax(v, post[k]["axis"])
            res[k] = v[0] if shape[0] == 1 else v
        return res

    return CompileResult(program=prog, files=files, report=summary, encode_inputs=encode_inputs,
                         decode_outputs=decode_outputs, sim_options={"mode": "both"},
                         layer_table=layer_rows(prog, spans, clock_mhz=ESTIMATOR_CLOCK_MHZ))


def _softmax(v: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _topology_row(op: ArrayOp) -> dict[str, Any]:
    """The layer as a SCALE-Sim conv row (padded input, no padding in the closed form)."""
    g = op.geom
    return {"name": op.node.name, "ifmap_h": g["H"] + g["PT"] + g["PB"], "ifmap_w": g["W"] + g["PL"] + g["PR"],
            "filter_h": g["KH"], "filter_w": g["KW"], "channels": g["CIN"] if g["H"] > 1 or g["W"] > 1 or
            g["KH"] > 1 else g["CIN"], "filters": g["COUT"], "stride": g["SH"]}
