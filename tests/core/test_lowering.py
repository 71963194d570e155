"""Operators as data: every compiler's lowering table, the up-front refusal, ``nnisa targets --ops``
and the generated table of docs/operators.md."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from nnisa.cli import main
from nnisa.core.errors import UnsupportedError
from nnisa.core.lowering import DEVICE, HOST, OnHost, coverage, entry_fn, refusal
from nnisa.report.operators import coverage_markdown, operator_matrix, update_docs
from nnisa.core.target import get_target, target_names

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operators.md"


def _table(name: str) -> dict:
    import importlib
    module, _, attr = get_target(name).lowerings.partition(":")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("name", target_names())
def test_every_target_has_a_lowering_table_of_functions(name):
    table = _table(name)
    assert {"Conv", "Gemm", "Relu", "Add", "MaxPool"} <= set(table)
    for op, entry in table.items():
        assert callable(entry) or isinstance(entry, OnHost), op
        assert entry_fn(entry) is None or callable(entry_fn(entry)), op
    assert get_target(name).operators() == coverage(table)


def test_matrix_cli_json_and_docs_come_from_the_tables(tmp_path, capsys):
    matrix = operator_matrix()
    assert list(matrix) == target_names()
    assert all(v in (DEVICE, HOST) for cov in matrix.values() for v in cov.values())
    with pytest.raises(SystemExit) as ei:
        main(["targets", "--ops", "--json"])
    assert ei.value.code in (0, None)
    assert json.loads(capsys.readouterr().out) == {"operators": matrix}
    with pytest.raises(SystemExit):
        main(["targets", "--ops"])
    out = capsys.readouterr().out
    assert "Softmax" in out and "host" in out and "–" in out
    table = coverage_markdown(matrix)
    assert table.splitlines()[0] == "| operator | " + " | ".join(target_names()) + " |"
    assert "| Div | – | – | host | – | ✓ |" in table  # only Cherry divides by a computed tensor (Tensil: host step)
    copy = tmp_path / "operators.md"
    shutil.copy(DOCS, copy)
    assert not update_docs(str(copy)), "docs/operators.md is stale: python -m nnisa.report.operators docs/operators.md"


def test_refusal_names_the_operator():
    table = {"Relu": lambda *a: None, "Softmax": OnHost("host tail")}
    assert refusal(table, "X", "Relu") is None and refusal(table, "X", "Softmax") is None
    assert refusal(table, "X", "Tanh") == "operator Tanh is not supported by the X compiler (see nnisa targets --ops)"
    assert refusal(table, "X", "MatMul", {"MatMul": "weights must be constants"}) == "weights must be constants"
    assert coverage(table) == {"Relu": DEVICE, "Softmax": HOST}


def _model(op: str, path: Path) -> Path:
    """x (1, 8) → Gemm → Relu → ``op`` (binary ops take the Relu and the Gemm output)."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, (8, 8), rng.standard_normal(64).astype(np.float32).tolist())
    binary = op in ("Div", "Max", "Min", "Mul")
    nodes = [helper.make_node("Gemm", ["x", "w"], ["g"], name="fc"), helper.make_node("Relu", ["g"], ["r"], name="act"),
             helper.make_node(op, ["r", "g"] if binary else ["r"], ["y"], name="odd")]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 8))], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


#: an operator each target's table lacks (or that has no integer semantics on an integer machine);
#: Cherry lowers every one-input float operator the frontend imports and Tensil runs the rest as host steps,
#: so their case is one no one imports
MISSING = {"pim": "Div", "dais": "Div", "tensil": "Round", "pimsab": "Div", "cherry": "Round"}


@pytest.mark.parametrize("name", list(MISSING))
def test_an_operator_the_table_lacks_is_refused_before_any_work(name, tmp_path):
    op = MISSING[name]
    assert get_target(name).operators().get(op) is None or name in ("dais", "pimsab")
    model = _model(op, tmp_path / "m.onnx")
    out = tmp_path / "out"
    with pytest.raises(UnsupportedError) as ei:
        get_target(name).compile(model, out_dir=out)
    msg = str(ei.value)
    assert "node odd" in msg and op in msg and "\n" not in msg
    assert not out.exists()
