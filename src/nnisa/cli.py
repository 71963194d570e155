"""The ``nnisa`` command line: one set of subcommands for every target.

User errors print one line on stderr (``nnisa: error: <file:line: message>``) and exit with status
2 (3 for a deadlocked program, 4 when the simulated time limit is reached), without a traceback.
``--json`` makes a command print exactly one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import numpy as np

from .core.errors import DeadlockError, NnisaError, SimTimeExceeded
from .core.fileio import load_arrays, save_arrays, write_atomic
from .core.target import get_target, target_names

TARGET_HELP = "ISA target: " + ", ".join(target_names())


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def emit_json(obj: dict) -> None:
    click.echo(json.dumps(_jsonable(obj), indent=None, sort_keys=False))


def console():
    from rich.console import Console
    return Console()


@contextmanager
def progress_bar(description: str, enabled: bool = True):
    """A rich progress bar on a terminal; yields ``update(done, total)`` (a no-op elsewhere)."""
    if not (enabled and sys.stdout.isatty()):
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(), transient=True) as prog:
        task = prog.add_task(description, total=None)
        yield lambda done, total: prog.update(task, completed=done, total=total)


@contextmanager
def status(message: str, enabled: bool = True):
    """A rich spinner while work runs, only on a terminal (never in pipes or --json runs)."""
    if enabled and sys.stdout.isatty():
        with console().status(message):
            yield
    else:
        yield


def parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``-O key=value`` pairs; values parsed as JSON when possible (numbers, true/false)."""
    out: dict[str, Any] = {}
    for p in pairs:
        if "=" not in p:
            raise click.BadParameter(f"expected key=value, got {p!r}", param_hint="-O/--option")
        k, v = p.split("=", 1)
        try:
            out[k.replace("-", "_")] = json.loads(v)
        except json.JSONDecodeError:
            out[k.replace("-", "_")] = v
    return out


target_option = click.option("--target", "-t", "target_name", required=True, help=TARGET_HELP)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")
option_option = click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE",
                             help="Target-specific option (repeatable), e.g. -O word_bits=32.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nnisa")
def cli() -> None:
    """nnisa: exact codecs, simulators and ONNX compilers for accelerator ISAs."""


@cli.command("targets")
@json_option
def targets_cmd(as_json: bool) -> None:
    """List the targets and what each supports."""
    rows = []
    for name in target_names():
        try:
            t = get_target(name)
            rows.append({"target": name, "description": t.description, "capabilities": t.capabilities(),
                         "formats": t.formats})
        except NnisaError as exc:
            rows.append({"target": name, "description": str(exc), "capabilities": [], "formats": {}})
    if as_json:
        emit_json({"targets": rows})
        return
    from rich.table import Table
    table = Table(title="nnisa targets")
    for col in ("target", "description", "capabilities", "formats"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["target"], r["description"], ", ".join(r["capabilities"]), ", ".join(r["formats"]))
    console().print(table)


@cli.command("isa")
@target_option
@option_option
@json_option
def isa_cmd(target_name: str, options: tuple[str, ...], as_json: bool) -> None:
    """Print the instruction reference table (Markdown)."""
    md = get_target(target_name).isa_markdown(**parse_options(options))
    if as_json:
        emit_json({"target": target_name, "markdown": md})
    else:
        click.echo(md, nl=False)


def _write_or_print(text: str, output: str | None) -> None:
    if output:
        write_atomic(output, text)
    else:
        click.echo(text, nl=False)


@cli.command("asm")
@target_option
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, help="Output program (format from the extension).")
@option_option
@json_option
def asm_cmd(target_name, source, output, options, as_json):
    """Assemble a text program and write it (binary, JSON, ...)."""
    t = get_target(target_name)
    text = _read_text(source)
    prog = t.assemble(text, file=source, **parse_options(options))
    t.write(prog, output)
    _report_written(as_json, target_name, source, output, prog)


@cli.command("disasm")
@target_option
@click.argument("program", type=click.Path())
@click.option("-o", "--output", help="Write the text here instead of stdout.")
@option_option
@json_option
def disasm_cmd(target_name, program, output, options, as_json):
    """Disassemble a program file to canonical text."""
    t = get_target(target_name)
    text = t.disassemble(t.read(program, **parse_options(options)))
    if as_json:
        if output:
            write_atomic(output, text)
        emit_json({"target": target_name, "input": program, "output": output,
                   **({} if output else {"text": text})})
    else:
        _write_or_print(text, output)


@cli.command("convert")
@target_option
@click.argument("source", type=click.Path())
@click.argument("dest", type=click.Path())
@option_option
@json_option
def convert_cmd(target_name, source, dest, options, as_json):
    """Convert a program between formats (chosen by extension: .json/.json.gz, .bin/.nnpi, .s).

    Encoding options go through -O, e.g. ``-O word_bits=32 -O extended=true``.
    """
    t = get_target(target_name)
    opts = parse_options(options)
    with status(f"reading {source}", not as_json):
        prog = t.read(source)
    with status(f"writing {dest}", not as_json):
        t.write(prog, dest, **opts)
    _report_written(as_json, target_name, source, dest, prog)


@cli.command("stats")
@target_option
@click.argument("program", type=click.Path())
@json_option
def stats_cmd(target_name, program, as_json):
    """Static statistics of a program: instruction mix, field ranges."""
    t = get_target(target_name)
    with status(f"reading {program}", not as_json):
        st = t.stats(t.read(program))
    if as_json:
        emit_json({"target": target_name, "program": program, **st})
    else:
        from .report.tables import print_stats
        print_stats(st, title=f"{target_name}: {Path(program).name}")


