"""Generated models (tests/generated/modelgen.py) for every operator Tensil lowers, against onnxruntime.

Tensil computes in fixed point (FP16BP8 on the presets: 8 fraction bits, range ±128), so the
promise is onnxruntime within the type's resolution: every output within ``ATOL`` absolutely or
``RTOL`` of the reference's largest magnitude (the report's ``max_abs_error``/``max_rel_error``).
An operator the machine cannot compute is a one-line refusal naming the limit; never a traceback.
The fast default runs seed 0 of every generator and a few batches; ``-m slow`` sweeps 8 seeds ×
batch 1–3.
"""

from __future__ import annotations

import pytest

from .harness import run_generated
from .modelgen import generate

ATOL, RTOL = 0.05, 0.05
#: per-operator bounds tighter than ATOL: averages are pre-scaled sums (compiler/precision.py), within
#: a few ulps of FP16BP8 at any window
ATOL_OP = {"GlobalAveragePool": 0.01, "AveragePool": 0.01}

#: generators Tensil runs on its own ISA (v1.0.15, no extension)
RUNS = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Relu", "LeakyRelu", "Clip",
        "HardSigmoid", "HardSwish", "Softmax", "Add", "Mul", "Sub", "Concat", "Slice", "Split", "Gather",
        "Transpose", "Reshape", "Pad", "BatchNormalization", "ReduceMean", "MatMulActivations")
#: generators that run with nnisa's LoadLUT/Lookup extension (-O lut=true)
LUT_RUNS = ("Sigmoid", "Tanh", "SiLU")
#: generators whose operator runs as a host step between device segments (issue 27)
HOST_RUNS = ("Log",)
#: generators refused (the operator alone: nothing for the device): substring every refusal names
REFUSED = {"Exp": "Exp", "Erf": "Erf", "Gelu": "Gelu"}
#: the only refusal a runnable generator may give: onnx's declared shape vs onnxruntime's
ALLOWED_REFUSAL = "a ceil_mode window starts past the input"


def _check(op: str, seed: int, batch: int = 1, **options) -> None:
    gen = generate(op, seed, batch)
    out = run_generated("tensil", gen, **options)
    assert out.kind != "crash", f"{gen}: {out.message}"
    if out.kind == "refused":
        assert ALLOWED_REFUSAL in out.message and op in ("MaxPool", "AveragePool"), f"{gen}: {out.message}"
        return
    r = out.report
    assert r["max_abs_error"] <= ATOL_OP.get(op, ATOL) or r["max_rel_error"] <= RTOL, \
        f"{gen}: abs {r['max_abs_error']:.4g} rel {r['max_rel_error']:.4g}"


@pytest.mark.parametrize("op", RUNS)
def test_generated_op_runs(op):
    _check(op, 0)


