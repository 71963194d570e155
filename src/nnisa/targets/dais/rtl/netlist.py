"""DAIS program → bit-accurate RTL netlist (the plan both HDL emitters print).

Every op becomes one *node*: a building block (``shift_add``, ``quant``, ``mux``, ``mul``,
``lut``, ``bit1``, ``bit2``, ``input``, ``const``) with its parameters and the width and
signedness of its output wire.  Widths come from an exact interval analysis of the integer each
op holds in the interpreter (spec §5): inputs and quantizing ops are bounded by their dtype,
everything else by the intervals of its operands.  So

* a wire is never narrower than the values it carries (bit-exactness for *any* program, also
  for non-quantizing ops whose dtype annotation is too small, which the interpreter never wraps);
* a wire is often narrower than the dtype (fewer LUTs);
* where the interpreter's int64 buffer would overflow, the block computes modulo 2^64 at
  64 bits, which is exactly what the interpreter's two's complement arithmetic does (D10).

Each block computes an expression modulo ``2^N`` with an internal width ``N`` that holds the
exact result before any non-linear step (floor shift, comparison, wrap); the output is the low
``W`` bits, which by the analysis is lossless.  Shifts by 64 or more follow §5.8.

Pipelining (``latency_cutoff``): each op has a delay in adder units (an adder, subtractor or
constant adder is 1, a lookup table ``max(w_key - 6, 1)``, a multiplier ``min(w_a, w_c)``,
binary bit ops and ANY/ALL 1, wiring ops 0).  The arrival time of an op is the latest operand's
plus its delay; an op that would cross a multiple of the cutoff starts at that boundary instead,
and its stage is ``floor(arrival / cutoff)``.  Values crossing stages go through registers;
constants never do.  Outputs are registered after the last stage, so the latency in clock cycles
equals the number of stages (the pipeline depth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ....core.errors import OptionError, UnsupportedError
from ..program import Program, int_bounds

I64LO, I64HI = -(1 << 63), (1 << 63) - 1
_HUGE = 1 << 200  # interval stand-in for "overflows int64" (keeps Python ints small)
#: largest lookup-table key range emitted as a case statement
MAX_LUT_CASES = 1 << 20


def sbits(lo: int, hi: int) -> int:
    """Width of the smallest two's complement vector holding ``[lo, hi]``."""
    a = (~lo if lo < 0 else lo).bit_length()
    b = (~hi if hi < 0 else hi).bit_length()
    return (a if a > b else b) + 1


def wire_bits(lo: int, hi: int) -> tuple[int, bool]:
    """``(width, signed)`` of a wire holding ``[lo, hi]`` (unsigned when ``lo >= 0``; width ≥ 1)."""
    if lo < 0:
        return sbits(lo, hi), True
    return (hi.bit_length() or 1), False


def cap64(lo: int, hi: int) -> tuple[int, int, int]:
    """``(lo, hi, N)``: the interval and internal width of an int64 computation (mod 2^64 when
    the exact interval leaves int64)."""
    if lo < I64LO or hi > I64HI:
        return I64LO, I64HI, 64
    return lo, hi, sbits(lo, hi)


def shl_iv(lo: int, hi: int, s: int) -> tuple[int, int]:
    """Exact interval of ``v · 2^s`` (``s >= 0``); a shift past 128 bits is "overflow"."""
    if lo == hi == 0:
        return 0, 0
    if s > 128:
        return -_HUGE, _HUGE
    return lo << s, hi << s


def shift_iv(lo: int, hi: int, s: int) -> tuple[int, int]:
    """Interval of the interpreter's ``_shl(v, s)`` before the int64 cap: left for ``s >= 0``,
    floor right shift for ``s < 0``."""
    if s >= 0:
        return shl_iv(lo, hi, s)
    s = min(-s, 130)
    return lo >> s, hi >> s


@dataclass(slots=True)
class Node:
    """One op as a hardware block.

    ``kind`` names the building block, ``ins`` the operand ops (``-1`` for none), ``p`` its
    integer parameters, ``w``/``signed`` the output wire and ``lo``/``hi`` the exact range of
    the value it carries.
    """

    kind: str
    ins: tuple
    p: dict
    w: int
    signed: bool
    lo: int
    hi: int
    stage: int = 0


