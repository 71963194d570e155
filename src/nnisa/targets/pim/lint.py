"""Program lint: findings that make a PIM program's simulated figures meaningless or its run hang.

``nnisa stats`` and ``nnisa sim`` print every finding as a warning line and list them under
``lint`` in ``--json``.  Static checks (:func:`lint_program`):

* ``mvmul_bitwidth_0`` — ``mvmul`` (or vector instructions) before the core's first ``setbw``:
  pimsim-nn starts with bit widths 0 and charges such an ``mvmul`` 0 ns (and moves 0 bytes), so
  the latency of, e.g., a PIMCOMP-NN element program whose cores never execute ``setbw`` is
  not a latency at all;
* ``unmatched_messages`` — ``send``/``recv`` counts (or sizes, in FIFO order) per ordered core
  pair that do not match: a core waits forever;
* ``never_finishes`` — a core with a ``nop`` (pimsim-nn never retires it), waits on an event
  whose ``sync`` count cannot reach the values waited for, or an unmatched message;
* ``unused_groups`` — array groups of the ``array_group_map`` that no ``mvmul`` uses
  (replicated crossbars that never compute).

With values (functional mode), :func:`uninitialised_reads` adds ``uninitialised_read``: local
memory read before the core ever wrote it (a missing ``ld``/``recv``), found by replaying each
core's address registers and written bytes (local memory is written only by the core itself).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Mapping

import numpy as np

from .isa import OPCODE
from .program import PimProgram

_SETBW, _MVMUL, _NOP = OPCODE["setbw"], OPCODE["mvmul"], OPCODE["nop"]
_SEND, _RECV, _SYNC, _WAIT = OPCODE["send"], OPCODE["recv"], OPCODE["sync"], OPCODE["wait"]
_VEC0, _VEC1 = OPCODE["vvadd"], OPCODE["vrsl"]
#: the per-core opcode count covers at least these (PIM opcodes are 6 bits)
_OP_TABLE = 64


@dataclass
class LintIssue:
    """One finding: ``check`` (its kind), ``core`` (or None), ``count`` and a one-line message."""

    check: str
    message: str
    core: int | None = None
    count: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


def lint_program(program: PimProgram, opcodes: Mapping[int, np.ndarray] | None = None) -> list[LintIssue]:
    """The static checks of the module docstring, one issue per core (or core pair).

    ``opcodes``: each core's ``op`` column as a contiguous array when the caller has it (the
    timing model's), which spares reading it out of the rows again.  Per core, one count of the
    opcodes decides which checks have anything to look at; the same findings, in the same order,
    as the readable :func:`lint_program_reference`."""
    out: list[LintIssue] = []
    messages = _Messages()
    for c, rows in program.items():
        op = opcodes[c] if opcodes is not None and c in opcodes else rows["op"]
        try:
            counts = np.bincount(op, minlength=_OP_TABLE)
        except (ValueError, TypeError):  # negative or non-integer opcodes: the readable path
            return lint_program_reference(program)
        limit = _first(op, _SETBW) if counts[_SETBW] else len(op)
        if limit == len(op):
            n_mv, n_vec = int(counts[_MVMUL]), int(counts[_VEC0:_VEC1 + 1].sum())
        else:
            head = op[:limit]
            n_mv, n_vec = int((head == _MVMUL).sum()), int(((head >= _VEC0) & (head <= _VEC1)).sum())
        if n_mv or n_vec:
            out.append(_bitwidth_issue(c, n_mv, n_vec))
        if counts[_NOP]:
            out.append(_nop_issue(c, _first(op, _NOP), int(counts[_NOP])))
        for kind in (_SEND, _RECV, _SYNC, _WAIT):
            if counts[kind]:
                messages.add(c, rows, op, kind)
        groups = program.array_group_map.get(c, [])
        if len(groups):
            issue = _groups_issue(c, groups, _used_groups(rows, op, len(groups)) if counts[_MVMUL] else set())
            if issue is not None:
                out.append(issue)
    return out + messages.issues()


def _first(op: np.ndarray, code: int) -> int:
    """Index of the first ``code`` in ``op`` (present), looking at the head first: a core's
    ``setbw`` is usually its first instruction."""
    head = np.flatnonzero(op[:256] == code)
    return int(head[0]) if len(head) else int(np.argmax(op == code))


def _used_groups(rows: np.ndarray, op: np.ndarray, n_groups: int) -> set:
    """The groups the core's mvmuls name, read in growing windows of the program until all
    ``n_groups`` are seen (usually in the first window) or the program ends."""
    used: set = set()
    lo, step = 0, 4096
    while lo < len(op):
        idx = lo + np.flatnonzero(op[lo:lo + step] == _MVMUL)
        used.update(np.unique(rows["group"][idx]).tolist())
        if all(g in used for g in range(n_groups)):
            break
        lo, step = lo + step, step * 4
    return used


def _bitwidth_issue(c: int, n_mv: int, n_vec: int) -> LintIssue:
    what = f"{n_mv:,} mvmul" + (f" and {n_vec:,} vector instructions" if n_vec else "")
    return LintIssue("mvmul_bitwidth_0", f"core {c}: {what} run before any setbw: pimsim-nn's bit "
                     "widths are 0 then (mvmul 0 ns, 0-byte vectors): the latency is not meaningful", c, n_mv + n_vec)


def _nop_issue(c: int, pc: int, count: int) -> LintIssue:
    return LintIssue("never_finishes", f"core {c}: nop at pc {pc}: pimsim-nn never retires it, the core never "
                     "finishes", c, count)


def _groups_issue(c: int, groups, used: set) -> LintIssue | None:
    unused = [g for g in range(len(groups)) if g not in used]
    if not unused:
        return None
    xb = sum(groups[g] for g in unused)
    shown = ", ".join(map(str, unused[:8])) + (" ..." if len(unused) > 8 else "")
    return LintIssue("unused_groups", f"core {c}: {len(unused)} array group(s) ({xb} crossbars) never "
                     f"used by an mvmul: {shown}", c, len(unused))


def lint_program_reference(program: PimProgram) -> list[LintIssue]:
    """The readable form of :func:`lint_program` (tests check one against the other)."""
    out: list[LintIssue] = []
    messages = _Messages()
    for c, rows in program.items():
        op = rows["op"]
        first = np.flatnonzero(op == _SETBW)
        limit = int(first[0]) if len(first) else len(op)
        n_mv = int((op[:limit] == _MVMUL).sum())
        n_vec = int(((op[:limit] >= _VEC0) & (op[:limit] <= _VEC1)).sum())
        if n_mv or n_vec:
            out.append(_bitwidth_issue(c, n_mv, n_vec))
        nops = np.flatnonzero(op == _NOP)
        if len(nops):
            out.append(_nop_issue(c, int(nops[0]), len(nops)))
        for kind in (_SEND, _RECV, _SYNC, _WAIT):
            messages.add(c, rows, op, kind)
        issue = _groups_issue(c, program.array_group_map.get(c, []), set(rows["group"][op == _MVMUL].tolist()))
        if issue is not None:
            out.append(issue)
    return out + messages.issues()


class _Messages:
    """Every core's sends and recvs (sizes per ordered core pair, in FIFO order), the syncs sent
    to each (core, event) and the values waited for on it."""

    def __init__(self):
        self.sends: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.recvs: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.syncs: Counter = Counter()
        self.waits: dict[tuple[int, int], list[int]] = defaultdict(list)

    def add(self, c: int, rows: np.ndarray, op: np.ndarray, kind: int) -> None:
        """Core ``c``'s instructions of opcode ``kind`` (send, recv, sync or wait)."""
        idx = np.flatnonzero(op == kind)
        if kind in (_SEND, _RECV):
            store = self.sends if kind == _SEND else self.recvs
            for peer, size in zip(rows["core"][idx].tolist(), rows["len"][idx].tolist()):
                store[(c, peer) if kind == _SEND else (peer, c)].append(size)
        elif kind == _SYNC:
            for peer, ev in zip(rows["core"][idx].tolist(), rows["ev"][idx].tolist()):
                self.syncs[(peer, ev)] += 1
        else:
            for ev, val in zip(rows["ev"][idx].tolist(), rows["val"][idx].tolist()):
                self.waits[(c, ev)].append(val)

    def issues(self) -> list[LintIssue]:
        """Findings across cores: unmatched messages, waits no sync can complete."""
        return _pair_issues(self.sends, self.recvs, self.syncs, self.waits)


