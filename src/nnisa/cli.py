"""The ``nnisa`` command line: one set of subcommands for every target.

User errors print one line on stderr (``nnisa: error: <file:line: message>``) and exit with status
2 (3 for a deadlocked program, 4 when the simulated time limit is reached), without a traceback.
``--json`` makes a command print exactly one JSON object on stdout.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click
import numpy as np

from .core.errors import NnisaError, OptionError
from .core.formats import is_bundle_dir
from .core.layers import layer_dicts
from .core.fileio import load_arrays, save_arrays, write_atomic
from .core.target import Target, get_target, target_names

from .cli_common import (_MEMORY_LIMIT, OUT_OF_MEMORY, TargetCommand, _cfg, _limit_memory, _model_arg, config_option,
                         simulate_folder,
                         console, emit_json, json_option, layers_option, option_option,
                         print_layer_rows, parse_options, progress_bar, read_program,
                         show, status, target_option)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nnisa")
@click.option("--max-memory", envvar="NNISA_MAX_MEMORY", metavar="SIZE",
              help="Fail cleanly if the command needs more than SIZE of memory (e.g. 4G; env NNISA_MAX_MEMORY).")
def cli(max_memory: str | None) -> None:
    """nnisa: exact codecs, simulators and ONNX compilers for accelerator ISAs."""
    _limit_memory(max_memory)


@cli.command("targets")
@click.option("--ops", "ops", is_flag=True, help="The operator matrix: which IR operators each compiler lowers "
              "(device, host or refused).")
@json_option
def targets_cmd(ops: bool, as_json: bool) -> None:
    """List the targets and what each supports."""
    if ops:
        _operators_cmd(as_json)
        return
    rows = []
    for name in target_names():
        try:
            t = get_target(name)
            rows.append({"target": name, "description": t.description, "capabilities": t.capabilities(),
                         "operators": t.operators(),
                         "formats": t.formats, "presets": t.config_presets(), "workloads": t.workloads(),
                         "options": [{"name": o.name, "type": o.type_name, "default": o.default,
                                      "choices": list(o.choices) if o.choices else None, "help": o.help,
                                      "commands": list(o.commands)} for o in t.options]})
        except NnisaError as exc:
            rows.append({"target": name, "description": str(exc), "capabilities": [], "operators": {}, "formats": {},
                         "presets": {}, "workloads": {}, "options": []})
    if as_json:
        emit_json({"targets": rows})
        return
    from rich.table import Table
    table = Table(title="nnisa targets")
    for col in ("target", "description", "capabilities", "formats", "presets", "workloads", "-O options"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["target"], r["description"], ", ".join(r["capabilities"]), ", ".join(r["formats"]),
                      ", ".join(r["presets"]), ", ".join(r["workloads"]), str(len(r["options"])))
    table.caption = "options per command: nnisa COMMAND --help; everything: nnisa targets --json"
    console().print(table)


def _operators_cmd(as_json: bool) -> None:
    """``nnisa targets --ops``: the target × operator matrix from the lowering tables."""
    from .report.operators import operator_matrix, print_matrix
    matrix = operator_matrix()
    if as_json:
        emit_json({"operators": matrix})
        return
    print_matrix(matrix, console())


def _dims(shape: list) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


@cli.command("models")
@json_option
def models_cmd(as_json: bool) -> None:
    """List the bundled models (names that run, compile and compare accept in place of a file)."""
    from .frontend.models import bundled_models
    rows = bundled_models()
    if as_json:
        emit_json({"models": rows})
        return
    from rich.table import Table
    table = Table(title="bundled models (nnisa run -t TARGET NAME)")
    for col in ("name", "input shape", "output shape", "what it is"):
        table.add_column(col)
    for r in rows:
        ins = ", ".join(f"{k} {_dims(v['shape'])}" + ("" if v["dtype"] == "float32" else f" {v['dtype']}")
                        for k, v in r["inputs"].items())
        table.add_row(r["name"], ins, ", ".join(f"{k} {_dims(v)}" for k, v in r["outputs"].items()),
                      r["description"])
    console().print(table)


@cli.command("isa", cls=TargetCommand)
@target_option
@config_option
@option_option
@json_option
def isa_cmd(target_name: str, config, options: tuple[str, ...], as_json: bool) -> None:
    """Print the instruction reference table (Markdown)."""
    t = get_target(target_name)
    md = t.isa_markdown(**_cfg(config), **parse_options(t, "isa", options))
    if as_json:
        emit_json({"target": target_name, "markdown": md})
    else:
        click.echo(md, nl=False)


def _write_or_print(text: str, output: str | None) -> None:
    if output:
        write_atomic(output, text)
    else:
        click.echo(text, nl=False)


@cli.command("asm", cls=TargetCommand)
@target_option
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, help="Output program (format from the extension).")
@config_option
@option_option
@json_option
def asm_cmd(target_name, source, output, config, options, as_json):
    """Assemble a text program and write it (binary, JSON, ...)."""
    t = get_target(target_name)
    opts = parse_options(t, "asm", options)
    text = _read_text(source)
    prog = t.assemble(text, file=source, **_cfg(config), **opts)
    t.write(prog, output, **_cfg(config), **opts)
    _report_written(as_json, target_name, source, output, prog)


@cli.command("disasm", cls=TargetCommand)
@target_option
@click.argument("program", type=click.Path())
@click.option("-o", "--output", help="Write the text here instead of stdout.")
@config_option
@option_option
@json_option
def disasm_cmd(target_name, program, output, config, options, as_json):
    """Disassemble a program file to canonical text."""
    t = get_target(target_name)
    opts = parse_options(t, "disasm", options)
    text = t.disassemble(read_program(t, program, **_cfg(config), **opts), **_cfg(config), **opts)
    if as_json:
        if output:
            write_atomic(output, text)
        emit_json({"target": target_name, "input": program, "output": output,
                   **({} if output else {"text": text})})
    else:
        _write_or_print(text, output)


@cli.command("convert", cls=TargetCommand)
@target_option
@click.argument("source", type=click.Path())
@click.argument("dest", type=click.Path())
@config_option
@option_option
@json_option
def convert_cmd(target_name, source, dest, config, options, as_json):
    """Convert a program between formats (chosen by the file extensions; see `nnisa targets`).

    Encoding options go through -O, e.g. ``-O word_bits=32 -O extended=true``.
    """
    t = get_target(target_name)
    opts = parse_options(t, "convert", options)
    with status(f"reading {source}", not as_json):
        prog = read_program(t, source, **_cfg(config))
    with status(f"writing {dest}", not as_json):
        t.write(prog, dest, **_cfg(config), **opts)
    _report_written(as_json, target_name, source, dest, prog)


@cli.command("stats", cls=TargetCommand)
@target_option
@click.argument("program", type=click.Path())
@config_option
@option_option
@json_option
def stats_cmd(target_name, program, config, options, as_json):
    """Static statistics of a program: instruction mix, field ranges."""
    t = get_target(target_name)
    opts = parse_options(t, "stats", options)
    with status(f"reading {program}", not as_json):
        st = t.stats(read_program(t, program, **_cfg(config), **opts), **_cfg(config), **opts)
    show(as_json, {"target": target_name, "program": program, **st} if as_json else st, "print_stats",
         f"{target_name}: {Path(program).name}")


calibration_option = click.option(
    "--calibration", type=click.Path(dir_okay=False), default=None,
    help="Calibration inputs (.npy/.npz/.csv, batch first) for quantization; default: data disjoint from the "
         "evaluated samples.")


def _with_calibration(t, opts: dict, calibration: str | None) -> dict:
    """Pass ``--calibration FILE`` to targets that quantize (they declare the ``calibration`` option)."""
    if calibration is None:
        return opts
    if not any(o.name == "calibration" for o in t.options):
        raise OptionError(f"target {t.name} does not take --calibration")
    return {**opts, "calib": calibration}


@cli.command("compile", cls=TargetCommand)
@target_option
@click.argument("model", type=click.Path(dir_okay=False))
@config_option
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output directory.")
@calibration_option
@layers_option
@option_option
@json_option
def compile_cmd(target_name, model, config, out_dir, calibration, show_layers, options, as_json):
    """Compile an ONNX model (a file or a bundled name: nnisa models) for a target."""
    t = get_target(target_name)
    model = _model_arg(model)
    opts = _with_calibration(t, parse_options(t, "compile", options), calibration)
    t0 = time.perf_counter()
    with status(f"compiling {model} for {target_name}", not as_json):
        res = t.compile(model, config=config, out_dir=out_dir, **opts)
    from .frontend.prepared import record_model
    record_model(out_dir, model)  # the model's own shapes: nnisa sim takes and gives them
    summary = {"target": target_name, "model": model, "out_dir": out_dir, "files": res.files,
               "compile_s": time.perf_counter() - t0, "report": res.report}
    if res.layer_table is not None:
        summary["layers"] = layer_dicts(res.layer_table)
    show(as_json, {k: v for k, v in summary.items() if k != "layers" or as_json}, "print_mapping")
    print_layer_rows(as_json, show_layers, summary.get("layers"), t, f"{Path(model).name} on {target_name}: "
                     "per layer, compiler's figures", f"the {target_name} compiler gives no per-layer table")


@cli.command("sim", cls=TargetCommand)
@target_option
@click.argument("program", type=click.Path())
@config_option
@click.option("--inputs", type=click.Path(dir_okay=False), help="Inputs (.npy, .npz or .csv).")
@click.option("--outputs", type=click.Path(dir_okay=False), help="Write outputs here (.npy, .npz, .csv).")
@click.option("--mode", help="Simulation mode (target-specific, e.g. timing/functional/both).")
@click.option("--trace", type=click.Path(dir_okay=False), help="Write a Chrome/Perfetto trace (JSON).")
@click.option("--gantt", type=click.Path(dir_okay=False), help="Draw a per-core Gantt chart (PNG).")
@click.option("--report", "report_style", type=click.Choice(["table", "pimsim"]), default="table",
              show_default=True, help="Report style (pimsim = the reference simulator's text block).")
@click.option("--raw", is_flag=True, help="A compiled folder's inputs and outputs as the program's integers "
              "(default: float model values, quantized and dequantized as its manifest says).")
@layers_option
@option_option
@json_option
def sim_cmd(target_name, program, config, inputs, outputs, mode, trace, gantt, report_style, raw, show_layers,
            options, as_json):
    """Simulate a program: output values plus cycles and energy."""
    t = get_target(target_name)
    opts = parse_options(t, "sim", options)
    if report_style != "table":
        opts["report"] = report_style
        opts["source"] = program
    if mode is not None:
        opts["mode"] = mode
    if raw and any(o.name == "raw_outputs" for o in t.options):  # a target that decodes its own outputs
        opts.setdefault("raw_outputs", True)
    if (trace or gantt) and not t.has_timeline:
        raise OptionError(f"target {target_name} records no timeline (--trace/--gantt)")
    t0 = time.perf_counter()
    with status(f"reading {program}", not as_json):
        prog = read_program(t, program, **_cfg(config))
    data = load_arrays(inputs) if inputs else None
    manifest = _quantized_bundle(t, program, raw)
    with status("simulating", not as_json):
        if data is not None and not raw and is_bundle_dir(program):  # the model's own shapes in and out
            res, n = simulate_folder(t, prog, program, data, config=config, timeline=bool(trace or gantt), **opts)
            res.stats.extra["samples"] = n
        else:
            res = t.simulate(prog, config=config, inputs=data, timeline=bool(trace or gantt), **opts)
            if manifest is not None:
                from .core.bundle import dequantize_outputs
                res.outputs = dequantize_outputs(manifest.outputs, res.outputs)
    if outputs:
        save_arrays(outputs, res.outputs)
    stats = res.stats.to_dict()
    if trace or gantt:
        if res.timeline is None:
            raise OptionError(f"target {target_name} recorded no timeline for this run (--trace/--gantt)")
        from .report.timeline import draw_timeline
        stats.update(draw_timeline(res.timeline, gantt=gantt, trace=trace))
    stats["wall_s"] = time.perf_counter() - t0
    if as_json:
        emit_json({"target": target_name, "program": program, **stats,
                   "outputs": {k: list(np.shape(v)) for k, v in res.outputs.items()}})
    elif res.report_text:
        click.echo(res.report_text)
    else:
        from .report.tables import print_sim
        rows = stats.pop("layers", None)
        print_sim(stats, res.outputs, title=f"{target_name}: {Path(program).name}")
        print_layer_rows(as_json, show_layers, rows, t, f"{target_name}: {Path(program).name} per layer",
                         f"the {target_name} simulator attributes no figures to layers for this program")


def _quantized_bundle(t: Target, program: str, raw: bool):
    """The manifest of a compiled folder whose target computes on its integers (float values in and
    out are then converted here, issue 28 item 3), else None."""
    if raw or not t.bundle_quantized_io or not is_bundle_dir(program):
        return None
    from .core.bundle import read_manifest
    return read_manifest(program)


@cli.command("run", cls=TargetCommand)
@target_option
@click.argument("model", type=click.Path(dir_okay=False), required=False)
@config_option
@click.option("--inputs", type=click.Path(dir_okay=False), help="Float inputs (.npz/.npy, batch first).")
@click.option("--outputs", type=click.Path(dir_okay=False), help="Write the simulated float outputs here.")
@click.option("--samples", default=1, show_default=True, type=click.IntRange(min=1),
              help="Samples when no inputs are given.")
@click.option("-o", "--out-dir", type=click.Path(file_okay=False), help="Keep the compiled files here.")
@click.option("--gantt", type=click.Path(dir_okay=False), help="Draw the first sample's Gantt chart (PNG), where "
              "the target records a timeline (else one warning says why not).")
@click.option("--trace", type=click.Path(dir_okay=False), help="Write the first sample's Chrome/Perfetto trace.")
@calibration_option
@layers_option
@option_option
@json_option
def run_cmd(target_name, model, config, inputs, outputs, samples, out_dir, gantt, trace, calibration, show_layers,
            options, as_json):
    """Compile, simulate and compare with onnxruntime.

    MODEL is an ONNX file or a bundled model's name (nnisa models); without one, the target's
    default bundled model runs."""
    from .api import run_model
    t = get_target(target_name)
    model = _model_arg(model, target_name)
    opts = _with_calibration(t, parse_options(t, "run", options), calibration)
    data = load_arrays(inputs) if inputs else None
    if data is not None:  # a mismatch names the inputs file
        from .api import check_inputs
        from .core.errors import FormatError
        try:
            data = check_inputs(model, data)
        except FormatError as e:
            if e.file is not None:
                raise
            raise FormatError(e.message, file=inputs) from None
    with progress_bar(f"{Path(model).name} on {target_name}", not as_json) as update:
        report = run_model(target_name, model, inputs=data, samples=samples, config=config,
                           out_dir=out_dir, save_outputs=outputs, progress=update, gantt=gantt, trace=trace, **opts)
    show(as_json, report, "print_run")
    source = "simulation" if report.get("layers_source") == "simulation" else "compiler's figures"
    print_layer_rows(as_json, show_layers, report.get("layers"), t,
                     f"{Path(model).name} on {target_name}: per layer ({source})",
                     f"target {target_name} reports no per-layer figures")


@cli.command("bench", cls=TargetCommand)
@target_option
@click.argument("workload", required=False)
@config_option
@option_option
@json_option
def bench_cmd(target_name, workload, config, options, as_json):
    """Run one of a target's built-in workloads (no WORKLOAD: list them)."""
    t = get_target(target_name)
    if workload is None:
        names = t.workloads()
        show(as_json, {"target": target_name, "workloads": names} if as_json else (names or {"(none)": ""}),
             "print_kv", f"{target_name}: built-in workloads (nnisa bench -t {target_name} NAME)")
        return
    opts = parse_options(t, "bench", options)
    t.check_workload(workload)
    t0 = time.perf_counter()
    with status(f"running {workload} on {target_name}", not as_json):
        st = t.bench(workload, **_cfg(config), **opts)
    if st.wall_s is None:
        st.wall_s = time.perf_counter() - t0
    show(as_json, {"target": target_name, "workload": workload, **st.to_dict()}, "print_kv",
         f"{target_name}: {workload}")


