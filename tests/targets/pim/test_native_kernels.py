"""PIM kernels from the ahead-of-time native module (core/native.py) against the same kernels on
the numba JIT: the same timing results, JSON rows, text and rendered output, bit for bit.

Runs where the native module is fresh (``make install`` / ``python -m nnisa.warmup`` built it
from these sources; always in CI), else skips.  The fast paths' own tests compare them with the
readable references, on whichever of the two is in use.
"""

from __future__ import annotations

import dataclasses
import gzip
import os

import numpy as np
import pytest

from nnisa.core import native
from nnisa.targets.pim.formats.jsonio import dump_json, read_json
from nnisa.targets.pim.isa import build_isa
from nnisa.targets.pim.formats.text import assemble_text, disassemble
from nnisa.targets.pim.sim.timing import simulate_timing

from .pim_loader import make_program
from .test_timing_fast import _config, random_program


@pytest.fixture
def both_paths():
    """Run a job natively, then on the JIT; returns the two results."""
    if "none fresh" in native.native_status():
        if os.environ.get("CI"):
            pytest.fail("CI: the native module is missing or stale after make install")
        pytest.skip("no fresh native module (python -m nnisa.warmup builds it)")

    def run(job):
        native.use_jit(False)
        a = job()
        assert any(k._exports for k in native.REGISTRY.values() if k.name.startswith("nnisa.targets.pim."))
        native.use_jit(True)
        try:
            b = job()
        finally:
            native.use_jit(False)
        return a, b
    return run


def _canon(v):
    """A comparable form of a result field (arrays by their bytes)."""
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    return v


def _timing(prog, cfg):
    r = simulate_timing(prog, cfg, on_incomplete="report", trace=True)
    return {f.name: _canon(getattr(r, f.name)) for f in dataclasses.fields(r)}


@pytest.mark.parametrize("seed", range(6))
def test_timing_native_equals_jit(both_paths, seed):
    rng = np.random.default_rng(100 + seed)
    n_cores = int(rng.integers(1, 6))
    prog = make_program(random_program(rng, n_cores, int(rng.integers(5, 60)), waits=seed % 3 == 0),
                        agm={c: [1, 4] for c in range(n_cores)})
    for native_mode, sim_mode in ((False, 1), (False, 0), (True, 1)):
        cfg = _config(rng, n_cores, native_mode, sim_mode)
        a, b = both_paths(lambda: _timing(prog, cfg))
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == b[k], k


def test_readers_and_writers_native_equal_jit(both_paths):
    rng = np.random.default_rng(5)
    prog = make_program(random_program(rng, 3, 40), agm={c: [1, 4] for c in range(3)})
    data, _ = dump_json(prog)
    isa = build_isa(64, True)
    specs = list(isa.instrs)
    words = np.array([(s.format.const_value | int(rng.integers(0, 2 ** 63)) * 2 & s.format.used_mask
                       & ~s.format.const_mask) for s in (specs[int(i)] for i in rng.integers(len(specs), size=500))],
                     np.uint64)  # random valid words of every instruction

    def job():
        a = read_json(data)
        b = read_json(gzip.compress(data))
        out, _ = dump_json(a)
        text = disassemble(b)
        return a, b, out, text, assemble_text(text), isa.decode_array(words)  # the core's bulk word decoder
    (a1, b1, o1, t1, s1, w1), (a2, b2, o2, t2, s2, w2) = both_paths(job)
    assert w1.tobytes() == w2.tobytes() == isa.decode_array_reference(words).tobytes()
    for x, y in ((a1, a2), (b1, b2), (s1, s2)):
        assert sorted(x.cores) == sorted(y.cores)
        assert all(x.cores[c].tobytes() == y.cores[c].tobytes() for c in x.cores)
    assert o1 == o2 and t1 == t2
