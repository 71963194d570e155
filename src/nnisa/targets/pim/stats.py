"""Static statistics of a PIM program (instruction mix, field ranges, array groups, traffic).

Spec §12.3 lists these figures for the conformance program; ``nnisa stats`` prints them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .isa import OPCODE, OPCODES, build_isa
from .program import PimProgram


def program_stats(program: PimProgram, lint: bool = True) -> dict[str, Any]:
    """Instruction mix per core, field ranges per op, array-group summary and transfer traffic.

    Returns
    -------
    dict
        JSON-serialisable: ``instructions``, ``cores``, ``op_counts``, ``per_core``
        (core → instructions and op mix), ``field_ranges`` (op → field → [min, max]),
        ``array_groups``, ``traffic`` and (with ``lint``) ``lint``: the findings of
        :func:`~nnisa.targets.pim.lint.lint_program`, each also issued as a warning.
    """
    isa = build_isa(64, True)
    per_core: dict[str, Any] = {}
    totals: Counter = Counter()
    lo: dict[tuple[str, str], int] = {}
    hi: dict[tuple[str, str], int] = {}
    traffic = {"ld_bytes": 0, "st_bytes": 0, "send_bytes": 0, "send_messages": 0, "recv_bytes": 0}
    pairs: Counter = Counter()
    big_groups = 0
    for c, rows in program.items():
        ops = rows["op"].astype(np.int64)
        counts = np.bincount(ops, minlength=len(OPCODES))
        mix = {OPCODES[i]: int(n) for i, n in enumerate(counts.tolist()) if n}
        per_core[str(c)] = {"instructions": int(len(rows)), "ops": mix}
        totals.update(mix)
        for code in np.flatnonzero(counts).tolist():
            mnem = OPCODES[code]
            sel = rows[ops == code]
            for f in isa.spec(code).format.fields:
                col = sel[f.name]
                key = (mnem, f.name)
                lo[key] = min(lo.get(key, int(col.min())), int(col.min()))
                hi[key] = max(hi.get(key, int(col.max())), int(col.max()))
        for mnem in ("ld", "st", "send", "recv"):
            traffic[f"{mnem}_bytes"] += int(rows["len"][ops == OPCODE[mnem]].sum())
        send = rows[ops == OPCODE["send"]]
        traffic["send_messages"] += len(send)
        for dst, n in Counter(send["core"].tolist()).items():
            pairs[(c, dst)] += n
        big_groups += int(((ops == OPCODE["mvmul"]) & (rows["group"] > 15)).sum())
    traffic["send_pairs"] = {f"{a}->{b}": n for (a, b), n in sorted(pairs.items())}
    ranges: dict[str, dict[str, list[int]]] = {}
    for (mnem, f), v in sorted(lo.items(), key=lambda kv: (OPCODE[kv[0][0]], kv[0][1])):
        ranges.setdefault(mnem, {})[f] = [v, hi[(mnem, f)]]
    agm = program.array_group_map
    groups = {
        "cores": len(agm),
        "groups": sum(len(g) for g in agm.values()),
        "crossbars": sum(sum(g) for g in agm.values()),
        "per_core": {str(c): {"groups": len(g), "crossbars": int(sum(g)),
                              "sizes": {str(k): v for k, v in sorted(Counter(g).items())}}
                     for c, g in sorted(agm.items())},
        "mvmul_group_gt_15": big_groups,
    }
    out = {
        "instructions": int(len(program)),
        "cores": len(program.cores),
        "chip_cores": int(program.core_count),
        "op_counts": dict(sorted(totals.items(), key=lambda kv: -kv[1])),
        "per_core": per_core,
        "field_ranges": ranges,
        "array_groups": groups,
        "traffic": traffic,
    }
    if lint:
        from .lint import issue_warnings, lint_dicts, lint_program
        issues = lint_program(program)
        issue_warnings(issues)
        out["lint"] = lint_dicts(issues)
    return out