@cli.command("demo")
@click.option("--shared", type=click.Path(file_okay=False), default=None,
              help="Path of the shared/ directory with conformance data (default: ../shared).")
@click.option("--out-dir", type=click.Path(file_okay=False), default="demo_out", show_default=True,
              help="Where the pictures go.")
@click.option("--verbose", "-v", is_flag=True, help="Also print every figure of every run (long tables).")
@json_option
def demo_cmd(shared, out_dir, verbose, as_json):
    """Run the main job on the bundled models for every target, side by side."""
    from .demo import run_demo
    run_demo(shared_dir=shared, as_json=as_json, verbose=verbose, out_dir=out_dir)


@cli.command("compare")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--targets", "targets_spec", default="all", show_default=True,
              help="Comma-separated targets, or all.")
@click.option("--samples", default=8, show_default=True, type=click.IntRange(min=1, max=100_000),
              help="Inputs simulated per target (the bundled test set for bundled models, else random).")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Draw latency against energy here (PNG) and the per-target breakdown next to it.")
@click.option("--config", "configs", multiple=True, metavar="TARGET=CFG",
              help="A target's configuration (preset or file), e.g. --config pim=pimsim_config.json (repeatable).")
@click.option("-O", "--option", "options", multiple=True, metavar="TARGET:KEY=VALUE",
              help="A target's -O option, e.g. -O pim:schedule=element (repeatable; see nnisa run --help).")
