"""Graph passes on the float IR: Identity removal, attention masks, BN / affine folding, Pad folding, DCE.

All passes keep the graph's output names stable and never mutate an initializer that another
node might share: folded weights get new initializer names.
"""

from __future__ import annotations

import numpy as np

from .float_eval import run_node
from .ir import Graph, Node, TensorInfo
from .quant_transformer import MASK_DROP, raw_tensors


def optimize(g: Graph) -> Graph:
    """Run every pass to a fixpoint, then remove dead nodes and unused initializers."""
    remove_identities(g)
    fold_constant_where(g)
    fold_attention_masks(g)
    while fold_affine(g) or fold_pads(g) or fold_transposes(g):
        pass
    lower_batchnorm(g)
    eliminate_dead(g)
    g.toposort()
    return g


def _rename_input(g: Graph, old: str, new: str) -> None:
    for n in g.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]


def _rename_tensor(g: Graph, old: str, new: str) -> None:
    """Rename an activation tensor everywhere (producer output and consumers)."""
    for n in g.nodes:
        n.outputs = [new if o == old else o for o in n.outputs]
        n.inputs = [new if i == old else i for i in n.inputs]
    g.tensors[new] = TensorInfo(new, g.tensors[old].shape, g.tensors[old].dtype)


def _bypass(g: Graph, node: Node) -> bool:
    """Remove a single-input single-output node whose output equals its input."""
    x, y = node.inputs[0], node.outputs[0]
    if not g.is_output(y):
        g.nodes.remove(node)
        _rename_input(g, y, x)
        return True
    prod = g.producer(x)
    if prod is not None and not g.is_output(x) and x not in {t.name for t in g.inputs}:
        g.nodes.remove(node)
        _rename_tensor(g, x, y)
        return True
    return False  # input-to-output copy: keep the Identity


def remove_identities(g: Graph) -> None:
    """Drop Identity nodes (Dropout and float Casts were lowered to Identity)."""
    for n in [n for n in g.nodes if n.op == "Identity"]:
        _bypass(g, n)


def _sole_producer(g: Graph, x: str, ops: tuple[str, ...]) -> Node | None:
    """The producer of ``x`` if it is one of ``ops`` and ``x`` has no other use."""
    p = g.producer(x)
    if p is None or p.op not in ops or g.is_output(x) or len(g.consumers(x)) != 1:
        return None
    return p


