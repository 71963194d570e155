"""LSTM and GRU, unrolled over their (static) sequence into IR nodes at import.

Every time step becomes Gemm (gate pre-activations of ``[x_t, h_{t-1}]`` with the stacked
``[W; R]`` weights), Sigmoid/Tanh, Mul and Add nodes, so each target compiles a recurrent
network with the operators it already has (DAIS: yes; PIM: the elementwise Mul of two
activations is what it lacks, see ``docs/pim_compiler.md``).  The first step folds a constant
initial state into the gate biases.

Supported: forward, reverse and bidirectional; ``layout`` 0 and 1; default activations;
constant (or absent) ``initial_h``/``initial_c``; GRU ``linear_before_reset`` 0 and 1.
Refused with a one-line error: ``sequence_lens`` shorter than the sequence, peepholes,
``clip``, ``input_forget``, other activation functions, non-constant weights or states.
"""

from __future__ import annotations

import numpy as np

_SIG, _TANH = "Sigmoid", "Tanh"


class _Unroll:
    """Emission helpers over the importer's context for one recurrent node."""

    def __init__(self, ctx, node):
        self.ctx, self.node = ctx, node
        self.base = node.name or node.output[0]

    def emit(self, op, inputs, attrs=None, out=None) -> str:
        out = out or self.ctx.tmp(f"{self.base}.{op.lower()}")
        self.ctx.emit(op, self.ctx.tmp(f"{self.base}_{op}"), inputs, [out], **(attrs or {}))
        return out

    def init(self, what: str, value: np.ndarray) -> str:
        return self.ctx.add_init(f"{self.base}.{what}", np.ascontiguousarray(value, np.float32))

    def gate(self, x: str, h: str | None, w: np.ndarray, r: np.ndarray, b: np.ndarray, h0: np.ndarray | None,
             act: str, what: str) -> str:
        """``act([x, h] @ [W; R]^T + b)``; with no ``h`` (first step) the constant state ``h0``
        goes into the bias."""
        if h is None:
            bias = b + (h0 @ r.T if h0 is not None else 0.0)
            if np.ndim(bias) == 2 and bias.shape[0] == 1:
                bias = bias[0]
            if np.ndim(bias) == 2:  # a state per batch row: keep it as an Add
                y = self.emit("Gemm", [x, self.init(what + ".W", w.T), self.init(what + ".b0", np.zeros(w.shape[0]))])
                y = self.emit("Add", [y, self.init(what + ".b", bias)])
            else:
                y = self.emit("Gemm", [x, self.init(what + ".W", w.T), self.init(what + ".b", bias)])
        else:
            xh = self.emit("Concat", [x, h], {"axis": 1})
            y = self.emit("Gemm", [xh, self.init(what + ".WR", np.concatenate([w.T, r.T], 0)), self.init(what + ".b", b)])
        return self.emit(act, [y]) if act else y


def _params(ctx, node, at, gates: int):
    for k in ("clip", "input_forget"):
        if at.get(k):
            raise ctx.err(node, f"{node.op_type} attribute {k} is not supported")
    if at.get("activations") and [a.decode() if isinstance(a, bytes) else a for a in at["activations"]] != \
            ([_SIG, _TANH, _TANH] if gates == 4 else [_SIG, _TANH]) * (2 if at.get("direction") == "bidirectional" else 1):
        raise ctx.err(node, f"{node.op_type} with non-default activations is not supported")
    w = ctx.need_const(node, node.input[1], f"{node.op_type} W").astype(np.float64)
    r = ctx.need_const(node, node.input[2], f"{node.op_type} R").astype(np.float64)
    dirs, gh, _ = w.shape
    hidden = gh // gates
    b = (ctx.const(node.input[3]) if len(node.input) > 3 and node.input[3] else None)
    if len(node.input) > 3 and node.input[3] and b is None:
        raise ctx.err(node, f"{node.op_type} B must be a constant")
    b = np.zeros((dirs, 2 * gh)) if b is None else b.astype(np.float64)
    opt = {}
    for k, name in ((4, "sequence_lens"), (5, "initial_h"), (6, "initial_c"), (7, "P")):
        if len(node.input) > k and node.input[k]:
            v = ctx.const(node.input[k])
            if v is None:
                raise ctx.err(node, f"{node.op_type} {name} must be a constant")
            opt[name] = v
    return w, r, b, dirs, hidden, opt


def _lower_rnn(ctx, node, at, gates: int) -> None:
    w, r, b, dirs, hidden, opt = _params(ctx, node, at, gates)
    layout = int(at.get("layout", 0))
    x = node.input[0]
    xs = ctx.shape(node, x)
    seq, batch = (xs[1], xs[0]) if layout else (xs[0], xs[1])
    if "sequence_lens" in opt and np.any(np.asarray(opt["sequence_lens"]) != seq):
        raise ctx.err(node, f"{node.op_type} sequence_lens shorter than the sequence is not supported")
    if "P" in opt and np.any(opt["P"] != 0):
        raise ctx.err(node, "LSTM peepholes are not supported")
    u = _Unroll(ctx, node)
    xb = x if layout else u.emit("Transpose", [x], {"perm": (1, 0, 2)})  # (N, T, I)
    steps = []
    for t in range(seq):
        sel = u.emit("Slice", [xb], {"index": (None, (t,), None)})
        steps.append(u.emit("Reshape", [sel], {"shape": (batch, xs[2])}))
    direction = at.get("direction", "forward")
    order = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    ys, hs, cs = [], [], []
    for d, rev in enumerate(order):
        h0 = opt.get("initial_h")
        h0 = None if h0 is None else (h0[:, d] if layout else h0[d]).astype(np.float64)
        c0 = opt.get("initial_c")
        c0 = None if c0 is None else (c0[:, d] if layout else c0[d]).astype(np.float64)
        fn = _lstm_dir if gates == 4 else _gru_dir
        outs, h_last, c_last = fn(u, at, steps[::-1] if rev else steps, w[d], r[d], b[d], hidden, h0, c0, d)
        ys.append(outs[::-1] if rev else outs)
        hs.append(h_last)
        cs.append(c_last)
    _outputs(u, node, layout, seq, batch, hidden, ys, hs, cs)