@dataclass
class Port:
    """An input or output port.  Inputs: ``f`` fractional bits (the host drives
    ``floor(x · 2^(inp_shift + f)) mod 2^w``).  Outputs: op ``src`` (``-1``: constant 0),
    negated if ``neg``; the real value is ``port · 2^scale_exp``."""

    name: str
    w: int
    signed: bool
    f: int = 0
    src: int = -1
    neg: bool = False
    scale_exp: int = 0
    lo: int = 0
    hi: int = 0
    folded: bool = False   # output negation folded into its subtractor (see fold_output_negations)


@dataclass
class Netlist:
    """The whole design: nodes, ports, lookup-table modules and the pipeline schedule."""

    nodes: list
    inputs: list
    outputs: list
    luts: list = field(default_factory=list)  # (table index, key w, key signed, out w, {key: value})
    n_stages: int = 0          # 0: combinational
    latency_cutoff: float | None = None
    arrival: list = field(default_factory=list)

    @property
    def latency_cycles(self) -> int:
        return self.n_stages

    def n_registers(self) -> int:
        """Flip-flops the pipeline inserts (bits)."""
        if not self.n_stages:
            return 0
        last = self.last_use()
        bits = 0
        for i, nd in enumerate(self.nodes):
            if nd.kind != "const" and last[i] > nd.stage:
                bits += nd.w * (last[i] - nd.stage)
        return bits + sum(o.w for o in self.outputs)

    def last_use(self) -> list[int]:
        """Latest stage that reads each op (outputs read at ``n_stages``)."""
        last = [-1] * len(self.nodes)
        for nd in self.nodes:
            for j in nd.ins:
                if j >= 0 and last[j] < nd.stage:
                    last[j] = nd.stage
        for o in self.outputs:
            if o.src >= 0:
                last[o.src] = max(last[o.src], self.n_stages)
        return last


# ---------------------------------------------------------------------------------------------
# interval analysis and block parameters
# ---------------------------------------------------------------------------------------------

def _wrap_iv(lo: int, hi: int, k: int, w: int) -> tuple[int, int]:
    """Interval after wrapping ``[lo, hi]`` to dtype ``(k, w)`` (w > 64: int64)."""
    if w <= 0:
        return 0, 0
    dlo, dhi = int_bounds(k, w) if w <= 64 else (I64LO, I64HI)
    if dlo <= lo and hi <= dhi:
        return lo, hi
    return dlo, dhi


def _quant_branch(alo, ahi, neg: bool, sh: int, k: int, w: int, relu: bool = False):
    """``wrap(_sar(σ·A, sh))`` (``sh < 0``: exact left shift): ``(N, lo, hi)``."""
    vlo, vhi = (-ahi, -alo) if neg else (alo, ahi)
    vlo, vhi, n = cap64(vlo, vhi)
    if relu:
        vlo, vhi = max(vlo, 0), max(vhi, 0)
    plo, phi = shift_iv(vlo, vhi, -sh)
    lo, hi = _wrap_iv(plo, phi, k, w)
    if relu and lo > 0:
        lo = 0
    return n, lo, hi


