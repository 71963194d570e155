"""Attention masks computed from integer model inputs, in DAIS logic (mixed into ``netcompile._Net``).

A mask input (``attention_mask`` ids compared with a constant, then unsqueezed, expanded, cast,
scaled and added to a causal mask) is *raw* in the frontend: exact values, never quantized, with
the float semantics (:mod:`nnisa.frontend.quant_transformer`).  What its consumer (MaskedSoftmax)
needs is one bit per score: ``keep = (mask == 0)``.  DAIS computes that bit with ordinary logic:

* the mask input is a signed ``bits``-bit program input (the integer range the bundle declares);
  when every reader is an Equal/Less/Greater with a constant, only ``[min c - 1, max c + 1]`` needs
  tabulating (values beyond compare like its ends: the lookups clamp, and the run's encoding
  saturates ids beyond the input's range); a mask read by arithmetic (``(1 - mask) · -10000``) is
  tabulated over every value of the input's range, and ids beyond it are refused in one line;
* every element of the raw tensor the consumer reads is a function of one mask-input element (its
  dependence is found by evaluating the frontend's own raw subgraph with one element changed at a
  time, and checked on the constant and random inputs); the bit of each element is one lookup
  (opcode 8) keyed by that input's slot, whose table is the frontend's result for every value of
  the range: bit-exact with ``evaluate_quantized`` by construction.
"""

from __future__ import annotations

import numpy as np

#: raw ops that read a mask input directly and only compare it with constants
_COMPARE = ("Equal", "Less", "Greater")
#: cap on the evaluations of the raw subgraph spent finding one mask's dependences
_MAX_EVALS = 50_000


