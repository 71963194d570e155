"""Generated multi-head attention on DAIS in the layouts torch exports (issue 26): batch-first,
sequence-first inside a batch-1 model (``TransformerEncoderLayer``'s head split: Transposes that
move axis 0, a Gather along axis 0 of the packed Q/K/V), a sequence-first input (one sample is the
whole ``(L, 1, E)`` tensor) and key-padding masks computed from an integer input (Equal → Unsqueeze
→ Expand → Cast → Mul → Add, optionally with a causal mask).  Random head counts, sequence lengths
and widths; every program bit-exact against the integer reference and top-1 close to onnxruntime.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnisa.api import run_model

LAYOUTS = ("batch_first", "seq_first_inside", "seq_first_input")


def attention_model(layout: str, seq: int, heads: int, head_dim: int, classes: int, seed: int,
                    mask: bool = False, causal: bool = False) -> onnx.ModelProto:
    """Multi-head self-attention → mean over the sequence → Linear, as torch writes it per layout."""
    rng = np.random.default_rng(seed)
    E = heads * head_dim
    inits = []

    def const(name, v):
        inits.append(numpy_helper.from_array(np.asarray(v), name))
        return name

    def w(name, shape):
        return const(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    nodes = []

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def shape(name, dims):
        return const(name, np.array(dims, np.int64))

    in_shape = [seq, 1, E] if layout == "seq_first_input" else [1, seq, E]
    x = "x"
    if layout == "batch_first":
        qkv = [node("Add", [node("MatMul", [x, w(f"w{k}", (E, E))], f"{k}_mm"),
                            const(f"b{k}", rng.uniform(-.1, .1, E).astype(np.float32))], k) for k in "qkv"]
        q, k, v = (node("Reshape", [t, shape(f"{t}_shape", [1, seq, heads, head_dim])], f"{t}_split") for t in qkv)
        q = node("Transpose", [q], "q_h", perm=[0, 2, 1, 3])
        kt = node("Transpose", [k], "k_ht", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], "v_h", perm=[0, 2, 1, 3])
    else:  # torch's packed in-projection on a sequence-first tensor (L, 1, E)
        xs = x if layout == "seq_first_input" else node("Transpose", [x], "x_seq", perm=[1, 0, 2])
        packed = node("MatMul", [xs, w("w_in", (E, 3 * E))], "qkv")
        packed = node("Reshape", [packed, shape("qkv_shape", [seq, 1, 3, E])], "qkv_split")
        packed = node("Transpose", [packed], "qkv_first", perm=[2, 0, 1, 3])  # (3, L, 1, E)
        parts = []
        for i, t in enumerate("qkv"):
            g = node("Gather", [packed, const(f"i{t}", np.array(i, np.int64))], f"{t}_sel", axis=0)
            g = node("Reshape", [g, shape(f"{t}_heads", [seq, heads, head_dim])], f"{t}_r")
            parts.append(node("Transpose", [g], f"{t}_h", perm=[1, 0, 2]))  # (H, L, D)
        q, k, v = parts
        kt = node("Transpose", [k], "k_ht", perm=[0, 2, 1])
    s = node("Mul", [node("MatMul", [q, kt], "scores0"), const("scale", np.float32(head_dim ** -0.5))], "scores")
    if causal:  # a constant mask first, the padding mask after it (the frontend merges the two)
        s = node("Add", [s, const("causal", np.triu(np.full((seq, seq), -1e4, np.float32), 1))], "scores_causal")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)]
    if mask:  # key padding: ids == 0 keep, anything else drops the key
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT64, [1, seq]))
        keep = node("Equal", ["mask", const("zero", np.array(0, np.int64))], "mask_eq")
        keep = node("Unsqueeze", [keep, const("ax12", np.array([1, 2], np.int64))], "mask_4d")
        rank = 4 if layout == "batch_first" else 3
        if rank == 3:
            keep = node("Reshape", [keep, shape("mask_3d_shape", [1, 1, seq])], "mask_3d")
        keep = node("Expand", [keep, shape("mask_full", [1, heads, seq, seq][4 - rank:])], "mask_exp")
        drop = node("Sub", [const("one", np.float32(1)), node("Cast", [keep], "mask_f", to=TensorProto.FLOAT)],
                    "mask_drop")
        bias = node("Mul", [drop, const("neg", np.float32(-1e4))], "mask_bias")
        s = node("Add", [s, bias], "scores_masked")
    p = node("Softmax", [s], "probs", axis=-1)
    c = node("MatMul", [p, v], "context")
    if layout == "batch_first":
        c = node("Transpose", [c], "context_t", perm=[0, 2, 1, 3])
        c = node("Reshape", [c, shape("merge", [1, seq, E])], "merged")
        pooled = node("ReduceMean", [c], "pooled", axes=[1], keepdims=0)
    else:
        c = node("Transpose", [c], "context_t", perm=[1, 0, 2])  # (L, H, D)
        c = node("Reshape", [c, shape("merge", [seq, E])], "merged")
        c = node("Gemm", [c, w("w_out", (E, E)), const("b_out", np.zeros(E, np.float32))], "out_proj")
        c = node("Reshape", [c, shape("seq_shape", [seq, 1, E])], "out_seq")
        pooled = node("ReduceMean", [c], "pooled", axes=[0], keepdims=0)  # (1, E)
    y = node("Gemm", [pooled, w("w_cls", (E, classes)), const("b_cls", np.zeros(classes, np.float32))], "y")
    g = helper.make_graph(nodes, f"attention_{layout}", inputs,
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, classes])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _run(path, inputs: dict) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_model("dais", path, inputs=inputs)


def _case(seed: int):
    rng = np.random.default_rng([seed, 2611])
    return (LAYOUTS[seed % 3], int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(2, 6)),
            int(rng.integers(2, 5)))


def _x(layout, seq, E, n, seed):
    shape = (n, seq, 1, E) if layout == "seq_first_input" else (n, seq, E)
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


#: each layout once in the fast suite, more shapes under -m slow
FAST = {0, 1, 2}


@pytest.mark.parametrize("seed", [s if s in FAST else pytest.param(s, marks=pytest.mark.slow) for s in range(9)])
def test_head_split_layouts_are_bit_exact(seed, tmp_path):
    """The Transposes and the axis-0 Gather of every layout compile; outputs equal the integer
    reference bit for bit and agree with onnxruntime."""
    layout, seq, heads, head_dim, classes = _case(seed)
    path = tmp_path / "att.onnx"
    onnx.save(attention_model(layout, seq, heads, head_dim, classes, seed), path)
    rep = _run(path, {"x": _x(layout, seq, heads * head_dim, 8, seed)})
    case = (layout, seq, heads, head_dim)
    assert rep["bit_exact"] is True, case
    assert rep["samples"] == 8 and rep["top1_agreement"] >= 0.75, (case, rep["top1_agreement"])


def _masks(seq: int, n: int, seed: int) -> np.ndarray:
    """Key-padding ids: random 0/1/2 and far values (saturated by the encoding), a row that drops
    every key (the softmax then keeps all), one that keeps every key."""
    rng = np.random.default_rng(seed)
    m = rng.choice(np.array([0, 0, 1, 2, -7, 1 << 40]), size=(n, seq)).astype(np.int64)
    m[0] = 1
    m[1] = 0
    return m


@pytest.mark.parametrize("seed", [s if s in (0, 3) else pytest.param(s, marks=pytest.mark.slow) for s in range(6)])
def test_masks_from_an_integer_input_are_bit_exact(seed, tmp_path):
    layout, seq, heads, head_dim, classes = _case(seed)
    layout = ("batch_first", "seq_first_inside")[seed % 2]
    path = tmp_path / "att_mask.onnx"
    onnx.save(attention_model(layout, seq, heads, head_dim, classes, seed, mask=True, causal=seed >= 2), path)
    rep = _run(path, {"x": _x(layout, seq, heads * head_dim, 8, seed), "mask": _masks(seq, 8, seed)})
    case = (layout, seq, heads, head_dim, seed >= 2)
    assert rep["bit_exact"] is True, case
    assert rep["top1_agreement"] >= 0.75, (case, rep["top1_agreement"])


def test_mask_changes_the_program_output(tmp_path):
    """The mask is live logic, not a constant: two masks give different outputs, each the
    reference's (bit-exact), and the program's input range is the comparison's."""
    from nnisa.targets.dais.compiler.netcompile import compile_network
    path = tmp_path / "att_mask.onnx"
    onnx.save(attention_model("batch_first", 5, 2, 3, 4, 7, mask=True), path)
    x = _x("batch_first", 5, 6, 1, 7)
    outs = []
    for k, m in enumerate(([0, 0, 0, 0, 0], [0, 1, 1, 1, 1])):
        f = tmp_path / f"y{k}.npz"
        rep = run_model("dais", path, inputs={"x": x, "mask": np.array([m], np.int64)}, save_outputs=str(f))
        assert rep["bit_exact"] is True
        outs.append(next(iter(np.load(f).values())))
    assert not np.array_equal(*outs)
    assert compile_network(path).program.meta["mask_input_ranges"] == {"mask": [-1, 1]}