def build_netlist(p: Program, *, latency_cutoff: float | None = None) -> Netlist:
    """Plan the RTL of ``p``: one :class:`Node` per op, ports, lookup-table contents and the
    pipeline stages (``latency_cutoff`` in adder units, ``None``: combinational)."""
    if latency_cutoff is not None and not (latency_cutoff > 0 and math.isfinite(latency_cutoff)):
        raise OptionError(f"latency_cutoff must be a positive number, not {latency_cutoff!r}")
    n = p.n_ops
    opc, A0, C0, D = p.opcode.tolist(), p.id0.tolist(), p.id1.tolist(), p.data.tolist()
    K, I, F = p.k.tolist(), p.I.tolist(), p.f.tolist()
    LO, HI = p.data_lo().tolist(), p.data_hi().tolist()
    W = [k + i + f for k, i, f in zip(K, I, F)]
    shifts = p.inp_shifts.tolist()

    # input ports: F_j = finest f among the readers, width = enough bits for every reader
    pf = {}
    for i in range(n):
        if opc[i] == -1 and W[i] > 0:
            j = A0[i]
            pf[j] = max(pf.get(j, F[i]), F[i])
    pw = {}
    nodes: list[Node] = []
    tables = {}
    luts: list = []
    for i in range(n):
        o, a, c, k, f, w = opc[i], A0[i], C0[i], K[i], F[i], W[i]
        na = nodes[a] if o not in (-1, 5) else None
        nc = nodes[c] if o in (0, 1, 6, -6, 7, 10) else None
        fa = F[a] if na is not None else 0
        fc = F[c] if nc is not None else 0
        neg = o < -1
        if o == -1:
            if w <= 0:
                nodes.append(Node("const", (), {"value": 0}, 1, False, 0, 0))
                continue
            wy = min(w, 64)
            off = pf[a] - f
            pw[a] = max(pw.get(a, 1), off + wy)
            lo, hi = int_bounds(k, wy) if w <= 64 else (I64LO, I64HI)
            nodes.append(Node("input", (), {"port": a, "off": off}, wy, bool(k) or w > 64, lo, hi))
            continue
        if o == 5:
            v = D[i]
            nodes.append(Node("const", (), {"value": v}, *wire_bits(v, v), v, v))
            continue
        if o in (0, 1, 4):
            if o == 4:
                sa, sc = f - fa, 0
                clo = chi = D[i]
                sub, rs = 0, 0
            else:
                e = LO[i] + fa - fc
                sa, sc = (0, e) if e > 0 else (-e, 0)
                clo, chi = nc.lo, nc.hi
                sub = o
                t = max(fa, fc - LO[i])
                rs = t - f if t > f else 0
            xlo, xhi = shift_iv(na.lo, na.hi, sa)
            ylo, yhi = shl_iv(clo, chi, sc)
            slo, shi = (xlo - yhi, xhi - ylo) if sub else (xlo + ylo, xhi + yhi)
            slo, shi, nn = cap64(slo, shi)
            rs = min(rs, nn - 1)
            lo, hi = slo >> rs, shi >> rs
            sa = max(sa, -(na.w + 1)) if sa < 0 else min(sa, nn)
            prm = {"sha": sa, "shc": min(sc, nn), "sub": sub, "rs": rs, "n": nn}
            if o == 4:
                prm["const"] = D[i]
                prm["cw"], prm["cs"] = wire_bits(D[i], D[i])
                ins = (a,)
            else:
                ins = (a, c)
            nodes.append(Node("shift_add", ins, prm, *wire_bits(lo, hi), lo, hi))
            continue
        if abs(o) in (2, 3):
            relu = abs(o) == 2
            sh = fa - f
            nn, lo, hi = _quant_branch(na.lo, na.hi, neg, sh, k, w, relu)
            nodes.append(Node("quant", (a,), {"neg": int(neg), "sh": _clamp_sh(sh, nn), "relu": int(relu),
                                              "n": nn}, *wire_bits(lo, hi), lo, hi))
            continue
        if abs(o) == 6:
            q = LO[i]
            s0, s1 = f - fa, f - fc + HI[i]
            na_, alo, ahi = _quant_branch(na.lo, na.hi, False, -s0, k, w)
            nc_, clo, chi = _quant_branch(nc.lo, nc.hi, neg, -s1, k, w)
            lo, hi = min(alo, clo), max(ahi, chi)
            cond = _mux_cond(nodes[q], K[q], W[q])
            prm = {"sha": _clamp_sh(-s0, na_), "na": na_, "shc": _clamp_sh(-s1, nc_), "nc": nc_,
                   "neg": int(neg), "cond": cond}
            nodes.append(Node("mux", (a, c, q), prm, *wire_bits(lo, hi), lo, hi))
            continue
        if o == 7:
            cs = (na.lo * nc.lo, na.lo * nc.hi, na.hi * nc.lo, na.hi * nc.hi)
            lo, hi, nn = cap64(min(cs), max(cs))
            nodes.append(Node("mul", (a, c), {"n": nn}, *wire_bits(lo, hi), lo, hi))
            continue
        if o == 8:
            t, pad = LO[i], HI[i]
            lo_a = int_bounds(K[a], W[a])[0] if W[a] <= 64 else I64LO
            tab = p.tables[t]
            base = lo_a + pad
            klo, khi = max(na.lo, base), min(na.hi, base + len(tab) - 1)
            if khi - klo + 1 > MAX_LUT_CASES:
                raise UnsupportedError(f"lookup table {t} would need {khi - klo + 1} cases in RTL "
                                       f"(limit {MAX_LUT_CASES})", where=f"op {i}")
            vals = tab[max(klo - base, 0):max(khi - base + 1, 0)].tolist() if khi >= klo else []
            lo = min(vals + ([0] if (na.lo < klo or na.hi > khi) else []), default=0)
            hi = max(vals + ([0] if (na.lo < klo or na.hi > khi) else []), default=0)
            wy, sy = wire_bits(lo, hi)
            key = (t, na.w, na.signed, klo, khi, base, wy)
            if key not in tables:
                tables[key] = len(luts)
                luts.append({"table": t, "kw": na.w, "ks": na.signed, "klo": klo, "base": base,
                             "w": wy, "values": vals})
            nodes.append(Node("lut", (a,), {"lut": tables[key]}, wy, sy, lo, hi))
            continue
        if abs(o) == 9:
            vlo, vhi, nn = cap64(*((-na.hi, -na.lo) if neg else (na.lo, na.hi)))
            wa, sub = W[a], LO[i]
            if sub == 1:
                lo, hi = (0 if vlo <= 0 <= vhi else 1), (0 if vlo == vhi == 0 else 1)
            elif sub == 2:
                if wa <= 0:
                    lo = hi = 1
                else:
                    lo, hi = 0, 1
            elif k or wa >= 64:
                lo, hi = ~vhi, ~vlo
            elif wa <= 0:
                lo = hi = 0
            else:
                m = (1 << wa) - 1
                lo, hi = (m - vhi, m - vlo) if 0 <= vlo and vhi <= m else (0, m)
            nodes.append(Node("bit1", (a,), {"neg": int(neg), "op": sub, "n": nn, "mw": min(max(wa, 0), 64)},
                              *wire_bits(lo, hi), lo, hi))
            continue
        if o == 10:
            hh = HI[i]
            ax = (-na.hi, -na.lo) if hh & 1 else (na.lo, na.hi)
            cx = (-nc.hi, -nc.lo) if hh & 2 else (nc.lo, nc.hi)
            e = LO[i] + fa - fc
            sa, sc = (0, e) if e > 0 else (-e, 0)
            ax, cx = shl_iv(*ax, sa), shl_iv(*cx, sc)
            axl, axh, n1 = cap64(*ax)
            cxl, cxh, n2 = cap64(*cx)
            nn = max(n1, n2)
            op = (hh >> 24) & 0xFF
            if axl >= 0 and cxl >= 0:
                lo, hi = 0, (min(axh, cxh) if op == 0 else (1 << max(axh, cxh).bit_length()) - 1)
            else:
                lo, hi = -(1 << (nn - 1)), (1 << (nn - 1)) - 1
            prm = {"nega": hh & 1, "negc": (hh >> 1) & 1, "sha": min(sa, nn), "shc": min(sc, nn), "op": op, "n": nn}
            nodes.append(Node("bit2", (a, c), prm, *wire_bits(lo, hi), lo, hi))
            continue
        raise AssertionError(o)  # validated programs hold no other opcode

    for i, nd in enumerate(nodes):
        if nd.lo == nd.hi and nd.kind != "const":
            nodes[i] = Node("const", (), {"value": nd.lo}, nd.w, nd.signed, nd.lo, nd.hi)
    inputs = [Port(f"inp_{j}", pw.get(j, 1), False, pf.get(j, 0)) for j in range(p.n_in)]
    outputs = []
    for j in range(p.n_out):
        q = int(p.out_idxs[j])
        if q < 0:
            outputs.append(Port(f"out_{j}", 1, False, src=-1))
            continue
        nq = nodes[q]
        ng = bool(p.out_negs[j])
        lo, hi, _ = cap64(-nq.hi, -nq.lo) if ng else (nq.lo, nq.hi, 0)
        ww, ss = wire_bits(lo, hi)
        outputs.append(Port(f"out_{j}", ww, ss, src=q, neg=ng, scale_exp=int(p.out_shifts[j]) - F[q],
                            lo=lo, hi=hi))
    fold_output_negations(nodes, outputs)
    net = Netlist(nodes, inputs, outputs, luts, latency_cutoff=latency_cutoff)
    _schedule(net, latency_cutoff)
    return net