def _check_batch(op: str, seed: int, batch: int, tmp_path) -> None:
    """A model declared with ``batch`` > 1, compiled at that batch, run on one full batch (the API
    runs models one sample at a time, so this goes through compile_model/simulate)."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from nnisa.core.errors import NnisaError
    from nnisa.targets.tensil.compiler import compile_model
    from nnisa.targets.tensil.sim.simulate import simulate
    gen = generate(op, seed, batch)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "m.onnx"
    onnx.save(gen.model, path)
    shape = [d.dim_value for d in gen.model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    ref = ort.InferenceSession(gen.model.SerializeToString()).run(None, {"x": x})
    try:
        res = compile_model(path, config="zcu104", out_dir=tmp_path / "b", declared_batch=True)
    except NnisaError as exc:
        assert ALLOWED_REFUSAL in str(exc), f"{gen}: {exc}"
        return
    enc = res.encode_inputs({"x": x})
    run = simulate(res.program, inputs={k: v[None] for k, v in enc.items()}, **res.sim_options)
    got = res.decode_outputs({k: np.asarray(v) for k, v in run.outputs.items()})
    for name, r in zip([o.name for o in gen.model.graph.output], ref):
        err = np.abs(np.asarray(got[name]).reshape(r.shape) - r).max()
        assert err <= ATOL_OP.get(op, ATOL) or err <= RTOL * np.abs(r).max(), f"{gen}: {name} abs {err:.4g}"


@pytest.mark.parametrize("op", ("Conv", "Gemm", "MatMul", "Concat", "Slice", "Transpose", "Add", "HardSwish",
                                "ReduceMean", "Pad"))
def test_generated_op_batch(op, tmp_path):
    _check_batch(op, 1, 2, tmp_path)


@pytest.mark.parametrize("op", LUT_RUNS)
def test_generated_op_lut(op):
    _check(op, 0, lut=True)


@pytest.mark.parametrize("op", sorted(REFUSED))
def test_generated_op_refused_by_name(op):
    out = run_generated("tensil", generate(op, 0))
    assert out.kind == "refused" and REFUSED[op] in out.message and "\n" not in out.message, out.message
    assert "no node runs on the device" in out.message


@pytest.mark.parametrize("op", HOST_RUNS)
def test_generated_op_as_host_step(op):
    """The operator between device work runs on the host: within tolerance, and the report names it."""
    _check(op, 0)
    out = run_generated("tensil", generate(op, 0))
    assert [h["ops"] for h in out.report["host_steps"]] == [[op]] and out.report["host_share"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("op", RUNS + LUT_RUNS)
def test_generated_op_sweep(op, tmp_path):
    for seed in range(8):
        _check(op, seed, **({"lut": True} if op in LUT_RUNS else {}))
        if op not in LUT_RUNS:
            _check_batch(op, seed, 2 + seed % 2, tmp_path / str(seed))


# ---------------------------------------------------------------- x @ W at any rank; attention either axis order
def _matmul_any_rank(seed: int):
    """``x @ W (+ b) (→ Relu)`` with x of rank 2–4, leading axes of odd sizes: W contracts the last axis
    whatever the rank, so the leading axes are rows (a rank-4 x lives in NCHW on Tensil)."""
    import numpy as np
    from .modelgen import _G
    rng = np.random.default_rng([seed, 4242])
    rank = 2 + seed % 3
    lead = [int(rng.choice([1, 3, 5, 7])) for _ in range(rank - 1)]
    k = int(rng.integers(1, 68))
    shortcut = seed % 2 == 1  # x @ W + x (the Add a compiler may fuse into the product's accumulators)
    n = k if shortcut else int(rng.integers(1, 68))
    g = _G(rng)
    y = g.op("MatMul", ["x", g.weights((k, n), k)])
    if shortcut:
        y = g.op("Add", [y, "x"])
    elif rng.random() < 0.7:
        y = g.op("Add", [y, g.const(rng.normal(0, 0.1, n))])
    if rng.random() < 0.4:
        y = g.op("Relu", [y])
    return g.model(lead + [k], [y]), f"{lead + [k]} @ {k}x{n}" + (" + x" if shortcut else "")


def _attention(seed: int, seq_first: bool):
    """One multi-head self-attention block with its residual and a token-wise head, as torch exports
    ``nn.MultiheadAttention``: ``batch_first=False`` takes ``(S, B, E)`` and splits heads as
    ``(S, B·H, d)`` → ``(B·H, S, d)``; ``batch_first=True`` takes ``(B, S, E)`` and splits as
    ``(B, S, H, d)`` → ``(B, H, S, d)`` (rank-4 heads)."""
    import numpy as np
    from .modelgen import _G
    rng = np.random.default_rng([seed, 4343 + seq_first])
    S, B, H, d = int(rng.integers(2, 10)), int(rng.choice([1, 2, 3])), int(rng.integers(1, 4)), int(rng.integers(2, 9))
    E, classes = H * d, int(rng.integers(3, 12))
    g = _G(rng)
    qkv = g.op("Add", [g.op("MatMul", ["x", g.weights((E, 3 * E), E)]), g.const(rng.normal(0, 0.1, 3 * E))])
    parts = g.op("Split", [qkv, g.const([E, E, E], np.int64)], n_out=3, axis=-1)
    heads = []
    for p in parts:
        if seq_first:
            r = g.op("Reshape", [p, g.const([S, B * H, d], np.int64)])
            heads.append(g.op("Transpose", [r], perm=[1, 0, 2]))
        else:
            r = g.op("Reshape", [p, g.const([B, S, H, d], np.int64)])
            heads.append(g.op("Transpose", [r], perm=[0, 2, 1, 3]))
    q, k, v = heads
    kt = g.op("Transpose", [k], perm=[0, 2, 1] if seq_first else [0, 1, 3, 2])
    scores = g.op("Mul", [g.op("MatMul", [q, kt]), g.const(np.float32(1 / np.sqrt(d)))])
    ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    if seq_first:
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[1, 0, 2]), g.const([S, B, E], np.int64)])
    else:
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.const([B, S, E], np.int64)])
    att = g.op("Add", [g.op("MatMul", [ctx, g.weights((E, E), E)]), g.const(rng.normal(0, 0.1, E))])
    y = g.op("MatMul", [g.op("Add", [att, "x"]), g.weights((E, classes), E)])
    shape = [S, B, E] if seq_first else [B, S, E]
    return g.model(shape, [y]), f"{'seq' if seq_first else 'batch'}-first {shape}, {H} heads of {d}"


def _check_against_onnxruntime(model, desc: str, top1: float | None = None) -> None:
    from .modelgen import Generated
    gen = Generated("case", 0, model, desc)
    out = run_generated("tensil", gen, samples=4 if top1 is None else 16)
    assert out.kind == "ran", f"{desc}: {out.kind} {out.message}"
    r = out.report
    assert r["max_abs_error"] <= ATOL or r["max_rel_error"] <= RTOL, \
        f"{desc}: abs {r['max_abs_error']:.4g} rel {r['max_rel_error']:.4g}"
    if top1 is not None:
        assert r["top1_agreement"] >= top1, f"{desc}: top-1 {r['top1_agreement']}"


@pytest.mark.parametrize("seed", range(6))
def test_matmul_any_rank_rows(seed):
    _check_against_onnxruntime(*_matmul_any_rank(seed))


@pytest.mark.parametrize("seq_first", [True, False], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("seed", range(2))
def test_attention_either_axis_order(seed, seq_first):
    _check_against_onnxruntime(*_attention(seed, seq_first), top1=0.75)


@pytest.mark.slow
@pytest.mark.parametrize("seq_first", [True, False], ids=["seq_first", "batch_first"])
def test_attention_either_axis_order_sweep(seq_first):
    for seed in range(2, 10):
        _check_against_onnxruntime(*_attention(seed, seq_first), top1=0.75)
    for seed in range(6, 24):
        _check_against_onnxruntime(*_matmul_any_rank(seed))