def test_mask_read_by_arithmetic_is_tabulated_over_the_input_range(tmp_path):
    """Ids used as the mask value itself (no comparison: any id but 1 drops, as the float model
    says) run bit-exact for every value of the signed 8-bit input; ids beyond it are refused in one
    line when a sample is encoded (compared ids saturate instead)."""
    from nnisa.core.errors import NnisaError
    from nnisa.targets.dais.compiler.netcompile import compile_network
    m = attention_model("batch_first", 3, 1, 2, 2, 0, mask=True)
    for n in list(m.graph.node):
        if n.op_type == "Unsqueeze":
            n.input[0] = "mask"  # the ids themselves, cast to float: 1 - mask is 0 (keep) only for 1
        elif n.op_type == "Equal":
            m.graph.node.remove(n)
    path = tmp_path / "arith.onnx"
    onnx.save(m, path)
    res = compile_network(path)
    assert res.program.meta["mask_input_ranges"] == {"mask": [-128, 127]}
    assert res.program.meta["mask_inputs_saturated"] == []
    x = _x("batch_first", 3, 2, 5, 0)
    masks = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1], [3, 1, -128], [127, 2, 1]], np.int64)
    assert _run(path, {"x": x, "mask": masks})["bit_exact"] is True
    with pytest.raises(NnisaError, match=r"takes values -128\.\.127"):
        _run(path, {"x": x[:1], "mask": np.array([[1, 300, 1]], np.int64)})


