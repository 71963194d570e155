"""A run stopped by SIGTERM or SIGINT removes its temporary folder and exits cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

MODEL = Path(__file__).resolve().parents[2] / "src" / "nnisa" / "data" / "digits_cnn.onnx"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_cleans_up_on_signal(tmp_path, sig):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "nnisa", "run", "-t", "pim", str(MODEL), "--samples", "64"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("nnisa-run*")):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "run never created its temporary folder"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(sig)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().endswith("nnisa: interrupted")
    assert not list(tmp_path.glob("nnisa-run*")), "temporary folder left behind"


def test_interrupt_dropped_by_a_c_callback_is_delivered_again():
    """A KeyboardInterrupt raised inside a ctypes callback (numba compiling) cannot propagate:
    the CLI's unraisable hook sends SIGINT again, so the run still stops (a flaky exit 0 before)."""
    import ctypes

    from nnisa import cli
    old_hook, old_int = sys.unraisablehook, signal.getsignal(signal.SIGINT)
    sys.unraisablehook = cli._lost_interrupt_hook
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        callback = ctypes.CFUNCTYPE(None)(lambda: cli._on_signal(signal.SIGTERM, None))
        with pytest.raises(KeyboardInterrupt):
            callback()            # dropped at the C boundary ...
            time.sleep(10)        # ... and delivered again here
    finally:
        sys.unraisablehook = old_hook
        signal.signal(signal.SIGINT, old_int)
