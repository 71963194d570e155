"""``nnisa demo``: the main job on the bundled models, for every target, as a short story.

1. The frontend: the bundled digits CNN in float and exact int8 against onnxruntime.
2. Each target's reference job (its quick built-in workloads: real programs of the reference tools
   from ``../shared`` where there are some), one line each, against the reference figure.
3. A small ``nnisa compare`` of the bundled CNN and transformer (``digits_vit``): every target
   compiles and simulates them on their test images, compared with onnxruntime, side by side (one
   row per target and model; a target that cannot take a model says why in one line).
Steps 2 and 3 are independent jobs shared by this process and a worker process (:func:`run_steps`;
``NNISA_DEMO_JOBS=1``: all here, one after the other).
Pictures go to ``demo_out/`` (latency against energy and the per-target breakdown of step 3, a
per-core Gantt chart of PIMCOMP-NN's ResNet-18).

The long per-core tables are behind ``--verbose``; ``--json`` prints everything as one object.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

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


_PREPARED: dict[tuple[str, int], Any] = {}


def _prepared(model_name: str, samples: int):
    """The bundled model imported once per process with its first ``samples`` test images."""
    key = (model_name, samples)
    if key not in _PREPARED:
        from .frontend.prepared import PreparedModel, default_inputs
        path = _bundled(model_name)[0]
        _PREPARED[key] = PreparedModel(path, default_inputs(path, samples))
    return _PREPARED[key]


def compare_jobs(samples: int = DEMO_SAMPLES) -> list[tuple]:
    """Step 3 as independent jobs, in the table's order: ``("compare", model, samples, target,
    variant)`` per target and model (and per :attr:`Target.demo_variants` entry on ``digits_cnn``),
    ``("skip", model, 0, target, None)`` where the demo does not run the model (:data:`DEMO_SKIP`)."""
    from .core.errors import NnisaError
    jobs: list[tuple] = []
    for model_name, n in DEMO_MODELS:
        if _bundled(model_name) is None:
            continue
        skipped = []
        for t in target_names():
            if (t, model_name) in DEMO_SKIP:
                skipped.append(("skip", model_name, 0, t, None))
                continue
            jobs.append(("compare", model_name, min(n, samples), t, None))
            try:
                variants = get_target(t).demo_variants if model_name == "digits_cnn" else ()
            except NnisaError:  # not installed: its row says so
                variants = ()
            jobs.extend(("compare", model_name, min(n, samples), t, label) for label, _ in variants)
        jobs.extend(skipped)
    return jobs


def reference_jobs(pictures: Path | None) -> list[tuple]:
    """Step 2 as independent jobs: ``("reference", target, workload, config, gantt)`` per
    :attr:`Target.demo_workloads` entry (the PIM ResNet-18 run draws its Gantt chart)."""
    from .core.errors import NnisaError
    jobs = []
    for name in target_names():
        try:
            workloads = get_target(name).demo_workloads
        except NnisaError:
            continue
        gantt = str(pictures / "pim_resnet18_gantt.png") if name == "pim" and pictures is not None else None
        jobs.extend(("reference", name, workload, config, gantt) for workload, config in workloads)
    return jobs


def run_job(job: tuple) -> dict[str, Any]:
    """One job of :func:`compare_jobs` or :func:`reference_jobs` → its row (in any process)."""
    from .core.errors import NnisaError
    kind = job[0]
    if kind == "skip":
        _, model_name, _, t, _ = job
        return {"target": t, "model": model_name, "status": "skipped", "error": DEMO_SKIP[(t, model_name)]}
    if kind == "compare":
        from .sweep.compare import compare_target
        _, model_name, n, t, variant = job
        row = compare_target(t, _prepared(model_name, n), samples=n, variant=variant)
        if row.get("status", "ok") != "ok" and row.get("error"):  # the story's notes: one line each
            row["error"] = _one_line(row["error"])
        return row
    _, name, workload, config, gantt = job
    row = {"target": name, "workload": workload}
    try:
        row.update(get_target(name).bench(workload, config=config, **({"gantt": gantt} if gantt else {})).to_dict())
    except NnisaError as exc:
        row["summary"] = f"skipped: {exc.message}"
    return row


def targets_step(samples: int = DEMO_SAMPLES) -> list[dict[str, Any]]:
    """``nnisa compare`` of each bundled model on every target; one row per (target, model).

    A model a target cannot take gets a row with the reason, so the machines stay side by side."""
    return [run_job(job) for job in compare_jobs(samples)]


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
    return [run_job(job) for job in reference_jobs(pictures)]


def _worker_job(job: tuple) -> tuple[dict[str, Any], float]:
    """:func:`run_job` in the worker process, with the worker's CPU time so far."""
    return run_job(job), time.process_time()


def _affinity(job: tuple) -> tuple:
    """Scheduling order of the compare jobs: grouped by target, so that each process mostly imports
    and loads the kernels of its own targets (this process takes jobs from the front, after the
    PIM reference job; the worker from the back)."""
    order = ("pim", "dais", "tensil", "pimsab", "cherry")
    return (order.index(job[3]) if job[3] in order else len(order), job[1])