def fold_output_negations(nodes: list, outputs: list) -> int:
    """Fold the negation of negated outputs into the adder tree that produces them.

    A negation block costs a second carry chain (about one LUT per output bit), whereas
    ``-(a·2^SHA - c·2^SHC) = c·2^SHC - a·2^SHA`` only swaps a subtractor's operands, and
    ``-(a + c) = (-a) - c`` turns an adder into a subtractor when one operand can itself be
    negated for free (recursively).  A node is rewritten only when its one reader is the output
    or the node being negated, both operands are left-shifted (``SHA >= 0`` after the swap), no
    low bits are dropped (``RS = 0``) and its exact value stays inside int64 (no mod-2^64 wrap);
    it then carries the negated value (range ``[-hi, -lo]``) and the port is marked ``folded``
    instead of ``neg``.  Returns the number of folded outputs.
    """
    readers = [0] * len(nodes)
    for nd in nodes:
        for j in nd.ins:
            if j >= 0:
                readers[j] += 1
    for o in outputs:
        if o.src >= 0:
            readers[o.src] += 1

    def plan(q: int, depth: int):
        """Rewrites ``[(node, new ins, new params)]`` negating node ``q`` for free, or None."""
        nd = nodes[q]
        p = nd.p
        if (depth > 32 or readers[q] != 1 or nd.kind != "shift_add" or len(nd.ins) != 2 or p["rs"]
                or p["n"] >= 64 or sbits(-nd.hi, -nd.lo) >= 64):
            return None
        a, c = nd.ins
        if p["sub"]:  # -(a - c) = c - a
            return [(q, (c, a), dict(sub=1, sha=p["shc"], shc=p["sha"]))] if p["sha"] >= 0 else None
        sub = plan(a, depth + 1)  # -(a + c) = (-a) - c
        if sub is not None:
            return sub + [(q, (a, c), dict(sub=1, sha=p["sha"], shc=p["shc"]))]
        if p["sha"] >= 0:  # -(a + c) = (-c) - a
            sub = plan(c, depth + 1)
            if sub is not None:
                return sub + [(q, (c, a), dict(sub=1, sha=p["shc"], shc=p["sha"]))]
        return None

    n = 0
    for o in outputs:
        if not o.neg or o.src < 0:
            continue
        steps = plan(o.src, 0)
        if steps is None:
            continue
        for q, ins, prm in steps:
            nd = nodes[q]
            lo, hi = -nd.hi, -nd.lo
            prm.update(n=sbits(lo, hi), negated=1)  # the wire carries minus the op's value
            nodes[q] = Node("shift_add", ins, dict(nd.p, **prm), *wire_bits(lo, hi), lo, hi, nd.stage)
        o.neg, o.folded = False, True
        n += 1
    return n


