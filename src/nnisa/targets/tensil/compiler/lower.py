"""Lowering the frontend graph to Tensil layer operations (spec §9.2, §9.4).

A *layer* is ``Conv | Gemm`` (a weight-stationary array job, :class:`ArrayOp`) optionally fused
with the activation that follows it (``Relu | LeakyRelu | Clip``).  Element-wise ops, pools and
standalone activations become :class:`SimdOp` jobs on the accumulators.  Flatten/Reshape of an
NCHW tensor into ``(n, C·H·W)`` is a free *view* when only Gemms read it: their weight rows are
re-ordered to the NHWC vectors instead.  Softmax at an output follows the ``softmax`` policy.

Every failure names the node, its op and a remedy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.errors import UnsupportedError
from ....core.lowering import OnHost, entry_fn, refusal
from ....frontend.import_ops import repeat_factors
from ....frontend.ir import Graph, Node
from ....frontend.prepare import check_graph
from .. import layout as L
from .actmatmul import lower_matmul_act
from .jobs import Act, ArrayOp, Const, SimdOp, Var, _err
from .lanemove import lower_move
from .precision import COARSE_ULPS, average_factors, weight_shift

ACTIVATIONS = ("Relu", "LeakyRelu", "Clip")
#: smooth activations lowered through lookup tables: function and key range
LUT_FUNCTIONS = {"Sigmoid": (lambda v: 1.0 / (1.0 + np.exp(-v)), 8.0), "Tanh": (np.tanh, 4.0)}


def lut_tables(op: str, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys (uniform over ±range), values f(key) and slopes to the next key (0 past the last), for a
    piecewise-linear ``f(x) ≈ v_i + s_i·(x − k_i)`` with ``k_i ≤ x < k_{i+1}``."""
    f, r = LUT_FUNCTIONS[op]
    keys = np.linspace(-r, r, depth)
    values = f(keys)
    slopes = np.zeros(depth)
    slopes[:-1] = np.diff(values) / np.diff(keys)
    return keys.astype(np.float32), values.astype(np.float32), slopes.astype(np.float32)
SOFTMAX_POLICIES = ("host", "passthrough", "error")


def select_outputs(graph: Graph, names: list[str]) -> None:
    """Make ``names`` the graph outputs (spec §9.1 ``--outputs``) and drop the nodes they do not need.

    An unknown name is an error that lists the graph outputs and the closest tensor names (e.g.
    ``Identity`` vs ``Identity:0``)."""
    import difflib
    from ....frontend.ir import TensorInfo
    known = set(graph.tensors) | {t.name for t in graph.outputs}
    for name in names:
        if name not in known:
            near = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.5)
            raise UnsupportedError(f"unknown output {name!r}; graph outputs: {', '.join(t.name for t in graph.outputs)}"
                                   + (f"; did you mean {', '.join(near)}?" if near else ""))
    graph.outputs = [next((t for t in graph.outputs if t.name == n), None) or TensorInfo(n, tuple(graph.shape(n)))
                     for n in names]
    need, keep = set(names), []
    for node in reversed(graph.nodes):
        if any(o in need for o in node.outputs):
            keep.append(node)
            need.update(node.inputs)
    graph.nodes = keep[::-1]


