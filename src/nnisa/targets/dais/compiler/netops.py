"""Element-wise and pooling layers of the DAIS network compiler (mixed into ``netcompile._Net``).

Every element is an ``_Act`` (slot, ``e``, ``q`` range, slot ``f``): the slot's value is ``q · 2^e``.
"""

from __future__ import annotations

import numpy as np

from .cmvm import CMVMCompiler, _to_int_matrix


class NetOps:
    """MaxPool / AveragePool / GlobalAveragePool / Add / Sub / data movement."""

    # -- data movement ----------------------------------------------------------------------
    def move(self, node) -> None:
        x = self.env[node.inputs[0]]
        if node.op == "Transpose":  # any permutation: the whole tensor is one sample
            x = np.transpose(x, tuple(node.attrs["perm"]))
        self.set_out(node, np.ascontiguousarray(x).reshape(self.oshape(node)))

    # -- max -----------------------------------------------------------------------------------
    def max2(self, node, a, b):
        """``max(a, b)``: subtraction key + MSB mux (opcode 6)."""
        if a.e != b.e:
            self.fail(node, f"max of elements with exponents {a.e} and {b.e}")
        if a.hi <= b.lo:
            return b
        if b.hi <= a.lo:
            return a
        F = max(a.f, b.f, -a.e)
        u = 1 << (a.e + F)
        key = self.b.add_op(1, a.slot, b.slot, 0, self._dt((a.lo - b.hi) * u, (a.hi - b.lo) * u, F))
        lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
        s = self.b.add_op(6, b.slot, a.slot, key, self._dt(lo * u, hi * u, F))  # key < 0 → b
        return self.Act(s, a.e, lo, hi, F)

    def _windows(self, node, x: np.ndarray):
        """``(C, P, kh*kw)`` element ids + 1 of every pooling window (0 = outside the input)."""
        from ....frontend import kernels as FK
        a = node.attrs
        C, H, W = x.shape
        if node.op == "GlobalAveragePool":
            ids = np.arange(C * H * W, dtype=np.int64).reshape(C, 1, H * W) + 1
            return ids
        kh, kw = a["kernel"]
        sh, sw = a["strides"]
        dh, dw = a.get("dilations", (1, 1))
        pt, pl, pb, pr = a["pads"]
        ceil = bool(a.get("ceil_mode", False))
        oh = FK.pool_out_size(H, kh, sh, pt, pb, dh, ceil)
        ow = FK.pool_out_size(W, kw, sw, pl, pr, dw, ceil)
        pb = max(pb, (oh - 1) * sh + (kh - 1) * dh + 1 - (H + pt), 0)
        pr = max(pr, (ow - 1) * sw + (kw - 1) * dw + 1 - (W + pl), 0)
        ids = (np.arange(C * H * W, dtype=np.int64) + 1).reshape(1, C, H, W)
        return FK.im2col(ids, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw), C)[0]

    def maxpool(self, node) -> None:
        x = self.sample_image(node, self.env[node.inputs[0]])
        win = self._windows(node, x)
        flat = x.reshape(-1)
        n_before = len(self.b)
        C, P, _ = win.shape
        out = np.empty((C, P), dtype=object)
        for c in range(C):
            for p in range(P):
                els = [flat[i - 1] for i in win[c, p] if i]
                if not els:
                    self.fail(node, "a pooling window holds no input element")
                while len(els) > 1:  # balanced tree
                    nxt = [self.max2(node, els[i], els[i + 1]) for i in range(0, len(els) - 1, 2)]
                    els = nxt + ([els[-1]] if len(els) % 2 else [])
                out[c, p] = els[0]
        self.set_out(node, out.reshape(self.oshape(node)))
        self.report(node, n_before, positions=P)

    # -- sums ------------------------------------------------------------------------------------
    def add2(self, a, b, la: int, lb: int, sign: int):
        """Slot holding ``acc · 2^e_acc`` with ``acc = q_a·2^la ± q_b·2^lb`` (``la, lb ≥ 0``).

        Returns ``(slot, f, e_acc, acc_lo, acc_hi)``.
        """
        d = (lb - b.e) - (la - a.e)  # A + B·2^d = 2^(e_a - la)·acc
        fa, fb = self.kif(a.slot)[2], self.kif(b.slot)[2]
        f = max(fa, fb - d)
        e_acc = a.e - la
        if sign > 0:
            lo, hi = (a.lo << la) + (b.lo << lb), (a.hi << la) + (b.hi << lb)
        else:
            lo, hi = (a.lo << la) - (b.hi << lb), (a.hi << la) - (b.lo << lb)
        u = e_acc + f
        # u < 0 when both inputs were left-shifted: the range bounds are multiples of 2^-u then
        lo_r, hi_r = (lo << u, hi << u) if u >= 0 else (lo >> -u, hi >> -u)
        s = self.b.add_op(0 if sign > 0 else 1, a.slot, b.slot, d, self._dt(lo_r, hi_r, f))
        return s, f, e_acc, lo, hi

    def addsub(self, node) -> None:
        sign = 1 if node.op == "Add" else -1
        if node.const is not None:
            ci = int(node.attrs.get("const_index", 1))
            cv = np.asarray(node.const, np.int64)
            carr = np.empty(cv.shape, dtype=object)
            for j, v in enumerate(cv.reshape(-1)):
                carr.reshape(-1)[j] = self.Act(self.const(int(v), 0), 0, int(v), int(v), 0)
            xa = self.env[node.inputs[0]]
            ops = [carr, xa] if ci == 0 else [xa, carr]
        else:
            ops = [self.env[node.inputs[0]], self.env[node.inputs[1]]]
        oshape = self.oshape(node)
        ir = []
        for r in node.input_requants:
            if np.any(np.asarray(r.multiplier) != 1) or np.any(np.asarray(r.shift) > 0):
                self.fail(node, "DAIS needs pow2 input rescaling (exact left shifts)")
            ir.append(-np.asarray(r.shift, np.int64))
        # operands may carry the batch axis (constants (1,C,1,1) or (C,1,1)): align on the trailing axes
        A, B = (self._bcast(o, oshape) for o in ops)
        req = node.requant
        if np.any(np.asarray(req.multiplier) != 1):
            self.fail(node, "DAIS needs scale_mode='pow2' (requant multipliers must be 1)")
        shifts = self._per_channel(np.asarray(req.shift, np.int64), oshape)
        la_all = self._per_channel(ir[0], oshape)
        lb_all = self._per_channel(ir[1], oshape)
        n_before = len(self.b)
        out = np.empty(int(np.prod(oshape)), dtype=object)
        for j, (a, b) in enumerate(zip(A.reshape(-1), B.reshape(-1))):
            s = int(shifts.reshape(-1)[j])
            slot, f, e_acc, lo, hi = self.add2(a, b, int(la_all.reshape(-1)[j]), int(lb_all.reshape(-1)[j]), sign)
            add = (1 << (s - 1)) if s > 0 else 0
            out[j] = self.clamp(self.requant(slot, f, e_acc, lo, hi, add, s), *node.clamp)
        self.set_out(node, out.reshape(oshape))
        self.report(node, n_before)

    @staticmethod
    def _bcast(x: np.ndarray, oshape) -> np.ndarray:
        while x.ndim > len(oshape) and x.shape[0] == 1:
            x = x[0]
        return np.broadcast_to(x, oshape)

    @staticmethod
    def _per_channel(v: np.ndarray, oshape) -> np.ndarray:
        """Scalar or per-channel (axis 1 of the tensor) value, broadcast to ``oshape``."""
        if v.ndim == 0 or v.size == 1:
            return np.full(oshape, int(v.reshape(-1)[0]), np.int64)
        return np.broadcast_to(v.reshape((1, -1) + (1,) * (len(oshape) - 2)), oshape)

    # -- average pooling -------------------------------------------------------------------------
    def avgpool(self, node) -> None:
        from ....frontend import kernels as FK
        x = self.sample_image(node, self.env[node.inputs[0]])
        C, H, W = x.shape
        win = self._windows(node, x)
        counts = (np.full(1, H * W) if node.op == "GlobalAveragePool"
                  else FK.pool_counts(node.attrs, H, W).reshape(-1))
        flat = x.reshape(-1)
        n_before = len(self.b)
        _, P, _ = win.shape
        out = np.empty((C, P), dtype=object)
        for c in range(C):
            for p in range(P):
                els = [flat[i - 1] for i in win[c, p] if i]
                out[c, p] = self.div_round_away(node, self.sum(node, els), int(counts[p]))
            if len({r.e for r in out[c]}) > 1:  # divisors differ: bring the channel to e = 0
                for p in range(P):
                    r = out[c, p]
                    if r.e:
                        slot, f = self.acc_slot((r.slot, -r.e, False), 0, r.lo, r.hi)
                        out[c, p] = self.Act(slot, 0, r.lo, r.hi, f)
        self.set_out(node, out.reshape(self.oshape(node)))
        self.report(node, n_before, positions=P)

    def sum(self, node, els):
        """Balanced adder tree; returns ``(slot, f, e, lo, hi)`` with slot = sum(q)·2^e (elements may
        carry different exponents: :meth:`add2` aligns them)."""
        if not els:
            return None
        cur = [(a.slot, self.kif(a.slot)[2], a.e, a.lo, a.hi) for a in els]
        while len(cur) > 1:
            nxt = []
            for i in range(0, len(cur) - 1, 2):
                a = self.Act(cur[i][0], cur[i][2], cur[i][3], cur[i][4], cur[i][1])
                b = self.Act(cur[i + 1][0], cur[i + 1][2], cur[i + 1][3], cur[i + 1][4], cur[i + 1][1])
                nxt.append(self.add2(a, b, 0, 0, 1))
            cur = nxt + ([cur[-1]] if len(cur) % 2 else [])
        return cur[0]

    def div_round_away(self, node, s, n: int):
        """``sign(S)·((|S| + n//2) // n)`` exactly: ``floor((S + c) / n)`` with ``c = n//2`` for
        ``S ≥ 0`` and ``c = n - 1 - n//2`` for ``S < 0`` (one MSB mux when both signs occur)."""
        if s is None:
            return self.Act(self.const(0, 0), 0, 0, 0, 0)
        slot, f, e, lo, hi = s
        if n == 1:
            return self.Act(slot, e, lo, hi, f)
        h = n // 2
        cs = sorted({h if hi >= 0 else None, (n - 1 - h) if lo < 0 else None} - {None})
        if len(cs) == 1:
            return self._floordiv(slot, f, e, lo, hi, cs[0], n)
        pos = self._floordiv(slot, f, e, lo, hi, h, n)
        neg = self._floordiv(slot, f, e, lo, hi, n - 1 - h, n)
        if pos.e != neg.e:
            self.fail(node, "internal: division branches at different exponents")
        F = max(pos.f, neg.f, -pos.e)
        u = 1 << (pos.e + F)
        rlo, rhi = min(pos.lo, neg.lo), max(pos.hi, neg.hi)
        m = self.b.add_op(6, neg.slot, pos.slot, slot, self._dt(rlo * u, rhi * u, F))  # S < 0 → neg
        return self.Act(m, pos.e, rlo, rhi, F)

    def _floordiv(self, slot, f, e, lo, hi, c: int, n: int):
        """``floor((S + c) / n)`` for ``S`` in ``[lo, hi]`` held as ``S·2^e`` in ``slot`` (dtype f)."""
        t = n.bit_length() - 1
        if n == 1 << t:
            return self.requant(slot, f, e, lo, hi, c, t)
        B = max(0, -((lo + c) // n))  # S + c + B·n ≥ 0 on the whole range
        v = self.requant(slot, f, e, lo, hi, c + B * n, 0)  # v = S + c + B·n, exact
        vmax = v.hi
        k = (vmax * n).bit_length()  # 2^k > vmax·n  →  floor(v·m / 2^k) = floor(v / n)
        m = -(-(1 << k) // n)
        Mi, F0 = _to_int_matrix(np.array([[m * 2.0 ** -v.e]]))
        comp = CMVMCompiler(self.b, [(v.slot, *self.kif(v.slot))], method="wmc")
        term = comp.solve(Mi)[0]
        pslot, pf = self.acc_slot(term, F0, v.lo * m, v.hi * m)
        r = self.requant(pslot, pf, 0, v.lo * m, v.hi * m, 0, k)
        return self.requant(r.slot, r.f, r.e, r.lo, r.hi, -B, 0) if B else r
