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
from dataclasses import dataclass, field
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
        return f"{self.name}=<{kinds}>{default}: {self.help}"

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
            out[name] = spec.convert(raw)
        return out


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
