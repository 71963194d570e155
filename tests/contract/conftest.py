"""The contract suite's targets: every registered target, plus the toy of ``toy/`` registered for
the test that asks for it (and removed afterwards, so no other test sees it)."""

from __future__ import annotations

import pytest

from nnisa.core.target import get_target, register_target, target_names, unregister_target

#: the real targets and the sixth-target example
TARGETS = [*target_names(), "toy"]


@pytest.fixture
def target(request):
    """The target named by the test's parameter (the toy registered for the test's duration)."""
    name = request.param
    if name == "toy":
        register_target("toy", "contract.toy.target:ToyTarget")  # the one registry line a new target needs
        try:
            yield get_target("toy")
        finally:
            unregister_target("toy")
    else:
        yield get_target(name)
