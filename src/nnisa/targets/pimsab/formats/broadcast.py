"""The ``tile_bcast`` library routine (spec §3.6): systolic and one-to-many hop lists.

A broadcast from sender tile s to a receiver set R becomes an ordered list of hops (source tile →
destination tile); each hop is a ``tile_tx`` in the source's stream followed by the matching
``tile_rx`` in the destination's stream.  When the receivers scatter a multicast operand
(``shf=k`` without ``bcast``), every hop sends with gather so the data stay correct.
"""

from __future__ import annotations

from ....core.operands import OperandError
from ..config import PimsabConfig
from ..isa import build_isa

ISA = build_isa()


def parse_tile_set(text: str, n_tiles: int) -> set[int]:
    """``t1..t5,t7`` → {1, 2, 3, 4, 5, 7} (inclusive ranges)."""
    out: set[int] = set()
    for part in text.split(","):
        p = part.strip().lower()
        if not p:
            continue
        lo, sep, hi = p.partition("..")
        try:
            a = int(lo.strip().lstrip("t"))
            b = int(hi.strip().lstrip("t")) if sep else a
        except ValueError:
            raise OperandError(f"bad tile range {part.strip()!r} (expected tA..tB or tN)") from None
        if not (lo.strip().startswith("t") and (not sep or hi.strip().startswith("t"))):
            raise OperandError(f"bad tile range {part.strip()!r} (expected tA..tB or tN)")
        if not 0 <= a <= b < n_tiles:
            raise OperandError(f"tile range {part.strip()!r} outside 0..{n_tiles - 1}")
        out.update(range(a, b + 1))
    if not out:
        raise OperandError("empty receiver set")
    return out


def broadcast_hops(cfg: PimsabConfig, sender: int, receivers: set[int], mode: str) -> list[tuple[int, int]]:
    """Ordered (source tile, destination tile) hops of a broadcast (spec §3.6)."""
    W, H = cfg.mesh_width, cfg.mesh_height
    sr, sc = divmod(sender, W)
    R = set(receivers) - {sender}
    hops: list[tuple[int, int]] = []

    def at(r: int, c: int) -> int:
        return r * W + c

    def chain(start: int, cells) -> None:
        """Systolic chain from ``start`` over the receivers among ``cells``, in order."""
        prev = start
        for cell in cells:
            if cell in R:
                hops.append((prev, cell))
                prev = cell

    if mode == "systolic":
        chain(sender, (at(sr, c) for c in range(sc + 1, W)))
        chain(sender, (at(sr, c) for c in range(sc - 1, -1, -1)))
        for c in range(W):
            head = at(sr, c)
            if head == sender or head in R:
                chain(head, (at(r, c) for r in range(sr + 1, H)))
                chain(head, (at(r, c) for r in range(sr - 1, -1, -1)))
    elif mode in ("one_to_many", "one_to_all"):
        for c in range(W):
            if at(sr, c) in R:
                hops.append((sender, at(sr, c)))
        for c in range(W):
            for r in range(H):
                if r != sr and at(r, c) in R:
                    hops.append((at(sr, c), at(r, c)))
    else:
        raise ValueError(f"unknown broadcast mode {mode!r}")
    return hops


def expand_broadcast(cfg: PimsabConfig, sender: int, row: int, size: int, prec: int, receivers: set[int],
                     mode: str, bcast: int = 0, shf: int | None = None) -> list[tuple[int, tuple]]:
    """``(tile, IR row)`` pairs of the ``tile_tx``/``tile_rx`` lines of a broadcast.

    ``bcast``/``shf`` are the receive-side flags; a scatter receive (``shf`` without ``bcast``)
    makes every hop's send a gather.  Shuffled transfers get the transfer size of spec §2.7.6.
    """
    shf_en = 0 if shf is None else 1
    k = 0 if shf is None else shf
    gather = shf_en and not bcast
    if bcast:
        size = cfg.cram_cols
    elif gather:
        size = cfg.crams_per_tile << k
    out: list[tuple[int, tuple]] = []
    for src, dst in broadcast_hops(cfg, sender, receivers, mode):
        common = dict(size=size, src_tile=src, dst_tile=dst, src_row=row, dst_row=row, p=prec)
        out.append((src, ISA.row("tile_tx", shf_en=1 if gather else 0, shf=k if gather else 0, **common)))
        out.append((dst, ISA.row("tile_rx", bcast=bcast, shf_en=shf_en, shf=k, **common)))
    return out