@cli.command("compile")
@target_option
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--config", "--arch", "config", type=click.Path(), help="Architecture/config file.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output directory.")
@option_option
@json_option
def compile_cmd(target_name, model, config, out_dir, options, as_json):
    """Compile an ONNX model for a target."""
    t = get_target(target_name)
    t0 = time.perf_counter()
    with status(f"compiling {model} for {target_name}", not as_json):
        res = t.compile(model, config=config, out_dir=out_dir, **parse_options(options))
    summary = {"target": target_name, "model": model, "out_dir": out_dir, "files": res.files,
               "compile_s": time.perf_counter() - t0, "report": res.report}
    if as_json:
        emit_json(summary)
    else:
        from .report.tables import print_mapping
        print_mapping(summary)


@cli.command("sim")
@target_option
@click.argument("program", type=click.Path())
@click.option("--config", "--arch", "config", type=click.Path(), help="Architecture/simulator config.")
@click.option("--inputs", type=click.Path(dir_okay=False), help="Inputs (.npy, .npz or .csv).")
@click.option("--outputs", type=click.Path(dir_okay=False), help="Write outputs here (.npy, .npz, .csv).")
@click.option("--mode", help="Simulation mode (target-specific, e.g. timing/functional/both).")
@click.option("--trace", type=click.Path(dir_okay=False), help="Write a Chrome/Perfetto trace (JSON).")
@click.option("--gantt", type=click.Path(dir_okay=False), help="Draw a per-core Gantt chart (PNG).")
@click.option("--report", "report_style", type=click.Choice(["table", "pimsim"]), default="table",
              show_default=True, help="Report style (pimsim = the reference simulator's text block).")
@option_option
@json_option
def sim_cmd(target_name, program, config, inputs, outputs, mode, trace, gantt, report_style, options, as_json):
    """Simulate a program: output values plus cycles and energy."""
    t = get_target(target_name)
    opts = parse_options(options)
    if report_style != "table":
        opts["report"] = report_style
        opts["source"] = program
    for key, val in (("mode", mode), ("trace", trace), ("gantt", gantt)):
        if val is not None:
            opts[key] = val
    t0 = time.perf_counter()
    with status(f"reading {program}", not as_json):
        prog = t.read(program)
    data = load_arrays(inputs) if inputs else None
    with status("simulating", not as_json):
        res = t.simulate(prog, config=config, inputs=data, **opts)
    if outputs:
        save_arrays(outputs, res.outputs)
    report_text = res.stats.extra.pop("report_text", None)
    stats = res.stats.to_dict()
    stats["wall_s"] = time.perf_counter() - t0
    if as_json:
        emit_json({"target": target_name, "program": program, **stats,
                   "outputs": {k: list(np.shape(v)) for k, v in res.outputs.items()}})
    elif report_text:
        click.echo(report_text)
    else:
        from .report.tables import print_sim
        print_sim(stats, res.outputs, title=f"{target_name}: {Path(program).name}")


@cli.command("run")
@target_option
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--config", "--arch", "config", type=click.Path(), help="Architecture/config file.")
@click.option("--inputs", type=click.Path(dir_okay=False), help="Float inputs (.npz/.npy, batch first).")
@click.option("--outputs", type=click.Path(dir_okay=False), help="Write the simulated float outputs here.")
@click.option("--samples", default=1, show_default=True, help="Samples when no inputs are given.")
@click.option("-o", "--out-dir", type=click.Path(file_okay=False), help="Keep the compiled files here.")
@option_option
@json_option
def run_cmd(target_name, model, config, inputs, outputs, samples, out_dir, options, as_json):
    """Compile, simulate and compare with onnxruntime."""
    from .api import run_model
    data = load_arrays(inputs) if inputs else None
    with progress_bar(f"{Path(model).name} on {target_name}", not as_json) as update:
        report = run_model(target_name, model, inputs=data, samples=samples, config=config,
                           out_dir=out_dir, save_outputs=outputs, progress=update, **parse_options(options))
    if as_json:
        emit_json(report)
    else:
        from .report.tables import print_run
        print_run(report)


@cli.command("demo")
@click.option("--shared", type=click.Path(file_okay=False), default=None,
              help="Path of the shared/ directory with conformance data (default: ../shared).")
@json_option
def demo_cmd(shared, as_json):
    """Run the main job on the bundled model for every implemented target."""
    from .demo import run_demo
    run_demo(shared_dir=shared, as_json=as_json)


def _read_text(path: str) -> str:
    from .core.fileio import decode_text, read_bytes
    return decode_text(read_bytes(path), path)


def _report_written(as_json, target_name, source, dest, prog):
    n = len(prog) if hasattr(prog, "__len__") else None
    if as_json:
        emit_json({"target": target_name, "input": source, "output": dest, "instructions": n})
    else:
        click.echo(f"wrote {dest}" + (f" ({n} instructions)" if n is not None else ""), err=True)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI and turn user errors into one-line messages."""
    try:
        cli.main(args=argv, prog_name="nnisa", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("nnisa: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (DeadlockError, SimTimeExceeded) as exc:
        click.echo(f"nnisa: error: {exc}", err=True)
        if exc.report:
            click.echo(exc.report.rstrip("\n"), err=True)
        sys.exit(exc.exit_code)
    except NnisaError as exc:
        click.echo(f"nnisa: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("nnisa: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(0)


if __name__ == "__main__":  # pragma: no cover
    main()
