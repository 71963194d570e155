"""More layers of the DAIS network compiler (mixed into ``netcompile._Net``): Concat, Slice/Resize,
ReduceMean/ReduceMax/ReduceSum, Max/Min, Mul and MatMul of two activations (opcode 7 products).

Every element stays an ``_Act`` (slot, ``e``, ``q`` range, slot ``f``); every rescale is the
frontend's round-half-up shift followed by the clamp, so the results equal ``evaluate_quantized``.
"""

from __future__ import annotations

import numpy as np


class NetExtraOps:
    """Layers that select, concatenate, reduce or multiply activations."""

    def rescale(self, a, req, clamp):
        """``sat(R(q))`` of one element for a pow2 :class:`~nnisa.frontend.quant.Requant` ``req``."""
        s = int(np.asarray(req.shift).reshape(-1)[0])
        add = (1 << (s - 1)) if s > 0 else 0
        return self.clamp(self.requant(a.slot, a.f, a.e, a.lo, a.hi, add, s), *clamp)

    def _pow2(self, node, reqs) -> None:
        for r in reqs:
            if np.any(np.asarray(r.multiplier) != 1) or np.ndim(r.shift) and np.asarray(r.shift).size > 1:
                self.fail(node, "DAIS needs per-tensor pow2 rescaling (scale_mode='pow2')")

    @staticmethod
    def _axis(axis: int, ndim: int) -> int:
        """``axis`` of a rank-``ndim`` tensor, negative ones counted from the end."""
        return int(axis) + ndim if axis < 0 else int(axis)

    # -- selection / concatenation ---------------------------------------------------------
    def select(self, node) -> None:
        x = self.env[node.inputs[0]]
        for ax, idx in enumerate(node.attrs["index"]):  # any axis: the whole tensor is one sample
            if idx is not None:
                x = np.take(x, np.asarray(idx, np.int64), axis=ax)
        self.set_out(node, x)

    def pad(self, node) -> None:
        """Constant Pad (the pad value's code as a constant element); negative pads crop."""
        x = self.env[node.inputs[0]]
        pads = list(node.attrs["pads"])
        r = len(pads) // 2
        before, after = pads[:r], pads[r:]
        e = {a.e for a in x.reshape(-1)}
        if len(e) > 1:
            x = np.vectorize(self._same_e, otypes=[object])(x)
            e = {0}
        e0 = e.pop() if e else 0
        qv = int(node.attrs["qvalue"])
        crop = tuple(slice(max(-b, 0), n - max(-a, 0)) for b, a, n in zip(before, after, x.shape))
        x = x[crop]
        out = np.empty(tuple(n + max(b, 0) + max(a, 0) for n, b, a in zip(x.shape, before, after)), dtype=object)
        # the constant is held at the tensor's exponent, so the padded tensor keeps one exponent
        c = self.Act(self.const(qv, -e0) if e0 <= 0 else self.const(qv << e0, 0), e0, qv, qv, max(-e0, 0))
        out[...] = c
        out[tuple(slice(max(b, 0), max(b, 0) + n) for b, n in zip(before, x.shape))] = x
        self.set_out(node, out)

    def gather(self, node) -> None:
        """Embedding rows by raw integer ids: one lookup table per table column, keyed by the id."""
        table = np.asarray(node.weight, np.int64)
        if int(node.attrs.get("axis", 0)) != 0 or table.ndim != 2:
            self.fail(node, "DAIS gathers rows of a 2-D table (axis 0)")
        ids = self.env[node.inputs[0]]
        n_before = len(self.b)
        V, H = table.shape
        out = np.empty((ids.size, H), dtype=object)
        for j, a in enumerate(ids.reshape(-1)):
            n = self.key_codes(a)[1]
            rows = np.clip(np.where(n < 0, n + V, n), 0, V - 1)
            for h in range(H):
                entries = table[rows, h]
                t = self.b.add_table(entries)
                lo, hi = int(entries.min()), int(entries.max())
                out[j, h] = self.Act(self.b.add_op(8, a.slot, -1, t, self._dt(lo, hi, 0)), 0, lo, hi, 0)
        self.set_out(node, out.reshape(self.oshape(node)))
        self.report(node, n_before, tables=len(self.b.tables))

    def concat(self, node) -> None:
        self._pow2(node, node.input_requants)
        axis = self._axis(node.attrs["axis"], len(self.oshape(node)))
        n_before = len(self.b)
        parts = []
        for name, req in zip(node.inputs, node.input_requants):
            x = self.env[name]
            parts.append(np.vectorize(lambda a, r=req: self.rescale(a, r, node.clamp), otypes=[object])(x)
                         if x.size else x)
        if node.const is not None:  # a constant input (class token), already at the output scale
            c = np.asarray(node.const, np.int64)
            nd = len(self.oshape(node))
            while c.ndim > nd and c.shape[0] == 1:
                c = c[0]
            c = c.reshape((1,) * (nd - c.ndim) + c.shape)  # leading unit axes
            parts.insert(int(node.attrs["const_index"]), np.vectorize(self._const_act, otypes=[object])(c)
                         if c.size else c.astype(object))
        self.set_out(node, np.concatenate(parts, axis=axis))
        self.report(node, n_before)

    # -- reductions ------------------------------------------------------------------------------
    def _rows(self, node, x: np.ndarray):
        """``(rows, count)``: the reduced elements of every output position, and the output shape."""
        axes = [self._axis(a, x.ndim) for a in node.attrs["axes"]]
        keep = [k for k in range(x.ndim) if k not in axes]
        moved = np.transpose(x, keep + axes)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        return moved.reshape(-1, count), self.oshape(node)

    def reduce(self, node) -> None:
        x = self.env[node.inputs[0]]
        rows, oshape = self._rows(node, x)
        n_before = len(self.b)
        out = np.empty(len(rows), dtype=object)
        for j, row in enumerate(rows):
            els = list(row)
            if node.op == "ReduceMax":
                if len({a.e for a in els}) > 1:
                    els = [self._same_e(a) for a in els]
                while len(els) > 1:
                    nxt = [self.max2(node, els[i], els[i + 1]) for i in range(0, len(els) - 1, 2)]
                    els = nxt + ([els[-1]] if len(els) % 2 else [])
                out[j] = els[0]
            elif node.op == "ReduceMean":
                out[j] = self.div_round_away(node, self.sum(node, els), len(els))
            else:  # ReduceSum: sat(R(sum))
                self._pow2(node, [node.requant])
                slot, f, e, lo, hi = self.sum(node, els)
                s = int(np.asarray(node.requant.shift))
                out[j] = self.clamp(self.requant(slot, f, e, lo, hi, (1 << (s - 1)) if s > 0 else 0, s), *node.clamp)
        if node.op == "ReduceMean":
            self._align_exponents(out)
        self.set_out(node, out.reshape(oshape))
        self.report(node, n_before)

    def _align_exponents(self, out: np.ndarray) -> None:
        if len({r.e for r in out}) > 1:  # bring every element to e = 0 (one exponent per tensor)
            for j, r in enumerate(out):
                if r.e:
                    slot, f = self.acc_slot((r.slot, -r.e, False), 0, r.lo, r.hi)
                    out[j] = self.Act(slot, 0, r.lo, r.hi, f)

    def minmax(self, node) -> None:
        self._pow2(node, node.input_requants)
        oshape = self.oshape(node)
        A, B = (self._bcast(self.env[i], oshape) for i in node.inputs)
        n_before = len(self.b)
        out = np.empty(int(np.prod(oshape)), dtype=object)
        for j, (a, b) in enumerate(zip(A.reshape(-1), B.reshape(-1))):
            ra = self.rescale(a, node.input_requants[0], node.clamp)
            rb = self.rescale(b, node.input_requants[1], node.clamp)
            out[j] = self.max2(node, ra, rb) if node.op == "Max" else self.min2(node, ra, rb)
        self.set_out(node, out.reshape(oshape))
        self.report(node, n_before)

    def min2(self, node, a, b):
        """``min(a, b)``: subtraction key + MSB mux."""
        if a.e != b.e:
            a, b = self._same_e(a), self._same_e(b)
        if a.hi <= b.lo:
            return a
        if b.hi <= a.lo:
            return b
        F = max(a.f, b.f, -a.e)
        u = 1 << (a.e + F)
        key = self.b.add_op(1, a.slot, b.slot, 0, self._dt((a.lo - b.hi) * u, (a.hi - b.lo) * u, F))
        lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
        s = self.b.add_op(6, a.slot, b.slot, key, self._dt(lo * u, hi * u, F))  # key < 0 → a
        return self.Act(s, a.e, lo, hi, F)

    def _same_e(self, a):
        if a.e == 0:
            return a
        slot, f = self.acc_slot((a.slot, -a.e, False), 0, a.lo, a.hi)
        return self.Act(slot, 0, a.lo, a.hi, f)

    # -- products -----------------------------------------------------------------------------------
    def mul2(self, a, b):
        """Exact product slot: ``(slot, f, e, lo, hi)`` holding ``q_a·q_b·2^(e_a+e_b)``."""
        corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
        lo, hi = min(corners), max(corners)
        f = a.f + b.f
        e = a.e + b.e
        u = e + f
        s = self.b.add_op(7, a.slot, b.slot, 0, self._dt(lo << u, hi << u, f))
        return s, f, e, lo, hi

    def _finish(self, node, acc, clamp):
        slot, f, e, lo, hi = acc
        s = int(np.asarray(node.requant.shift))
        return self.clamp(self.requant(slot, f, e, lo, hi, (1 << (s - 1)) if s > 0 else 0, s), *clamp)

    def _const_act(self, v: int):
        return self.Act(self.const(int(v), 0), 0, int(v), int(v), 0)

    def mul(self, node) -> None:
        self._pow2(node, [node.requant])
        oshape = self.oshape(node)
        if node.const is not None:
            cv = np.asarray(node.const, np.int64)
            carr = np.vectorize(self._const_act, otypes=[object])(cv) if cv.size else cv.astype(object)
            xa = self.env[node.inputs[0]]
            ops = [carr, xa] if int(node.attrs.get("const_index", 1)) == 0 else [xa, carr]
        else:
            ops = [self.env[node.inputs[0]], self.env[node.inputs[1]]]
        A, B = (self._bcast(o, oshape) for o in ops)
        n_before = len(self.b)
        out = np.empty(int(np.prod(oshape)), dtype=object)
        for j, (a, b) in enumerate(zip(A.reshape(-1), B.reshape(-1))):
            out[j] = self._finish(node, self.mul2(a, b), node.clamp)
        self.set_out(node, out.reshape(oshape))
        self.report(node, n_before)

    def matmul(self, node) -> None:
        """Activation × activation (attention): every output is an adder tree of opcode-7 products."""
        self._pow2(node, [node.requant])
        if node.weight is not None:
            return self.matmul_const(node)
        a, b = self.env[node.inputs[0]], self.env[node.inputs[1]]
        oshape = self.oshape(node)
        if a.ndim < 2 or b.ndim < 2:
            self.fail(node, "MatMul operands must be at least 2-D after the batch axis")
        lead = oshape[:-2]
        A = np.broadcast_to(a, lead + a.shape[-2:])
        B = np.broadcast_to(b, lead + b.shape[-2:])
        n_before = len(self.b)
        out = np.empty(oshape, dtype=object)
        for idx in np.ndindex(*lead) if lead else [()]:
            am, bm = A[idx], B[idx]
            for i in range(am.shape[0]):
                for j in range(bm.shape[1]):
                    prods = [self.mul2(am[i, k], bm[k, j]) for k in range(am.shape[1])]
                    acc = self.sum(node, [self.Act(s, e, lo, hi, f) for s, f, e, lo, hi in prods])
                    out[idx + (i, j)] = self._finish(node, acc, node.clamp)
        self.set_out(node, out)
        self.report(node, n_before)
