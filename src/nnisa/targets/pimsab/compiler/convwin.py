"""Convolution with the pixels on the bitlines (the organisation of the inputDup template, spec §5.2.5).

Each CRAM holds one input channel: the padded images of a batch group, row-major and back to back,
run along its bitlines (a flat position ``z``).  An output at ``z`` reads the inputs at
``z + r·W + s``, so the (r, s) window is the resident vector moved left by ``r·W + s`` bitlines
(:mod:`.window`: one load with a halo, then ``shift``); input channels run across the CRAMs and end
with ``reduce_tile``; output channels are spread over tiles (the compiler's search) and the input
reaches every tile through per-column DRAM loads and column trees; the weights are per-CRAM scalars
(scatter ``load_shf``).  Positions z whose row or column is past the output extent are computed
too (they read neighbouring pixels or zeros) and dropped by :meth:`ConvWindows.unpack`.

Needs stride 1; an image whose flat positions up to its last output, (E−1)·W + F, plus the halo
(R−1)·W + S−1 exceed ``cram_cols`` is cut into chunks of ``cram_cols`` − halo positions (at least a
quarter of a CRAM), each loaded with its own halo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import lang as T


@dataclass(frozen=True)
class ConvWindows:
    """Shapes of the pixels-on-bitlines convolution of a (batch, C, H, W) input (already padded)
    with (C, R, S, M) weights; ``per`` images share one bitline vector, ``groups`` = batch / per.
    ``chunk`` > 0: the positions of an image are cut into ``chunks`` pieces of ``chunk`` bitlines
    (a data-parallel loop ``zo`` the search spreads over tiles and CRAMs), each with its own halo."""

    batch: int
    c: int
    h: int
    w: int
    m: int
    r: int
    s: int
    per: int
    chunk: int = 0

    @property
    def chunks(self) -> int:
        return -(-self.positions // self.chunk) if self.chunk else 1

    @property
    def span(self) -> int:
        """Flat positions the ``I`` tensor covers before the halo (whole chunks)."""
        return self.chunks * self.chunk if self.chunk else self.positions

    @property
    def groups(self) -> int:
        return self.batch // self.per

    @property
    def halo(self) -> int:
        return (self.r - 1) * self.w + self.s - 1

    @property
    def positions(self) -> int:
        """Bitline extent: the flat positions of ``per`` images up to the last output of the last one."""
        E, F = self.out_hw
        return (self.per - 1) * self.h * self.w + (E - 1) * self.w + F

    @property
    def out_hw(self) -> tuple[int, int]:
        return self.h - self.r + 1, self.w - self.s + 1

    def pack(self, x: np.ndarray) -> np.ndarray:
        """(batch, C, H, W) padded input → the ``I`` tensor (groups, C, positions + halo)."""
        x = np.asarray(x)
        if x.shape != (self.batch, self.c, self.h, self.w):
            raise T.CompileError(f"conv input: shape {x.shape}, expected {(self.batch, self.c, self.h, self.w)}")
        g = x.reshape(self.groups, self.per, self.c, self.h * self.w).transpose(0, 2, 1, 3)
        flat = g.reshape(self.groups, self.c, self.per * self.h * self.w)
        n = self.span + self.halo
        if flat.shape[2] < n:
            flat = np.concatenate([flat, np.zeros(flat.shape[:2] + (n - flat.shape[2],), flat.dtype)], 2)
        return flat[:, :, :n]

    def unpack(self, o: np.ndarray) -> np.ndarray:
        """The ``O`` tensor (groups, M, positions) or (groups, M, chunks, chunk) → (batch, M, E, F)."""
        E, F = self.out_hw
        o = np.asarray(o)
        o = o.reshape(o.shape[:2] + (-1,))[:, :, :self.positions]
        o = np.concatenate([o, np.zeros(o.shape[:2] + (self.per * self.h * self.w - self.positions,), o.dtype)], 2)
        o = o.reshape(self.groups, self.m, self.per, self.h, self.w)[..., :E, :F]
        return o.transpose(0, 2, 1, 3, 4).reshape(self.batch, self.m, E, F)


def plan(batch: int, c: int, h: int, w: int, m: int, r: int, s: int, stride: int = 1, cols: int = 256
         ) -> ConvWindows | None:
    """The shapes with the most images per bitline vector (a divisor of the batch), else one image cut
    into chunks; None when the organisation does not apply (stride > 1, or a halo over 3/4 of a CRAM)."""
    if stride != 1 or r > h or s > w:
        return None
    fits = [k for k in range(1, batch + 1)
            if batch % k == 0 and (cw := ConvWindows(batch, c, h, w, m, r, s, k)).positions + cw.halo <= cols]
    if fits:
        return ConvWindows(batch, c, h, w, m, r, s, max(fits))
    chunk = cols - ((r - 1) * w + s - 1)
    return ConvWindows(batch, c, h, w, m, r, s, 1, chunk) if chunk >= cols // 4 else None


def schedule(cw: ConvWindows, in_type: T.DType, w_type: T.DType, acc: int = 32, name: str = "O",
             prefix: str = "") -> T.Schedule:
    """O[g, m, z] = Σ_{c,r,s} I[g, c, z + r·W + s]·W[c, r, s, m], loops ordered g, r, s, m | z (bitlines), c
    so the window loops (r, s) are the innermost loops the input's reloads depend on."""
    I = T.tensor((cw.groups, cw.c, cw.span + cw.halo), in_type, prefix + "I")
    Wt = T.tensor((cw.c, cw.r, cw.s, cw.m), w_type, prefix + "W", const=True)
    g, mm = T.loop(cw.groups, "g"), T.loop(cw.m, "m")
    cc, rr, ss = T.red_loop(cw.c, "c"), T.red_loop(cw.r, "r"), T.red_loop(cw.s, "s")
    if not cw.chunk:
        z = T.loop(cw.positions, "z")
        body = T.i(acc)(I[g, cc, z + rr * cw.w + ss]) * T.i(acc)(Wt[cc, rr, ss, mm])
        sch = T.schedule(T.compute(name, (g, mm, z), T.sum(body, cc, rr, ss)))
        sch.reorder(g, rr, ss, mm, z, cc)
    else:
        zo, z = T.loop(cw.chunks, "zo"), T.loop(cw.chunk, "z")
        body = T.i(acc)(I[g, cc, zo * cw.chunk + z + rr * cw.w + ss]) * T.i(acc)(Wt[cc, rr, ss, mm])
        sch = T.schedule(T.compute(name, (g, mm, zo, z), T.sum(body, cc, rr, ss)))
        sch.reorder(g, zo, rr, ss, mm, z, cc)
    sch.bitlines(z)
    return sch


__all__ = ["ConvWindows", "plan", "schedule"]
