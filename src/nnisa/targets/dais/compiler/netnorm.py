"""LayerNorm and Softmax of the DAIS network compiler (mixed into ``netcompile._Net``), bit-exact
with the frontend's integer algorithms (``frontend.quant_transformer``, docs/frontend.md §7).

DAIS has adders, multipliers, MSB muxes and lookups but no divider or square root: the one
division per row (``floor(2^P / D)``) is unrolled as restoring long division (a subtraction and
two muxes per quotient bit, only the bits the divisor's range allows), the integer square root
of LayerNorm digit by digit (a subtraction, a floor shift and two muxes per result bit), and
Softmax's exponential is the frontend's table, one lookup per element keyed by ``max - q``.
Every value is an ``_Act`` (``q`` with its range; the slot holds ``q · 2^e``): ranges bound every
width, so nothing wraps.
"""

from __future__ import annotations

import numpy as np


class NetNormOps:
    """LayerNorm, Softmax and MaskedSoftmax rows."""

    # -- integer helpers on _Act values ----------------------------------------------------------
    def _int(self, v: int):
        return self.Act(self.const(int(v), 0), 0, int(v), int(v), 0)

    def _acc(self, t):
        """``(slot, f, e, lo, hi)`` of :meth:`add2`/:meth:`mul2`/:meth:`sum` → ``_Act``."""
        slot, f, e, lo, hi = t
        return self.Act(slot, e, lo, hi, f)

    def _plus(self, a, b, sign: int = 1, lb: int = 0):
        """``q_a ± q_b · 2^lb`` exactly (``lb ≥ 0``)."""
        return self._acc(self.add2(a, b, 0, lb, sign))

    def _addc(self, a, c: int):
        return self.requant(a.slot, a.f, a.e, a.lo, a.hi, int(c), 0) if c else a

    def _mux(self, key, neg, pos):
        """``key < 0 ? neg : pos`` (MSB mux; both branches brought to one exponent and ``f``)."""
        if key.hi < 0:
            return neg
        if key.lo >= 0:
            return pos
        if neg.e != pos.e:
            neg, pos = self._same_e(neg), self._same_e(pos)
        F = max(neg.f, pos.f, -neg.e)
        if neg.f != F and pos.f != F:  # the mux shifts one operand at most
            pos = self._to_f(pos, F)
        u = 1 << (neg.e + F)
        lo, hi = min(neg.lo, pos.lo), max(neg.hi, pos.hi)
        s = self.b.add_op(6, neg.slot, pos.slot, key.slot, self._dt(lo * u, hi * u, F))
        return self.Act(s, neg.e, lo, hi, F)

    def _to_f(self, a, F: int):
        u = 1 << (a.e + F)
        return self.Act(self.b.add_op(4, a.slot, -1, 0, self._dt(a.lo * u, a.hi * u, F)), a.e, a.lo, a.hi, F)

    def _bit(self, key, v: int):
        """``key < 0 ? 0 : v`` as a value (one mux of two constants)."""
        return self._mux(key, self._int(0), self._int(v))

    def _recip(self, node, d, P: int):
        """``floor(2^P / d)`` for ``d`` in ``[d.lo, d.hi]``, ``d.lo ≥ 1``: restoring long division
        over the quotient bits the range allows."""
        if d.lo < 1:
            self.fail(node, "internal: divisor range includes 0")
        if d.lo == d.hi:
            return self._int((1 << P) // d.lo)
        m = ((1 << P) // d.lo).bit_length() - 1  # highest quotient bit
        rem = self._int((1 << P) >> (m + 1))    # < d on the whole range
        bits = []
        for i in range(m, -1, -1):
            two = self.Act(rem.slot, rem.e - 1, 2 * rem.lo, 2 * rem.hi, rem.f)  # 2·rem: same slot
            if i == P:  # the numerator's one bit
                two = self._addc(two, 1)
            t = self._plus(two, d, -1)
            t = self.Act(t.slot, t.e, max(t.lo, -d.hi), min(t.hi, d.hi - 1), t.f)
            if i:
                nxt = self._mux(t, two, t)
                rem = self.Act(nxt.slot, nxt.e, 0, min(nxt.hi, d.hi - 1), nxt.f)
            bits.append(self._bit(t, 1 << i))
        return self._acc(self.sum(node, bits))

    def _isqrt(self, node, w):
        """``floor(sqrt(w))`` for ``w ≥ 0``: digit-by-digit (a trial subtraction per result bit)."""
        if w.lo < 0:
            self.fail(node, "internal: square root of a negative range")
        if w.hi == 0:
            return self._int(0)
        top = (w.hi.bit_length() - 1) // 2 * 2
        x, r = w, self._int(0)
        for j in range(top, -1, -2):
            bit = 1 << j
            t = self._addc(r, bit)
            diff = self._plus(x, t, -1)
            diff = self.Act(diff.slot, diff.e, max(diff.lo, -t.hi), diff.hi, diff.f)
            half = self.requant(r.slot, r.f, r.e, r.lo, r.hi, 0, 1) if r.hi else r  # floor(r / 2)
            x_new = self._mux(diff, x, diff)
            x = self.Act(x_new.slot, x_new.e, 0, min(x_new.hi, w.hi), x_new.f)
            half = self._same_e(half)
            r = self._mux(diff, half, self._addc(half, bit))
        return r

    def _mul_within(self, a, b, lo: int, hi: int):
        """``q_a · q_b`` known (by the algorithm) to lie in ``[lo, hi]``: the product's dtype from
        that range rather than the operands' corners."""
        lo, hi = max(lo, min(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)), \
            min(hi, max(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi))
        f, e = a.f + b.f, a.e + b.e
        s = self.b.add_op(7, a.slot, b.slot, 0, self._dt(lo << (e + f), hi << (e + f), f))
        return self.Act(s, e, lo, hi, f)

    def _rshift_round(self, a, s: int):
        return self.requant(a.slot, a.f, a.e, a.lo, a.hi, (1 << (s - 1)) if s > 0 else 0, s)

    def _rows_of(self, x: np.ndarray, axis: int):
        """Elements of every row along env ``axis`` (moved last) and the inverse permutation."""
        moved = np.moveaxis(x, axis, -1)
        return moved.reshape(-1, moved.shape[-1]), moved.shape

    # -- LayerNorm ---------------------------------------------------------------------------------
    def layernorm(self, node) -> None:
        a = node.attrs
        self._pow2(node, [node.requant])
        x = self.env[node.inputs[0]]
        axis = self._axis(a["axis"], x.ndim)
        n = int(np.prod(x.shape[axis:], dtype=np.int64))
        rows = x.reshape(-1, n)
        k, P, F = int(a["sqrt_shift"]), int(a["recip_bits"]), int(a["frac_bits"])
        wv = np.broadcast_to(np.asarray(node.weight, np.int64), x.shape[axis:]).reshape(-1)
        bv = np.broadcast_to(np.asarray(node.bias if node.bias is not None else 0, np.int64),
                             x.shape[axis:]).reshape(-1)
        s_out = int(np.asarray(node.requant.shift).reshape(-1)[0])
        n_before = len(self.b)
        out = np.empty(rows.shape, dtype=object)
        cn = self._int(n)
        for r, row in enumerate(rows):
            els = [self._same_e(v) for v in row]
            s = self._acc(self.sum(node, els))
            d = [self._plus(self._acc(self.mul2(v, cn)), s, -1) for v in els]
            sq = self._acc(self.sum(node, [self._acc(self.mul2(v, v)) for v in d]))
            span = max(v.hi for v in els) - min(v.lo for v in els)
            sq = self.Act(sq.slot, sq.e, max(sq.lo, 0), min(sq.hi, n ** 3 * span * span // 4 + 1), sq.f)
            w = self.requant(sq.slot, sq.f, sq.e, sq.lo, sq.hi, 0, -2 * k)  # << 2k: same slot
            w = self._addc(w, int(a["eps_q"]))
            root = self._isqrt(node, w)
            if root.lo < 1:
                root = self.max2(node, self._same_e(root), self._int(1))
            inv = self._recip(node, self._same_e(root), P)
            for i, di in enumerate(d):
                # |d·inv| ≤ 2^(P-k): r = isqrt(Σd²·4^k + eps) ≥ |d|·2^k and inv ≤ 2^P / r
                z = self._rshift_round(self._mul_within(di, self._same_e(inv), -(1 << (P - k)), 1 << (P - k)),
                                       P - F - k)
                acc = self._acc(self.mul2(self._same_e(z), self._int(int(wv[i]))))
                acc = self._addc(self._same_e(acc), int(bv[i]))
                # e = 0: the shift's exponent would otherwise be folded into the next layer's weights
                out[r, i] = self._same_e(self.clamp(self._rshift_round(acc, s_out), *node.clamp))
        self.set_out(node, out.reshape(x.shape))
        self.report(node, n_before, rows=len(rows))

    # -- Softmax -----------------------------------------------------------------------------------
    def softmax(self, node) -> None:
        """Integer Softmax / MaskedSoftmax along any axis; the mask is constant or computed from an
        integer mask input (one keep bit per element, :mod:`.netmask`)."""
        a = node.attrs
        x = self.env[node.inputs[0]]
        oshape = self.oshape(node)
        keep = np.ones(oshape, bool)
        if node.op == "MaskedSoftmax":
            keep = (np.broadcast_to(np.asarray(node.const).astype(bool), oshape) if node.const is not None
                    else self.mask_keep(node, node.inputs[1], oshape))
        x = np.broadcast_to(x, oshape)
        axis = self._axis(a["axis"], len(oshape))
        rows, mshape = self._rows_of(x, axis)
        krows, _ = self._rows_of(keep, axis)
        lut = np.asarray(node.lut, np.int64)
        P, b = int(a["recip_bits"]), int(node.out_bits)
        top = (1 << (b - 1)) - 1
        n_before = len(self.b)
        out = np.empty(rows.shape, dtype=object)
        for r, (row, kr) in enumerate(zip(rows, krows)):
            kr = self.keep_row(node, list(kr))
            live = [(self._same_e(v), None if isinstance(k, (bool, np.bool_)) else self._addc(k, -1))
                    for v, k in zip(row, kr) if k is not False and k is not np.False_]
            low = self._int(min(v.lo for v, _ in live))  # a dropped score never wins the maximum
            vals = [v if key is None else self._mux(key, low, v) for v, key in live]
            m = vals[0]
            for v in vals[1:]:
                m = self.max2(node, m, v)
            es = []
            for v, (_, key) in zip(vals, live):
                delta = self._plus(m, v, -1)
                e = self._exp_lookup(self.Act(delta.slot, delta.e, max(delta.lo, 0), delta.hi, delta.f), lut)
                es.append(e if key is None else self._mux(key, self._int(0), e))  # dropped: e = 0
            S = self._acc(self.sum(node, es))
            S = self.Act(S.slot, S.e, max(S.lo, int(lut[0])), S.hi, S.f)  # a kept maximum's own exp(0)
            inv = self._recip(node, self._same_e(S), P)
            it = iter(es)
            for j, kk in enumerate(kr):
                if kk is False or kk is np.False_:
                    out[r, j] = self._int(0)
                    continue
                y = self._rshift_round(self._mul_within(next(it), inv, 0, 1 << P), P - b + 1)  # e ≤ S
                out[r, j] = self._same_e(self.clamp(y, y.lo, top) if y.hi > top else y)
        self.set_out(node, np.moveaxis(out.reshape(mshape), -1, axis))
        self.report(node, n_before, rows=len(rows))

    def _exp_lookup(self, delta, lut: np.ndarray):
        """``lut[min(δ, len - 1)]`` by one lookup keyed by the slot of ``δ ≥ 0``."""
        q = self.key_codes(delta)[1]
        entries = lut[np.clip(q, 0, len(lut) - 1)]
        t = self.b.add_table(entries)
        lo, hi = int(lut[min(delta.hi, len(lut) - 1)]), int(lut[max(min(delta.lo, len(lut) - 1), 0)])
        return self.Act(self.b.add_op(8, delta.slot, -1, t, self._dt(int(entries.min()), int(entries.max()), 0)),
                        0, min(lo, hi), max(lo, hi), 0)
