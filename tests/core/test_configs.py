"""core.configs: preset / key=value / JSON file / dict resolution shared by targets."""

import pytest

from nnisa.core.configs import parse_pairs, resolve_config
from nnisa.core.errors import ConfigError

PRESETS = {"small": {"a": 1}, "big": {"a": 9, "b": "x"}}


class Cfg(dict):
    """A configuration object type (already-built objects pass through)."""


def build(data, where):
    if "a" in data and not isinstance(data["a"], int):
        raise ConfigError(f"{where}: a must be an integer")
    return Cfg(data)


def resolve(c):
    return resolve_config(c, PRESETS, build, Cfg, "toy", "small")


def test_forms(tmp_path):
    assert resolve(None) == {"a": 1}
    obj = Cfg(a=5)
    assert resolve(obj) is obj
    assert resolve("big") == {"a": 9, "b": "x"}
    assert resolve("a=3,c=true") == {"a": 3, "c": True}
    assert resolve("big,a=4") == {"a": 4, "b": "x"}
    assert resolve({"preset": "big", "b": "y"}) == {"a": 9, "b": "y"}
    f = tmp_path / "c.json"
    f.write_text('{"preset": "small", "z": 2}')
    assert resolve(str(f)) == {"a": 1, "z": 2}
    assert parse_pairs("k=v, n=1.5") == {"k": "v", "n": 1.5}


@pytest.mark.parametrize("bad,msg", [("nope", "not a preset"), ("a=1,b", "expected key=value"),
                                     ("nope,a=1", "unknown preset"), ("a=x", "must be an integer")])
def test_errors(bad, msg):
    with pytest.raises(ConfigError, match=msg):
        resolve(bad)


def test_bad_json_file(tmp_path):
    f = tmp_path / "c.json"
    f.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        resolve(str(f))
    f.write_text("{oops")
    with pytest.raises(ConfigError, match="invalid JSON"):
        resolve(str(f))
