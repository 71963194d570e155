"""Two threads for one large job.

numba kernels (``nogil``, native or JIT), numpy's array loops and zlib/ISA-L release the GIL, so
a job whose work splits into independent pieces can use both cores of a small machine with
threads.  Results keep the pieces' order, so they are the same as one by one (and so is an
error: the first piece's in order is the one raised).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

T = TypeVar("T")
R = TypeVar("R")


def worth_threads(work: int, minimum: int) -> bool:
    """Whether ``work`` units (instructions, words, bytes) are enough for a second thread: at
    least ``minimum`` of them, and a machine with two cores or more."""
    return work >= minimum and (os.cpu_count() or 1) >= 2


def thread_pool(name: str) -> ThreadPoolExecutor:
    """The two-thread pool one job uses (threads named ``nnisa-<name>``; use it in ``with``)."""
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(2, thread_name_prefix=f"nnisa-{name}")


def map_in_threads(fn: Callable[[T], R], items: Iterable[T], name: str, threaded: bool = True) -> list[R]:
    """``[fn(x) for x in items]``, on two threads when ``threaded``."""
    if not threaded:
        return [fn(x) for x in items]
    with thread_pool(name) as pool:
        return list(pool.map(fn, items))