@click.option("--gantt", type=click.Path(dir_okay=False), help="(not drawn by compare: see the warning)")
@json_option
def compare_cmd(model, targets_spec, samples, plot, configs, options, gantt, as_json):
    """Compile and run one ONNX model (a file or a bundled name) on every target, one row per target."""
    from .sweep.compare import compare_model, compare_pictures, resolve_targets
    model = _model_arg(model)
    names = resolve_targets(targets_spec)
    cfgs, opts = _per_target(names, configs, options)
    if gantt:
        import warnings
        warnings.warn("compare --gantt: a comparison records no per-unit timeline; draw one per target with "
                      "nnisa run -t TARGET MODEL --gantt FILE", stacklevel=1)
    t0 = time.perf_counter()

    def progress(name: str) -> None:  # one line per stage, with the elapsed time (stderr)
        if not as_json:
            click.echo(f"[{names.index(name) + 1}/{len(names)}] {name} ({time.perf_counter() - t0:.0f} s)", err=True)
    rows = compare_model(model, names, samples=samples, configs=cfgs, options=opts, progress=progress)
    files = compare_pictures(rows, plot, Path(model).name) if plot else []
    if as_json:
        emit_json({"model": model, "samples": samples, "targets": rows, "pictures": files})
        return
    from .report.tables import side_by_side_table, wide_console
    con = wide_console()
    con.print(side_by_side_table(rows, f"{Path(model).name} on {', '.join(names)} ({samples} inputs each)"))
    for f in files:
        click.echo(f"wrote {f}", err=True)