def run_steps(pictures: Path, after_compare: Callable[[list[dict[str, Any]]], None],
              first: Callable[[], None] = lambda: None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float | None]:
    """Steps 2 and 3 in two processes (this one and a worker) sharing one list of jobs: the compare
    jobs (this process from one end, the worker from the other), then ``after_compare(rows)`` here
    (the pictures, which need every row) while the worker starts on the reference jobs, which this
    process joins when it is done.  ``first()`` and the reference jobs that draw a picture (PIM's
    Gantt chart) run here first, while the worker starts: only this process imports matplotlib.  Returns the compare rows, the reference rows (both in
    order) and the worker's CPU time.  ``NNISA_DEMO_JOBS=1`` (or one core): all here, in order."""
    if int(os.environ.get("NNISA_DEMO_JOBS", "2")) < 2 or (os.cpu_count() or 1) < 2:
        first()
        rows = targets_step()
        after_compare(rows)
        return rows, reference_step(pictures), None
    import collections
    import concurrent.futures as cf
    import multiprocessing as mp
    import threading

    # fork (Linux) while this process has only its main thread: the worker starts with this
    # process's imports instead of importing them again (~1 s of CPU); spawn where fork is unsafe
    fork = sys.platform.startswith("linux") and threading.active_count() == 1
    pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("fork" if fork else "spawn"))
    sys.stdout.flush()  # nothing buffered for the worker to write again
    sys.stderr.flush()
    pool.submit(int)  # starts the worker now, before this process starts any thread
    cjobs, rjobs = compare_jobs(), reference_jobs(pictures)
    crows: list[Any] = [None] * len(cjobs)
    rrows: list[Any] = [None] * len(rjobs)
    todo_c = collections.deque(sorted(range(len(cjobs)), key=lambda i: _affinity(cjobs[i])))
    drawing = [i for i, job in enumerate(rjobs) if job[4]]
    todo_r = collections.deque(i for i in range(len(rjobs)) if i not in drawing)
    cond = threading.Condition()
    worker_cpu: list[float | None] = [None]

    def take(back: bool) -> tuple[str, int] | None:
        with cond:
            for kind, todo in (("c", todo_c), ("r", todo_r)):
                if todo:
                    return kind, todo.pop() if back == (kind == "c") else todo.popleft()
        return None

    def store(kind: str, i: int, row: dict[str, Any]) -> None:
        with cond:
            (crows if kind == "c" else rrows)[i] = row
            cond.notify_all()

    def drive() -> None:  # feeds the worker one job at a time
        while (got := take(back=True)) is not None:
            kind, i = got
            try:
                row, worker_cpu[0] = pool.submit(_worker_job, (cjobs if kind == "c" else rjobs)[i]).result()
            except Exception:  # noqa: BLE001 - a worker that died: this process does its jobs
                with cond:
                    (todo_c if kind == "c" else todo_r).append(i)
                    cond.notify_all()
                return
            store(kind, i, row)

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    try:
        first()
        for i in drawing:
            store("r", i, run_job(rjobs[i]))
        while True:  # compare jobs, then wait for the worker's last one
            with cond:
                if not todo_c:
                    if all(r is not None for r in crows):
                        break
                    cond.wait(0.2)
                    continue
                i = todo_c.popleft()
            store("c", i, run_job(cjobs[i]))
        after_compare(crows)
        while (got := take(back=False)) is not None:
            store(got[0], got[1], run_job((cjobs if got[0] == "c" else rjobs)[got[1]]))
        driver.join()
        while (got := take(back=False)) is not None:  # left by a worker that died
            store(got[0], got[1], run_job((cjobs if got[0] == "c" else rjobs)[got[1]]))
    finally:
        pool.shutdown(cancel_futures=True)
    return crows, rrows, worker_cpu[0]


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
    gantt = pictures / "pim_resnet18_gantt.png"
    gantt.unlink(missing_ok=True)  # listed below only when this run drew it
    files: list[str] = []

    def frontend() -> None:  # here while the worker process starts
        fe = out["frontend"] = frontend_step()
        if con:
            con.print(f"1. frontend: {fe['model']} on {fe['test_images']} test images — onnxruntime "
                      f"{fe['onnxruntime_accuracy']:.1%}, our float {fe['float_accuracy']:.1%} (max |err| "
                      f"{fe['float_max_abs_error']:.1e}), exact int8 {fe['int8_accuracy']:.1%}, int8 top-1 "
                      f"agreement {fe['int8_top1_agreement']:.1%}")

    def draw(rows: list[dict[str, Any]]) -> None:  # nnisa compare's pictures, once every row is in
        from .sweep.compare import compare_pictures
        files.extend(compare_pictures(rows, pictures / "targets_latency_energy.png", "bundled models"))

    # steps 2 and 3 share the two cores (neither needs the other's results): printed in order at the end
    rows, refs, worker_cpu = run_steps(pictures, draw, first=frontend)
    out["targets"], out["reference_jobs"] = rows, refs
    # CPU time of each process: on an idle 2-core machine the demo's wall time is about the larger
    out["cpu_s"] = {"main": time.process_time(), "worker": worker_cpu}
    if con:
        con.print("2. reference jobs (real programs of the reference tools where ../shared has them):")
        for r in refs:
            wall = f" [{r['wall_s']:.1f} s]" if "wall_s" in r else ""
            con.print(f"   {r['target']:>7}: {r.get('summary') or r['workload']}{wall}")
    # last: a small `nnisa compare` of the bundled models (the same rows and pictures as that command)
    from .report.tables import side_by_side_table
    if con:
        con.print(side_by_side_table(rows, "3. nnisa compare " + ", ".join(
            f"{m} --samples {min(n, DEMO_SAMPLES)}" for m, n in DEMO_MODELS) + " (test images; vs onnxruntime)"))
    if gantt.exists():
        files.append(str(gantt))
    out["pictures"] = files
    out["wall_s"] = time.perf_counter() - t0
    if con:
        con.print(f"pictures: {', '.join(files) or 'none'}")
        cpu = out["cpu_s"]
        worker = f", worker process {cpu['worker']:.1f} s" if cpu["worker"] is not None else ""
        con.print(f"done in {out['wall_s']:.0f} s (CPU: this process {cpu['main']:.1f} s{worker}); details: "
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
