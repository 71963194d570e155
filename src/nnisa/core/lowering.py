"""Operators as data: each target's lowering table and what comes from it.

Every compiler dispatches a graph node through one table, ``LOWERINGS: dict[op, lowering]``
(``compiler/lowerings.py`` of the target).  A value is the function that lowers the operator
on the device, or an :class:`OnHost` for an operator the target runs on the host (a float tail,
a layout step, PIMSAB's host fallback).  From the table come:

* the up-front check (:func:`refusal`): an operator missing from it is refused, naming the node
  and the operator, before any import, calibration or compile work;
* ``nnisa targets --ops``: the target × operator matrix (:func:`coverage` of every target,
  :mod:`nnisa.report.operators`), also in ``--json``;
* the operator table of ``docs/operators.md`` (:func:`nnisa.report.operators.update_docs`; a test
  keeps it current).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

#: matrix cell of an operator lowered on the device / run on the host
DEVICE, HOST = "device", "host"


@dataclass(frozen=True)
class OnHost:
    """A lowering table entry for an operator the target runs on the host, and why.

    ``fn`` is the function that handles it in the compiler (None when the compiler's driver does,
    e.g. a trailing Softmax cut off as a float tail)."""

    why: str
    fn: Callable[..., Any] | None = None


def entry_fn(entry: Any) -> Callable[..., Any] | None:
    """The function of a table entry (a device lowering, or the handler of an :class:`OnHost`)."""
    return entry.fn if isinstance(entry, OnHost) else entry


def coverage(table: Mapping[str, Any]) -> dict[str, str]:
    """Operator → :data:`DEVICE` or :data:`HOST`, sorted by operator."""
    return {op: HOST if isinstance(e, OnHost) else DEVICE for op, e in sorted(table.items())}


def refusal(table: Mapping[str, Any], target: str, op: str, why: Mapping[str, str] | None = None) -> str | None:
    """Why ``target`` cannot lower ``op`` (None when its table has it): the check every compiler
    runs on every node before any work.  ``why`` gives better reasons for known gaps."""
    if op in table:
        return None
    if why and op in why:
        return why[op]
    return f"operator {op} is not supported by the {target} compiler (see nnisa targets --ops)"