def test_compiled_folder_takes_the_mask_as_an_integer_input(tmp_path):
    """``nnisa compile`` + ``nnisa sim`` on the folder: the mask ids are an int8 input of the
    manifest (no host encoding), and the outputs equal ``run``'s (saturating ids changes nothing)."""
    from click.testing import CliRunner

    from nnisa.cli import cli
    path = tmp_path / "att_mask.onnx"
    onnx.save(attention_model("batch_first", 4, 2, 2, 3, 5, mask=True, causal=True), path)
    res = CliRunner().invoke(cli, ["compile", "-t", "dais", str(path), "-o", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    x = _x("batch_first", 4, 4, 3, 5)
    masks = np.array([[0, 0, 1, 1], [5, 0, -3, 0], [1, 1, 1, 1]], np.int64)
    np.savez(tmp_path / "in.npz", x=x, mask=masks)
    res = CliRunner().invoke(cli, ["sim", "-t", "dais", str(tmp_path / "c"), "--inputs", str(tmp_path / "in.npz"),
                                   "--outputs", str(tmp_path / "y.npz")])
    assert res.exit_code == 0, res.output
    got = next(iter(np.load(tmp_path / "y.npz").values()))
    rep = run_model("dais", path, inputs={"x": x, "mask": masks}, save_outputs=str(tmp_path / "r.npz"))
    assert rep["bit_exact"] is True
    assert np.array_equal(got.reshape(3, -1), next(iter(np.load(tmp_path / "r.npz").values())).reshape(3, -1))