def _lstm_dir(u: _Unroll, at, steps, w, r, b, hid, h0, c0, d):
    wb, rb = b[: 4 * hid], b[4 * hid:]
    h, c, outs = None, None, []
    for t, x in enumerate(steps):
        g = {}
        for k, (name, act) in enumerate((("i", _SIG), ("o", _SIG), ("f", _SIG), ("c", _TANH))):
            sl = slice(k * hid, (k + 1) * hid)
            g[name] = u.gate(x, h, w[sl], r[sl], wb[sl] + rb[sl], h0, act, f"d{d}t{t}{name}")
        ig = u.emit("Mul", [g["i"], g["c"]])
        if c is None:
            c = ig if c0 is None or not np.any(c0) else u.emit("Add", [u.emit("Mul", [g["f"], u.init(f"d{d}.c0", c0)]), ig])
        else:
            c = u.emit("Add", [u.emit("Mul", [g["f"], c]), ig])
        h = u.emit("Mul", [g["o"], u.emit(_TANH, [c])])
        outs.append(h)
    return outs, h, c


def _gru_dir(u: _Unroll, at, steps, w, r, b, hid, h0, c0, d):
    wb, rb = b[: 3 * hid], b[3 * hid:]
    lbr = int(at.get("linear_before_reset", 0))
    zs, rs, hs_ = slice(0, hid), slice(hid, 2 * hid), slice(2 * hid, 3 * hid)
    h, outs = None, []
    for t, x in enumerate(steps):
        z = u.gate(x, h, w[zs], r[zs], wb[zs] + rb[zs], h0, _SIG, f"d{d}t{t}z")
        rg = u.gate(x, h, w[rs], r[rs], wb[rs] + rb[rs], h0, _SIG, f"d{d}t{t}r")
        hprev = h if h is not None else (u.init(f"d{d}.h0", h0) if h0 is not None else None)
        xw = u.emit("Gemm", [x, u.init(f"d{d}t{t}h.W", w[hs_].T), u.init(f"d{d}t{t}h.b", wb[hs_] + (rb[hs_] if not lbr else 0))])
        if hprev is None:  # zero state: the recurrent term is only its bias
            rec = u.init(f"d{d}t{t}h.rb", rb[hs_]) if lbr else None
            pre = xw if rec is None else u.emit("Add", [xw, u.emit("Mul", [rg, rec])])
        elif lbr:
            hr = u.emit("Gemm", [hprev, u.init(f"d{d}t{t}h.R", r[hs_].T), u.init(f"d{d}t{t}h.rb", rb[hs_])])
            pre = u.emit("Add", [xw, u.emit("Mul", [rg, hr])])
        else:
            rh = u.emit("Mul", [rg, hprev])
            zero = u.init(f"d{d}t{t}h.z", np.zeros(hid))
            pre = u.emit("Add", [xw, u.emit("Gemm", [rh, u.init(f"d{d}t{t}h.R", r[hs_].T), zero])])
        hh = u.emit(_TANH, [pre])
        # h = (1 - z) * hh + z * hprev = hh + z * (hprev - hh)
        if hprev is None:
            h = u.emit("Sub", [hh, u.emit("Mul", [z, hh])])
        else:
            h = u.emit("Add", [hh, u.emit("Mul", [z, u.emit("Sub", [hprev, hh])])])
        outs.append(h)
    return outs, h, None


def _outputs(u: _Unroll, node, layout, seq, batch, hid, ys, hs, cs) -> None:
    """Y ``(T, D, N, H)`` / ``(N, T, D, H)``, Y_h and Y_c ``(D, N, H)`` / ``(N, D, H)``."""
    ctx = u.ctx
    outs = list(node.output) + [""] * 3
    dirs = len(ys)
    if outs[0] and not ctx.unused([outs[0]]):
        per_t = []
        for t in range(seq):
            parts = [u.emit("Reshape", [ys[d][t]], {"shape": (batch, 1, 1, hid)}) for d in range(dirs)]
            per_t.append(parts[0] if dirs == 1 else u.emit("Concat", parts, {"axis": 2}))
        y = per_t[0] if seq == 1 else u.emit("Concat", per_t, {"axis": 1})  # (N, T, D, H)
        if layout:
            u.emit("Identity", [y], out=outs[0])
        else:
            u.emit("Transpose", [y], {"perm": (1, 2, 0, 3)}, out=outs[0])
    for k, states in ((1, hs), (2, cs)):
        if outs[k] and not ctx.unused([outs[k]]):
            parts = [u.emit("Reshape", [s], {"shape": (batch, 1, hid)}) for s in states]
            y = parts[0] if dirs == 1 else u.emit("Concat", parts, {"axis": 1})  # (N, D, H)
            if layout:
                u.emit("Identity", [y], out=outs[k])
            else:
                u.emit("Transpose", [y], {"perm": (1, 0, 2)}, out=outs[k])


HANDLERS = {"LSTM": lambda ctx, node, at: _lower_rnn(ctx, node, at, 4),
            "GRU": lambda ctx, node, at: _lower_rnn(ctx, node, at, 3)}