def _per_target(names: list[str], configs: tuple[str, ...], options: tuple[str, ...]) -> tuple[dict, dict]:
    """``--config TARGET=CFG`` and ``-O TARGET:key=value`` of ``compare`` → per-target configs and
    validated options (an unknown target, or one not compared, is a one-line error)."""
    cfgs: dict[str, str] = {}
    for item in configs:
        name, sep, cfg = item.partition("=")
        if not sep or not cfg or name.strip() not in names:
            raise OptionError(f"--config {item!r}: expected TARGET=CFG with TARGET one of {', '.join(names)}")
        cfgs[name.strip()] = cfg
    pairs: dict[str, list[str]] = {}
    for item in options:
        name, sep, kv = item.partition(":")
        if not sep or name.strip() not in names:
            raise OptionError(f"-O {item!r}: expected TARGET:KEY=VALUE with TARGET one of {', '.join(names)}")
        pairs.setdefault(name.strip(), []).append(kv)
    return cfgs, {n: parse_options(get_target(n), "run", tuple(p)) for n, p in pairs.items()}


class _SweepGroup(click.Group):
    """``nnisa sweep SPEC ...`` runs a sweep; ``nnisa sweep report DIR`` reports one."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["run", *args]  # bare `nnisa sweep`: the one-line "missing argument SPEC"
        return super().parse_args(ctx, args)


@cli.group("sweep", cls=_SweepGroup)
def sweep_group():
    """Design-space sweeps: nnisa sweep SPEC -o DIR [--jobs N] [--ray [ADDRESS]] [--resume]; nnisa sweep report DIR."""


@sweep_group.command("run")
@click.argument("spec", type=click.Path(dir_okay=False), required=False)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False),
              help="Results folder (points.jsonl journal, results.parquet); required unless --dry-run.")
@click.option("--jobs", "-j", type=click.IntRange(min=1, max=4096), default=None,
              help="Points at once (default: the cores here, or the Ray cluster's CPUs).")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="[ADDRESS]",
              help="Run on Ray: alone, a private local instance; auto, HOST:PORT or ray://HOST:10001 for a cluster.")
@click.option("--resume", is_flag=True, help="Continue a sweep in the folder, skipping points already done.")
@click.option("--dry-run", is_flag=True, help="List the points and stop.")
@json_option
def sweep_run_cmd(spec, out_dir, jobs, ray_address, resume, dry_run, as_json):
    """Run every point of a sweep spec (YAML or JSON): models x targets x configuration grids."""
    from .sweep.run import point_list, run_sweep
    if ray_address is not None and ray_address not in ("local", "auto") and ":" not in ray_address:
        raise click.BadParameter(f"{ray_address!r} is not local, auto, HOST:PORT or ray://HOST:PORT (put SPEC "
                                 "before --ray, or write --ray=ADDRESS)", param_hint="--ray")
    if spec is None:
        raise click.UsageError("missing argument SPEC (a sweep spec, .yaml or .json)")
    if dry_run:
        pts = point_list(spec)
        if as_json:
            emit_json({"spec": spec, "points": [p.to_dict() for p in pts]})
        else:
            for p in pts:
                settings = ", ".join(f"{k}={v}" for k, v in {**p.overrides, **p.options}.items()) or "(defaults)"
                click.echo(f"{p.id}  {p.target:<7} {p.model:<16} {settings}")
            click.echo(f"{len(pts)} points", err=True)
        return
    if not out_dir:
        raise click.UsageError("missing option -o/--output (the results folder)")
    summary = run_sweep(spec, out_dir, jobs=jobs, ray=ray_address, resume=resume, progress=not as_json)
    if as_json:
        emit_json(summary)
        return
    from .report.tables import print_kv
    print_kv(summary, f"sweep {summary['sweep']}")
    failed = summary["points"] - summary["skipped"] - summary["ok"]
    if failed:
        import warnings
        warnings.warn(f"{failed} point(s) failed; they are in the table with their errors "
                      f"(nnisa sweep report {out_dir})", stacklevel=1)


@sweep_group.command("report")
@click.argument("results", type=click.Path())
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False),
              help="Where report.md and the PNGs go (default: RESULTS/report).")
@json_option
def sweep_report_cmd(results, out_dir, as_json):
    """Pareto fronts (latency, energy, area proxy, error) of a sweep's results: PNG + Markdown."""
    from .sweep.report import sweep_report
    rep = sweep_report(results, out_dir)
    if as_json:
        emit_json(rep)
        return
    for t, f in rep["fronts"].items():
        click.echo(f"{t}: {len(f['front'])} Pareto-optimal of {f['points']} points ({', '.join(f['objectives'])})")
    click.echo(f"{rep['points']} points, {rep['ok']} ok, {rep['failed']} failed")
    for f in rep["files"]:
        click.echo(f"wrote {f}", err=True)


