"""`make install`'s JIT warm-up (issue 9): every target's ``warm_up`` compiles the kernels real jobs
use, with the argument types they use, so that after it the real jobs compile nothing (but the
CSE kernel's ``with objmode`` clock block, which numba compiles in every process, ~0.1 s)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import nnisa
from nnisa.warmup import warm_up

ROOT = Path(__file__).resolve().parents[1]

# real jobs: PIM JSON (file, plain and gzip) / text / bundle, DAIS compile + run (1 and 2 threads)
JOBS = r"""
import sys, tempfile
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from _jitrec import record_compiles
import nnisa
tmp = Path(tempfile.mkdtemp())
with record_compiles() as compiled:
    pim, dais = nnisa.target("pim"), nnisa.target("dais")
    res = pim.compile(str(Path(nnisa.__file__).parent / "data" / "digits_cnn.onnx"), out_dir=tmp / "pim")
    for name in ("p.json", "p.json.gz", "p.s"):
        pim.write(res.program, tmp / name)
        pim.read(tmp / name)
    rep = nnisa.run_model("dais", str(Path(nnisa.__file__).parent / "data" / "digits_mlp.onnx"), samples=8)
    prog = dais.compile(str(Path(nnisa.__file__).parent / "data" / "digits_cnn.onnx"), out_dir=tmp / "d").program
    import numpy as np
    x = np.zeros((100, prog.n_in))
    for threads in (1, 2):
        dais.simulate(prog, inputs={"x": x}, n_threads=threads)
        dais.simulate(prog, inputs={"x": x}, n_threads=threads, da4ml_compat=True)
# `with objmode` blocks (the CSE kernel's clock) are compiled in every process, never cached
print(sorted({k for k, *_ , d in compiled if d == 0 and not k.endswith("(objmode block)")}))
"""


def test_targets_warm_up_run():
    assert warm_up(["pim"], echo=None, demo=False).keys() == {"pim"}
    assert nnisa.target("dais").warm_up()
    assert warm_up(["no-such-target"], echo=None) == {}


@pytest.mark.slow
def test_after_warm_up_real_jobs_compile_nothing(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    subprocess.run([sys.executable, "-m", "nnisa.warmup"], env=env, check=True, capture_output=True)
    out = subprocess.run([sys.executable, "-c", JOBS, str(ROOT / "benchmarks")], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.strip().splitlines()[-1] == "[]", out[-2000:]
