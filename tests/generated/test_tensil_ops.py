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
#: a global average of up to 13×13 pixels: one rounding per product (8 fraction bits) per pixel
ATOL_OP = {"GlobalAveragePool": 0.1}

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