def _pair_issues(sends, recvs, syncs, waits) -> list[LintIssue]:
    out: list[LintIssue] = []
    for pair in sorted(set(sends) | set(recvs)):
        s, r = sends.get(pair, []), recvs.get(pair, [])
        src, dst = pair
        if len(s) != len(r):
            out.append(LintIssue("unmatched_messages", f"core {src} -> core {dst}: {len(s)} send(s) but {len(r)} "
                                 f"recv(s): core {src if len(s) > len(r) else dst} waits forever", src,
                                 abs(len(s) - len(r))))
            out.append(LintIssue("never_finishes", f"core {src if len(s) > len(r) else dst}: blocked on an "
                                 f"unmatched {'send' if len(s) > len(r) else 'recv'}", src if len(s) > len(r) else dst))
        else:
            bad = [i for i, (a, b) in enumerate(zip(s, r)) if a != b]
            if bad:
                out.append(LintIssue("unmatched_messages", f"core {src} -> core {dst}: message {bad[0] + 1} sends "
                                     f"{s[bad[0]]} bytes, the recv expects {r[bad[0]]}", src, len(bad)))
    for (c, ev), vals in sorted(waits.items()):
        n = syncs.get((c, ev), 0)
        if sum(vals) > n:
            out.append(LintIssue("never_finishes", f"core {c}: waits for {sum(vals)} sync(s) on ev{ev} in total, only "
                                 f"{n} are sent to it: a wait never completes", c))
    return out


