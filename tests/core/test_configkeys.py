"""Dotted configuration keys (core/configkeys.py) and Target.configure on every target with a config."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from nnisa.core.configkeys import config_to_dict, flat_keys, get_key, set_keys
from nnisa.core.errors import ConfigError
from nnisa.core.target import get_target


class _Inner(BaseModel):
    size: list[int] = [128, 128]


class _Outer(BaseModel):
    cores: int = 4
    inner: _Inner = _Inner()


@dataclass
class _Plain:
    a: int = 1


def test_config_to_dict_forms():
    assert config_to_dict(_Outer()) == {"cores": 4, "inner": {"size": [128, 128]}}
    assert config_to_dict(_Plain()) == {"a": 1}
    d = {"x": {"y": 1}}
    out = config_to_dict(d)
    assert out == d and out["x"] is not d["x"]
    assert config_to_dict(None) is None and config_to_dict(3) is None


def test_set_keys():
    base = {"cores": 4, "inner": {"size": [128, 128]}}
    out = set_keys(base, {"cores": 8, "inner.size": [64, 64]})
    assert out == {"cores": 8, "inner": {"size": [64, 64]}}
    assert base["inner"]["size"] == [128, 128]  # the base is untouched
    assert list(flat_keys(base)) == ["cores", "inner", "inner.size"]
    assert get_key(out, "inner.size") == [64, 64]
    with pytest.raises(ConfigError, match="no key 'inner.sise'.*inner.size"):
        set_keys(base, {"inner.sise": 1})
    with pytest.raises(ConfigError, match="size.*did you mean inner.size"):
        set_keys(base, {"size": 1})
    with pytest.raises(ConfigError, match="is a value, not an object"):
        set_keys(base, {"cores.x": 1})


@pytest.mark.parametrize("name, base, key, value, read", [
    ("pim", None, "chip_config.core_cnt", 16, lambda c: c.chip_config.core_cnt),
    ("pim", None, "chip_config.core_config.matrix_config.xbar_size", [64, 64],
     lambda c: list(c.chip_config.core_config.matrix_config.xbar_size)),
    ("tensil", "zcu104", "array_size", 16, lambda c: c.array_size),
    ("cherry", "sz16", "superscalar_width", 4, lambda c: c.superscalar_width),
])
def test_configure(name, base, key, value, read):
    t = get_target(name)
    cfg = t.configure(base, {key: value})
    assert read(cfg) == value
    assert t.configure(base, {}) is base
    # everything else stays as in the base
    d0, d1 = config_to_dict(t.load_config(base)), config_to_dict(cfg)
    assert {k for k in d0 if d0[k] != d1[k]} == {key.split(".")[0]}


def test_pim_default_roundtrip():
    t = get_target("pim")
    cfg = t.load_config(None)
    again = t.load_config(config_to_dict(cfg))
    assert again == cfg and again.explicit_gmem_size == cfg.explicit_gmem_size


def test_area_proxies():
    assert get_target("pim").area_proxy(None, {}) == (64 * 64 * 128 * 128, "crossbar cells")
    assert get_target("tensil").area_proxy("tiny4x4", {}) == (16.0, "PEs")
    assert get_target("cherry").area_proxy("sz16", {})[1] == "ALU lanes"
    assert get_target("dais").area_proxy(None, {"adder_bits": 120}) == (120.0, "adder bits")
    assert get_target("dais").area_proxy(None, {}) is None