def _channel_vector(c: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray | None:
    """``c`` as a per-channel (axis 1) vector if it broadcasts to ``out_shape`` along axis 1 only."""
    if c.ndim > len(out_shape) or len(out_shape) < 2:
        return None
    full = (1,) * (len(out_shape) - c.ndim) + tuple(c.shape)
    if any(d != 1 for k, d in enumerate(full) if k != 1) or full[1] not in (1, out_shape[1]):
        return None
    return np.broadcast_to(c.reshape(-1), (out_shape[1],)).astype(np.float64)


def _apply_affine(g: Graph, p: Node, a: np.ndarray, b: np.ndarray) -> None:
    """Fold ``y = x*a + b`` (per output channel) into Conv/Gemm ``p`` under new names."""
    w = g.initializers[p.inputs[1]].astype(np.float64)
    bias = g.initializers[p.inputs[2]].astype(np.float64)
    w = w * (a.reshape(-1, 1, 1, 1) if p.op == "Conv" else a.reshape(1, -1))
    bias = bias * a + b
    wn, bn = f"{p.name}.W_folded", f"{p.name}.bias_folded"
    k = 0
    while (wn in g.initializers and wn != p.inputs[1]) or (bn in g.initializers and bn != p.inputs[2]):
        k += 1
        wn, bn = f"{p.name}.W_folded{k}", f"{p.name}.bias_folded{k}"
    g.initializers[wn] = w.astype(np.float32)
    g.initializers[bn] = bias.astype(np.float32)
    p.inputs[1], p.inputs[2] = wn, bn


def fold_affine(g: Graph) -> bool:
    """Fold BatchNormalization and Mul/Add/Sub by per-channel constants into Conv/Gemm.

    Returns True when anything changed.
    """
    for n in list(g.nodes):
        x = n.inputs[0]
        if n.op == "BatchNormalization":
            a = g.initializers[n.inputs[1]].astype(np.float64)
            b = g.initializers[n.inputs[2]].astype(np.float64)
        elif n.op in ("Mul", "Add", "Sub"):
            ci = [k for k, i in enumerate(n.inputs) if i in g.initializers]
            if len(ci) != 1 or (n.op == "Sub" and ci[0] != 1):
                continue
            x = n.inputs[1 - ci[0]]
            if x not in g.tensors:
                continue
            c = _channel_vector(g.initializers[n.inputs[ci[0]]], g.shape(x))
            if c is None or tuple(np.broadcast_shapes(g.shape(x), g.initializers[n.inputs[ci[0]]].shape)) != g.shape(x):
                continue
            ones, zeros = np.ones_like(c), np.zeros_like(c)
            a, b = {"Mul": (c, zeros), "Add": (ones, c), "Sub": (ones, -c)}[n.op]
        else:
            continue
        p = _sole_producer(g, x, ("Conv", "Gemm"))
        if p is None:
            continue
        _apply_affine(g, p, a, b)
        y = n.outputs[0]
        g.nodes.remove(n)
        p.outputs[0] = y
        return True
    return False


def lower_batchnorm(g: Graph) -> None:
    """Express every remaining BatchNormalization as a depthwise 1×1 Conv (NCHW), a diagonal
    Gemm (NC) or Mul+Add (other ranks): a per-channel scale and shift."""
    for n in [n for n in g.nodes if n.op == "BatchNormalization"]:
        x, an, bn = n.inputs
        a, b = g.initializers[an], g.initializers[bn]
        rank = len(g.shape(x))
        c = a.shape[0]
        if rank == 4:
            w = f"{n.name}.dw"
            g.initializers[w] = a.reshape(c, 1, 1, 1).astype(np.float32)
            n.op, n.inputs = "Conv", [x, w, bn]
            n.attrs = dict(kernel=(1, 1), strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=c)
        elif rank == 2:
            w = f"{n.name}.diag"
            g.initializers[w] = np.diag(a).astype(np.float32)
            n.op, n.inputs, n.attrs = "Gemm", [x, w, bn], {}
        else:
            shp = (c,) + (1,) * (rank - 2)
            g.initializers[an] = a.reshape(shp)
            g.initializers[bn] = b.reshape(shp)
            t = f"{n.outputs[0]}.scaled"
            g.tensors[t] = TensorInfo(t, g.shape(x))
            idx = g.nodes.index(n)
            g.nodes.insert(idx, Node("Mul", f"{n.name}.mul", [x, an], [t]))
            n.op, n.inputs, n.attrs = "Add", [t, bn], {}


def fold_pads(g: Graph) -> bool:
    """Fold a constant spatial Pad into the pads of its only consumer when exact.

    Conv and AveragePool need value 0 (AveragePool then counts the pad, so only when it
    already does or has no own pads); MaxPool needs value -inf.
    """
    for n in list(g.nodes):
        if n.op != "Pad" or g.is_output(n.outputs[0]):
            continue
        cons = g.consumers(n.outputs[0])
        if len(cons) != 1 or len(g.shape(n.inputs[0])) != 4:
            continue
        c = cons[0]
        p = n.attrs["pads"]
        if p[0] or p[1] or p[4] or p[5] or min(p) < 0:
            continue
        v = n.attrs["value"]
        if c.op == "Conv":
            ok = v == 0.0
        elif c.op == "AveragePool":
            ok = v == 0.0 and (c.attrs["count_include_pad"] or not any(c.attrs["pads"]))
        elif c.op == "MaxPool":
            ok = v == -np.inf
        else:
            ok = False
        if not ok:
            continue
        t, l, b, r = c.attrs["pads"]
        c.attrs["pads"] = (t + p[2], l + p[3], b + p[6], r + p[7])
        if c.op == "AveragePool":
            c.attrs["count_include_pad"] = True
        c.inputs[0] = n.inputs[0]
        g.nodes.remove(n)
        return True
    return False


def fold_transposes(g: Graph) -> bool:
    """Cancel layout shuffles: ``Transpose → Squeeze`` becomes ``Squeeze → Transpose`` (so
    transposes meet), two consecutive Transposes become one, and an identity Transpose goes.

    Recurrent exports wrap a time-major LSTM/GRU in transposes to and from batch-first; after
    this pass the batch axis stays first.  Returns True when anything changed.
    """
    for n in list(g.nodes):
        if n.op != "Transpose" or g.is_output(n.outputs[0]):
            continue
        perm = tuple(n.attrs["perm"])
        if perm == tuple(range(len(perm))):
            return _bypass(g, n)
        xs = g.shape(n.inputs[0])
        moved = [p for p in perm if xs[p] != 1 or p == 0]  # the batch axis counts as non-unit
        if moved == sorted(moved):  # only unit axes move: the same C-order data at any batch
            n.op, n.attrs = "Reshape", {"shape": tuple(xs[p] for p in perm)}
            return True
        cons = g.consumers(n.outputs[0])
        if len(cons) != 1:
            continue
        c = cons[0]
        if c.op == "Transpose":
            c.attrs = {"perm": tuple(perm[p] for p in c.attrs["perm"])}
            c.inputs[0] = n.inputs[0]
            g.nodes.remove(n)
            return True
        if c.op == "Squeeze" and not g.is_output(c.outputs[0]):
            axes = c.attrs["axes"]
            new_axes = tuple(sorted(perm[a] for a in axes))
            kept = [perm[k] for k in range(len(perm)) if k not in axes]
            rank = {a: i for i, a in enumerate(sorted(kept))}
            new_perm = tuple(rank[a] for a in kept)
            mid = n.outputs[0]
            xs = g.shape(n.inputs[0])
            g.tensors[mid] = TensorInfo(mid, tuple(d for k, d in enumerate(xs) if k not in new_axes))
            c.inputs, c.outputs, c.attrs, n.inputs, n.outputs, n.attrs = (
                [n.inputs[0]], [mid], {"axes": new_axes}, [mid], [c.outputs[0]], {"perm": new_perm})
            i, j = g.nodes.index(n), g.nodes.index(c)
            g.nodes[i], g.nodes[j] = c, n
            return True
    return False


def eliminate_dead(g: Graph) -> None:
    """Remove nodes whose outputs are never used and initializers nobody reads."""
    while True:
        used = {i for n in g.nodes for i in n.inputs} | {t.name for t in g.outputs}
        dead = [n for n in g.nodes if not any(o in used for o in n.outputs)]
        if not dead:
            break
        for n in dead:
            g.nodes.remove(n)
    used = {i for n in g.nodes for i in n.inputs}
    for k in [k for k in g.initializers if k not in used]:
        del g.initializers[k]
    live = used | {o for n in g.nodes for o in n.outputs} | {t.name for t in g.inputs} | {t.name for t in g.outputs}
    for k in [k for k in g.tensors if k not in live]:
        del g.tensors[k]


def _is_mask(v: np.ndarray) -> bool:
    v = np.asarray(v, np.float64)
    return bool(np.all((v == 0) | (v <= MASK_DROP)))


def _probe(g: Graph, name: str, raw: set[str]):
    """Values of raw tensor ``name`` when every integer model input is all 0 and all 1."""
    cone, todo = set(), [name]
    while todo:
        p = g.producer(todo.pop())
        if p is not None and p.name not in cone:
            cone.add(p.name)
            todo += [i for i in p.inputs if i in raw]
    for fill in (0, 1):
        env = {t.name: np.full(t.shape, fill, t.dtype) for t in g.inputs if t.name in raw}
        for n in g.nodes:
            if n.name in cone:
                env[n.outputs[0]] = run_node(n, [env[i] if i in env else g.initializers[i] for i in n.inputs], g)
        yield env[name]


def _new_tensor(g: Graph, name: str, shape: tuple[int, ...]) -> str:
    g.tensors[name] = TensorInfo(name, tuple(int(d) for d in shape))
    return name


def _feeds_softmax(g: Graph, t: str) -> bool:
    """``t`` reaches a Softmax alone, directly or through one Add (a second mask)."""
    for _ in range(2):
        users = g.consumers(t)
        if g.is_output(t) or len(users) != 1:
            return False
        if users[0].op == "Softmax":
            return True
        if users[0].op != "Add":
            return False
        t = users[0].outputs[0]
    return False


def fold_constant_where(g: Graph) -> None:
    """``Where`` of a constant condition (torch's ``masked_fill`` by a mask buffer) becomes
    arithmetic the integer model has: before a Softmax, with a fill of at most ``MASK_DROP``,
    ``Add(x, where(C, fill, 0))`` (an attention mask: :func:`fold_attention_masks` makes it a
    MaskedSoftmax; the probabilities are the same); otherwise, exactly,
    ``x * keep + where(C, fill, 0)`` (``keep`` = where x is taken), or ``a * C + b * (1 - C)``
    when both branches are computed."""
    raw = raw_tensors(g)
    for n in [n for n in g.nodes if n.op == "Where" and n.inputs[0] in g.initializers]:
        c, (a, b), out = g.initializers[n.inputs[0]].astype(bool), n.inputs[1:], n.outputs[0]
        if a in raw or b in raw or (a in g.initializers and b in g.initializers):
            continue
        at = g.nodes.index(n)
        g.nodes.remove(n)
        shape = g.tensors[out].shape
        if a not in g.initializers and b not in g.initializers:  # a*C + b*(1-C)
            ta = _new_tensor(g, f"{out}.a", shape)
            tb = _new_tensor(g, f"{out}.b", shape)
            ca, cb = f"{n.name}.cond", f"{n.name}.notcond"
            g.initializers[ca], g.initializers[cb] = c.astype(np.float32), (~c).astype(np.float32)
            g.nodes[at:at] = [Node("Mul", f"{n.name}.a", [a, ca], [ta]), Node("Mul", f"{n.name}.b", [b, cb], [tb]),
                              Node("Add", n.name, [ta, tb], [out])]
            continue
        fill_first = a in g.initializers
        x, fill = (b, g.initializers[a]) if fill_first else (a, g.initializers[b])
        take = c if fill_first else ~c  # where the fill is taken
        m = np.where(take, fill, 0).astype(np.float32)
        g.initializers[f"{n.name}.fill"] = m
        if _is_mask(m) and _feeds_softmax(g, out):
            g.nodes.insert(at, Node("Add", n.name, [x, f"{n.name}.fill"], [out]))
            continue
        g.initializers[f"{n.name}.keep"] = (~take).astype(np.float32)
        kept = _new_tensor(g, f"{out}.kept", np.broadcast_shapes(g.shape(x), take.shape))
        g.nodes[at:at] = [Node("Mul", f"{n.name}.keep", [x, f"{n.name}.keep"], [kept]),
                          Node("Add", n.name, [kept, f"{n.name}.fill"], [out])]


def _merge_masks(g: Graph, p: Node, raw: set[str]) -> None:
    """``Add(Add(x, M1), M2)`` with two masks (a causal constant and a padding mask) becomes
    ``Add(x, M1 + M2)``, so one MaskedSoftmax drops both."""
    for k in (0, 1):
        inner, m2 = g.producer(p.inputs[k]), p.inputs[1 - k]
        if inner is None or inner.op != "Add" or len(g.consumers(p.inputs[k])) != 1 or g.is_output(p.inputs[k]):
            continue
        if not (m2 in g.initializers or m2 in raw):
            continue
        for j in (0, 1):
            m1, x = inner.inputs[j], inner.inputs[1 - j]
            if m1 not in g.initializers or x in g.initializers or x in raw:
                continue
            if m2 in g.initializers:
                merged = f"{p.name}.mask"
                g.initializers[merged] = (g.initializers[m1] + g.initializers[m2]).astype(np.float32)
            else:
                merged = _new_tensor(g, f"{p.name}.mask", np.broadcast_shapes(g.shape(m1), g.shape(m2)))
                g.nodes.insert(g.nodes.index(p), Node("Add", f"{p.name}.masks", [m1, m2], [merged]))
            g.nodes.remove(inner)
            p.inputs = [x, merged]
            return


def fold_attention_masks(g: Graph) -> None:
    """``Softmax(Add(x, M))`` with an attention mask ``M`` becomes ``MaskedSoftmax(x, M)``.

    ``M`` is a mask when it adds 0 (keep) or at most ``MASK_DROP`` (drop) to every score: a
    constant (causal masks) or a tensor computed only from integer model inputs (padding masks;
    checked on all-0 and all-1 inputs).  The float result is unchanged (``softmax(x + M)``); the
    integer model drops the masked positions instead of adding a number no int8 scale holds.
    """
    raw = raw_tensors(g)
    for s in [n for n in g.nodes if n.op == "Softmax"]:
        t = s.inputs[0]
        p = g.producer(t)
        if p is None or p.op != "Add" or g.is_output(t) or len(g.consumers(t)) != 1:
            continue
        _merge_masks(g, p, raw)
        raw = raw_tensors(g)
        for k in (0, 1):
            m, x = p.inputs[k], p.inputs[1 - k]
            if x in g.initializers or x in raw or np.broadcast_shapes(g.shape(x), g.shape(m)) != tuple(g.shape(x)):
                continue
            if m in g.initializers:
                ok = _is_mask(g.initializers[m])
            else:
                ok = m in raw and all(_is_mask(v) for v in _probe(g, m, raw))
            if ok:
                s.op, s.inputs = "MaskedSoftmax", [x, m]
                g.nodes.remove(p)
                break
