"""PIM program lint (``nnisa.targets.pim.lint``): each check on a small hand-written program,
silence on compiled programs, and the warnings / ``lint`` list of ``nnisa stats`` and ``nnisa sim``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from nnisa.core.target import get_target
from nnisa.frontend.models import make_lenet
from nnisa.targets.pim.compiler import compile_program
from nnisa.targets.pim.lint import lint_program

from .compiler_helpers import cli, quantized, small_config

PIM = get_target("pim")


def checks(src: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for i in lint_program(PIM.assemble(src)):
        out.setdefault(i.check, []).append(i)
    return out


def test_mvmul_without_setbw_is_flagged():
    found = checks(".core 0\n.group 0, 1\nmvmul $r0, $r1, 8, 0, 0\nmvmul $r0, $r1, 8, 0, 0\n"
                   ".core 1\n.group 0, 1\nsetbw 8, 8\nmvmul $r0, $r1, 8, 0, 0\n")
    (issue,) = found["mvmul_bitwidth_0"]
    assert issue.core == 0 and issue.count == 2 and "2 mvmul" in issue.message and "not meaningful" in issue.message
    assert set(found) == {"mvmul_bitwidth_0"}


def test_unmatched_messages_and_blocked_core():
    found = checks(".core 0\nsetbw 8, 8\nsend $r0, 1, 32\nsend $r0, 1, 32\n"
                   ".core 1\nsetbw 8, 8\nrecv $r0, 0, 32\n")
    (um,) = found["unmatched_messages"]
    assert "2 send(s) but 1 recv(s)" in um.message and um.count == 1
    assert [i.core for i in found["never_finishes"]] == [0]
    sizes = checks(".core 0\nsetbw 8, 8\nsend $r0, 1, 32\n.core 1\nsetbw 8, 8\nrecv $r0, 0, 16\n")
    assert "sends 32 bytes, the recv expects 16" in sizes["unmatched_messages"][0].message


def test_cores_that_never_finish():
    found = checks(".core 0\nsetbw 8, 8\nnop\n.core 1\nsetbw 8, 8\nwait 3, 2\n.core 2\nsetbw 8, 8\nsync 3, 1\n")
    msgs = sorted(i.message for i in found["never_finishes"])
    assert any("core 0: nop" in m for m in msgs)
    assert any("core 1: waits for 2 sync(s) on ev3" in m and "only 1" in m for m in msgs)


def test_unused_array_groups():
    found = checks(".core 0\n.group 0, 2\n.group 1, 3\n.group 2, 1\nsetbw 8, 8\nmvmul $r0, $r1, 8, 0, 1\n")
    (issue,) = found["unused_groups"]
    assert issue.count == 2 and "(3 crossbars)" in issue.message and ": 0, 2" in issue.message


def test_uninitialised_local_memory_read_in_functional_mode():
    # core 0 adds two vectors it never loaded: both sources are uninitialised
    src = (".core 0\nsetbw 8, 8\nsldi $r1, 0\nsldi $r2, 64\nsldi $r3, 128\nvvadd $r3, $r1, $r2, 16\n"
           ".core 1\nsetbw 8, 8\nsldi $r1, 0\nsldi $r4, 0\nld $r1, $r4, 16\nvvadd $r1, $r1, $r1, 16\n")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = PIM.simulate(PIM.assemble(src), mode="functional", inputs={"seg@0x0": np.zeros(16, np.uint8)},
                           global_address_mode="single32")
    lint = [i for i in res.stats.extra["lint"] if i["check"] == "uninitialised_read"]
    assert [i["core"] for i in lint] == [0]
    assert "first pc 4 (vvadd) at address 0" in lint[0]["message"]
    assert any("uninitialised_read" in str(w.message) for w in rec)
    # timing mode has no values: only the static checks
    res = PIM.simulate(PIM.assemble(src), mode="timing")
    assert not [i for i in res.stats.extra["lint"] if i["check"] == "uninitialised_read"]


@pytest.mark.parametrize("mode", ["batch", "element", "throughput"])
def test_compiled_programs_are_clean(mode):
    qg, _ = quantized(make_lenet())
    c = compile_program(qg, small_config(16), schedule=mode, images=2 if mode == "throughput" else 1)
    assert lint_program(c.program) == []


def test_cli_stats_and_sim_print_warnings_and_json(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text(".core 0\n.group 0, 1\nmvmul $r0, $r1, 8, 0, 0\nsend $r0, 1, 8\n"
                   ".core 1\n.group 0, 1\nsetbw 8, 8\nmvmul $r0, $r1, 8, 0, 0\nrecv $r0, 0, 8\n")
    code, out, err = cli(["stats", "-t", "pim", str(src)], capsys)
    assert code == 0 and "warning: lint mvmul_bitwidth_0: core 0" in err
    code, out, err = cli(["stats", "-t", "pim", str(src), "--json"], capsys)
    assert code == 0
    assert [i["check"] for i in json.loads(out)["lint"]] == ["mvmul_bitwidth_0"]
    code, out, err = cli(["sim", "-t", "pim", str(src), "--mode", "timing", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert [i["check"] for i in data["lint"]] == ["mvmul_bitwidth_0"] and "latency_ns" in data
    code, out, err = cli(["stats", "-t", "pim", str(src), "-O", "lint=false", "--json"], capsys)
    assert code == 0 and "lint" not in json.loads(out) and "warning: lint" not in err


@pytest.mark.slow
def test_pimcomp_batch_program_lints_clean_and_loses_setbw_when_cut():
    # PIMCOMP-NN's conformance batch program (3.1 M instructions) sets its bit widths on every core
    from shared_data import require_shared
    prog = PIM.read(require_shared("conformance", "pim", "resnet18_batch_8x8.json.gz"))
    assert lint_program(prog) == []
    # the element-mode defect of the issue: drop every setbw of one core, its mvmul are flagged
    from nnisa.targets.pim.isa import OPCODE
    op = {k: OPCODE[k] for k in ("setbw", "mvmul", "vvadd", "vrsl")}
    core = next(c for c, rows in prog.items() if (rows["op"] == op["mvmul"]).any())
    rows = prog.cores[core]
    prog.cores[core] = rows[rows["op"] != op["setbw"]]
    (issue,) = [i for i in lint_program(prog) if i.check == "mvmul_bitwidth_0"]
    vec = int(((rows["op"] >= op["vvadd"]) & (rows["op"] <= op["vrsl"])).sum())
    assert issue.core == core and issue.count == int((rows["op"] == op["mvmul"]).sum()) + vec


def _random_program(rng) -> "object":
    """Cores of random instructions among the ones the lint reads (setbw anywhere or nowhere,
    nops, messages with random peers and sizes, syncs and waits, mvmuls on random groups)."""
    from nnisa.targets.pim.isa import OPCODE
    from nnisa.targets.pim.program import DTYPE, PimProgram
    kinds = [OPCODE[k] for k in ("setbw", "mvmul", "vvadd", "vrelu", "nop", "send", "recv", "sync", "wait",
                                 "sldi", "lmv", "ld")]
    n_cores = int(rng.integers(1, 5))
    cores, agm = {}, {}
    for c in range(n_cores):
        n = int(rng.integers(0, 6000 if c == 0 else 300))
        rows = np.zeros(n, DTYPE)
        p = rng.dirichlet(np.ones(len(kinds)) * 0.3)
        rows["op"] = rng.choice(kinds, n, p=p)
        for col, hi in (("core", n_cores), ("len", 4), ("ev", 3), ("val", 3), ("group", 6)):
            rows[col] = rng.integers(0, hi, n)
        cores[c] = rows
        if rng.random() < 0.8:
            agm[c] = rng.integers(1, 4, int(rng.integers(0, 7))).tolist()
    return PimProgram(cores=cores, array_group_map=agm)


def test_fast_lint_matches_reference():
    from nnisa.targets.pim.lint import lint_program_reference
    rng = np.random.default_rng(30)
    for _ in range(150):
        prog = _random_program(rng)
        ref = lint_program_reference(prog)
        assert lint_program(prog) == ref
        ops = {c: r["op"].astype(np.int64) for c, r in prog.items()}
        assert lint_program(prog, ops) == ref
    prog = _random_program(np.random.default_rng(1))
    prog.cores[0]["op"][:3] = -1  # not opcodes at all: the readable path answers
    assert lint_program(prog) == lint_program_reference(prog)
