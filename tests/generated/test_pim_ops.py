"""Generated models (:mod:`tests.generated.modelgen`) on the PIM target: every operator PIM lowers,
bit-exact against the frontend's integer reference, on random shapes, strides, paddings,
dilations, groups and odd channel counts.

The fast subset (``make test``) runs two seeds per generator; the full sweep (``-m slow``, ``make
test-all``) runs twelve.  An operator PIM does not lower must be a one-line refusal naming the
node (never a traceback, never a wrong value); ``REFUSED`` lists them with the reason.
"""

from __future__ import annotations

import pytest

from .harness import run_generated
from .modelgen import GENERATORS, generate

#: generators whose models PIM refuses up front, and a word the refusal must contain
REFUSED: dict[str, str] = {}
FAST_SEEDS = (0, 1)
SLOW_SEEDS = tuple(range(2, 12))
OPS = sorted(GENERATORS)


def _check(op: str, seed: int, batch: int = 1) -> None:
    gen = generate(op, seed, batch=batch)
    out = run_generated("pim", gen)
    if op in REFUSED:
        assert out.kind == "refused", f"{gen}: expected a refusal, got {out.kind} {out.message}"
        assert REFUSED[op] in out.message and "\n" not in out.message.strip(), out.message
        return
    assert out.kind == "exact", f"{gen}: {out.kind} {out.message}"


@pytest.mark.parametrize("seed", FAST_SEEDS)
@pytest.mark.parametrize("op", OPS)
def test_pim_generated_fast(op: str, seed: int) -> None:
    _check(op, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
@pytest.mark.parametrize("op", OPS)
def test_pim_generated_sweep(op: str, seed: int) -> None:
    _check(op, seed)


@pytest.mark.parametrize("op", ["Conv", "Gemm", "MatMul", "Add"])
def test_pim_runs_a_model_whose_batch_is_fixed_above_one(op: str) -> None:
    """A model whose batch axis is fixed above 1: the frontend hands PIM the batch-1 graph of one
    row (frontend/batch.py), so it runs bit-exact, its rows as samples."""
    out = run_generated("pim", generate(op, 0, batch=3))
    assert out.kind == "exact", out.message
