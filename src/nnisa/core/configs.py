"""Resolving ``--config/--arch`` values the same way for every target with presets.

A value is ``None`` (the default configuration), a preset name, ``[preset,]key=value[,key=value]``
text, a JSON file (an object, optionally with a ``"preset"`` key that the other keys override), a
dict, or an already built configuration object.  Targets pass their presets (name → overrides)
and a ``build(dict, where)`` function that validates and raises :class:`ConfigError`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError
from .fileio import read_text


def parse_pairs(text: str) -> dict[str, Any]:
    """``key=value[,key=value]`` → dict; values are JSON when they parse (numbers, true/false),
    else strings."""
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, eq, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not key or not eq:
            raise ConfigError(f"bad configuration item {part.strip()!r} (expected key=value)")
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


def resolve_config(config: Any, presets: dict[str, dict[str, Any]], build: Callable[[dict, str], Any],
                   kind: type, what: str, default: str | None = None) -> Any:
    """The configuration object ``config`` names (see the module docstring)."""
    def with_preset(data: dict[str, Any], where: str) -> Any:
        base = data.pop("preset", None)
        if base is not None:
            if base not in presets:
                raise ConfigError(f"{where}: unknown preset {base!r} (presets: {', '.join(presets)})")
            data = {**presets[base], **data}
        return build(data, where)

    if config is None:
        return build(dict(presets[default]) if default else {}, f"default {what} configuration")
    if isinstance(config, kind):
        return config
    if isinstance(config, dict):
        return with_preset(dict(config), "configuration")
    if not isinstance(config, (str, Path)):
        raise ConfigError(f"cannot use {type(config).__name__} as a {what} configuration")
    text = str(config)
    if text in presets:
        return build(dict(presets[text]), f"preset {text}")
    path = Path(text)
    if path.is_file() or text.endswith(".json"):
        raw = read_text(path, ConfigError)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON ({exc.msg})", file=text, line=exc.lineno) from None
        if not isinstance(data, dict):
            raise ConfigError(f"a {what} configuration file must hold a JSON object", file=text)
        return with_preset(data, text)
    if "=" in text:
        head, _, rest = text.partition(",")
        if "=" not in head:  # "preset,key=value,..."
            return with_preset({"preset": head.strip(), **parse_pairs(rest)}, "configuration")
        return with_preset(parse_pairs(text), "configuration")
    raise ConfigError(f"unknown {what} configuration {text!r}: not a preset ({', '.join(presets)}), a JSON file "
                      "or [preset,]key=value pairs")
