"""numba kernel of the DAIS program depths (``program._levels`` / ``program._adder_depth``).

The readable references are the Python loops in :mod:`.program`; this kernel computes both depths
in one pass over the op arrays and gives up (the caller runs the references) on an operand that is
not an earlier op, which only a program built with ``validate=False`` can hold.
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: opcodes are looked up as ``opcode + OPC_OFFSET`` in the per-opcode flag arrays
OPC_OFFSET = 32


def opcode_flags(codes) -> np.ndarray:
    """Boolean per-opcode lookup array for the kernel (``codes``: a set of opcodes)."""
    a = np.zeros(2 * OPC_OFFSET, np.bool_)
    for o in codes:
        a[o + OPC_OFFSET] = True
    return a


@nb.njit(cache=True)
def depths(opc, a, c, lo, uses0, uses1):
    """``(ok, levels, adder_depth)``: per op, the ASAP level (inputs and constants 0, every other
    op 1 + its deepest operand) and the adder depth (only opcodes 0/1 count).  ``lo`` is the low
    data word (the mux key of opcodes ±6)."""
    n = len(opc)
    lv = np.zeros(n, np.int64)
    ad = np.zeros(n, np.int64)
    for i in range(n):
        o = opc[i]
        x = o + OPC_OFFSET
        if x < 0 or x >= len(uses0):
            return False, lv, ad
        m = 0
        md = 0
        if uses0[x]:
            j = a[i]
            if j < 0 or j >= i:
                return False, lv, ad
            m = lv[j]
            md = ad[j]
        if uses1[x]:
            j = c[i]
            if j < 0 or j >= i:
                return False, lv, ad
            m = max(m, lv[j])
            md = max(md, ad[j])
        if o == 6 or o == -6:
            j = lo[i]
            if j < 0 or j >= i:
                return False, lv, ad
            m = max(m, lv[j])
            md = max(md, ad[j])
        if o != -1 and o != 5:
            lv[i] = m + 1
        ad[i] = md + (1 if o == 0 or o == 1 else 0)
    return True, lv, ad
