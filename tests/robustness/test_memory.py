"""Memory is bounded by the input, not by what a header claims (measured in a child process).

Each case runs ``nnisa`` in a fresh process and reads its peak resident memory from ``wait4``.
The bound is 1 GB: far above what these small inputs legitimately need (a few hundred MB for
the interpreter and its libraries) and far below what the inputs claim (4–500 GB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import catalogue  # noqa: E402

LIMIT_MB = 1024


# The child reports its own high-water mark (VmHWM belongs to the process image after exec; the
# rusage of a forked child would include the pages it shared with this big test process).
_CHILD = """
import atexit, os, sys
def _hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(os.environ["NNISA_HWM_FILE"], "w").write(line.split()[1])
atexit.register(_hwm)
from nnisa.cli import main
main(sys.argv[1:])
"""


def peak_rss_mb(args: list[str], cwd: Path) -> tuple[int, float, str]:
    """Run ``nnisa <args>`` in a fresh interpreter; returns (exit status, peak RSS in MB, stderr)."""
    hwm = cwd / "hwm.txt"
    env = dict(os.environ, NNISA_HWM_FILE=str(hwm))
    proc = subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    return proc.returncode, int(hwm.read_text()) / 1024, proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("case_id", ["dais-text-outputs-count", "arrays-header-lies", "arrays-npz-bomb",
                                     "pim-json-bomb", "pim-cfg-noc-device", "pim-nnpi-metadata",
                                     # issue 25: 3 GiB files refused from their size/header, amplification
                                     "cherry-huge-image", "pimsab-huge-garbage", "pimsab-stream-amplification",
                                     "pimsab-segment-amplification", "cherry-absurd-cache_tiles",
                                     # 3 GiB of zeros under text names: refused from the first bytes
                                     "pim-huge-text", "dais-huge-text", "tensil-huge-tasm", "pimsab-huge-text",
                                     "tensil-huge-tprog"])
def test_claimed_sizes_are_not_allocated(case_id, tmp_path):
    case = catalogue()[case_id]
    code, rss, err = peak_rss_mb(list(case.args), tmp_path)
    assert code == case.code, err
    assert err.strip().startswith("nnisa: error:") and "Traceback" not in err
    assert rss < LIMIT_MB, f"{case_id}: peak {rss:.0f} MB"


def test_large_configured_local_memory_costs_what_is_used(tmp_path):
    """64 cores with 128 MiB local memory each (8 GiB configured) run a small program in little memory."""
    prog = "".join(f".core {c}\nsetbw 8, 8\nsldi $r1, 100\nvvadd $r0, $r1, $r2, 64\n" for c in range(64))
    (tmp_path / "p.s").write_text(prog)
    cfg = {"chip_config": {"core_cnt": 64, "core_config": {"local_memory_config": {"memory_size": 1 << 27}}},
           "nnisa": {"noc_latency": 1.0, "noc_energy": 1.0}}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    code, rss, err = peak_rss_mb(["sim", "-t", "pim", "p.s", "--config", "cfg.json", "--mode", "functional"],
                                 tmp_path)
    assert code == 0, err
    assert rss < LIMIT_MB, f"peak {rss:.0f} MB"


def test_max_memory_guard(tmp_path):
    """--max-memory turns a runaway allocation into a one-line error."""
    code, rss, err = peak_rss_mb(["--max-memory", "64M", "run", "-t", "dais",
                                  str(Path(__file__).resolve().parents[2] / "src/nnisa/data/digits_cnn.onnx")],
                                 tmp_path)
    assert code == 2, err
    assert err.strip().splitlines()[-1].startswith("nnisa: error:") and "Traceback" not in err
