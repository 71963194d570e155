"""Convolution with the pixels on the bitlines (the organisation of the inputDup template, spec §5.2.5).

Each CRAM holds one input channel: the padded images of a batch group, row-major and back to back,
run along its bitlines (a flat position ``z``).  An output at ``z`` reads the inputs at
``z + r·W + s``, so the (r, s) window is the resident vector moved left by ``r·W + s`` bitlines
(:mod:`.window`: one load with a halo, then ``shift``); input channels run across the CRAMs and end
with ``reduce_tile``; output channels are spread over tiles (the compiler's search) and the input
reaches every tile through per-column DRAM loads and column trees; the weights are per-CRAM scalars
(scatter ``load_shf``).  Positions z whose row or column is past the output extent are computed
too (they read neighbouring pixels or zeros) and dropped by :meth:`ConvWindows.unpack`.

A stride splits the input into phases (:class:`ConvWindows`).  An image whose flat positions up to
its last output, (E−1)·W + F, plus the halo (R−1)·W + S−1 exceed ``cram_cols`` is cut into chunks
of ``cram_cols`` − halo positions (at least a quarter of a CRAM), each loaded with its own halo.
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
    (a data-parallel loop ``zo`` the search spreads over tiles and CRAMs), each with its own halo.
    ``stride`` > 1: the input is split into stride² phases (x[st·i + a, st·j + b]) on a grid of
    ceil(H/st) x ceil(W/st); each phase is a stride-1 convolution with a ceil(R/st) x ceil(S/st)
    kernel (zero weights where st·r' + a ≥ R), summed over the phases (a reduction loop ``p``)."""

    batch: int
    c: int  # input channels (CRAMs)
    h: int
    w: int  # padded input rows, columns
    m: int  # output channels (tiles)
    r: int
    s: int  # kernel rows, columns
    per: int  # images per bitline vector
    chunk: int = 0
    stride: int = 1
    lanes: int = 0  # CRAMs of the channel loop: c plus zero channels up to a power of two (0: c)

    @property
    def cl(self) -> int:
        """Channels as laid out: a reduction over CRAMs ends with ``reduce_tile``, which halves a power
        of two, so a channel loop pinned to the CRAMs is padded with zero channels to one."""
        return self.lanes or self.c

    @property
    def phases(self) -> int:
        return self.stride * self.stride

    @property
    def grid(self) -> tuple[int, int, int, int]:
        """(rows, columns) of a phase image and (rows, columns) of a phase kernel."""
        st = self.stride
        return -(-self.h // st), -(-self.w // st), -(-self.r // st), -(-self.s // st)

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
        _, wq, rq, sq = self.grid
        return (rq - 1) * wq + sq - 1

    @property
    def positions(self) -> int:
        """Bitline extent: the flat positions of ``per`` images up to the last output of the last one."""
        E, F = self.out_hw
        hq, wq, _, _ = self.grid
        return (self.per - 1) * hq * wq + (E - 1) * wq + F

    @property
    def out_hw(self) -> tuple[int, int]:
        return (self.h - self.r) // self.stride + 1, (self.w - self.s) // self.stride + 1

    def pack(self, x: np.ndarray) -> np.ndarray:
        """(batch, C, H, W) padded input → the ``I`` tensor: (groups, C, span + halo), or
        (groups, C, phases, span + halo) with a stride."""
        x = np.asarray(x)
        if x.shape != (self.batch, self.c, self.h, self.w):
            raise T.CompileError(f"conv input: shape {x.shape}, expected {(self.batch, self.c, self.h, self.w)}")
        st = self.stride
        hq, wq, _, _ = self.grid
        ph = np.zeros((self.batch, self.cl, self.phases, hq, wq), x.dtype)
        for a in range(st):
            for b in range(st):
                part = x[:, :, a::st, b::st]
                ph[:, :self.c, a * st + b, :part.shape[2], :part.shape[3]] = part
        g = ph.reshape(self.groups, self.per, self.cl, self.phases, hq * wq).transpose(0, 2, 3, 1, 4)
        flat = g.reshape(self.groups, self.cl, self.phases, self.per * hq * wq)
        n = self.span + self.halo
        if flat.shape[3] < n:
            flat = np.concatenate([flat, np.zeros(flat.shape[:3] + (n - flat.shape[3],), flat.dtype)], 3)
        flat = flat[..., :n]
        return flat if st > 1 else flat[:, :, 0]

    def pack_weights(self, w: np.ndarray) -> np.ndarray:
        """(C, R, S, M) weights → the ``W`` tensor ((C, phases, R', S', M) with a stride)."""
        w = np.asarray(w)
        if self.cl > self.c:
            w = np.concatenate([w, np.zeros((self.cl - self.c,) + w.shape[1:], w.dtype)])
        st = self.stride
        if st == 1:
            return w
        _, _, rq, sq = self.grid
        out = np.zeros((self.cl, self.phases, rq, sq, self.m), w.dtype)
        for a in range(st):
            for b in range(st):
                part = w[:, a::st, b::st, :]
                out[:, a * st + b, :part.shape[1], :part.shape[2]] = part
        return out

    def unpack(self, o: np.ndarray) -> np.ndarray:
        """The ``O`` tensor (groups, M, positions) or (groups, M, chunks, chunk) → (batch, M, E, F)."""
        E, F = self.out_hw
        hq, wq, _, _ = self.grid
        o = np.asarray(o)
        o = o.reshape(o.shape[:2] + (-1,))[:, :, :self.positions]
        o = np.concatenate([o, np.zeros(o.shape[:2] + (self.per * hq * wq - self.positions,), o.dtype)], 2)
        o = o.reshape(self.groups, self.m, self.per, hq, wq)[..., :E, :F]
        return o.transpose(0, 2, 1, 3, 4).reshape(self.batch, self.m, E, F)


def plan(batch: int, c: int, h: int, w: int, m: int, r: int, s: int, stride: int = 1, cols: int = 256,
         crams: int = 0) -> ConvWindows | None:
    """The shapes with the most images per bitline vector (a divisor of the batch), else one image cut
    into chunks; None when the organisation does not apply (a halo over 3/4 of a CRAM).  With a
    stride and ``crams`` given, the channels (pinned to the CRAMs by :func:`schedule`) are padded to
    a power of two when that still fits a tile."""
    if r > h or s > w or stride < 1:
        return None
    lanes = 1 << (c - 1).bit_length()
    lanes = lanes if stride > 1 and lanes != c and lanes <= crams else 0
    fits = [k for k in range(1, batch + 1) if batch % k == 0 and
            (cw := ConvWindows(batch, c, h, w, m, r, s, k, 0, stride)).positions + cw.halo <= cols]
    if fits:
        return ConvWindows(batch, c, h, w, m, r, s, max(fits), 0, stride, lanes)
    chunk = cols - ConvWindows(batch, c, h, w, m, r, s, 1, 0, stride).halo
    return ConvWindows(batch, c, h, w, m, r, s, 1, chunk, stride, lanes) if chunk >= cols // 4 else None


def schedule(cw: ConvWindows, in_type: T.DType, w_type: T.DType, acc: int = 32, name: str = "O",
             prefix: str = "", crams: int = 0) -> T.Schedule:
    """O[g, m, (zo,) z] = Σ_{c,(p,)r,s} I[g, c, (p,) (zo·chunk +) z + r·W + s]·W[c, (p,) r, s, m], loops
    ordered g, zo, p, r, s, m | z (bitlines), c so the window loops (r, s) are the innermost loops the
    input's reloads depend on.  The window loops are pinned serial and, with a stride and C ≤
    ``crams``, c to the CRAMs: the occupancy-first search would otherwise spread the window loops over
    the CRAMs, which loads the input once per CRAM group instead of sliding it (measured slower)."""
    _, wq, rq, sq = cw.grid
    st = cw.stride > 1
    I = T.tensor((cw.groups, cw.cl) + ((cw.phases,) if st else ()) + (cw.span + cw.halo,), in_type, prefix + "I")
    Wt = T.tensor((cw.cl,) + ((cw.phases,) if st else ()) + (rq, sq, cw.m), w_type, prefix + "W", const=True)
    g, mm = T.loop(cw.groups, "g"), T.loop(cw.m, "m")
    cc, rr, ss = T.red_loop(cw.cl, "c"), T.red_loop(rq, "r"), T.red_loop(sq, "s")
    pp = (T.red_loop(cw.phases, "p"),) if st else ()
    red = (cc,) + pp + (rr, ss)
    if cw.chunk:
        zo, z = T.loop(cw.chunks, "zo"), T.loop(cw.chunk, "z")
        pos, axes, outer = zo * cw.chunk + z, (g, mm, zo, z), (g, zo)
    else:
        z = T.loop(cw.positions, "z")
        pos, axes, outer = z + 0, (g, mm, z), (g,)
    body = T.i(acc)(I[(g, cc) + pp + (pos + rr * wq + ss,)]) * T.i(acc)(Wt[(cc,) + pp + (rr, ss, mm)])
    sch = T.schedule(T.compute(name, axes, T.sum(body, *red)))
    sch.reorder(*outer, *pp, rr, ss, mm, z, cc)
    sch.bitlines(z)
    sch.serial(rr, ss)  # the window loops slide; on CRAMs they would reload the input per CRAM group
    if st and cw.cl <= crams and cw.cl & (cw.cl - 1) == 0:
        sch.arrays(cc)
    return sch


__all__ = ["ConvWindows", "plan", "schedule"]
