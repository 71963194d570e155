"""Mid-graph host steps (issue 27): a model the systolic array and its SIMD cannot run whole becomes
a chain of *device segments* (each a Tensil program with its own ``.tmodel``/``.tprog``/``.tdata``,
compiled by :func:`~nnisa.targets.tensil.compiler.output.compile_model` from a sub-graph) joined by
*host steps* (the nodes Tensil lacks: LayerNorm, GELU/Erf, Softmax, embedding Gather, masks, ...,
computed by the frontend's float reference, :func:`nnisa.frontend.float_eval.run_node`).

Partition: every node is *device* when the lowering table lowers it on the array/SIMD, else *host*;
a data-movement node (Reshape, Transpose, ...) whose operands all come from host nodes stays on
the host (moving lanes on the host is free, on the array it costs a job).  Nodes are then placed
as early as possible into alternating stages (a node joins the stage of its latest producer when
of the same kind, else the next stage of its kind), so the number of segments is the least the
dependencies allow.  The folder holds ``manifest.json`` (the steps in order), one sub-folder per
device segment (a complete Tensil bundle) and ``model.onnx`` (the host steps' nodes come from it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ....core.bundle import BundleWriter, TensorSpec
from ....core.errors import UnsupportedError
from ....core.lowering import OnHost
from ....frontend.ir import Graph, Node, TensorInfo

#: data movement that follows its operands' side (free on the host, a lane-move job on the array)
MOVES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Slice", "Concat", "Pad")
#: host cost per output element of a host node (floating-point operations, an estimate for the
#: report's share of work: LayerNorm = mean, variance, normalise, scale and shift; GELU = erf and 3
#: multiplies; Softmax = max, subtract, exp, sum, divide)
HOST_OPS_PER_ELEMENT = {"LayerNorm": 8, "Gelu": 12, "Erf": 8, "Softmax": 5, "MaskedSoftmax": 6, "Exp": 4,
                        "Log": 4, "Sqrt": 4, "Pow": 4, "Tanh": 6, "Sigmoid": 6}


@dataclass
class Step:
    """One step of a segmented model: ``kind`` ``"device"`` or ``"host"``, its nodes (topological
    order), the tensors it reads from earlier steps or the graph inputs, and the tensors later steps
    or the graph outputs read from it."""

    kind: str
    nodes: list[Node]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def host_reason(n: Node, graph: Graph, table: dict[str, Any], lut: Any) -> str | None:
    """Why node ``n`` runs on the host in a segmented model (None: on the device)."""
    entry = table.get(n.op)  # the compiler refused operators the table lacks before this
    if n.op == "Softmax":
        return "Softmax: exp and division are not SIMD operations"
    if isinstance(entry, OnHost):
        return entry.why
    if n.op in ("Sigmoid", "Tanh") and lut is None:
        return f"{n.op}: needs lookup tables (-O lut=true for nnisa's extension)"
    ints = [i for i in n.inputs if i in graph.tensors and np.dtype(graph.tensors[i].dtype).kind in "iub"]
    if ints:
        return f"{n.op}: integer operand {ints[0]} (Tensil computes in its fixed-point data type)"
    return None


def needs_host(graph: Graph, table: dict[str, Any], lut: Any) -> bool:
    """Whether any node besides a trailing Softmax (the single-program host tail) needs the host."""
    for n in graph.nodes:
        if host_reason(n, graph, table, lut) is None:
            continue
        if n.op == "Softmax" and graph.is_output(n.outputs[0]):
            continue
        return True
    return False


def partition(graph: Graph, table: dict[str, Any], lut: Any) -> list[Step]:
    """The graph's nodes as alternating device/host steps (module docstring)."""
    producer = {o: n for n in graph.nodes for o in n.outputs}
    kind: dict[str, int] = {}   # node name → 0 device, 1 host
    stage: dict[str, int] = {}
    for n in graph.nodes:
        prods = [producer[i] for i in n.inputs if i in producer]
        k = int(host_reason(n, graph, table, lut) is not None)
        if n.op in MOVES and prods and all(kind[p.name] for p in prods):
            k = 1
        s = max([stage[p.name] + (kind[p.name] != k) for p in prods] or [k])
        s += (s % 2) != k
        kind[n.name], stage[n.name] = k, s
    steps = []
    for s in sorted(set(stage.values())):
        nodes = [n for n in graph.nodes if stage[n.name] == s]
        steps.append(Step("host" if s % 2 else "device", nodes))
    outs = {t.name for t in graph.outputs}
    for i, st in enumerate(steps):
        made = {o for n in st.nodes for o in n.outputs}
        later = {x for s2 in steps[i + 1:] for n in s2.nodes for x in n.inputs} | outs
        st.inputs = list(dict.fromkeys(x for n in st.nodes for x in n.inputs
                                       if x not in made and x not in graph.initializers))
        st.outputs = [o for n in st.nodes for o in n.outputs if o in later]
    return steps


