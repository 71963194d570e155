"""``nnisa demo``: the main job on the bundled models, for every target, as a short story.

1. The frontend: the bundled digits CNN in float and exact int8 against onnxruntime.
2. Each target's reference job (its quick built-in workloads: real programs of the reference tools
   from ``../shared`` where there are some), one line each, against the reference figure.
3. A small ``nnisa compare`` of the bundled CNN and transformer (``digits_vit``): every target
   compiles and simulates them on their test images, compared with onnxruntime, side by side (one
   row per target and model; a target that cannot take a model says why in one line).
Step 2 runs in a second process while step 3 runs (``NNISA_DEMO_JOBS=1``: one after the other).
Pictures go to ``demo_out/`` (latency against energy and the per-target breakdown of step 3, a
per-core Gantt chart of PIMCOMP-NN's ResNet-18).

The long per-core tables are behind ``--verbose``; ``--json`` prints everything as one object.
"""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from .core.fileio import shared_dir
from .core.jsonsafe import dumps
from .core.target import get_target, target_names
from .report.tables import wide_console

#: how many test samples the demo simulates per target and model
DEMO_SAMPLES = int(os.environ.get("NNISA_DEMO_SAMPLES", "16"))
#: bundled trained models the demo runs on every target (those that exist in this installation),
#: with their sample counts: the CNN, and a transformer (issue 27) on fewer samples
DEMO_MODELS = (("digits_cnn", DEMO_SAMPLES), ("digits_vit", max(1, DEMO_SAMPLES // 4)))
#: targets the demo does not run a model on, and why (one line in the table's notes): the demo's
#: time budget, not a limit of the target
DEMO_SKIP = {("dais", "digits_vit"): "not in the demo's time budget (every weight becomes adder trees): "
                                     "nnisa run -t dais digits_vit"}


def default_shared_dir() -> Path:
    """``../shared`` next to the checkout (or ``NNISA_SHARED``)."""
    return shared_dir()


def _machine() -> str:
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def frontend_step() -> dict[str, Any]:
    """Float and exact-integer evaluation of the bundled CNN against onnxruntime."""
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
    q = quantize(graph, {name: x[-64:]})
    qv = next(iter(evaluate_quantized(q, {name: x}, dequantize=True).values()))
    return {"model": path.name, "test_images": int(len(x)),
            "onnxruntime_accuracy": float((ref.argmax(1) == labels).mean()),
            "float_accuracy": float((flt.argmax(1) == labels).mean()),
            "float_max_abs_error": float(np.abs(flt - ref).max()),
            "int8_accuracy": float((qv.argmax(1) == labels).mean()),
            "int8_top1_agreement": float((qv.argmax(1) == ref.argmax(1)).mean()),
            "wall_s": time.perf_counter() - t0}


def _bundled(name: str):
    from .frontend.models import bundled_model_path, bundled_testset
    try:
        return bundled_model_path(name), *bundled_testset(name)
    except Exception:  # noqa: BLE001 - a model this installation does not ship
        return None


def targets_step(samples: int = DEMO_SAMPLES) -> list[dict[str, Any]]:
    """``nnisa compare`` of each bundled model on every target; one row per (target, model).

    A model a target cannot take gets a row with the reason, so the machines stay side by side."""
    from .sweep.compare import compare_model

    rows = []
    for model_name, n in DEMO_MODELS:
        found = _bundled(model_name)
        if found is None:
            continue
        skip = {t for t, m in DEMO_SKIP if m == model_name}
        run = compare_model(found[0], [t for t in target_names() if t not in skip], samples=min(n, samples),
                            variants=model_name == "digits_cnn")
        rows.extend(run)
        rows.extend({"target": t, "model": model_name, "status": "skipped", "error": DEMO_SKIP[(t, model_name)]}
                    for t in target_names() if t in skip)
    for r in rows:  # the story's notes: one line per target that does not run a model
        if r.get("status", "ok") != "ok" and r.get("error"):
            r["error"] = _one_line(r["error"])
    return rows


def _one_line(message: str, width: int = 110) -> str:
    """A refusal as one short line: without the model file's path and the repeated pointer to
    ``nnisa targets --ops``, cut at ``width`` characters."""
    text = re.sub(r"^\S+\.onnx: ", "", message)
    many = re.match(r"(\d+ nodes cannot be compiled for \w+): ", text)
    if many:  # "N nodes cannot be compiled for T: k× Op (names): why; ..." → the operators
        ops = re.findall(r"(\d+× \w+) \(", text[many.end():])
        text = f"{many.group(1)}: {', '.join(ops)} (nnisa targets --ops)"
    return text if len(text) <= width else text[:width - 1].rstrip(" ,;") + "…"


def reference_step(pictures: Path | None) -> list[dict[str, Any]]:
    """Each target's quick built-in workloads (``Target.demo_workloads``), one result each."""
    from .core.errors import NnisaError
    out = []
    for name in target_names():
        try:
            t = get_target(name)
        except NnisaError:
            continue
        for workload, config in t.demo_workloads:
            opts: dict[str, Any] = {}
            if name == "pim" and pictures is not None:
                opts["gantt"] = str(pictures / "pim_resnet18_gantt.png")
            row: dict[str, Any] = {"target": name, "workload": workload}
            try:
                row.update(t.bench(workload, config=config, **opts).to_dict())
            except NnisaError as exc:
                row["summary"] = f"skipped: {exc.message}"
            out.append(row)
    return out


def _timed_reference_step(pictures: Path) -> list[dict[str, Any]]:
    """:func:`reference_step` in the worker process, its CPU time in the first row (``worker_cpu_s``)."""
    c0 = time.process_time()
    rows = reference_step(pictures)
    if rows:
        rows[0]["worker_cpu_s"] = time.process_time() - c0
    return rows


def _start_reference_step(pictures: Path):
    """Start :func:`reference_step` in a worker process (``NNISA_DEMO_JOBS=1``: here, now); returns
    a function that waits for its rows."""
    if int(os.environ.get("NNISA_DEMO_JOBS", "2")) < 2 or (os.cpu_count() or 1) < 2:
        refs = reference_step(pictures)
        return lambda: refs
    import concurrent.futures as cf
    import multiprocessing as mp
    pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))
    fut = pool.submit(_timed_reference_step, pictures)

    def wait() -> list[dict[str, Any]]:
        try:
            return fut.result()
        finally:
            pool.shutdown()
    return wait


def run_demo(shared_dir: str | Path | None = None, as_json: bool = False, verbose: bool = False,
             out_dir: str | Path = "demo_out") -> dict[str, Any]:
    """Run all demo steps and print the story (or one JSON object with ``as_json``)."""
    if shared_dir is not None:
        os.environ["NNISA_SHARED"] = str(shared_dir)
    con = None if as_json else wide_console()
    pictures = Path(out_dir)
    pictures.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out: dict[str, Any] = {"machine": _machine(), "date": time.strftime("%Y-%m-%d")}
    if con:
        con.print(f"[bold]nnisa demo[/bold] — {out['date']}, {out['machine']}")
    fe = out["frontend"] = frontend_step()
    if con:
        con.print(f"1. frontend: {fe['model']} on {fe['test_images']} test images — onnxruntime "
                  f"{fe['onnxruntime_accuracy']:.1%}, our float {fe['float_accuracy']:.1%} (max |err| "
                  f"{fe['float_max_abs_error']:.1e}), exact int8 {fe['int8_accuracy']:.1%}, int8 top-1 agreement "
                  f"{fe['int8_top1_agreement']:.1%}")
    # step 2 runs in a second process while step 3 runs here (the machine has 2 cores; neither step
    # needs the other's results): printed in order once both are done
    pending = _start_reference_step(pictures)
    rows = out["targets"] = targets_step()
    refs = out["reference_jobs"] = pending()
    # CPU time of each process: on an idle 2-core machine the demo's wall time is about the larger
    out["cpu_s"] = {"main": time.process_time(), "reference_worker": refs[0].pop("worker_cpu_s", None) if refs else None}
    if con:
        con.print("2. reference jobs (real programs of the reference tools where ../shared has them):")
        for r in refs:
            wall = f" [{r['wall_s']:.1f} s]" if "wall_s" in r else ""
            con.print(f"   {r['target']:>7}: {r.get('summary') or r['workload']}{wall}")
    # last: a small `nnisa compare` of the bundled models (the same rows and pictures as that command)
    from .report.tables import side_by_side_table
    from .sweep.compare import compare_pictures
    if con:
        con.print(side_by_side_table(rows, "3. nnisa compare " + ", ".join(
            f"{m} --samples {min(n, DEMO_SAMPLES)}" for m, n in DEMO_MODELS) + " (test images; vs onnxruntime)"))
    files = compare_pictures(rows, pictures / "targets_latency_energy.png", "bundled models")
    if (pictures / "pim_resnet18_gantt.png").exists():
        files.append(str(pictures / "pim_resnet18_gantt.png"))
    out["pictures"] = files
    out["wall_s"] = time.perf_counter() - t0
    if con:
        con.print(f"pictures: {', '.join(files) or 'none'}")
        cpu = out["cpu_s"]
        worker = f", reference jobs' process {cpu['reference_worker']:.0f} s" if cpu["reference_worker"] else ""
        con.print(f"done in {out['wall_s']:.0f} s (CPU: this process {cpu['main']:.0f} s{worker}); details: "
                  "nnisa demo --verbose, or --json")
        if verbose:
            _verbose(con, rows, refs)
    else:
        print(dumps(out))
    return out


def _verbose(con: Console, rows: list[dict[str, Any]], refs: list[dict[str, Any]]) -> None:
    """The long tables: every figure of every run and reference job."""
    from .report.tables import compare_table, print_stats
    con.print(compare_table([{k: v for k, v in r.items() if k != "extra"} for r in rows], "every figure of step 3"))
    for r in refs:
        print_stats({k: v for k, v in r.items() if k not in ("summary",)}, f"{r['target']}: {r['workload']}", con)
