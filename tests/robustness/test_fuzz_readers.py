"""Every reader of every registered target, fed random and mutated bytes, raises only NnisaError.

The targets and their file formats come from the registry (``Target.formats``), so a new target
joins this suite by registering.  Valid seeds (files the target writes itself) are mutated by
truncation, bit flips and byte insertions; random bytes cover the rest.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import PIM_SMALL  # noqa: E402

from nnisa.core.errors import NnisaError  # noqa: E402
from nnisa.core.target import get_target, target_names  # noqa: E402


def _targets_and_formats():
    out = []
    for name in target_names():
        try:
            t = get_target(name)
        except NnisaError:
            continue
        out.extend((name, ext) for ext in t.formats)
    return out


SEEDS = {
    "pim": PIM_SMALL,
    "dais": ".dais 1\n.inputs 2 shifts 0 0\n.outputs 1\n%0 = input 0 : (1,7,0)\n%1 = input 1 : (1,7,0)\n"
            "%2 = add %0, %1, 0 : (1,8,0)\nout 0 = %2\n",
    "pimsab": ".tile 0\nload r0, 0x100, 256, i8\nmult r16, i16, r0, i8, r0, i8\nstore 0x200, r16, 256, i16\n",
}


def _seed_bytes(target: str, ext: str, tmp: Path) -> bytes | None:
    """A valid file of this format written by the target itself (None if we have no seed)."""
    t = get_target(target)
    if target not in SEEDS:
        return None
    try:
        prog = t.assemble(SEEDS[target])
        p = tmp / f"seed{ext}"
        t.write(prog, p)
        return p.read_bytes()
    except NnisaError:
        return None


def _check_read(target: str, ext: str, data: bytes, tmp: Path) -> None:
    p = tmp / f"fuzz{ext}"
    p.write_bytes(data)
    try:
        get_target(target).read(p)
    except NnisaError:
        pass  # a clear user error is the expected outcome for garbage


mutation = st.tuples(st.sampled_from(["truncate", "flip", "insert", "zero"]), st.integers(0, 1 << 16),
                     st.integers(0, 255))


@pytest.mark.parametrize("target, ext", _targets_and_formats())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=512), muts=st.lists(mutation, max_size=4))
def test_reader_only_raises_nnisa_errors(target, ext, data, muts, tmp_path):
    seed = _seed_bytes(target, ext, tmp_path)
    if seed is not None and muts:
        b = bytearray(seed)
        for kind, pos, val in muts:
            if not b:
                break
            i = pos % len(b)
            if kind == "truncate":
                del b[i:]
            elif kind == "flip":
                b[i] ^= 1 << (val % 8)
            elif kind == "insert":
                b[i:i] = bytes([val])
            else:
                b[i] = 0
        data = bytes(b)
    _check_read(target, ext, data, tmp_path)