def sub_graph(graph: Graph, step: Step, name: str) -> Graph:
    """A device step as a graph of its own (its reads are its inputs, its results its outputs)."""
    inits = {x: graph.initializers[x] for n in step.nodes for x in n.inputs if x in graph.initializers}
    info = {k: graph.tensors[k] for n in step.nodes for k in list(n.inputs) + list(n.outputs) if k in graph.tensors}
    sub = Graph(name, [TensorInfo(x, tuple(graph.shape(x)), graph.tensors[x].dtype) for x in step.inputs],
                [TensorInfo(x, tuple(graph.shape(x)), graph.tensors[x].dtype) for x in step.outputs],
                list(step.nodes), inits, info, graph.source)
    return sub


def host_ops(step: Step, graph: Graph) -> int:
    """Estimated floating-point operations of a host step (:data:`HOST_OPS_PER_ELEMENT`, 1 otherwise)."""
    return int(sum(HOST_OPS_PER_ELEMENT.get(n.op, 1) * int(np.prod(graph.shape(n.outputs[0])))
                   for n in step.nodes))


def _onnx_bytes(model: Any) -> bytes:
    """The ONNX model's bytes (a path, a prepared model, bytes or a proto)."""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return Path(getattr(model, "path", model)).read_bytes()


def compile_segments(model: Any, graph: Graph, *, arch: Any, nm: str, dest: Path, table: dict[str, Any],
                     options: dict[str, Any], compile_graph: Any) -> tuple[Any, dict[str, Any], dict[str, str]]:
    """Compile a segmented model into the bundle folder ``dest``, each device segment by
    ``compile_graph`` (the single-program compiler): returns the
    :class:`~nnisa.targets.tensil.pipeline.TensilPipeline`, the compile summary and the files."""
    from ..formats.bundle import TensilManifest
    from ..pipeline import DeviceStep, HostStep, TensilPipeline, host_layer_row
    t0 = time.perf_counter()
    steps = partition(graph, table, arch.lut)
    if not any(st.kind == "device" for st in steps):
        n = graph.nodes[0]
        raise UnsupportedError(f"no node runs on the device ({host_reason(n, graph, table, arch.lut)})",
                               where=f"node {n.name} ({n.op})", file=graph.source,
                               hint="Sigmoid/Tanh: -O lut=true (nnisa's extension)" if n.op in ("Sigmoid", "Tanh")
                               else "a model with a convolution or matrix product for the array")
    records: list[dict[str, Any]] = []
    parts: list[Any] = []
    summaries: list[dict[str, Any]] = []
    layer_table: list[Any] = []
    with BundleWriter(dest) as w:
        w.write("model.onnx", _onnx_bytes(model))
        for i, st in enumerate(steps):
            if st.kind == "host":
                rec = {"kind": "host", "nodes": [n.name for n in st.nodes], "ops": [n.op for n in st.nodes],
                       "inputs": st.inputs, "outputs": st.outputs, "host_ops": host_ops(st, graph),
                       "why": sorted({r for n in st.nodes if (r := host_reason(n, graph, table, arch.lut))})}
                records.append(rec)
                parts.append(HostStep(rec["nodes"], st.inputs, st.outputs, rec["host_ops"]))
                layer_table.append(host_layer_row(rec["ops"], rec["host_ops"], rec["nodes"][0]))
                continue
            folder = f"seg{i}"
            try:
                res = compile_graph(sub_graph(graph, st, f"{nm}_seg{i}"), config=arch, out_dir=w.file(folder),
                                    name=f"{nm}_seg{i}", **options)
            except UnsupportedError as exc:
                raise UnsupportedError(f"device segment {i} ({len(st.nodes)} nodes): {exc.message}",
                                       where=exc.where, hint=exc.hint) from None
            res.program.model.extensions.update(x_nnisa_input_shapes=res.report["input_shapes"],
                                                x_nnisa_output_shapes=res.report["output_shapes"])
            summaries.append(res.report)
            layer_table += res.layer_table or []
            records.append({"kind": "device", "folder": folder, "nodes": [n.name for n in st.nodes],
                            "inputs": st.inputs, "outputs": st.outputs, "true_macs": res.report["true_macs"],
                            "estimator_cycles": res.report["estimator_cycles"]})
            parts.append(DeviceStep(folder, res.program, st.inputs, st.outputs, [n.name for n in st.nodes]))
        dev_macs = sum(r["true_macs"] for r in records if r["kind"] == "device")
        h_ops = sum(r["host_ops"] for r in records if r["kind"] == "host")
        manifest = TensilManifest(
            target="tensil", onnx="model.onnx", steps=records, true_macs=dev_macs,
            inputs=[TensorSpec(name=t.name, shape=list(t.shape), bits=arch.bits, layout="model") for t in graph.inputs],
            outputs=[TensorSpec(name=t.name, shape=list(graph.shape(t.name)), bits=arch.bits, layout="model")
                     for t in graph.outputs], config=arch.to_dict())
        final = w.commit(manifest)
    for p in parts:
        if isinstance(p, DeviceStep):  # the segment's files moved with the folder
            p.program.model.directory = final / p.folder
            p.program.model.path = final / p.folder / f"{p.program.model.name}.tmodel"
    pipe = TensilPipeline(arch, graph, parts, [t.name for t in graph.inputs], [t.name for t in graph.outputs])
    summary = {"model": nm, "data_type": arch.data_type, "array_size": arch.array_size,
               "segments": sum(r["kind"] == "device" for r in records),
               "host_steps": [{k: r[k] for k in ("ops", "host_ops", "why")} for r in records if r["kind"] == "host"],
               "true_macs": dev_macs, "host_ops": h_ops,
               "host_share": h_ops / (h_ops + dev_macs) if h_ops + dev_macs else 0.0,
               "estimator_cycles": sum(s["estimator_cycles"] for s in summaries),
               "instructions": sum(s.get("instructions", 0) for s in summaries),
               "compile_s": time.perf_counter() - t0}
    files = {"manifest": str(final / "manifest.json"), "onnx": str(final / "model.onnx")}
    summary["layer_table"] = layer_table
    return pipe, summary, files


def pipeline_result(pipe: Any, summary: dict[str, Any], files: dict[str, str]) -> Any:
    """The :class:`~nnisa.core.target.CompileResult` of a segmented model: float samples in, float
    outputs out (the host steps need values, so the simulator takes the model's own tensors)."""
    from ....core.target import CompileResult
    g = pipe.graph
    shapes_out = {k: tuple(g.shape(k)) for k in pipe.outputs}

    def encode_inputs(sample: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: np.asarray(sample[k]).reshape(g.shape(k)) for k in pipe.inputs}

    def decode_outputs(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: (v[0] if shape and shape[0] == 1 else v) for k, shape in shapes_out.items()
                for v in [np.asarray(outputs[k], np.float64).reshape((-1,) + shape[1:])]}

    table = summary.pop("layer_table", None)
    return CompileResult(program=pipe, files=files, report=summary, encode_inputs=encode_inputs,
                         decode_outputs=decode_outputs, sim_options={"mode": "both"}, samples_per_run=None,
                         layer_table=table)
