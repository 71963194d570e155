"""Quantized networks → one DAIS program (spec §8.5/§8.6, restricted to what the frontend emits).

Input: the frontend's pow2-quantized :class:`~nnisa.frontend.quant.QGraph`.  Supported nodes:
Gemm and Conv (+ fused ReLU/Clip clamp), Relu, Clip, Sigmoid/Tanh/LeakyRelu (lookup tables),
MaxPool, AveragePool, GlobalAveragePool, Add/Sub (residuals, with the frontend's rescaling),
Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Identity.  The program reads the **quantized
integer inputs** ``q_x`` (C order) and returns the integer outputs ``q_y`` of
``evaluate_quantized`` bit-exactly.

Every activation element is a builder slot whose real value is ``q · 2^e`` (``e`` per element,
so per-channel requant shifts cost nothing: they are folded into the next layer's weights as
``W · 2^-e``).  Per Gemm column: CMVM (shared adders across the layer), opcode 4 adds
``bias + 2^(s-1)`` (round half up), opcode 3 floor-shifts by ``s``, and ``max``/``min`` muxes
(opcode 6 keyed by a subtraction) saturate to the clamp.  A convolution is unrolled: the kernel
matrix ``(K, M/g)`` is solved once (CSE) and the solution is replayed at every output position
(:meth:`CMVMCompiler.instantiate`), dropping zero-padding inputs.  MaxPool is a tree of
``max`` muxes; average pooling sums the window and divides exactly (round half away from zero)
by a floor shift, or for a non-power-of-two count by a shift-add multiplication with
``m = ceil(2^k/n)`` and a floor shift by ``k`` (exact for the sum's whole range).  Every op's
dtype comes from the exact integer range of its value, so no op can wrap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ....core.errors import UnsupportedError
from ....core.lowering import OnHost, refusal
from ....core.target import CompileResult
from .cmvm import CMVMCompiler, _to_int_matrix
from .cmvm_emit import make_replay
from .options import DEFAULT_CSE_BLOCK_ROWS, DEFAULT_CSE_BUDGET, DaisCompileOptions
from ..program import Program, ProgramBuilder, minimal_kif
from .netextra import NetExtraOps
from .netnorm import NetNormOps
from .netops import NetOps
from .netsize import check_size
from .netmask import NetMaskOps
from ..layers import layer_spans
from ....frontend.quant import QGraph

#: pure data-movement nodes (C-order element list unchanged, batch 1)
MOVES = ("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity")


@dataclass
class _Act:
    slot: int
    e: int    # real value = q · 2^e
    lo: int   # range of q
    hi: int
    f: int    # the slot's dtype f


def dais_check(n, g) -> str | None:
    """Why the DAIS compiler cannot lower float-graph node ``n`` (None when it can)."""
    why = refusal(LOWERINGS, "DAIS", n.op, dict.fromkeys(
        ("Where", "CastLike"), f"{n.op} (selecting by a mask computed from an integer input) is not lowered by the "
        "DAIS compiler; masks reach it through Softmax (an additive attention mask: MaskedSoftmax)"))
    if why:
        return why
    if n.op == "Gather" and len(n.inputs) > 1 and n.inputs[1] not in g.initializers:
        return "Gather of a table computed by the graph is not supported"
    return None


class _Net(NetOps, NetExtraOps, NetNormOps, NetMaskOps):
    def __init__(self, qg, method: str, max_depth, cse_budget, cse_block_rows=None):
        self.qg = qg
        # one program computes one sample: the graph is batch-1 (frontend.batch), so every tensor is
        # kept whole, axis 0 included (a unit batch axis, or a sequence/head axis after a Transpose)
        sizes = [int(np.prod(t.shape, dtype=np.int64)) for t in qg.inputs]
        self.b = ProgramBuilder(int(sum(sizes)))
        self.method, self.max_depth, self.cse_budget = method, max_depth, cse_budget
        self.cse_block_rows = cse_block_rows
        self.layers: list[dict] = []
        self.env: dict[str, np.ndarray] = {}
        self._consts: dict = {}
        self.Act = _Act
        self.mask_ranges: dict[str, tuple[int, int]] = {}  # integer mask inputs: the range they take
        self.mask_saturate: set[str] = set()  # ... saturated to it (comparisons only), else checked
        self._raw_plan: dict = {}
        self._mask_bits: dict = {}
        j0 = 0
        for t_in, n_in in zip(qg.inputs, sizes):  # several inputs: one program input vector, in graph order
            lo, hi = self._input_range(t_in)
            kif = minimal_kif(lo, hi, 1)
            acts = np.empty(n_in, dtype=object)
            for j in range(n_in):
                acts[j] = _Act(self.b.add_op(-1, j0 + j, -1, 0, kif), 0, lo, hi, 0)
            self.env[t_in.name] = acts.reshape(tuple(t_in.shape))
            j0 += n_in

    def _input_range(self, t) -> tuple[int, int]:
        """Integer range of a graph input: its quantized codes, or for raw token ids (read only by
        ``Gather``) every index the embedding table accepts, negative ones included."""
        if not t.raw:
            return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
        users = [n for n in self.qg.nodes if t.name in n.inputs]
        if not users:
            raise UnsupportedError(f"integer input {t.name} is read by no node", file=self.qg.source)
        if any(n.op != "Gather" for n in users):  # an attention mask (.netmask)
            self.mask_ranges[t.name] = self.mask_input_range(t)
            return self.mask_codes()
        rows = max(int(np.asarray(n.weight).shape[n.attrs["axis"]]) for n in users)
        return -rows, rows - 1

    def oshape(self, node) -> tuple[int, ...]:
        """The whole shape of ``node``'s (first) output (axis 0 included)."""
        return tuple(self.qg.tensors[node.outputs[0]].shape)

    def sample_image(self, node, x: np.ndarray) -> np.ndarray:
        """The ``(C, H, W)`` image of a 4-D activation ``(1, C, H, W)`` (Conv / pooling input)."""
        if x.ndim != 4 or x.shape[0] != 1:
            self.fail(node, f"{node.op} input must be (1,C,H,W) per sample, got {x.shape}")
        return x[0]

    def where(self, node) -> str:
        return f"node {node.name} ({node.op})"

    def fail(self, node, msg: str):
        raise UnsupportedError(msg, where=self.where(node), file=self.qg.source)

    # -- element helpers ------------------------------------------------------------------
    def _dt(self, lo: int, hi: int, f: int):
        """dtype holding integers ``[lo, hi]`` in units of ``2^-f``."""
        if lo == hi == 0:
            return (0, -f if f < 0 else 0, f) if f <= 0 else (0, 1 - f, f)
        k, i, ff = minimal_kif(lo, hi, 1)
        return (k, i - f, f)

    def const(self, v: int, f: int) -> int:
        key = (v, f)
        if key not in self._consts:
            self._consts[key] = self.b.add_op(5, -1, -1, v, self._dt(v, v, f))
        return self._consts[key]

    def kif(self, slot: int):
        return _kif_of(self.b, slot)

    def clamp(self, a: _Act, lo: int, hi: int) -> _Act:
        """Saturate ``q`` to ``[lo, hi]`` with MSB muxes (opcode 6) keyed by subtractions."""
        F = max(a.f, -a.e)
        u = 1 << (a.e + F)  # q → integer at resolution F
        cur = a
        if cur.lo < lo:
            c = self.const(lo * u, F)
            key = self.b.add_op(1, cur.slot, c, 0, self._dt((cur.lo - lo) * u, (cur.hi - lo) * u, F))
            nlo, nhi = max(cur.lo, lo), max(cur.hi, lo)
            s = self.b.add_op(6, c, cur.slot, key, self._dt(nlo * u, nhi * u, F))
            cur = _Act(s, a.e, nlo, nhi, F)
        if cur.hi > hi:
            c = self.const(hi * u, F)
            key = self.b.add_op(1, c, cur.slot, 0, self._dt((hi - cur.hi) * u, (hi - cur.lo) * u, F))
            nlo, nhi = min(cur.lo, hi), min(cur.hi, hi)
            s = self.b.add_op(6, c, cur.slot, key, self._dt(nlo * u, nhi * u, F))
            cur = _Act(s, a.e, nlo, nhi, F)
        return cur

    def acc_slot(self, term, F0: int, alo: int, ahi: int) -> tuple[int, int]:
        """Slot holding the integer accumulator exactly, from a CMVM column result; ``(slot, f)``."""
        if term is None:
            return self.const(0, 0), 0
        slot, sh, neg = term
        sh -= F0
        fv = int(self.b.op(slot)[6])
        if sh or neg:  # materialise ±v·2^sh as 0 ± v·2^sh (keeps the value exact)
            fz = max(fv - sh, 0)
            z = self.const(0, fz)
            fv = max(fz, fv - sh)
            slot = self.b.add_op(1 if neg else 0, z, slot, sh, self._dt(alo << fv, ahi << fv, fv))
        return slot, fv

    def requant(self, slot: int, fv: int, e_acc: int, alo: int, ahi: int, add: int, s: int) -> _Act:
        """``q = floor((acc + add) / 2^s)`` (``s ≤ 0``: exact left shift) from a slot holding
        ``acc · 2^e_acc`` at dtype ``f = fv``."""
        fb = max(fv, -e_acc)
        u = e_acc + fb
        blo, bhi = alo + add, ahi + add
        v = slot
        if add or fb != fv:
            v = self.b.add_op(4, slot, -1, add << u, self._dt(blo << u, bhi << u, fb))
        if s > 0:
            qlo, qhi = blo >> s, bhi >> s
            v = self.b.add_op(3, v, -1, 0, self._dt(qlo, qhi, -(s + e_acc)))
            return _Act(v, s + e_acc, qlo, qhi, -(s + e_acc))
        return _Act(v, s + e_acc, blo << -s, bhi << -s, fb)

    def finish(self, term, F0, alo, ahi, bias, s, clamp) -> _Act:
        """CMVM column → ``sat(R(acc + bias))`` with the frontend's round-half-up shift."""
        slot, fv = self.acc_slot(term, F0, alo, ahi)
        add = int(bias) + ((1 << (s - 1)) if s > 0 else 0)
        return self.clamp(self.requant(slot, fv, 0, alo, ahi, add, s), *clamp)

    def _shifts(self, node, n: int):
        req = node.requant
        mult = np.broadcast_to(np.asarray(req.multiplier, np.int64), (n,))
        if np.any(mult != 1):
            self.fail(node, "DAIS needs scale_mode='pow2' (requant multipliers must be 1)")
        shift = np.broadcast_to(np.asarray(req.shift, np.int64), (n,))
        bias = np.broadcast_to(np.asarray(node.bias if node.bias is not None else 0, np.int64), (n,))
        return shift, bias

    # -- layers -----------------------------------------------------------------------------
    def gemm(self, node) -> None:
        """Gemm / MatMul of an activation ``(..., K)`` by a constant ``(K, N)``: one CMVM per row
        (a Gemm's rows, or a token's features; one row per sample for an MLP)."""
        W = np.asarray(node.weight, dtype=np.int64)
        x = self.env[node.inputs[0]]
        if W.ndim != 2 or x.size % W.shape[0] or x.ndim > 1 and x.shape[-1] != W.shape[0]:
            self.fail(node, f"{node.op} of {x.shape} by a constant {W.shape}: expects (..., {W.shape[0]}) inputs")
        n_before = len(self.b)
        rows = x.reshape(-1, W.shape[0])
        e = np.array([[a.e for a in row] for row in rows], np.int64)
        if len(rows) > 1 and (e == e[0]).all():
            out, cse = self.cmvm_rows(node, rows, W)
        else:
            out = np.empty((len(rows), W.shape[1]), dtype=object)
            for r, row in enumerate(rows):
                out[r], cse = self.cmvm_row(node, list(row), W)
        self.set_out(node, out.reshape(self.oshape(node)))
        self.report(node, n_before, shape=list(W.shape), rows=len(rows) if len(rows) > 1 else None, cse=cse)

    matmul_const = gemm

    def cmvm_row(self, node, acts: list, W: np.ndarray):
        """``sat(R(q @ W + bias))`` of one input vector by CMVM (adders shared across the columns)."""
        K, N = W.shape
        shift, bias = self._shifts(node, N)
        # fold each input's 2^e into its weight row, so the CMVM output is the integer accumulator
        Wf = W.astype(np.float64) * np.array([2.0 ** -a.e for a in acts])[:, None]
        M, F0 = _to_int_matrix(Wf)
        ins = [(a.slot, *self.kif(a.slot)) for a in acts]
        comp = CMVMCompiler(self.b, ins, method=self.method, max_depth=self.max_depth,
                            cse_budget=self.cse_budget,
                            block_rows=self.cse_block_rows)
        cols = comp.solve(M)
        qlo = np.array([a.lo for a in acts], dtype=np.int64)
        qhi = np.array([a.hi for a in acts], dtype=np.int64)
        alo = qlo @ np.maximum(W, 0) + qhi @ np.minimum(W, 0)
        ahi = qhi @ np.maximum(W, 0) + qlo @ np.minimum(W, 0)
        out = np.empty(N, dtype=object)
        for c in range(N):
            out[c] = self.finish(cols[c], F0, int(alo[c]), int(ahi[c]), bias[c], int(shift[c]), node.clamp)
        return out, comp.cse_info

    def cmvm_rows(self, node, rows: np.ndarray, W: np.ndarray):
        """``sat(R(q @ W + bias))`` of every row (token) of ``rows`` (``[R, K]``, one exponent per
        column): the CSE of ``W`` is solved once and replayed on each row, as a convolution's kernel
        is at each position (the rows' dtypes are covered per column)."""
        K, N = W.shape
        shift, bias = self._shifts(node, N)
        Wf = W.astype(np.float64) * (2.0 ** -np.array([a.e for a in rows[0]], np.float64))[:, None]
        M, F0 = _to_int_matrix(Wf)
        slots = np.array([[a.slot for a in row] for row in rows], np.int64)
        kifs = np.array([[self.kif(a.slot) for a in row] for row in rows], np.int64).reshape(len(rows), K, 3)
        cover = kifs.max(axis=0)
        scratch = ProgramBuilder(K)
        tins = [(scratch.add_op(-1, j, -1, 0, tuple(int(v) for v in cover[j])), *(int(v) for v in cover[j]))
                for j in range(K)]
        tmpl = CMVMCompiler(scratch, tins, method=self.method, max_depth=self.max_depth,
                            cse_budget=self.cse_budget, block_rows=self.cse_block_rows)
        tmpl.solve(M)
        rep = make_replay(tmpl, slots, kifs)
        Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
        out = np.empty((len(rows), N), dtype=object)
        for r, row in enumerate(rows):
            if rep is not None:
                terms = rep.emit(r, self.b)
            else:  # the reference: one compiler per row
                ins = [(a.slot, *self.kif(a.slot)) for a in row]
                terms = CMVMCompiler(self.b, ins, method="dummy").instantiate(tmpl)
            qlo = np.array([a.lo for a in row], np.int64)
            qhi = np.array([a.hi for a in row], np.int64)
            alo, ahi = qlo @ Wp + qhi @ Wn, qhi @ Wp + qlo @ Wn
            for c in range(N):
                out[r, c] = self.finish(terms[c], F0, int(alo[c]), int(ahi[c]), bias[c], int(shift[c]), node.clamp)
        return out, tmpl.cse_info

    def conv(self, node) -> None:
        from ....frontend import kernels as FK
        x = self.sample_image(node, self.env[node.inputs[0]])
        C, H, Wd = x.shape
        a = node.attrs
        g = int(a["group"])
        Wm = np.asarray(node.weight_matrix(), np.int64)  # (g, K, M/g)
        po = node.patch_order()
        _, Kk, Mg = Wm.shape
        M = g * Mg
        shift, bias = self._shifts(node, M)
        ids = (np.arange(C * H * Wd, dtype=np.int64) + 1).reshape(1, C, H, Wd)
        cols = FK.im2col(ids, a["kernel"], a["strides"], a["pads"], a["dilations"], g)[0]  # (g, P, K), 0 = pad
        P = cols.shape[1]
        flat = x.reshape(-1)
        e_ch, kif_ch = self.channel_info(node, x)
        qlo = np.array([0] + [v.lo for v in flat], np.int64)
        qhi = np.array([0] + [v.hi for v in flat], np.int64)
        out = np.empty((M, P), dtype=object)
        n_before = len(self.b)
        el_slot = np.array([v.slot for v in flat], np.int64)
        el_kif = np.array([self.kif(v.slot) for v in flat], np.int64).reshape(-1, 3)
        cse = None
        for gi in range(g):
            chans = po[:, 0] + gi * (C // g)
            Wf = Wm[gi].astype(np.float64) * (2.0 ** -e_ch[chans].astype(np.float64))[:, None]
            Mi, F0 = _to_int_matrix(Wf)
            scratch = ProgramBuilder(Kk)
            tins = [(scratch.add_op(-1, j, -1, 0, kif_ch[chans[j]]), *kif_ch[chans[j]]) for j in range(Kk)]
            tmpl = CMVMCompiler(scratch, tins, method=self.method, max_depth=self.max_depth,
                                cse_budget=self.cse_budget,
                            block_rows=self.cse_block_rows)
            tmpl.solve(Mi)
            cse = tmpl.cse_info
            Wp, Wn = np.maximum(Wm[gi], 0), np.minimum(Wm[gi], 0)
            pad = cols[gi] == 0  # every position's inputs at once (the replay kernel's fast path)
            rep = make_replay(tmpl, np.where(pad, -1, el_slot[cols[gi] - 1]),
                              np.where(pad[..., None], 0, el_kif[cols[gi] - 1]))
            for p in range(P):
                idx = cols[gi, p]
                if rep is not None:
                    terms = rep.emit(p, self.b)
                else:  # the reference: one compiler per position
                    ins = [(flat[i - 1].slot, *self.kif(flat[i - 1].slot)) if i else (-1, 0, 0, 0) for i in idx]
                    terms = CMVMCompiler(self.b, ins, method="dummy").instantiate(tmpl)
                alo = qlo[idx] @ Wp + qhi[idx] @ Wn
                ahi = qhi[idx] @ Wp + qlo[idx] @ Wn
                for c in range(Mg):
                    m = gi * Mg + c
                    out[m, p] = self.finish(terms[c], F0, int(alo[c]), int(ahi[c]), bias[m], int(shift[m]),
                                            node.clamp)
        self.set_out(node, out.reshape(self.oshape(node)))
        self.report(node, n_before, shape=[Kk, Mg], positions=P, groups=g, cse=cse)

    def channel_info(self, node, x: np.ndarray):
        """Per channel: the common exponent ``e`` and a dtype covering every element's slot."""
        C = x.shape[0]
        e_ch = np.zeros(C, np.int64)
        kif_ch = []
        for c in range(C):
            es = {v.e for v in x[c].reshape(-1)}
            if len(es) != 1:
                self.fail(node, f"channel {c} mixes element exponents {sorted(es)}")
            e_ch[c] = es.pop()
            kifs = np.array([self.kif(v.slot) for v in x[c].reshape(-1)])
            kif_ch.append(tuple(int(t) for t in kifs.max(axis=0)))
        return e_ch, kif_ch

    def lut(self, node) -> None:
        table_q = np.asarray(node.lut, np.int64)
        qmin = -(1 << (node.in_bits[0] - 1))
        x = self.env[node.inputs[0]]
        out = np.empty(x.size, dtype=object)
        n_before = len(self.b)
        for j, a in enumerate(x.reshape(-1)):
            q = self.key_codes(a)[1]
            entries = table_q[np.clip(q - qmin, 0, len(table_q) - 1)]
            t = self.b.add_table(entries)
            lo, hi = int(entries.min()), int(entries.max())
            s = self.b.add_op(8, a.slot, -1, t, self._dt(lo, hi, 0))
            out[j] = _Act(s, 0, lo, hi, 0)
        self.set_out(node, out.reshape(x.shape))
        self.report(node, n_before, tables=len(self.b.tables))

    def key_codes(self, a: _Act) -> tuple[np.ndarray, np.ndarray]:
        """Every integer a lookup keyed by ``a``'s slot can see (its dtype's whole range, the
        table's index order) and the code ``q`` each one stands for."""
        k, i, f = self.kif(a.slot)
        w = k + i + f
        lo_a = -(1 << (w - 1)) if k else 0
        n = np.arange(lo_a, lo_a + (1 << w), dtype=np.int64)
        return n, (np.floor_divide(n, 1 << (a.e + f)) if a.e + f >= 0 else n << -(a.e + f))

    # -- bookkeeping ----------------------------------------------------------------------------
    def set_out(self, node, arr: np.ndarray) -> None:
        self.env[node.outputs[0]] = arr

    def report(self, node, n_before: int, **extra) -> None:
        opc = self.b.ops_array(n_before)[:, 0]
        adders = int(np.count_nonzero((opc == 0) | (opc == 1)))
        row = {"node": node.name, "op": node.op, "first_op": n_before, "ops": len(self.b) - n_before,
               "adders": adders}
        row.update({k: v for k, v in extra.items() if v is not None})
        self.layers.append(row)


def _clamp(net: _Net, node) -> None:
    x = net.env[node.inputs[0]]
    net.set_out(node, np.vectorize(lambda a: net.clamp(a, *node.clamp), otypes=[object])(x))


def _raw(net: _Net, node) -> None:
    net.fail(node, f"{node.op} of a quantized activation is not supported: DAIS computes it only on integer "
                   "mask inputs")


#: the DAIS lowering table: IR op → lowering (``net, node``); the node check, ``nnisa targets --ops``
#: and the docs come from it
LOWERINGS = {
    "Gemm": _Net.gemm, "Conv": _Net.conv, **dict.fromkeys((*MOVES, "Transpose"), _Net.move),
    "Relu": _clamp, "Clip": _clamp,
    **dict.fromkeys(("Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "Erf", "Sqrt", "Reciprocal",
                     "Exp", "Pow"), _Net.lut),
    "Pad": _Net.pad, "Gather": _Net.gather,
    "MaxPool": _Net.maxpool, "AveragePool": _Net.avgpool, "GlobalAveragePool": _Net.avgpool,
    "Add": _Net.addsub, "Sub": _Net.addsub, "Slice": _Net.select, "Resize": _Net.select, "Concat": _Net.concat,
    **dict.fromkeys(("ReduceMean", "ReduceMax", "ReduceSum"), _Net.reduce), "Max": _Net.minmax, "Min": _Net.minmax,
    "Mul": _Net.mul, "MatMul": _Net.matmul,
    "Softmax": _Net.softmax, "MaskedSoftmax": _Net.softmax, "LayerNorm": _Net.layernorm,
    # mask arithmetic on integer inputs (raw tensors): tabulated by the MaskedSoftmax reading it
    **dict.fromkeys(("Equal", "Less", "Greater", "Not", "Cast", "Expand"), _raw),
}


def _kif_of(b: ProgramBuilder, slot: int):
    o = b.op(slot)
    return (o[4], o[5], o[6])


def compile_qgraph(qg, *, method: str = "wmc", max_depth: int | None = None,
                   cse_budget: int | None = DEFAULT_CSE_BUDGET,
                   cse_block_rows: int | None = DEFAULT_CSE_BLOCK_ROWS) -> tuple[Program, list[dict]]:
    """Compile a pow2 QGraph (several inputs and outputs: concatenated in graph order, C order each).

    Parameters
    ----------
    qg
        The frontend's :class:`~nnisa.frontend.quant.QGraph` (``scale_mode="pow2"``).
    method
        CMVM method (``wmc``, ``mc`` or ``dummy``).
    max_depth
        Adder-depth limit per CMVM output.
    cse_budget
        Work budget of each layer's CSE in greedy steps (default :data:`DEFAULT_CSE_BUDGET`;
        ``None``: unlimited).  A layer whose CSE was cut short has ``cse.complete = False``.
    cse_block_rows
        Row-block size of each layer's CSE (wide layers pair only terms of the same block;
        ``None``: the whole matrix).

    Returns
    -------
    (Program, list of dict)
        The program (inputs: every ``q_x`` flattened in C order, concatenated; outputs: every
        ``q_y`` likewise) and per-layer costs.
    """
    net = _Net(qg, method, max_depth, cse_budget, cse_block_rows)
    for node in qg.nodes:
        if qg.tensors[node.outputs[0]].raw:
            continue  # mask arithmetic: each consumer tabulates what it reads (.netmask)
        if node.out_bits == 0:
            net.fail(node, f"float operator {node.op} cannot be compiled to DAIS")
        fn = LOWERINGS.get(node.op)
        if fn is None or isinstance(fn, OnHost):
            net.fail(node, f"operator {node.op} is not supported by the DAIS compiler")
        fn(net, node)
    outs = np.concatenate([net.env[t.name].reshape(-1) for t in qg.outputs])  # several outputs: one vector
    outs = [net._same_e(a) if a.e < 0 else a for a in outs]  # out shifts only scale down (q = v·2^-e, e >= 0)
    net.b.set_outputs([a.slot for a in outs], [-a.e for a in outs], [0] * len(outs))
    prog = net.b.build(adder_size=1, carry_size=-1)
    prog.meta["layers"] = layer_spans(net.layers)  # per-layer figures of every run (..layers)
    if net.mask_ranges:  # the input encoding saturates mask ids to the range the program takes, or checks it
        prog.meta["mask_input_ranges"] = {k: list(v) for k, v in net.mask_ranges.items()}
        prog.meta["mask_inputs_saturated"] = sorted(net.mask_saturate)
    return prog, layer_figures(prog, net.layers)


def layer_figures(prog: Program, layers: list[dict]) -> list[dict]:
    """Each layer row (its ops ``first_op .. first_op + ops``) with ``adder_bits``, ``depth`` (the
    adder depth reached at its last op, from the program inputs), ``adder_depth`` (the adders it
    adds to the path: ``depth`` minus the depth of its operands) and its dynamic ``energy_pj`` per
    input (:mod:`..energy`, default table)."""
    from ..energy import load_energy_config, op_energy_pj
    from ..program import _depths
    if not prog.n_ops:
        return layers
    w = prog.width()
    opc = prog.opcode
    add = (opc == 0) | (opc == 1)
    ad = _depths(prog)[1]
    e = op_energy_pj(prog, load_energy_config(None))[0]
    for row in layers:
        lo, hi = row["first_op"], row["first_op"] + row["ops"]
        if hi <= lo:
            row.update(adder_bits=0, depth=0, adder_depth=0, energy_pj=0.0)
            continue
        ids = np.concatenate([prog.id0[lo:hi], prog.id1[lo:hi]]).astype(np.int64)
        ext = ids[(ids >= 0) & (ids < lo)]
        d_in = int(ad[ext].max()) if len(ext) else 0
        d = int(ad[lo:hi].max())
        row.update(adder_bits=int(w[lo:hi][add[lo:hi]].sum()), depth=d, adder_depth=max(d - d_in, 0),
                   energy_pj=round(float(e[lo:hi].sum()), 3))
    return layers


def compile_network(model, options: DaisCompileOptions | None = None, *, out_dir=None,
                    extra_outputs=None) -> CompileResult:
    """ONNX model → check → quantize (pow2, frontend) → one DAIS program; writes ``model.dais`` etc.

    Every node DAIS cannot lower is reported at once before any work
    (:func:`~nnisa.frontend.prepare.check_graph`).  A trailing Softmax is a host step in float
    (``report["host_tail"]``): DAIS has no exponential.  ``options.calib`` is the calibration data
    (arrays or a ``.npy/.npz/.csv`` file; default: disjoint from ``run``'s samples),
    ``options.calibration`` the range method (``max``, ``percentile``, ``mse``).

    The report has ``adders``, ``adder_bits`` and ``depth`` (adder depth) at top level, plus
    ``n_ops``, per-layer rows and the compile time.  ``cse_budget`` bounds each layer's CSE
    in greedy steps (default :data:`DEFAULT_CSE_BUDGET`, ``None``: unlimited); ``cse_budget`` and
    ``cse_cut_short`` (indices of layers whose CSE hit the budget) are in the report.
    With ``options.hdl`` the network is also written as RTL (:mod:`..rtl.flow`);
    ``extra_outputs(program, stem)`` may return ``({file name: text}, {report key: value})``: more
    files for the bundle.
    """
    import time

    from ....frontend.prepare import prepare_qgraph, split_float_tail
    o = options if options is not None else DaisCompileOptions()
    bits, cse_budget, cse_block_rows = o.bits, o.cse_budget, o.cse_block_rows
    t0 = time.perf_counter()
    macs = None
    if not isinstance(model, QGraph):  # the size, before quantization or any compile work
        from ....frontend.prepare import check_graph
        from ....frontend.prepared import load_model
        g = load_model(model)
        check_graph(g, "dais", dais_check)
        macs = check_size(g, o.max_macs)
    full = prepare_qgraph(model, "dais", check=dais_check, bits=bits, **o.quant_kwargs())
    qg, tail, tail_nodes = split_float_tail(full)
    prog, layers = compile_qgraph(qg, method=o.method, max_depth=o.max_depth, cse_budget=cse_budget,
                                  cse_block_rows=cse_block_rows)
    st = prog.stats()
    report = {"n_ops": st["n_ops"], "macs": macs, "adders": st["n_adders"], "n_adders": st["n_adders"],
              "adder_bits": st["adder_bits"], "depth": st["adder_depth"], "op_depth": st["depth"],
              "adder_depth": st["adder_depth"], "layers": layers, **_energy(prog), "cse_budget": cse_budget,
              "cse_block_rows": cse_block_rows,
              "cse_cut_short": [i for i, r in enumerate(layers)
                                if isinstance(r.get("cse"), dict) and r["cse"].get("complete") is False],
              "compile_s": round(time.perf_counter() - t0, 3),
              "input_scale": qg.inputs[0].scale, "output_scale": qg.outputs[0].scale,
              "quantization": {"calibration": o.calibration, "per_channel": o.per_channel, "bits": bits,
                               "scale_mode": "pow2"},
              "note": "program inputs are the quantized integers q = QGraph.quantize_input(x), C order"}
    if tail is not None:
        report["host_tail"] = {"nodes": tail_nodes, "note": "DAIS has no exponential: these run on the host in "
                               "float on the program's integer outputs (not counted in adders/depth)"}
    t_ins, t_outs = list(qg.inputs), list(qg.outputs)
    stem = Path(model).stem if isinstance(model, (str, os.PathLike)) else "model"
    extra = {}
    if o.hdl:
        from ..rtl.flow import rtl_outputs
        extra, rtl = rtl_outputs(prog, o.hdl, stem=stem, latency_cutoff=o.latency_cutoff, top=o.top,
                                 synth=o.synth, synth_script=o.synth_script)
        report["rtl"] = rtl
    if extra_outputs is not None:
        more_files, more = extra_outputs(prog, stem)
        extra.update(more_files)
        report.update(more)
    files = {}
    if out_dir is not None:
        files = _write_bundle(prog, out_dir, stem, t_ins, t_outs, bits, report, extra)
    cuts = np.cumsum([int(np.prod(t.shape, dtype=np.int64)) for t in t_outs])[:-1]

    def _sample(sample, t):
        if t.name in sample:
            return np.asarray(sample[t.name])
        if len(t_ins) == 1:
            return np.asarray(next(iter(sample.values())))
        raise UnsupportedError(f"no input {t.name!r} in the sample (inputs: {sorted(sample)})", file=qg.source)

    ranges = prog.meta.get("mask_input_ranges", {})
    saturated = set(prog.meta.get("mask_inputs_saturated", ()))

    def encode(sample):
        def codes(t):
            q = np.asarray(qg.quantize_input(t.name, _sample(sample, t)[None]), np.float64)
            if t.name not in ranges:
                return q
            lo, hi = ranges[t.name]
            if t.name in saturated:
                return np.clip(q, lo, hi)  # compared with constants only: no comparison changes
            c = -(1 << (qg.bits - 1))
            if q.size and (q.min() < c or q.max() > -c - 1):
                raise UnsupportedError(f"mask input {t.name!r} takes values {c}..{-c - 1} on DAIS (a signed {qg.bits}-bit "
                                       f"input; its mask values are computed from it); got {q.min():.0f}..{q.max():.0f}",
                                       file=qg.source)
            return q
        return {"x": np.concatenate([codes(t).reshape(1, -1) for t in t_ins], axis=1)}

    def decode(outputs):
        y = np.asarray(outputs["y"])
        parts = np.split(y, cuts, axis=1)
        # a unit axis 0 is the batch axis; any other is part of the sample (e.g. a sequence-first output)
        qs = {t.name: p.reshape((len(y),) + tuple(t.shape[1:] if t.shape[0] == 1 else t.shape))
              for t, p in zip(t_outs, parts)}
        if tail is not None:
            return {k: np.asarray(v, np.float32)[0] for k, v in tail(qs).items()}
        return {t.name: (qs[t.name] * t.scale)[0].astype(np.float32) for t in t_outs}

    def reference(sample):
        from ....frontend import evaluate_quantized
        res = evaluate_quantized(qg, {t.name: _sample(sample, t)[None] for t in t_ins})
        return {"y": np.concatenate([np.asarray(res[t.name]).reshape(1, -1) for t in t_outs], axis=1)}

    # one simulation runs every sample (the interpreter takes a batch); ``qgraph`` is the integer head
    return CompileResult(program=prog, files=files, report=report, encode_inputs=encode, decode_outputs=decode,
                         reference=reference, samples_per_run=None, qgraph=qg)


def _energy(prog: Program) -> dict:
    from ..energy import energy_figures
    f = energy_figures(prog)
    return {k: f[k] for k in ("energy_per_input_pj", "latency_ns", "lut6_equivalents")}


def _write_bundle(prog: Program, out_dir, stem: str, t_ins, t_outs, bits: int, report: dict,
                  extra: dict | None = None) -> dict[str, str]:
    """The output folder: ``<stem>.dais`` (program), ``.dais.txt``, ``.json``, report, manifest."""
    import orjson

    from ....core.bundle import BundleWriter, TensorSpec
    from ..formats.files import DaisManifest, program_bytes

    names = {"dais": f"{stem}.dais", "dais.txt": f"{stem}.dais.txt", "json": f"{stem}.json",
             "report": "compile_report.json"}
    extra = extra or {}
    names.update({Path(n).suffix.lstrip(".") or n: n for n in extra})
    def spec(t):
        return TensorSpec(name=t.name, shape=[int(d) for d in t.shape], bits=bits, scale=float(t.scale),
                          layout="C-order, flattened")
    with BundleWriter(out_dir) as w:
        for role in ("dais", "dais.txt", "json"):
            w.write(names[role], program_bytes(prog, names[role]))
        for n, text in extra.items():
            w.write(n, text)
        w.write(names["report"], orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
                                              | orjson.OPT_NON_STR_KEYS))
        man = DaisManifest(program=names["dais"], files={k: v for k, v in names.items() if k != "dais"},
                           inputs=[spec(t) for t in t_ins], outputs=[spec(t) for t in t_outs],
                           layers=prog.meta.get("layers"))
        out = w.commit(man)
    return {role: str(out / name) for role, name in names.items()} | {"manifest": str(out / "manifest.json")}
