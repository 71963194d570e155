"""Holding back Ctrl-C and SIGTERM while a short piece of work must complete.

The CLI turns SIGINT/SIGTERM/SIGHUP into ``KeyboardInterrupt`` so that temporary files are removed
while the stack unwinds.  A few steps must not be cut in the middle (the last rebuild of a sweep's
results table, the clean-up after an interrupt): :func:`deferred_interrupts` holds those signals
back and lets one that arrived meanwhile take effect when the block ends.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

#: the signals the CLI turns into KeyboardInterrupt
INTERRUPTS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Run the body with SIGINT/SIGTERM/SIGHUP held back: a signal arriving meanwhile is recorded
    and raised again (through the handler that was installed) when the body ends.

    The Python-level handlers are swapped rather than the signal mask changed: the kernel may
    hand a process-directed signal to any thread (numba's, a pool's), and Python runs its handler
    in the main thread whichever thread received it.  Main thread only (elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    olds = {}
    for sig in INTERRUPTS:
        old = signal.getsignal(sig)
        if old is not None:  # None: a handler installed from C, left alone
            olds[sig] = signal.signal(sig, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, old in olds.items():
            signal.signal(sig, old)
        if caught:
            signal.raise_signal(caught[0])
