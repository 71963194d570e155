"""Configuration objects as dotted keys: dump, set, check (for sweeps and overrides).

Every target's configuration (pydantic models, dataclasses with ``to_dict``, plain dicts) can be seen
as a nested JSON object; ``chip_config.core_cnt`` names one leaf.  :func:`set_keys` writes leaves
into a copy of such an object and rejects keys that do not exist, with the nearest existing names,
so a typo in a sweep spec is one clear error instead of a silently ignored setting.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from typing import Any, Iterator, Mapping

from .errors import ConfigError


def config_to_dict(config: Any) -> dict[str, Any] | None:
    """A configuration object as a JSON-like dict, or ``None`` when it is not one.

    Pydantic models give ``model_dump(mode="json")``; objects with ``to_dict()`` give that; a
    dataclass gives its fields; a dict is deep-copied.
    """
    if config is None:
        return None
    if isinstance(config, Mapping):
        return copy.deepcopy(dict(config))
    dump = getattr(config, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):
        out = to_dict()
        return copy.deepcopy(out) if isinstance(out, dict) else None
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    return None


def flat_keys(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Every dotted key of a nested dict (leaves and inner objects alike)."""
    for k, v in data.items():
        key = f"{prefix}{k}"
        yield key
        if isinstance(v, Mapping):
            yield from flat_keys(v, key + ".")


def _near(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    if not close:  # a leaf name given without its path: suggest the full paths that end with it
        leaf = key.rsplit(".", 1)[-1]
        close = [k for k in known if k.rsplit(".", 1)[-1] == leaf][:3]
    return f" (did you mean {', '.join(close)}?)" if close else ""


def set_keys(data: Mapping[str, Any], overrides: Mapping[str, Any], *, what: str = "configuration") -> dict[str, Any]:
    """A deep copy of ``data`` with each dotted key of ``overrides`` set.

    Raises
    ------
    ConfigError
        A key that ``data`` does not have (with near matches), or a path through a leaf.
    """
    out = copy.deepcopy(dict(data))
    known: list[str] | None = None
    for key, value in overrides.items():
        parts = str(key).split(".")
        node: Any = out
        for i, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                known = known if known is not None else list(flat_keys(data))
                where = ".".join(parts[:i]) or "the top level"
                if not isinstance(node, dict):
                    raise ConfigError(f"{what}: key {key!r}: {where} is a value, not an object")
                raise ConfigError(f"{what} has no key {key!r}{_near(str(key), known)}")
            if i == len(parts) - 1:
                node[part] = copy.deepcopy(value)
            else:
                node = node[part]
    return out


def get_key(data: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key (``KeyError`` when absent)."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping):
            raise KeyError(key)
        node = node[part]
    return node