def _clamp_sh(sh: int, n: int) -> int:
    """Right shift (``sh >= 0``) or left shift (``sh < 0``) count clamped to what changes an
    ``n``-bit value (a right shift past the width is sign fill, a left shift past 64 gives 0)."""
    return max(min(sh, n), -130)


def _mux_cond(key: Node, kq: int, wq: int) -> tuple:
    """How a ±6 mux decides: ``("const", b)``, ``("bit", i)`` or ``("ge", threshold)``."""
    if kq:
        return ("bit", key.w - 1) if key.signed else ("const", 0)
    if wq <= 0 or wq >= 65:
        return ("const", 0)
    if wq == 64:
        return ("bit", key.w - 1) if key.signed else ("const", 0)
    t = 1 << (wq - 1)
    if key.hi < t:
        return ("const", 0)
    if key.lo >= t:
        return ("const", 1)
    if key.lo >= 0 and key.hi < 2 * t:
        return ("bit", wq - 1)
    return ("ge", t)


def op_delay(nd: Node, nodes: list) -> float:
    """Delay of a block in adder units (the pipelining model)."""
    k = nd.kind
    if k == "shift_add" or k == "bit2":
        return 1.0
    if k == "lut":
        return float(max(nodes[nd.ins[0]].w - 6, 1))
    if k == "mul":
        return float(min(nodes[nd.ins[0]].w, nodes[nd.ins[1]].w))
    if k == "bit1":
        return 0.0 if nd.p["op"] == 0 else 1.0
    return 0.0


def arrive(base: float, d: float, cutoff: float | None) -> float:
    """Arrival time of an op of delay ``d`` whose last operand arrives at ``base``: an op that
    would cross a multiple of the cutoff starts at that boundary instead."""
    t = base + d
    if cutoff and d and math.ceil(t / cutoff - 1e-9) > math.ceil(base / cutoff - 1e-9):
        t = math.ceil(base / cutoff - 1e-9) * cutoff + d
    return t