def uninitialised_reads(program: PimProgram, shapes: dict[tuple[int, int], tuple[int, int]],
                        lmem_size: int = 1 << 20, limit: int = 5_000_000) -> list[LintIssue]:
    """Local-memory reads of bytes the core never wrote (see the module docstring).

    ``shapes``: ``(core, group) → (K, N)`` of the weights (an ``mvmul`` reads K inputs and writes
    N outputs; groups without weights: a crossbar's rows and all its cells' columns).  Registers
    loaded by ``sld`` (global-memory data) are not followed.  Programs with more than ``limit``
    instructions are not checked (returns an empty list)."""
    if len(program) > limit:
        return []
    from .lint_lmem import replay_core
    rows_, cols_ = program.config_extra.get("xbar_size", [128, 128])
    shapes = dict(shapes)
    for c, groups in program.array_group_map.items():
        for g, xb in enumerate(groups):
            shapes.setdefault((c, g), (int(rows_), int(xb) * int(cols_)))
    out = []
    for c, rows in program.items():
        first, count = replay_core(c, rows, shapes, lmem_size)
        if count:
            pc, addr, op = first
            out.append(LintIssue("uninitialised_read", f"core {c}: {count:,} instruction(s) read local memory never "
                                 f"written, first pc {pc} ({op}) at address {addr}", c, count))
    return out


def lint_dicts(issues: list[LintIssue]) -> list[dict]:
    """JSON-safe form (``--json``: ``lint``)."""
    return [i.to_dict() for i in issues]


def issue_warnings(issues: list[LintIssue], limit: int = 20) -> None:
    """One Python warning per finding (the CLI prints each as an ``nnisa: warning:`` line);
    beyond ``limit``, one line says how many more there are."""
    import warnings
    for i in issues[:limit]:
        warnings.warn(f"lint {i.check}: {i.message}", stacklevel=3)
    if len(issues) > limit:
        warnings.warn(f"lint: {len(issues) - limit} more finding(s) (see --json)", stacklevel=3)
