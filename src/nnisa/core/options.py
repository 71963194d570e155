"""Declared target options: what ``-O key=value`` may say, checked in one place.

Every target lists its options as :class:`OptionSpec` records (``Target.options``): name, type,
allowed values, default, help and the commands that take it.  The CLI validates the user's pairs
against them (:func:`parse_option_pairs`) before any work starts, lists them in ``--help`` and
``nnisa targets``, and passes typed values to the target.  An unknown key or a bad value is one
:class:`~nnisa.core.errors.OptionError` naming the option and what is allowed.
"""

from __future__ import annotations

import json
import math
import types
import typing
import warnings
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Iterable, Sequence

from .errors import OptionError

#: commands an option can belong to (the CLI's command names)
COMMANDS = ("isa", "asm", "disasm", "convert", "stats", "compile", "sim", "run", "bench")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_MAX_TEXT = 80


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT - 3] + "..."


@dataclass(frozen=True)
class OptionSpec:
    """One option a target accepts through ``-O name=value``.

    Parameters
    ----------
    name
        Key (``snake_case``; the CLI also accepts ``kebab-case``).
    type
        ``bool``, ``int``, ``float``, ``str`` or ``"json"`` (any JSON value, passed through).
    default
        Value used when the option is not given (documentation only: the target applies it).
    choices
        Allowed values (after conversion), or ``None`` for any value of the type.
    help
        One-line meaning.
    commands
        CLI commands that take the option.
    minimum, maximum
        Inclusive numeric bounds (``int``/``float``).
    nullable
        ``none``/``null`` is accepted and gives ``None``.
    alias_of
        The value goes to this option instead (the other name of one switch); with ``deprecated``
        a warning says to use that name.
    """

    name: str
    type: Any = str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    help: str = ""
    commands: tuple[str, ...] = ("compile", "run")
    minimum: float | None = None
    maximum: float | None = None
    nullable: bool = False
    alias_of: str | None = None
    deprecated: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.commands) - set(COMMANDS)
        if unknown:
            raise ValueError(f"option {self.name}: unknown command(s) {sorted(unknown)}")

    @property
    def type_name(self) -> str:
        return self.type if isinstance(self.type, str) else self.type.__name__

    def describe(self) -> str:
        """``name=<type|a|b> (default d): help`` for help texts."""
        kinds = "|".join(str(c).lower() if isinstance(c, bool) else str(c) for c in self.choices) \
            if self.choices else self.type_name
        default = "" if self.default is None else f" (default {self.default})"
        old = f" (deprecated: use {self.alias_of})" if self.deprecated else ""
        return f"{self.name}=<{kinds}>{default}: {self.help}{old}"

    def convert(self, raw: Any) -> Any:
        """Typed value of ``raw`` (a command-line string or a Python value); raises OptionError."""
        value = self._convert(raw)
        if self.choices is not None and value not in self.choices and not (value is None and self.nullable):
            allowed = ", ".join(str(c).lower() if isinstance(c, bool) else str(c) for c in self.choices)
            raise OptionError(f"option {self.name}: {_short(raw)} is not one of {allowed}")
        if value is not None and self.type in (int, float):
            if self.minimum is not None and value < self.minimum:
                raise OptionError(f"option {self.name}: {value} is below the minimum {self.minimum:g}")
            if self.maximum is not None and value > self.maximum:
                raise OptionError(f"option {self.name}: {value} is above the maximum {self.maximum:g}")
        return value

    def _convert(self, raw: Any) -> Any:
        if self.nullable and (raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null"))):
            return None
        t = self.type
        bad = OptionError(f"option {self.name}: expected {self.type_name}, got {_short(raw)}")
        if t is bool:
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
                return raw.strip().lower() in _TRUE
            raise bad
        if t is int:
            if isinstance(raw, bool):
                raise bad
            if isinstance(raw, int):
                return raw
            if isinstance(raw, str):
                text = raw.strip()
                # ASCII digits only: str.isdigit accepts other scripts' digits, int() too
                body = text[1:] if text[:1] in "+-" else text
                if body.isascii() and (body.isdigit() or (body[:2].lower() == "0x" and len(body) > 2)):
                    try:
                        return int(text, 0)
                    except ValueError:
                        pass
            raise bad
        if t is float:
            if isinstance(raw, bool):
                raise bad
            if isinstance(raw, (int, float)):
                value = float(raw)
            elif isinstance(raw, str) and raw.strip().isascii():
                try:
                    value = float(raw)
                except ValueError:
                    raise bad from None
            else:
                raise bad
            if not math.isfinite(value):
                raise OptionError(f"option {self.name}: must be a finite number, got {_short(raw)}")
            return value
        if t is str:
            if isinstance(raw, str):
                return raw
            raise bad
        if t == "json":
            if isinstance(raw, str):
                try:
                    return json.loads(raw)
                except json.JSONDecodeError:
                    return raw
            return raw
        raise ValueError(f"option {self.name}: unsupported type {t!r}")


@dataclass
class OptionTable:
    """The options of one target, by name."""

    target: str
    specs: Sequence[OptionSpec] = field(default_factory=tuple)

    def for_command(self, command: str) -> list[OptionSpec]:
        return [s for s in self.specs if command in s.commands]

    def validate(self, command: str, values: dict[str, Any]) -> dict[str, Any]:
        """Typed copy of ``values`` for ``command``; unknown keys and bad values raise OptionError."""
        known = {s.name: s for s in self.for_command(command)}
        out: dict[str, Any] = {}
        for key, raw in values.items():
            name = str(key).replace("-", "_")
            spec = known.get(name)
            if spec is None:
                elsewhere = [s for s in self.specs if s.name == name]
                if elsewhere:
                    cmds = ", ".join(elsewhere[0].commands)
                    raise OptionError(f"option {_short(name)} does not apply to '{command}' "
                                      f"(target {self.target}: it is for {cmds})")
                names = ", ".join(sorted(known)) or "none"
                raise OptionError(f"unknown option {_short(name)} for '{command}' on target {self.target} "
                                  f"(options: {names})")
            value = spec.convert(raw)
            if spec.alias_of is not None:
                if spec.deprecated:
                    warnings.warn(f"option {name} is deprecated; use {spec.alias_of}", DeprecationWarning,
                                  stacklevel=2)
                if spec.alias_of in values:
                    raise OptionError(f"options {name} and {spec.alias_of} name the same setting; give one")
                name = spec.alias_of
            out[name] = value
        return out


def option(default: Any = None, help: str = "", *, choices: tuple[Any, ...] | None = None,
           commands: tuple[str, ...] = ("compile", "run"), minimum: float | None = None,
           maximum: float | None = None, type: Any = None) -> Any:
    """A dataclass field that is also a ``-O`` option (see :func:`option_specs`)::

        @dataclass
        class CompileOptions:
            bits: int = option(8, "quantization bit width", minimum=2, maximum=16)
    """
    meta = {"help": help, "choices": choices, "commands": commands, "minimum": minimum, "maximum": maximum,
            "type": type}
    return field(default=default, metadata={"option": meta})


def _option_type(hint: Any) -> tuple[Any, bool]:
    """``(type, nullable)`` of an annotation: ``int``, ``int | None``, ``Optional[str]``..."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else "json"), True
    return hint, False


def option_specs(cls: type, *, first: Sequence[str] = ()) -> tuple[OptionSpec, ...]:
    """The :class:`OptionSpec` records of a dataclass's :func:`option` fields (the dataclass is
    the one definition of a target's compile options; the ``-O`` table is generated from it).
    Fields named in ``first`` come first, the others in declaration order."""
    hints = typing.get_type_hints(cls)
    specs = {}
    for f in fields(cls):
        meta = f.metadata.get("option")
        if meta is None:
            continue
        typ, nullable = _option_type(hints[f.name])
        default = None if f.default is MISSING else f.default
        specs[f.name] = OptionSpec(f.name, meta["type"] or typ, default, meta["choices"], meta["help"],
                                   meta["commands"], meta["minimum"], meta["maximum"], nullable)
    order = [n for n in first if n in specs] + [n for n in specs if n not in first]
    return tuple(specs[n] for n in order)


def split_options(cls: type, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(cls(**the options it has fields for), the rest)``."""
    names = {f.name for f in fields(cls) if f.init}
    return cls(**{k: v for k, v in options.items() if k in names}), \
        {k: v for k, v in options.items() if k not in names}


def parse_option_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` → ``{"k": "v"}`` (values stay strings; :class:`OptionTable` types them)."""
    out: dict[str, str] = {}
    for p in pairs:
        if "=" not in p:
            raise OptionError(f"expected -O key=value, got {_short(p)}")
        k, v = p.split("=", 1)
        key = k.strip().replace("-", "_")
        if not key:
            raise OptionError(f"expected -O key=value, got {_short(p)}")
        if key in out:
            raise OptionError(f"option {_short(key)} given twice")
        out[key] = v
    return out
