"""PIMSAB timing under extreme settings (issue 25): idle cycles are skipped, not stepped; the time
limit answers in seconds; absurd limits are one-line errors; SIGTERM stops a long run promptly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from harness import assert_clean_error, run_cli

from nnisa.targets.pimsab.config import preset
from nnisa.targets.pimsab.formats.text import assemble_text
from nnisa.targets.pimsab.sim.ops import lower
from nnisa.targets.pimsab.sim.timing import run_timing

LOAD_STORE = ".tile 0\nload r0, 0, 256, i8\nstore 0x1000, r0, 256, i8\n"


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_a_long_row_open_is_skipped_not_stepped(engine):
    cfg = preset("base").replace(dram_row_open_latency=10**8)
    tr = run_timing(lower(assemble_text(LOAD_STORE), cfg), cfg, engine=engine)
    assert tr.cycles == 2 * 10**8 + 23        # two row opens of 1e8 cycles
    assert tr.steps < 100                      # ... simulated in a few dozen steps


def test_a_row_open_beyond_the_time_limit_is_exit_4_at_once(tmp_path):
    src = tmp_path / "p.s"
    src.write_text(LOAD_STORE)
    t = time.monotonic()
    res = run_cli(["sim", "-t", "pimsab", str(src), "--mode", "timing", "--config", "base,dram_row_open_latency=3000000000"])
    assert_clean_error(res, 4, "time limit")
    assert time.monotonic() - t < 60


@pytest.mark.parametrize("value", ["100000000000000000000000", "10**23", "-5", "0"])
def test_absurd_max_cycles_is_a_one_line_error(tmp_path, value):
    src = tmp_path / "p.s"
    src.write_text(LOAD_STORE)
    res = run_cli(["sim", "-t", "pimsab", str(src), "--mode", "timing", "-O", f"max_cycles={value}"])
    assert_clean_error(res, 2, "max_cycles")


def test_absurd_row_open_latency_is_a_config_error(tmp_path):
    src = tmp_path / "p.s"
    src.write_text(LOAD_STORE)
    res = run_cli(["sim", "-t", "pimsab", str(src), "--mode", "timing", "--config", "base,dram_row_open_latency=" + "9" * 30])
    assert_clean_error(res, 2, "dram_row_open_latency")


def _waiting_program(n: int = 10_000) -> str:
    """Tile 0 computes (fp32 multiplies, 693 cycles each) and sends to the 119 other tiles, which
    wait for it: millions of cycles in which only a countdown runs."""
    lines = [".config base"]
    sends = 0
    while len(lines) - 1 < n:
        d = 1 + sends % 119
        lines += ["@t0 mult r40, f32, r0, f32, r100, f32", f"@t0 tile_tx t{d}:r0, t0:r0, 256, i8",
                  f"@t{d} tile_rx t{d}:r0, t0:r0, 256, i8"]
        sends += 1
    return "\n".join(lines) + "\n"


def test_ten_thousand_instructions_with_waiting_tiles(tmp_path):
    prog = assemble_text(_waiting_program())
    cfg = preset("base")
    tr = run_timing(lower(prog, cfg), cfg)
    assert tr.cycles > 3333 * 693 and tr.steps < tr.cycles / 20
    src = tmp_path / "p.s"
    src.write_text(_waiting_program())
    res = run_cli(["sim", "-t", "pimsab", str(src), "--mode", "timing", "--json"])
    assert res.code in (0, None) and res.escaped is None, res.err


def test_sigterm_stops_a_long_timing_run(tmp_path):
    """Load streams that keep every DRAM channel busy for millions of cycles (64-bit links): the
    engine returns to Python every chunk of cycles, so SIGTERM ends the run within seconds."""
    src = tmp_path / "long.s"
    src.write_text(".for i in 0..49\n.for t in 0..119\n@t{t} load r0, {i*65536}, all, i8\n"
                   ".endfor\n.endfor\n")
    proc = subprocess.Popen([sys.executable, "-m", "nnisa", "sim", "-t", "pimsab", str(src), "--mode", "timing",
                             "--config", "base,link_bits=64"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=dict(os.environ))
    time.sleep(8)  # imports, assembly and the engine's cache load, then well into the run
    assert proc.poll() is None, "the run ended before the signal: make it longer"
    t = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert time.monotonic() - t < 20
