"""Per-instruction cycle formulas of the PIMSAB controller (spec §3.2).

``simulator`` mode reproduces the official simulator's formulas; ``bitexact`` differs only for
``mul_const``/``dot_const`` (data-dependent: CoMeFa's zero-skipping micro-program) and float
``max``/``min`` (an error in ``simulator`` mode, as the official simulator asserts).  Transfers
are timed by the controller FSM, the NoC and the DRAM model, not here.
"""

from __future__ import annotations

from ....core.errors import SimError
from ..config import PimsabConfig
from ..precision import Precision, decode


def fadd(m: int, e: int) -> int:
    """Cycles of a bit-serial float addition: 2me + 9m + 7e + 12 (fp32: 643)."""
    return 2 * m * e + 9 * m + 7 * e + 12


def fmul(m: int, e: int) -> int:
    """Cycles of a bit-serial float multiplication: m² + 6m + 2e + 10 (fp32: 693)."""
    return m * m + 6 * m + 2 * e + 10


def int_add(p: int) -> int:
    return p + 1


def int_mult(p: int) -> int:
    return p * p + 3 * p - 2


def mul_const_bitexact(p: int, const: int) -> int:
    """CoMeFa's MUL_CONST micro-program: 2p + Σ_{j=1..p-1} (b_j ? p+1 : 1) + (b_{p-1} = 0 ? 1 : 0)."""
    b = [(const >> j) & 1 for j in range(p)]
    return 2 * p + sum(p + 1 if b[j] else 1 for j in range(1, p)) + (1 if p and b[p - 1] == 0 else 0)


def _p2(pd: Precision, pa: Precision, pb: Precision) -> int:
    """Timing precision of a binary op: min(max(pA, pB), pD)."""
    return min(max(pa.bits, pb.bits), pd.bits)


def _p1(pd: Precision, pa: Precision) -> int:
    return min(pa.bits, pd.bits)


def compute_cycles(mn: str, ins: dict, cfg: PimsabConfig, rf_values: tuple[int, ...] | None = None) -> int:
    """Cycles T of a compute instruction (the controller occupies T + 1 cycles with dispatch).

    ``rf_values`` holds the RF constants a ``bitexact`` ``mul_const`` (one value) or ``dot_const``
    (x, y) reads; without them ``bitexact`` falls back to the ``simulator`` count.
    """
    bitexact = cfg.cycle_mode == "bitexact"
    get = lambda c: decode(ins[c])  # noqa: E731
    if mn in ("nop", "read_rf", "write_rf", "add_rf", "sub_rf", "set_mask"):
        return 1
    if mn == "halt":
        return 0
    pd = get("pd")
    flt = pd.is_float
    m, e = pd.mantissa, pd.exponent
    if mn in ("add", "sub", "add_const"):
        pb = get("pb")
        t = fadd(m, e) if flt else int_add(_p2(pd, get("pa"), pb))
        if mn == "add_const" and not cfg.const_op:
            t += cfg.transfer_depth + pb.bits
        return t
    if mn == "mult":
        return fmul(m, e) if flt else int_mult(_p2(pd, get("pa"), get("pb")))
    if mn == "mul_const":
        pa, pb = get("pa"), get("pb")
        if flt:
            t = (m * m + 6 * m + 4 * e + 13) // 2
        else:
            p = _p2(pd, pa, pb)
            t = mul_const_bitexact(p, rf_values[0]) if bitexact and rf_values else int_mult(p) // 2
        if not cfg.const_op:
            t += cfg.transfer_depth + pb.bits
        return t
    if mn == "dot_const":
        pa, pb, px, py = get("pa"), get("pb"), get("px"), get("py")
        if flt:
            t = (m * m + 6 * m + 4 * e + 13) // 2
        else:
            c, r = max(pa.bits, pb.bits), max(px.bits, py.bits)
            t = (2 * max(c, r) + 1 - min(c, r)) + (c + 1)
            if bitexact and rf_values:
                x, y = rf_values
                t += sum(c + 2 for j in range(r) if ((x | y) >> j) & 1)
        if not cfg.const_op:
            t += cfg.transfer_depth + px.bits + py.bits
        return t
    if mn in ("max", "min"):
        if flt:
            if not bitexact:
                raise SimError(f"float {mn} has no cycle formula in simulator mode (the official simulator "
                               "asserts); use cycle_mode=bitexact")
            return fadd(m, e) + pd.bits
        return 4 * _p2(pd, get("pa"), get("pb")) + 1
    if mn in ("and", "or", "xor"):
        return pd.bits if flt else _p2(pd, get("pa"), get("pb"))
    if mn in ("not", "copy"):
        return pd.bits if flt else _p1(pd, get("pa"))
    if mn in ("set", "reset"):
        return pd.bits
    if mn == "shift":
        return (pd.bits if flt else _p1(pd, get("pa"))) * (ins["dist"] + 1)
    if mn == "cram_local_shf":
        return 3 * (pd.bits if flt else _p1(pd, get("pa")))
    if mn == "reduce_cram":
        return _reduce(get("pa"), pd, ins["levels"], "cram", cfg)
    if mn == "reduce_tile":
        mode = "intra" if cfg.reduction == "intraCRAM" else cfg.tile_interconnect
        return _reduce(get("pa"), pd, ins["levels"], mode, cfg)
    if mn == "mac":
        pa, pb, pin = get("pa"), get("pb"), get("pin")
        if flt:
            return fmul(m, e) + 1 + fadd(m, e)
        return int_mult(max(pa.bits, pb.bits)) + 1 + int_add(min(max(pa.bits + pb.bits, pin.bits), pd.bits))
    if mn == "popcount_rf":
        return get("pa").bits + cfg.popcount_stages
    raise ValueError(f"{mn} is timed by the controller FSM, not a formula")


def _reduce(ps: Precision, pd: Precision, levels: int, mode: str, cfg: PimsabConfig) -> int:
    """Reductions over L levels.  ``cram``: intra-CRAM shift-and-add, Σ (ps + i)(1 + (i−1)²);
    ``intra``: reduce_tile costed as intra-CRAM, Σ min(ps + i, pD)(1 + (i−1)²); ``htree``:
    Σ [min(ps + i, pD) + d_i] with d_i = i + 1 (i odd) or i; ``bus``: Σ [min(ps + i, pD) +
    (crams/2^i)·ps].  Floats replace the add by fadd(m, e) (and move ``bits`` per element)."""
    flt = pd.is_float
    fa = fadd(pd.mantissa, pd.exponent) if flt else 0
    total = 0
    for i in range(1, levels + 1):
        add = fa if flt else (ps.bits + i if mode == "cram" else min(ps.bits + i, pd.bits))
        if mode in ("cram", "intra"):
            total += add * (1 + (i - 1) ** 2)
        elif mode == "bus":
            total += add + (cfg.crams_per_tile >> i) * (pd.bits if flt else ps.bits)
        else:
            d = i + 1 if i % 2 else i
            total += add + d + (pd.bits - 1 if flt else 0)
    return total


def reduce_cram_cycles(ps: int, levels: int) -> int:
    """Σ_{i=1..L} (ps + i)·(1 + (i−1)²) (``reduce_cram``; i16, L=8: 3328)."""
    return sum((ps + i) * (1 + (i - 1) ** 2) for i in range(1, levels + 1))
