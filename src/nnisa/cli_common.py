"""Shared pieces of the ``nnisa`` command line (:mod:`nnisa.cli`): JSON and table output,
progress, the common options, ``-O`` parsing and help, model arguments, program reading and the
``--max-memory`` limit."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any

import click

from .core.errors import NnisaError
from .core.jsonsafe import to_jsonable
from .core.options import parse_option_pairs
from .core.target import Target, get_target, target_names

TARGET_HELP = "ISA target: " + ", ".join(target_names())


def emit_json(obj: dict) -> None:
    click.echo(json.dumps(to_jsonable(obj), indent=None, sort_keys=False))


def show(as_json: bool, obj: dict, printer: str, *args: Any) -> None:
    """``obj`` as one JSON object, or through ``report.tables.<printer>(obj, *args)``."""
    if as_json:
        emit_json(obj)
        return
    from .report import tables
    getattr(tables, printer)(obj, *args)


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


def parse_options(target: Target, command: str, pairs: tuple[str, ...]) -> dict[str, Any]:
    """``-O key=value`` pairs checked against the target's declared options for ``command``
    (unknown keys and bad values are one-line errors) → typed values."""
    return target.option_table().validate(command, parse_option_pairs(pairs))


def options_help(command: str) -> str:
    """The ``-O`` options every target declares for ``command`` (shown in ``--help``)."""
    lines = []
    for name in target_names():
        try:
            specs = get_target(name).option_table().for_command(command)
        except NnisaError:
            continue
        if specs:
            lines.append(f"-t {name}:")
            lines.extend(f"  -O {s.describe()}" for s in specs)
    return "\n".join(lines)


class TargetCommand(click.Command):
    """A command whose help ends with every target's ``-O`` options (collected only when shown)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        text = options_help(self.name or "")
        if text:
            with formatter.section("Target options (-O KEY=VALUE)"):
                with formatter.indentation():
                    for line in text.splitlines():
                        formatter.write_text(line)
        super().format_epilog(ctx, formatter)


target_option = click.option("--target", "-t", "target_name", required=True, help=TARGET_HELP)
layers_option = click.option("--layers", "show_layers", is_flag=True,
                             help="Print the per-layer table (cycles, energy, utilization, memory per layer).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")
option_option = click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE",
                             help="Target-specific option (repeatable); listed below.")
config_option = click.option("--config", "--arch", "config", default=None,
                             help="Architecture/configuration: a preset name or a file (target-specific).")


def _model_arg(model: str | None, target_name: str | None = None) -> str:
    """A model argument: a file, or a bundled model's name (``digits_cnn``); none given (``run``):
    the target's demo model, said on stderr."""
    from .frontend.models import DEFAULT_MODEL, resolve_model
    if model is None:
        model = (get_target(target_name).demo_model if target_name else None) or DEFAULT_MODEL
        click.echo(f"nnisa: no model given; running the bundled model {model} (nnisa models lists them)", err=True)
    return str(resolve_model(model))


def _cfg(config: str | None) -> dict[str, Any]:
    return {} if config is None else {"config": config}


def read_program(t: Target, path: str, **options: Any) -> Any:
    """``t.read`` plus the reader's own findings (``program.warnings``) as Python warnings, which
    ``main`` prints as one ``nnisa: warning:`` line each."""
    import warnings
    prog = t.read(path, **options)
    for w in getattr(prog, "warnings", None) or ():
        warnings.warn(f"{path}: {w}", stacklevel=2)
    return prog


OUT_OF_MEMORY = "out of memory (the input needs more memory than this machine or --max-memory allows)"
_MEMORY_LIMIT: list[int] = []


def _limit_memory(size: str | None) -> None:
    """``--max-memory 4G``: cap the process's data memory so a runaway input fails cleanly."""
    if not size:
        return
    import re
    import resource
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)[bB]?\s*", size)
    if not m:
        raise click.BadParameter(f"expected a size like 512M or 4G, got {size!r}", param_hint="--max-memory")
    limit = int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))
    if limit < 64 << 20:
        raise click.BadParameter("must be at least 64M", param_hint="--max-memory")
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    _MEMORY_LIMIT.append(limit)


def print_layer_rows(as_json: bool, show_layers: bool, rows: Any, target: Target, title: str,
                     why_not: str) -> None:
    """``--layers``: the per-layer table after the summary (JSON output already carries ``layers``)."""
    if as_json or not show_layers:
        return
    from .report.tables import print_layers
    print_layers(rows, title, target.layer_utilization, why_not)