class NetMaskOps:
    """Mask input ranges and the per-element keep bits of a mask computed from them."""

    def mask_input_range(self, t) -> tuple[int, int]:
        """The values of raw (non-Gather) input ``t`` its keep bits are tabulated over.  The input
        itself is a signed ``bits``-bit program input (the bundle's declared integer range).  When
        every reader compares it with a constant, ``[min c - 1, max c + 1]``: values beyond compare
        like its ends (the lookups clamp to it and the encoding saturates larger ids: ``t`` joins
        :attr:`mask_saturate`); otherwise (a mask read by arithmetic, ``(1 - mask) · -10000``)
        every value of the input's range."""
        users = [n for n in self.qg.nodes if t.name in n.inputs]
        cs = []
        for n in users:
            consts = list(n.attrs.get("consts", {}).values())
            if n.op not in _COMPARE or len(consts) != 1 or not self.qg.tensors[n.outputs[0]].raw:
                return self.mask_codes()
            c = np.asarray(consts[0], np.float64)
            cs += [float(np.floor(c.min())), float(np.ceil(c.max()))]
        self.mask_saturate.add(t.name)
        lo, hi = self.mask_codes()
        return max(int(min(cs)) - 1, lo), min(int(max(cs)) + 1, hi)

    def mask_codes(self) -> tuple[int, int]:
        """The signed range of a mask input: the graph's activation width (the manifest's bits)."""
        b = int(self.qg.bits)
        return -(1 << (b - 1)), (1 << (b - 1)) - 1

    # -- the raw subgraph -------------------------------------------------------------------------
    def _raw_eval(self, name: str, values: dict) -> np.ndarray:
        """Tensor ``name`` of the raw subgraph for mask-input ``values`` (the frontend's semantics)."""
        from ....frontend.qeval import run_qnode
        env = dict(values)
        for n in self._raw_nodes(name):
            env[n.outputs[0]] = np.asarray(run_qnode(n, [env[i] for i in n.inputs], self.qg))
        return env[name]

    def _raw_nodes(self, name: str) -> list:
        """The raw nodes ``name`` is computed by, in graph order."""
        if name in self._raw_plan:
            return self._raw_plan[name]
        producer = {n.outputs[0]: n for n in self.qg.nodes}
        need, todo = set(), [name]
        while todo:
            t = todo.pop()
            n = producer.get(t)
            if n is None or n.name in need:
                continue
            need.add(n.name)
            todo += list(n.inputs)
        self._raw_plan[name] = [n for n in self.qg.nodes if n.name in need]
        return self._raw_plan[name]

    def _raw_sources(self, node, name: str) -> list:
        ins = {i for n in self._raw_nodes(name) for i in n.inputs} | {name}
        srcs = [t for t in self.qg.inputs if t.name in ins]
        if len(srcs) != 1 or srcs[0].name not in self.mask_ranges:
            self.fail(node, f"the mask {name} must come from exactly one integer mask input (got "
                            f"{[t.name for t in srcs]})")
        return srcs

    def mask_keep(self, node, name: str, oshape) -> np.ndarray:
        """Object array (``oshape``) of ``keep = (mask == 0)`` per element of raw tensor ``name``:
        ``True``/``False`` where the mask is constant, else a 0/1 ``_Act`` (one lookup)."""
        t = self._raw_sources(node, name)[0]
        lo, hi = self.mask_ranges[t.name]
        shape = tuple(t.shape)
        n_el, R = int(np.prod(shape, dtype=np.int64)), hi - lo + 1
        if n_el * R > _MAX_EVALS:
            self.fail(node, f"mask input {t.name}: {n_el} elements × {R} values is too many to tabulate")
        base = np.full(shape, lo, np.int64)
        f0 = self._raw_eval(name, {t.name: base}).reshape(-1)
        table = np.repeat(f0[:, None], R, axis=1)  # table[o, v - lo]: element o's value
        dep = np.full(len(f0), -1, np.int64)
        for j in range(n_el):
            for v in range(lo + 1, hi + 1):
                x = base.copy()
                x.reshape(-1)[j] = v
                f = self._raw_eval(name, {t.name: x}).reshape(-1)
                moved = np.flatnonzero(f != f0)
                if np.any((dep[moved] >= 0) & (dep[moved] != j)):
                    self.fail(node, f"an element of the mask {name} depends on several elements of {t.name}")
                dep[moved] = j
                table[moved, v - lo] = f[moved]
        rng = np.random.default_rng(0)  # the one-element model must also predict joint changes
        for x in [np.full(shape, v, np.int64) for v in range(lo, hi + 1)] + \
                 [rng.integers(lo, hi + 1, shape) for _ in range(8)]:
            xs = x.reshape(-1)
            want = np.where(dep >= 0, table[np.arange(len(dep)), xs[np.maximum(dep, 0)] - lo], f0)
            if not np.array_equal(self._raw_eval(name, {t.name: x}).reshape(-1), want):
                self.fail(node, f"the mask {name} is not a per-element function of {t.name}")
        keep = table == 0
        flat_in = self.env[t.name].reshape(-1)
        out = np.empty(len(f0), dtype=object)
        for o in range(len(f0)):
            k = keep[o]
            if dep[o] < 0 or k.all() or not k.any():
                out[o] = bool(k[0])
                continue
            key = (t.name, int(dep[o]), k.tobytes())
            if key not in self._mask_bits:
                self._mask_bits[key] = self._lookup_bits(flat_in[dep[o]], lo, k)
            out[o] = self._mask_bits[key]
        mshape = tuple(self.qg.tensors[name].shape)
        return np.broadcast_to(out.reshape(mshape), oshape)

    def _lookup_bits(self, a, lo: int, bits: np.ndarray):
        """0/1 ``_Act``: ``bits[q - lo]`` of input element ``a`` (one lookup over its dtype's codes)."""
        q = self.key_codes(a)[1]
        entries = bits[np.clip(q - lo, 0, len(bits) - 1)].astype(np.int64)
        t = self.b.add_table(entries)
        return self.Act(self.b.add_op(8, a.slot, -1, t, self._dt(0, 1, 0)), 0, 0, 1, 0)

    # -- a keep row of constants and bits --------------------------------------------------------------
    def keep_row(self, node, kr: list) -> list:
        """The row's keep flags after the frontend's rule "a row with no kept position keeps all":
        constants stay constants; with no constant ``True``, every flag is ORed with ``none``
        (all dynamic bits 0), computed in logic."""
        dyn = [k for k in kr if not isinstance(k, (bool, np.bool_))]
        if not dyn:
            return kr if any(kr) else [True] * len(kr)
        if any(k is True or k is np.True_ for k in kr):
            return kr
        s = self._acc(self.sum(node, dyn))
        none = self._mux(self._addc(s, -1), self._int(1), self._int(0))  # Σ bits == 0
        return [none if not isinstance(k, self.Act) else self.max2(node, k, none) for k in kr]