def chain_stages(depth: int, cutoff: float) -> int:
    """Pipeline stages of a chain of ``depth`` adders at ``cutoff`` (the schedule of
    :func:`build_netlist`; 1 for no adder: the registered outputs)."""
    t = 0.0
    for _ in range(depth):
        t = arrive(t, 1.0, cutoff)
    return int(math.floor(t / (cutoff + 1e-9))) + 1


def _schedule(net: Netlist, cutoff: float | None) -> None:
    nodes = net.nodes
    arr = [0.0] * len(nodes)
    for i, nd in enumerate(nodes):
        k = nd.kind
        if k == "const" or k == "input":
            continue
        base = 0.0
        for j in nd.ins:  # constants arrive at 0
            if arr[j] > base:
                base = arr[j]
        d = 1.0 if k == "shift_add" else op_delay(nd, nodes)
        arr[i] = arrive(base, d, cutoff)
    net.arrival = arr
    if not cutoff:
        net.n_stages = 0
        return
    eps = 1e-9
    st = [0] * len(nodes)
    for i, nd in enumerate(nodes):
        st[i] = 0 if nd.kind == "const" else int(math.floor(arr[i] / (cutoff + eps)))
        nd.stage = st[i]
    net.n_stages = max(st, default=0) + 1


# building block of each node kind that instantiates one (the emitters print the same generics)
BLOCKS = {"shift_add": "nnisa_shift_add", "quant": "nnisa_quant", "mux": "nnisa_mux", "mul": "nnisa_mul",
          "bit1": "nnisa_bit1", "bit2": "nnisa_bit2"}


def block_generics(nodes: list, nd: Node) -> list[int]:
    """Parameter values of ``nd``'s building block, in the order the blocks declare them
    (the operands' widths and signedness, then the op's own parameters, then the output width)."""
    k, p = nd.kind, nd.p
    opd = [x for j in nd.ins for x in (nodes[j].w, int(nodes[j].signed))]
    if k == "shift_add":
        if len(nd.ins) == 1:  # constant adder: the constant is the second operand
            opd += [p["cw"], int(p["cs"])]
        return opd + [p["n"], p["sha"], p["shc"], p["sub"], p["rs"], nd.w]
    if k == "quant":
        return opd + [p["n"], p["neg"], p["sh"], p["relu"], nd.w]
    if k == "mux":
        return [opd[0], opd[1], p["na"], p["sha"], opd[2], opd[3], p["nc"], p["shc"], p["neg"], nd.w]
    if k == "mul":
        return opd + [p["n"], nd.w]
    if k == "bit1":
        return opd + [p["n"], p["neg"], p["op"], p["mw"], nd.w]
    if k == "bit2":
        return opd + [p["n"], p["nega"], p["negc"], p["sha"], p["shc"], p["op"], nd.w]
    raise AssertionError(k)


def depth_stats(net: Netlist) -> dict:
    """Pipeline summary: stages, latency, registers, critical arrival."""
    return {"pipeline_depth": net.n_stages, "latency_cycles": net.latency_cycles,
            "latency_cutoff": net.latency_cutoff, "register_bits": net.n_registers(),
            "critical_delay": float(max(net.arrival, default=0.0))}


def widths_array(net: Netlist) -> np.ndarray:
    return np.array([nd.w for nd in net.nodes], np.int64)


def stage_names(net: Netlist) -> tuple[list[list[str]], list[tuple[str, str, int]], list[str]]:
    """Wire names as each node sees its operands, the pipeline registers and the output sources.

    Returns ``(operand names per node, [(register, source, width)], output source names)``; a
    value of op ``j`` read ``d`` stages after its own is ``v{j}_s{stage}`` (registers in between).
    """
    nodes = net.nodes
    regs: list = []
    made: set = set()

    def ref(j: int, s: int) -> str:
        nd = nodes[j]
        if nd.kind == "const" or s <= nd.stage:
            return f"v{j}"
        for t in range(nd.stage + 1, s + 1):
            if (j, t) not in made:
                made.add((j, t))
                regs.append((f"v{j}_s{t}", f"v{j}" if t == nd.stage + 1 else f"v{j}_s{t - 1}", nd.w))
        return f"v{j}_s{s}"

    names = [[ref(j, nd.stage) for j in nd.ins] for nd in nodes]
    last = max(net.n_stages - 1, 0)
    outs = [ref(o.src, last) if o.src >= 0 else "" for o in net.outputs]
    return names, regs, outs
