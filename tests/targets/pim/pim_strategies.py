"""Hypothesis strategies: random valid PIM IR rows for one encoding mode."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from nnisa.targets.pim.isa import OPCODES, build_isa
from nnisa.targets.pim.program import DTYPE, PimProgram


def _field_values(f):
    lo, hi = f.value_range
    if f.signed and f.wrap_unsigned:
        hi = (1 << (f.width - 1)) - 1  # the decoder returns the signed value
    s = st.integers(lo, hi)
    if f.multiple_of != 1:
        s = s.map(lambda v, m=f.multiple_of: v - v % m if v - v % m >= lo else v - v % m + m)
    return s


def row_strategy(word_bits: int, extended: bool, exclude=("nop",)):
    isa = build_isa(word_bits, extended)
    per_op = []
    for s in isa.instrs:
        if s.mnemonic in exclude:
            continue
        fields = {f.name: _field_values(f) for f in s.format.fields}
        per_op.append(st.fixed_dictionaries(fields).map(lambda d, code=s.opcode: isa.row(OPCODES[code], **d)))
    return st.one_of(per_op)


def program_strategy(word_bits: int, extended: bool, exclude=("nop",), max_rows: int = 30):
    rows = st.lists(row_strategy(word_bits, extended, exclude), min_size=0, max_size=max_rows)
    cores = st.dictionaries(st.integers(0, 70), rows, min_size=1, max_size=3)
    groups = st.lists(st.integers(0, 8), max_size=5)

    def build(args):
        c, g = args
        prog = PimProgram(word_bits=word_bits, extended=extended)
        for k, r in c.items():
            prog.cores[k] = np.array(r, dtype=DTYPE) if r else np.zeros(0, dtype=DTYPE)
            prog.array_group_map[k] = list(g)
        return prog

    return st.tuples(cores, groups).map(build)