def _read_text(path: str) -> str:
    from .core.fileio import read_text
    return read_text(path)


def _report_written(as_json, target_name, source, dest, prog):
    n = len(prog) if hasattr(prog, "__len__") else None
    if as_json:
        emit_json({"target": target_name, "input": source, "output": dest, "instructions": n})
    else:
        click.echo(f"wrote {dest}" + (f" ({n} instructions)" if n is not None else ""), err=True)


def _error(exc: NnisaError, as_json: bool) -> None:
    """One line on stderr (and with --json one JSON object on stdout); exit with the error's code."""
    report = getattr(exc, "report", "") or ""
    if as_json:
        emit_json({"error": str(exc), "error_type": type(exc).__name__, "exit_code": exc.exit_code,
                   **({"report": report} if report else {})})
    click.echo(f"nnisa: error: {exc}", err=True)
    if report and not as_json:
        click.echo(report.rstrip("\n"), err=True)
    _exit(exc.exit_code)


def _on_signal(signum, _frame):
    """SIGTERM/SIGHUP unwind like Ctrl-C, so temporary folders and files are cleaned up."""
    raise KeyboardInterrupt


def _lost_interrupt_hook(unraisable) -> None:
    """``sys.unraisablehook`` of the CLI: a KeyboardInterrupt (Ctrl-C, or SIGTERM/SIGHUP through
    :func:`_on_signal`) raised while C code runs a Python callback — llvmlite's object cache
    while numba compiles is a ctypes callback — cannot propagate and would be dropped, so the run
    would go on and exit 0.  SIGINT is sent again shortly (it lands once the callback returned), so
    the run still stops, cleans up and exits 130.  Anything else goes to the default hook."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        import os
        import signal
        import threading
        timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        timer.daemon = True
        timer.start()
        return
    sys.__unraisablehook__(unraisable)


_OWN_PROCESS: list[bool] = []  # main() runs as the program (argv from the command line)


def _install_signal_handlers() -> None:
    import signal
    sys.unraisablehook = _lost_interrupt_hook
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, _on_signal)
            except (ValueError, OSError):  # not the main thread (embedded use): leave it alone
                pass


def _interrupted() -> None:
    """Exit 130 after Ctrl-C/SIGTERM.  Temporary files were removed while the stack unwound; exit
    at once so that a second signal arriving during interpreter shutdown cannot turn the status into
    a death by signal."""
    import os
    from .core.interrupts import deferred_interrupts
    with deferred_interrupts():
        # what a normal exit would run for multiprocessing (a sweep's pool): its temporary folder
        # (pymp-*) and finalizers; os._exit below skips atexit
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None and hasattr(mp_util, "_exit_function"):
            try:
                mp_util._exit_function()
            except Exception:  # noqa: BLE001 - best effort while stopping
                pass
        click.echo("nnisa: interrupted", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)


def _from_interrupt(exc: BaseException) -> bool:
    """A ``SystemError`` that a signal caused: Python runs the handler (which raises
    KeyboardInterrupt) when a numba kernel returns, and the dispatcher then reports "returned a
    result with an exception set" with the KeyboardInterrupt as its cause."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 16:
        if isinstance(cur, KeyboardInterrupt):
            return True
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    return False


