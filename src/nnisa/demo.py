"""``nnisa demo``: the main job on the bundled model, for every target that can run it.

1. The frontend: import the bundled digits CNN, evaluate it in float and quantized integer
   arithmetic, and compare both with onnxruntime on the shipped test set.
2. Every target that compiles and simulates: compile the bundled models, simulate them, compare
   with onnxruntime, and print the targets side by side.
3. The PIM conformance program (PIMCOMP-NN's ResNet-18, from ``../shared``): read it and print its
   instruction mix per core and field ranges.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from .core.jsonsafe import dumps
from .core.target import get_target, target_names
from .report.tables import compare_table, kv_table

#: how many test samples the demo simulates per target (simulation is per sample for some)
DEMO_SAMPLES = int(os.environ.get("NNISA_DEMO_SAMPLES", "32"))


def default_shared_dir() -> Path:
    """``../shared`` next to the checkout (or NNISA_SHARED)."""
    if os.environ.get("NNISA_SHARED"):
        return Path(os.environ["NNISA_SHARED"])
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared"
        if (parent / "pyproject.toml").exists() and cand.is_dir():
            return cand
    return Path.cwd().parent / "shared"


def frontend_step(con: Console | None) -> dict[str, Any]:
    """Float and quantized reference evaluation of the bundled model vs onnxruntime."""
    from .api import onnx_reference
    from .frontend import evaluate_float, evaluate_quantized, load_model, quantize
    from .frontend.models import bundled_model_path, bundled_testset

    path = bundled_model_path("digits_cnn")
    x, labels = bundled_testset("digits_cnn")
    t0 = time.perf_counter()
    graph = load_model(path)
    name = graph.inputs[0].name
    ref = next(iter(onnx_reference(path, {name: x}).values()))
    flt = next(iter(evaluate_float(graph, {name: x}).values()))
    q = quantize(graph, {name: x[: min(len(x), 64)]})
    qout = evaluate_quantized(q, {name: x}, dequantize=True)
    qv = next(iter(qout.values()))
    res = {
        "model": str(path.name),
        "test_samples": int(len(x)),
        "float_max_abs_error_vs_onnxruntime": float(np.abs(flt - ref).max()),
        "onnxruntime_accuracy": float((ref.argmax(1) == labels).mean()),
        "float_accuracy": float((flt.argmax(1) == labels).mean()),
        "int8_accuracy": float((qv.argmax(1) == labels).mean()),
        "int8_top1_agreement_with_onnxruntime": float((qv.argmax(1) == ref.argmax(1)).mean()),
        "wall_s": time.perf_counter() - t0,
    }
    if con:
        con.print(kv_table("1. frontend: bundled digits CNN, float and int8 reference vs onnxruntime", res))
    return res


#: bundled trained models the demo runs on every target (those that exist in this installation)
DEMO_MODELS = ("digits_cnn", "digits_mlp")


def _bundled(name: str):
    from .frontend.models import bundled_model_path, bundled_testset
    try:
        path = bundled_model_path(name)
        x, labels = bundled_testset(name)
    except Exception:  # a model this installation does not ship
        return None
    return path, x, labels


def targets_step(con: Console | None) -> list[dict[str, Any]]:
    """Compile + simulate each bundled model on every target that compiles and simulates.

    A model a target cannot compile (an operator it does not support) gets a row saying so,
    so the table shows the machines side by side.
    """
    import onnx

    from .api import run_model
    from .core.errors import NnisaError

    rows = []
    models = [(m, b) for m in DEMO_MODELS if (b := _bundled(m)) is not None]
    for name in target_names():
        try:
            tgt = get_target(name)
        except NnisaError:
            continue
        caps = tgt.capabilities()
        if "compile" not in caps or "simulate" not in caps:
            continue
        for (model_name, (path, x, labels)), (label, opts) in [(m, v) for m in models
                                                               for v in (("", {}),) + tuple(tgt.demo_variants)]:
            in_name = onnx.load(str(path)).graph.input[0].name
            row: dict[str, Any] = {"target": f"{name} ({label})" if label else name, "model": model_name}
            try:
                rep = run_model(name, path, inputs={in_name: x[:DEMO_SAMPLES]}, **opts)
            except NnisaError as exc:
                row["note"] = f"not compiled: {exc.message}"
                rows.append(row)
                continue
            cr = rep.get("compile_report", {})
            row.update({"samples": rep["samples"], "bit_exact": rep.get("bit_exact"),
                        "top1_agree": rep["top1_agreement"], "max_abs_err": rep["max_abs_error"],
                        "cycles": rep.get("cycles"), "latency_ns": rep.get("latency_ns"),
                        "period_ns": rep.get("period_ns"),
                        "energy_pj": rep.get("energy_pj"), "instructions": rep.get("instructions"),
                        "adders": cr.get("adders"), "wall_s": rep["wall_s"]})
            rows.append({k: v for k, v in row.items() if v is not None})
    if con:
        if rows:
            t = compare_table(rows, "2. bundled models compiled, simulated and compared with onnxruntime")
            t.caption = ((t.caption + "\n") if t.caption else "") + (
                "latency_ns: one input, in -> out; period_ns: steady-state time per input of a stream "
                "(only for runs that simulate a stream of inputs)")
            con.print(t)
        else:
            con.print("2. no target compiles ONNX models yet")
    return rows


def pim_conformance_step(con: Console | None, shared: Path) -> dict[str, Any] | None:
    """Statistics of PIMCOMP-NN's ResNet-18 program (instruction mix per core, field ranges)."""
    prog_path = shared / "conformance" / "pim" / "resnet18_batch_8x8.json.gz"
    if not prog_path.exists():
        if con:
            con.print(f"3. skipped: {prog_path} not found (the shared/ directory is not next to the checkout)")
        return None
    t = get_target("pim")
    t0 = time.perf_counter()
    prog = t.read(prog_path)
    load_s = time.perf_counter() - t0
    st = t.stats(prog)
    st["load_s"] = load_s
    if con:
        from .report.tables import print_stats
        print_stats(st, f"3. PIM conformance program {prog_path.name} (read in {load_s:.2f} s)", con)
    return st


def run_demo(shared_dir: str | Path | None = None, as_json: bool = False) -> dict[str, Any]:
    """Run all demo steps; print rich tables (or one JSON object with ``as_json``)."""
    con = None if as_json else Console()
    shared = Path(shared_dir) if shared_dir else default_shared_dir()
    out: dict[str, Any] = {"frontend": frontend_step(con), "targets": targets_step(con)}
    out["pim_conformance"] = pim_conformance_step(con, shared)
    if as_json:
        print(dumps(out))
    return out
