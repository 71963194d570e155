"""Deadlock report of the functional simulator (spec ``pim_isa.md`` §5.6).

Example::

    DEADLOCK after 1,234 instructions: 3 of 44 cores unfinished
      core 7  pc 1234  recv $r0, 6, 64       waits for: send from core 6 (core 6 is blocked at pc 88)
      core 6  pc 88    recv $r0, 7, 64       waits for: send from core 7 (core 7 is blocked at pc 1234)
      core 12 pc 40    wait 0, 1             waits for: ev0 == 1 (current 2: already passed, can never match)
      wait-for graph: 6 -> 7, 7 -> 6
      wait-for cycle: 6 -> 7 -> 6

:func:`format_deadlock` only formats; it is shared with other simulators that detect deadlock
(they pass their own entries and header, e.g. ``"at t = 123456 ns"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..isa import OPCODE


@dataclass
class BlockedCore:
    """One unfinished core for the report: where it is and what it waits for."""

    core: int
    pc: int
    disasm: str
    waits_for: str
    edges: list[int] = field(default_factory=list)  # cores it waits on (wait-for graph)


def find_cycle(edges: dict[int, list[int]]) -> list[int] | None:
    """A cycle of the directed graph ``edges`` (smallest start node first), or ``None``."""
    state: dict[int, int] = {}
    stack: list[int] = []

    def visit(u: int) -> list[int] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, [])):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state and v in edges:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        state[u] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def format_deadlock(header: str, entries: list[BlockedCore], total_cores: int) -> str:
    """The multi-line report: header, one line per blocked core, wait-for graph and cycle."""
    wc = max([len(str(e.core)) for e in entries] + [1])
    wp = max([len(str(e.pc)) for e in entries] + [1])
    wd = max([len(e.disasm) for e in entries] + [20])
    lines = [f"DEADLOCK {header}: {len(entries)} of {total_cores} cores unfinished"]
    for e in entries:
        lines.append(f"  core {e.core:<{wc}} pc {e.pc:<{wp}}  {e.disasm:<{wd}}  waits for: {e.waits_for}")
    graph = {e.core: sorted(set(e.edges)) for e in entries}
    arcs = [f"{u} -> {v}" for u in sorted(graph) for v in graph[u]]
    lines.append("  wait-for graph: " + (", ".join(arcs) if arcs else "(no edges)"))
    cycle = find_cycle(graph)
    lines.append("  wait-for cycle: " + (" -> ".join(map(str, cycle)) if cycle else "none"))
    return "\n".join(lines)


def _status(m, c: int) -> str:
    peer = m.cores.get(c)
    if peer is None:
        return f"core {c} has no program"
    if peer.pc >= peer.n:
        return f"core {c} has finished"
    return f"core {c} is blocked at pc {peer.pc}"


def _pending_syncs(m, target: int, ev: int) -> dict[int, int]:
    """core → number of ``sync ev, target`` instructions it has not executed yet."""
    out = {}
    for c, core in m.cores.items():
        rest = core.rows[core.pc:]
        k = int(np.count_nonzero((rest["op"] == OPCODE["sync"]) & (rest["ev"] == ev) & (rest["core"] == target)))
        if k:
            out[c] = k
    return out


def deadlock_report(m, when: str) -> tuple[str, int]:
    """Build the report for machine ``m`` (see :mod:`.functional`); returns (text, #stuck)."""
    entries = []
    for c in sorted(m.cores):
        core = m.cores[c]
        if core.pc >= core.n:
            continue
        kind = core.blocked[0] if core.blocked else "?"
        edges: list[int] = []
        if kind == "recv":
            src = core.blocked[1]
            what = f"send from core {src} ({_status(m, src)})"
            edges = [src]
        elif kind == "send":
            dst = core.blocked[1]
            what = f"recv on core {dst} ({_status(m, dst)})"
            edges = [dst]
        elif kind == "wait":
            ev, val = core.blocked[1], core.blocked[2]
            cur = core.ev[ev]
            if cur > val:
                what = f"ev{ev} == {val} (current {cur}: already passed, can never match)"
            else:
                pend = _pending_syncs(m, c, ev)
                if pend:
                    src = ", ".join(f"core {k} ×{v}" for k, v in sorted(pend.items()))
                    what = f"ev{ev} == {val} (current {cur}; remaining syncs from {src})"
                    edges = sorted(k for k in pend if k != c)
                else:
                    what = f"ev{ev} == {val} (current {cur}; no core has a remaining sync for it)"
        else:
            what = "nothing (runnable)"  # cannot happen: the scheduler ran every runnable core
        entries.append(BlockedCore(c, core.pc, m.disasm(core, core.pc), what, edges))
    return format_deadlock(when, entries, len(m.cores)), len(entries)