class Lowering:
    """Builds vars, consts (first-use order) and ops from a :class:`Graph`; ``value_max`` is the data
    type's largest magnitude (saturation), which sizes the pre-scaling of averages."""

    def __init__(self, graph: Graph, N: int, softmax: str = "host", lut: tuple[int, int] | None = None,
                 value_max: float = 128.0, ulp: float | None = 1 / 256) -> None:
        if softmax not in SOFTMAX_POLICIES:
            raise UnsupportedError(f"unknown softmax policy {softmax!r} (choose {', '.join(SOFTMAX_POLICIES)})")
        self.g, self.N, self.softmax, self.lut, self.value_max, self.ulp = graph, N, softmax, lut, value_max, ulp
        #: per array layer whose weights were scaled or stay coarse: node, shift, weight range, RMS in ulps
        self.precision: list[dict[str, Any]] = []
        self.vars: dict[str, Var] = {}
        self.consts: list[Const] = []
        self.ops: list[Any] = []
        self.postprocess: list[dict[str, Any]] = []
        self.output_names: dict[str, str] = {}  # graph output → compiled tensor name
        self.virtual: dict[str, tuple[list[str], np.ndarray]] = {}  # rank-5 move intermediates

    # ------------------------------------------------------------------ helpers
    def var(self, name: str) -> Var:
        return self.vars[name]

    def new_var(self, name: str, node: Node | None = None) -> Var:
        shape = tuple(self.g.shape(name))
        if not shape:
            if node is not None:
                raise _err(node, f"tensor {name} is a scalar: no Tensil layout (rows of features or NCHW)")
            raise UnsupportedError(f"model input {name} is a scalar: no Tensil layout (rows of features or NCHW)")
        v = Var(name, shape, L.vector_count(shape, self.N))
        self.vars[name] = v
        return v

    def const(self, name: str, vectors: np.ndarray) -> Const:
        c = Const(name, np.asarray(vectors, np.float32).reshape(-1, self.N))
        self.consts.append(c)
        return c

    def channel_const(self, node: Node, arr: np.ndarray, x: Var, name: str) -> Const:
        """A per-channel (C,), scalar, or full-shape constant broadcast against ``x``."""
        a = np.asarray(arr, np.float32)
        C = x.shape[1] if len(x.shape) == 4 else x.shape[-1]
        if a.size == 1:
            return self.const(name, L.replicate(float(a.reshape(-1)[0]), self.N))
        flat = a.reshape(-1)
        if a.size == C and (a.ndim == 1 or a.shape[:2] in ((1, C), (C,)) or a.shape == (C, 1, 1)
                            or a.shape == (1, C, 1, 1)):
            return self.const(name, L.activation_to_vectors(flat[None, :], self.N))
        if len(x.shape) == 3 and a.shape[-1:] == (C,) and a.size == C:
            return self.const(name, L.activation_to_vectors(flat[None, :], self.N))
        try:  # a constant of one sample's shape: its vectors repeat with the sample's period
            full = np.broadcast_to(a, (1,) + tuple(x.shape[1:]))
        except ValueError:
            full = None
        if full is not None and a.ndim <= len(x.shape) and (a.ndim < len(x.shape) or a.shape[0] == 1):
            return self.const(name, L.activation_to_vectors(np.ascontiguousarray(full), self.N))
        raise _err(node, f"constant of shape {a.shape} cannot be broadcast per channel against {x.shape}",
                   "only scalars and per-channel constants are supported")

    # ------------------------------------------------------------------ main
    def run(self) -> "Lowering":
        g = self.g
        # every node whose operator the table lacks is refused at once, before any lowering
        check_graph(g, "tensil", lambda n, _: refusal(LOWERINGS, "Tensil", n.op), quantized=False)
        for t in g.inputs:
            v = self.new_var(t.name)
            v.is_input = True
        consumers: dict[str, int] = {}
        for n in g.nodes:
            for i in n.inputs:
                consumers[i] = consumers.get(i, 0) + 1
        skip: set[str] = set()
        for idx, n in enumerate(g.nodes):
            if n.name in skip:
                continue
            last, residual = n, None
            add = self._fusable_add(n, consumers)
            if add is not None:  # conv → Add(shortcut): accumulate the shortcut into the accumulators
                skip.add(add.name)
                residual = next(i for i in add.inputs if i != n.outputs[0])
                last = add
            fused = self._fusable_activation(last, consumers)
            if fused is not None:
                skip.add(fused.name)
            self._lower(n, fused, residual, last)
        for t in g.outputs:
            name = self.output_names.get(t.name, t.name)
            if name not in self.vars:
                raise UnsupportedError(f"graph output {t.name} is not computed on the device")
            if not self._same_layout(self.vars[name]):  # a flattened NCHW output: lay it out in ONNX order
                root = self.vars.pop(name).root
                lower_move(self, Node("Reshape", f"{name}.layout", [root.name], [name], {}), "Reshape", {})
            self.vars[name].root.is_output = True
        return self

    def _fusable_add(self, n: Node, consumers: dict[str, int]) -> Node | None:
        """The Add that alone consumes a Conv/Gemm output, when its other operand is already computed
        with the same shape and layout."""
        if n.op not in ("Conv", "Gemm", "MatMul") or not self._weights_const(n):
            return None
        out = n.outputs[0]
        if consumers.get(out, 0) != 1 or self.g.is_output(out):
            return None
        if n.op != "Conv" and len(self.g.shape(out)) == 4:  # computed in rows, moved to NCHW after (_gemm)
            return None
        nxt = self.g.consumers(out)[0]
        if nxt.op != "Add" or len(nxt.inputs) != 2 or nxt.inputs[0] == nxt.inputs[1]:
            return None
        other = nxt.inputs[1] if nxt.inputs[0] == out else nxt.inputs[0]
        v = self.vars.get(other)
        if v is None or other in self.g.initializers or tuple(self.g.shape(other)) != tuple(self.g.shape(out)) \
                or not self._same_layout(v):
            return None
        return nxt

    def _weights_const(self, n: Node) -> bool:
        """Not a MatMul of two activations (which fuses nothing)."""
        return n.op != "MatMul" or n.inputs[1] in self.g.initializers

    def _fusable_activation(self, n: Node, consumers: dict[str, int]) -> Node | None:
        if n.op not in ("Conv", "Gemm", "MatMul", "Add", "Sub", "Mul") or not self._weights_const(n):
            return None
        out = n.outputs[0]
        if consumers.get(out, 0) != 1 or self.g.is_output(out):
            return None
        nxt = self.g.consumers(out)[0]
        return nxt if nxt.op in ACTIVATIONS else None

    def _act(self, node: Node | None) -> Act | None:
        if node is None:
            return None
        a = node.attrs
        if node.op == "Relu":
            return Act("relu")
        if node.op == "LeakyRelu":
            alpha = float(a["alpha"])
            return Act("leaky", (self.const(f"{node.name}.alpha", L.replicate(alpha, self.N)),), alpha)
        lo, hi = float(a["min"]), float(a["max"])
        big = 1e9
        lo, hi = max(lo, -big), min(hi, big)
        return Act("clip", (self.const(f"{node.name}.min", L.replicate(lo, self.N)),
                            self.const(f"{node.name}.max", L.replicate(hi, self.N))))

    def _out(self, n: Node, fused: Node | None) -> Var:
        name = fused.outputs[0] if fused is not None else n.outputs[0]
        v = self.new_var(name, n)
        v.first = len(self.ops)
        return v

    def _use(self, v: Var) -> Var:
        v.root.last = max(v.root.last, len(self.ops))
        return v

    def _lower(self, n: Node, fused: Node | None, residual: str | None = None, last: Node | None = None) -> None:
        fn = entry_fn(LOWERINGS.get(n.op))
        if fn is None:
            raise _err(n, f"unsupported operator {n.op} on Tensil")
        fn(self, n, fused, residual, last)

    def _array(self, n: Node, fused: Node | None, residual: str | None, last: Node | None) -> None:
        """Conv or Gemm: a weight-stationary array job (with its fused activation and residual)."""
        g = self.g
        if n.op == "MatMul" and n.inputs[1] not in g.initializers:  # activation × activation
            return lower_matmul_act(self, n)
        x = self._use(self.var(n.inputs[0]))
        w = g.initializers.get(n.inputs[1])
        b = g.initializers.get(n.inputs[2]) if len(n.inputs) > 2 else None
        if w is None:
            raise _err(n, "weights must be constant", "Tensil keeps weights in the consts (.tdata)")
        start = len(self.ops)
        if n.op == "Conv":
            self._conv(n, fused, x, w, b, last)
        else:
            self._gemm(n, fused, x, w, b, last)
        if residual is not None:
            r = self.var(residual).root
            r.last = max(r.last, start)
            self.ops[start].residual = r

    def _activation(self, n: Node, *_) -> None:
        x = self._use(self.var(n.inputs[0]))
        if not self._same_layout(x):
            raise _err(n, "activation of a flattened NCHW tensor (apply it before the Flatten)")
        x = x.root
        self.ops.append(SimdOp(n, "act", [x], self._out(n, None), self._act(n)))

    def _scaled(self, n: Node, w: np.ndarray, columns: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray,
                                                                                            np.ndarray, int]:
        """Weights and bias times ``2^p`` (:func:`~.precision.weight_shift`); the layer's record when
        scaled or still coarse (then the compile warns, naming the layer and its weights' range)."""
        p, ulps = weight_shift(columns, bias, self.ulp, self.value_max)
        if p or ulps < COARSE_ULPS:
            nz = np.abs(w[w != 0])
            self.precision.append({"node": n.name, "op": n.op, "shift": p, "weights_rms_ulps": round(ulps, 2),
                                   "weights_abs_min": float(nz.min()), "weights_abs_max": float(nz.max())})
        return (w * 2.0 ** p).astype(np.float32), (bias * 2.0 ** p).astype(np.float32), p

    def _descale(self, n: Node, p: int) -> Const | None:
        return self.const(f"{n.name}.descale", L.replicate(2.0 ** -p, self.N)) if p else None

    def _conv(self, n, fused, x, w, b, last=None) -> None:
        a = n.attrs
        if len(x.shape) != 4:
            raise _err(n, "Conv needs an NCHW input")
        cout, cg, kh, kw = w.shape
        group = int(a.get("group", 1))
        cin = cg * group
        y = self._out(last or n, fused)
        _, _, OH, OW = y.shape
        bias = np.zeros(cout, np.float32) if b is None else np.asarray(b, np.float32)
        w = np.asarray(w, np.float32)
        w, bias, p = self._scaled(n, w, w.reshape(cout, -1).T, bias)
        cb = L.blocks(cout, N := self.N)
        bias_v = L.activation_to_vectors(bias[None, :], N)
        wv = L.conv_weight_vectors(w, group, N)
        c = self.const(f"{n.name}.consts", np.concatenate([bias_v, wv]))
        pt, pl, pb, pr = a["pads"]
        geom = dict(H=x.shape[2], W=x.shape[3], OH=OH, OW=OW, KH=kh, KW=kw, SH=a["strides"][0], SW=a["strides"][1],
                    PT=pt, PL=pl, DH=a["dilations"][0], DW=a["dilations"][1], CINB=L.blocks(cin, N), COUTB=cb,
                    BATCH=x.shape[0], CIN=cin, COUT=cout, PB=pb, PR=pr)
        self.ops.append(ArrayOp(n, x, y, c, geom, self._act(fused), bool(np.any(bias)),
                                x.shape[0] * OH * OW * cout * cg * kh * kw, descale=self._descale(n, p)))

    def _gemm(self, n, fused, x, w, b, last=None) -> None:
        N = self.N
        w = np.asarray(w, np.float32)
        root = x.root
        if x.view_of is not None and len(x.shape) == 2 and len(root.shape) == 4 and root.shape[2] * root.shape[3] > 1:
            _, C, H, W = root.shape
            if w.shape[0] != C * H * W:
                raise _err(n, f"Gemm reads {w.shape[0]} features of a flattened {root.shape} tensor")
            rows = L.flattened_dense_rows(w, C, H, W, N)  # already a multiple of N rows per pixel
            geomx = dict(H=1, W=1, CINB=H * W * L.blocks(C, N))
            x = root
        else:
            if w.ndim != 2:
                raise _err(n, f"{n.op} by rank-{w.ndim} weights", "Tensil lowers x @ W with 2-D W")
            x = self._rows(n, x)
            rows = np.zeros((L.blocks(w.shape[0], N) * N, w.shape[1]), np.float32)
            rows[:w.shape[0]] = w
            geomx = dict(H=1, W=1, CINB=L.blocks(w.shape[0], N))
            x = x.root if x.view_of is not None else x
        y = self._out(last or n, fused)
        final = None
        if len(y.shape) == 4:  # NCHW is not rows of features: compute rows, then lay them out as NCHW
            final = self.vars.pop(y.name)
            shape = (int(np.prod(y.shape[:-1])), y.shape[-1])
            y = self.vars[f"{n.name}.rows"] = Var(f"{n.name}.rows", shape, L.vector_count(shape, N), first=len(self.ops))
        batch, cout = int(np.prod(y.shape[:-1])), y.shape[-1]
        bias = np.zeros(cout, np.float32) if b is None else np.asarray(b, np.float32)
        rows, bias, p = self._scaled(n, rows, rows, bias)
        wv = L.dense_weight_vectors(rows, N)
        c = self.const(f"{n.name}.consts", np.concatenate([L.activation_to_vectors(bias[None, :], N), wv]))
        geom = dict(geomx, OH=1, OW=1, KH=1, KW=1, SH=1, SW=1, PT=0, PL=0, DH=1, DW=1, COUTB=L.blocks(cout, N),
                    BATCH=batch, CIN=w.shape[0], COUT=cout, PB=0, PR=0)
        self.ops.append(ArrayOp(n, x, y, c, geom, self._act(fused), bool(np.any(bias)), batch * w.shape[0] * cout,
                                descale=self._descale(n, p)))
        if final is not None:
            y.last = len(self.ops)
            lower_move(self, n, "Reshape", {}, [y.name], (final.name, final.shape))

    def _rows(self, n: Node, x: Var) -> Var:
        """``x`` as rows of its last axis (the layout of a 2-D or 3-D tensor): ``x @ W`` with 2-D W
        contracts the last axis whatever x's rank, so the leading axes flatten into rows.  A rank-4
        tensor lives in NCHW (its channels, axis 1, in the lanes): its lanes move through the array
        unless the two layouts coincide (e.g. ``(1, 1, 1, F)``)."""
        if len(x.shape) != 4:
            return x
        shape = (int(np.prod(x.shape[:-1])), x.shape[-1])
        if self._free_view(tuple(x.root.shape), shape):
            return Var(f"{n.name}.rows_in", shape, x.root.size, view_of=x.root)
        return lower_move(self, n, "Reshape", {}, [x.name], (f"{n.name}.{x.name}.rows", shape))

    def _eltwise(self, n, fused) -> None:
        g = self.g
        ins: list[Any] = []
        acts = [i for i in n.inputs if i not in g.initializers]
        if not acts:
            raise _err(n, "both operands are constant (should have been folded)")
        ref = self.var(max(acts, key=lambda i: int(np.prod(self.var(i).shape))))
        for i in n.inputs:
            if i in g.initializers:
                ins.append(self.channel_const(n, g.initializers[i], ref, f"{n.name}.{i}"))
            else:
                v = self._use(self.var(i))
                if v.shape != ref.shape:
                    try:
                        fits = np.broadcast_shapes(v.shape, ref.shape) == tuple(ref.shape)
                    except ValueError:
                        fits = False
                    if not fits:
                        raise _err(n, f"tensor operands of shapes {v.shape} and {ref.shape} do not broadcast "
                                      "to one of them")
                    # broadcast the smaller activation to the full shape through the array
                    v = lower_move(self, n, "Expand", {}, [i], (f"{n.name}.{i}.expanded", ref.shape))
                    v.last = len(self.ops)
                if not self._same_layout(v):
                    raise _err(n, f"operand {i} is a flattened NCHW tensor; element-wise ops need its own layout")
                ins.append(v.root)
        self.ops.append(SimdOp(n, n.op.lower(), ins, self._out(n, fused), self._act(fused)))

    def _pool(self, n) -> None:
        x = self._use(self.var(n.inputs[0]))
        a = n.attrs
        if n.op == "GlobalAveragePool":
            a = dict(kernel=(x.shape[2], x.shape[3]), strides=(1, 1), pads=(0, 0, 0, 0), count_include_pad=False)
        y = self._out(n, None)
        geom = dict(kernel=tuple(a["kernel"]), strides=tuple(a["strides"]), pads=tuple(a["pads"]),
                    dilations=tuple(a.get("dilations", (1, 1))), include_pad=bool(a.get("count_include_pad", False)))
        kind = "max_pool" if n.op == "MaxPool" else "avg_pool"
        op = SimdOp(n, kind, [x], y, geom=geom)
        from ....frontend.kernels import pool_counts
        counts = pool_counts(dict(a, ceil_mode=a.get("ceil_mode", False)), x.shape[2], x.shape[3])
        if counts.shape != tuple(y.shape[2:]):  # onnx's shape inference and the ceil-mode rule disagree
            raise _err(n, f"the model declares a {tuple(y.shape[2:])} output, the pooling (onnxruntime) gives "
                          f"{counts.shape}: a ceil_mode window starts past the input",
                       "re-export with ceil_mode=0 or padding that keeps every window inside the input")
        if kind == "avg_pool":
            geom["counts"] = counts
            geom["avg_factors"] = {}
            index: dict[float, int] = {}

            def const_index(value: float) -> int:
                if value not in index:
                    index[value] = len(op.consts)
                    op.consts.append(self.const(f"{n.name}.avg{len(op.consts)}", L.replicate(value, self.N)))
                return index[value]
            for k in sorted({int(c) for c in np.unique(counts)}):
                g, pre, group, post = average_factors(k, self.value_max)
                geom["avg_factors"][k] = (g, const_index(pre), None if group == 1.0 else const_index(group),
                                          tuple(const_index(f) for f in post))
        self.ops.append(op)

    def _view(self, n) -> None:
        out = n.outputs[0]
        shape = tuple(self.g.shape(out))
        if n.inputs[0] in self.virtual or len(shape) > 4:
            return lower_move(self, n, "Reshape", {})
        x = self.var(n.inputs[0])
        root = x.root
        if root.is_input and x is root and all(c.op in ("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity")
                                               for c in self.g.consumers(x.name)):
            # the host lays the input out: declare it in the reshaped layout directly
            root.shape, root.size = shape, L.vector_count(shape, self.N)
            self.vars[out] = Var(out, shape, root.size, view_of=root)
            self._use(x)
            return
        flatten = len(root.shape) == 4 and len(shape) == 2
        if not flatten and not self._free_view(root.shape, shape):
            return lower_move(self, n, "Reshape", {})  # the lanes move: through the array
        self._use(x)
        self.vars[out] = Var(out, shape, root.size, view_of=root)

    def _free_view(self, src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
        """Whether a reshape ``src → dst`` leaves every element in its (vector, lane)."""
        if src == dst:
            return True
        a, b = L.element_positions(src, self.N), L.element_positions(dst, self.N)
        return a.shape == b.shape and np.array_equal(a, b)

    def _same_layout(self, v: Var) -> bool:
        """A view whose vectors are exactly its own layout (so any op may read it)."""
        r = v.root
        if v.view_of is None or v.shape == r.shape:
            return True
        if len(r.shape) == 4 and len(v.shape) == 2:
            return r.shape[2] * r.shape[3] == 1
        if L.vector_count(v.shape, self.N) == r.size and len(v.shape) == len(r.shape):
            return True
        return self._free_view(tuple(r.shape), tuple(v.shape))  # e.g. rows (17, 32) seen as (1, 17, 32)

    def _lut(self, n) -> None:
        """Sigmoid/Tanh as a piecewise-linear table (LoadLUT/Lookup extension, spec §3.10/§7.6)."""
        if self.lut is None:
            raise _err(n, f"{n.op} needs lookup tables, which Tensil v1.0.15 lacks",
                       "compile with -O lut=true (nnisa's LoadLUT/Lookup extension; not runnable on Tensil hardware)")
        x = self._use(self.var(n.inputs[0]))
        if not self._same_layout(x):
            raise _err(n, "activation of a flattened NCHW tensor (apply it before the Flatten)")
        keys, values, slopes = lut_tables(n.op, self.lut[1])
        cs = [self.const(f"{n.name}.{t}", L.activation_to_vectors(v[None, :], self.N)[:L.blocks(len(v), self.N)])
              for t, v in (("keys", keys), ("values", values), ("slopes", slopes))]
        self.ops.append(SimdOp(n, "lut", [x.root], self._out(n, None), consts=cs))

    def _hard(self, n) -> None:
        """HardSigmoid / HardSwish from the SIMD ALU ops (:mod:`.simdjobs`)."""
        x = self._use(self.var(n.inputs[0]))
        if not self._same_layout(x):
            raise _err(n, "activation of a flattened NCHW tensor (apply it before the Flatten)")
        swish = n.op == "HardSwish"
        alpha, beta = (1 / 6, 0.5) if swish else (float(n.attrs["alpha"]), float(n.attrs["beta"]))
        cs = [self.const(f"{n.name}.{k}", L.replicate(v, self.N))
              for k, v in (("alpha", alpha), ("beta", beta), ("zero", 0.0), ("one", 1.0))]
        self.ops.append(SimdOp(n, "hard", [x.root], self._out(n, None), consts=cs, geom={"swish": swish}))

    def _resize(self, n) -> None:
        x = self._use(self.var(n.inputs[0]))
        if n.attrs.get("mode") != "linear":  # nearest: the importer's per-axis source positions
            f = repeat_factors(n.attrs["index"], x.shape) if len(x.shape) == 4 else None
            if f is None or f[:2] != (1, 1):
                raise _err(n, "nearest Resize is supported as a repetition of pixels by integer factors of H and W")
            self.ops.append(SimdOp(n, "resize", [x.root], self._out(n, None), geom={"scales": f[2:]}))
            return
        # linear: each output vector is Σ weight·source over ≤ 4 source pixels; one const per weight
        th, tw = n.attrs["taps"]
        plan, weights = [], {}
        for i0h, i1h, rh in th:
            for i0w, i1w, rw in tw:
                src: dict[tuple[int, int], float] = {}
                for (h, wh) in ((i0h, 1 - rh), (i1h, rh)):
                    for (w, ww) in ((i0w, 1 - rw), (i1w, rw)):
                        src[(h, w)] = src.get((h, w), 0.0) + wh * ww
                terms = []
                for (h, w), wt in src.items():
                    q = round(float(wt), 7)
                    if q != 0.0:
                        weights.setdefault(q, len(weights))
                        terms.append((h, w, weights[q]))
                plan.append(terms)
        consts = [self.const(f"{n.name}.w{k}", L.replicate(wt, self.N)) for wt, k in
                  sorted(weights.items(), key=lambda kv: kv[1])]
        self.ops.append(SimdOp(n, "resize_linear", [x.root], self._out(n, None), geom={"plan": plan},
                               consts=consts))

    def _concat(self, n) -> None:
        """Channel (or feature) concatenation: vector blocks copied through the accumulators."""
        if any(i in self.g.initializers for i in n.inputs):
            return lower_move(self, n, "Concat", n.attrs)
        ins = [self.var(i) for i in n.inputs]
        rank = len(ins[0].shape)
        if int(n.attrs["axis"]) != 1 or rank not in (2, 4) or any(not self._same_layout(v) for v in ins) \
                or any(v.shape[1] % self.N for v in ins[:-1]):
            return lower_move(self, n, "Concat", n.attrs)  # lanes move: through the array
        for v in ins:
            self._use(v)
        self.ops.append(SimdOp(n, "concat", [v.root for v in ins], self._out(n, None)))

    def _softmax(self, n) -> None:
        x = self.var(n.inputs[0])
        if not self.g.is_output(n.outputs[0]) or self.softmax == "error":
            raise _err(n, "Softmax runs on the host: it must produce a graph output",
                       "use -O softmax=host (default) with Softmax as the last op, or remove it")
        self._use(x)
        self.output_names[n.outputs[0]] = x.name if x.view_of is None else x.name
        if self.softmax == "host":
            self.postprocess.append({"op": "Softmax", "output": n.outputs[0], "input": x.name,
                                     "axis": int(n.attrs.get("axis", len(x.shape) - 1))})


def _node_only(method):
    """A lowering that takes the node alone (no fused activation or residual)."""
    return lambda low, n, fused, residual, last: method(low, n)


#: the Tensil lowering table: IR op → ``fn(lowering, node, fused activation, residual, last node)``;
#: the node check, ``nnisa targets --ops`` and the docs come from it
LOWERINGS = {
    "Conv": Lowering._array, "Gemm": Lowering._array,
    **dict.fromkeys(("Add", "Sub", "Mul"), lambda low, n, fused, residual, last: low._eltwise(n, fused)),
    **dict.fromkeys(ACTIVATIONS, Lowering._activation),
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalAveragePool"), _node_only(Lowering._pool)),
    **dict.fromkeys(("Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity"), _node_only(Lowering._view)),
    "Softmax": OnHost("Softmax runs on the host: at an output by the softmax policy, else as a host step",
                      _node_only(Lowering._softmax)),
    **dict.fromkeys(LUT_FUNCTIONS, _node_only(Lowering._lut)),
    "Concat": _node_only(Lowering._concat), "Resize": _node_only(Lowering._resize),
    "MatMul": Lowering._array,
    **dict.fromkeys(("HardSigmoid", "HardSwish"), _node_only(Lowering._hard)),
    **dict.fromkeys(("Slice", "Pad", "Transpose", "ReduceMean", "ReduceSum"),
                    lambda low, n, *_: lower_move(low, n, n.op, n.attrs)),
    # what neither the array nor the SIMD computes: a host step between device segments (issue 27,
    # compiler/segments.py), on the frontend's float reference
    **{op: OnHost(f"{op}: a host step between device segments (the SIMD has no {why})") for op, why in (
        ("LayerNorm", "division or square root"), ("Gelu", "erf or tanh"), ("Erf", "erf"), ("Exp", "exp"),
        ("Log", "log"), ("Sqrt", "square root"), ("Pow", "power"), ("Div", "division"),
        ("Reciprocal", "division"), ("ReduceMax", "lane reduction"), ("MaskedSoftmax", "exp or division"),
        ("Gather", "indexed load (embedding ids)"), ("Cast", "integer type"), ("Where", "select"),
        ("Equal", "comparison"), ("Less", "comparison"), ("Greater", "comparison"), ("Not", "boolean type"),
        ("Expand", "broadcast of a host tensor"), ("Max", "two-operand max"), ("Min", "two-operand min"),
        ("LRN", "cross-channel division"))},
}