def _fail(message: str, code: int, as_json: bool, error_type: str) -> None:
    if as_json:
        emit_json({"error": message, "error_type": error_type, "exit_code": code})
    click.echo(f"nnisa: error: {message}", err=True)
    _exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI and turn user errors into one-line messages.

    Python warnings are collected and printed as one ``nnisa: warning:`` line each after a
    successful command (an error prints only its own line).
    """
    import warnings
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None:
        _OWN_PROCESS.append(True)
    as_json = "--json" in args
    _install_signal_handlers()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            cli.main(args=args, prog_name="nnisa", standalone_mode=False)
        except click.exceptions.Abort:  # click's form of Ctrl-C (and of SIGTERM/SIGHUP, see _on_signal)
            _interrupted()
        except click.ClickException as exc:
            _fail(NnisaError(exc.format_message()).__str__(), exc.exit_code, as_json, "UsageError")
        except NnisaError as exc:
            _error(exc, as_json)
        except MemoryError:
            _fail(OUT_OF_MEMORY, 2, as_json, "MemoryError")
        except (ImportError, OSError) as exc:
            # under --max-memory, mapping a library or a buffer fails with these instead
            if not (_MEMORY_LIMIT and ("map" in str(exc) or getattr(exc, "errno", None) == 12)):
                raise
            _fail(OUT_OF_MEMORY, 2, as_json, "MemoryError")
        except KeyboardInterrupt:
            _interrupted()
        except SystemError as exc:
            if not _from_interrupt(exc):
                raise
            _interrupted()
        except BrokenPipeError:
            sys.exit(0)
    seen = set()
    for w in caught:
        text = " ".join(str(w.message).split())
        if text not in seen:
            seen.add(text)
            click.echo(f"nnisa: warning: {text[:500]}", err=True)
    _exit(0)


def _exit(code: int) -> None:
    """Exit with ``code`` once the command is over: a Ctrl-C/SIGTERM that lands during the
    interpreter's shutdown (atexit handlers, library finalizers) would otherwise turn a finished
    run into a death by signal with no message; the signals are ignored from here on (the
    process only exits) when ``main`` runs as the program (``nnisa``, ``python -m nnisa``), not
    when it is called with arguments from Python."""
    if _OWN_PROCESS:
        import signal
        from .core.interrupts import INTERRUPTS
        for sig in INTERRUPTS:
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (ValueError, OSError):
                pass
        _quick_exit(code)
    sys.exit(code)


def _quick_exit(code: int) -> None:
    """End the process as the interpreter would, minus its teardown: other threads are joined and
    the ``atexit`` handlers (libraries' cleanups, temporary folders' finalizers) run, the output
    is flushed, then ``os._exit``.  What is skipped, freeing every object one by one, took
    0.2-0.4 s after a simulation of PIMCOMP-NN's ResNet-18 (a few hundred MB of arrays and
    the modules of numpy, pydantic, click)."""
    import atexit
    import threading
    threading._shutdown()  # noqa: SLF001 (what Py_Finalize does first: non-daemon threads)
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
