"""Fixtures of the sweep tests: a small spec over pim and dais (24 points, a few seconds each run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # faults.py for the worker processes

#: 16 pim points (digits MLP, chip size x crossbars x schedule) + 8 dais points (bit widths x CSE)
SMALL_SPEC = """\
name: small
models: [digits_mlp]
samples: 2
timeout_s: 120
targets:
  pim:
    grid:
      chip_config.core_cnt: [16, 64]
      chip_config.core_config.matrix_config.xbar_array_count: [16, 64]
      chip_config.core_config.matrix_config.xbar_size: [[128, 128], [256, 256]]
    options:
      schedule: [batch, element]
  dais:
    options:
      bits: {from: 3, to: 6}
      method: [wmc, mc]
"""


@pytest.fixture
def small_spec(tmp_path: Path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(SMALL_SPEC)
    return p
