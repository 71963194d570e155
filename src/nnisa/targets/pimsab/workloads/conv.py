"""Replay generators of the convolution templates and ResNet-18 (spec §5.2.5, §5.3).

``inputDup`` spreads output channels over tiles and broadcasts the input; ``weightDup`` spreads
output pixels over tiles and broadcasts the weights.  The template is inputDup iff C ≥
crams_per_tile (the artifact's choice for conv2d and every ResNet-18 layer).  All wordline
operands are row 0 (timing-faithful replays, run with ``functional=false``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import precision as P
from ..config import PimsabConfig
from .builder import Builder, Workload
from .params import RESNET18_LAYERS
from .vector import _grow


@dataclass(frozen=True)
class ConvLayer:
    """One convolution: batch N, channels C → M, input H x W, kernel R x S, stride, output E x F."""

    n: int
    c: int
    h: int
    w: int
    m: int
    r: int
    s: int
    stride: int
    e: int
    f: int

    @property
    def padded(self) -> tuple[int, int]:
        """H', W' the templates use: (E−1)·stride + R, (F−1)·stride + S."""
        return (self.e - 1) * self.stride + self.r, (self.f - 1) * self.stride + self.s


#: params/conv2d.param of the artifact (Table 5: input 9x9x256x2, weights 3x3x256x256)
CONV2D = ConvLayer(n=2, c=256, h=9, w=9, m=256, r=3, s=3, stride=1, e=7, f=7)

#: the 17 ResNet-18 conv layers as distinct shapes with their multiplicity (spec §5.3)
RESNET18 = [
    ("conv1", ConvLayer(1, 3, 224, 224, 64, 7, 7, 2, 112, 112), 1),
    ("conv2_x", ConvLayer(1, 64, 56, 56, 64, 3, 3, 1, 56, 56), 4),
    ("conv3_1_1", ConvLayer(1, 64, 56, 56, 128, 3, 3, 2, 28, 28), 1),
    ("conv3_x", ConvLayer(1, 128, 28, 28, 128, 3, 3, 1, 28, 28), 3),
    ("conv4_1_1", ConvLayer(1, 128, 28, 28, 256, 3, 3, 2, 14, 14), 1),
    ("conv4_x", ConvLayer(1, 256, 14, 14, 256, 3, 3, 1, 14, 14), 3),
    ("conv5_1_1", ConvLayer(1, 256, 14, 14, 512, 3, 3, 2, 7, 7), 1),
    ("conv5_x", ConvLayer(1, 512, 7, 7, 512, 3, 3, 1, 7, 7), 3),
]


def template(cfg: PimsabConfig, layer: ConvLayer) -> str:
    return "inputDup" if layer.c >= cfg.crams_per_tile else "weightDup"


def _levels(layer: ConvLayer, cfg: PimsabConfig) -> int:
    """log2(min(C, crams_per_tile)) truncated like the artifact's integer conversion (≥ 1)."""
    return max(1, int(math.log2(min(layer.c, cfg.crams_per_tile))))


def _accumulate(b: Builder, t: int, a: int, kk: int, nap: bool, bits: int) -> tuple[int, int]:
    prod, i32 = P.make("i", 2 * bits), P.make("i", 4 * bits)  # the intN variants accumulate in 4 x N bits
    if nap:
        b(t, "add", rd=0, pd=i32, ra=0, pa=prod, rb=0, pb=i32)
        return a, kk
    a2 = min(a + 1, 4 * bits) if _grow(kk) else a
    b(t, "add", rd=0, pd=P.make("i", a2), ra=0, pa=prod, rb=0, pb=P.make("i", a))
    return a2, kk + 1


def _output_body(b: Builder, t: int, L: ConvLayer, cfg: PimsabConfig, bits: int, nap: bool,
                 local_shuffle: bool) -> None:
    """One output group: for every (c_, r, s) an optional ``cram_local_shf`` of the input, a
    multiply and a growing-width accumulation; then the ``reduce_tile`` over the CRAMs."""
    i8, i16, i32 = P.make("i", bits), P.make("i", 2 * bits), P.make("i", 4 * bits)
    a, kk = 2 * bits, 0
    for _c in range(math.ceil(L.c / cfg.crams_per_tile)):
        for _r in range(L.r):
            for _s in range(L.s):
                if local_shuffle:
                    b(t, "cram_local_shf", rd=0, pd=i8, ra=0, pa=i8, shf=0, shf_en=1)
                b(t, "mult", rd=0, pd=i16, ra=0, pa=i8, rb=0, pb=i8)
                a, kk = _accumulate(b, t, a, kk, nap, bits)
    b(t, "reduce_tile", rd=0, pd=i32, ra=0, pa=i32 if nap else P.make("i", a), levels=_levels(L, cfg))


def conv_input_dup(cfg: PimsabConfig, layer: ConvLayer, nap: bool = False, shuffle_off: bool = False,
                   bits: int = 8) -> Workload:
    """``conv2d_lowLatency_inputDup``: output channels over tiles, the input broadcast to all."""
    T, cols, crams = cfg.tiles_used, cfg.cram_cols, cfg.crams_per_tile
    L = layer
    hp, wp = L.padded
    mp = math.ceil(L.m / T)
    t_inv = min(T, math.ceil(L.m / mp))
    dup_in = cols // mp if cols / mp > 1 else 1
    dup_across = crams // L.c if crams / L.c > 1 else 1
    input_dup = cols // dup_in
    i8 = P.make("i", bits)
    b = Builder(cfg)
    W_ADDR, I_ADDR, O_ADDR = 0, 1 << 36, 1 << 40
    wsize = (L.m * L.c * L.r * L.s) // t_inv
    for t in range(t_inv):
        for off, k in b.chunks(wsize):
            b(t, "load", row=0, addr=W_ADDR + t * wsize + off, size=k, p=i8, tr=1)
    isize = hp * wp * L.c * (input_dup if shuffle_off else 1)
    for n in range(L.n):  # inputs larger than a tile vector (shuffle-off variants) move in pieces
        for off, k in b.chunks(isize):
            b(0, "load", row=0, addr=I_ADDR + n * isize + off, size=k, p=i8, tr=1)
            b.bcast(0, 0, k, i8, set(range(t_inv)))
    for n in range(L.n):
        for m_ in range(math.ceil(L.m / mp)):
            t = m_ % T
            for _m2 in range(math.ceil(mp / cols)):
                for _ef in range(math.ceil(L.e * L.f / (dup_in * dup_across))):
                    _output_body(b, t, L, cfg, bits, nap, local_shuffle=not shuffle_off)
    osize = L.e * L.f * mp
    for t in range(t_inv):
        for off, k in b.chunks(osize):
            b(t, "store", row=0, addr=O_ADDR + t * osize + off, size=k, p=i8, tr=1)
    return Workload("conv2d", b.program(), functional=False,
                    meta=dict(template="inputDup", m_p=mp, t_inv=t_inv, dup_in=dup_in, dup_across=dup_across,
                              input_dup_factor=input_dup))


def conv_weight_dup(cfg: PimsabConfig, layer: ConvLayer, nap: bool = False, bits: int = 8) -> Workload:
    """``conv2d_lowLatency_weightDup``: output pixels over tiles, the weights broadcast to all."""
    T, cols, crams, mw = cfg.tiles_used, cfg.cram_cols, cfg.crams_per_tile, cfg.mesh_width
    L = layer
    i8 = P.make("i", bits)
    efw = math.ceil(L.e * L.f / T)
    t_used = math.ceil(L.e * L.f / efw)
    ef = math.ceil(math.sqrt(L.e * L.f / T)) ** 2
    ep = int(math.isqrt(ef))
    hp, wp = (ep - 1) * L.stride + L.r, (ep - 1) * L.stride + L.s
    n_ef = math.ceil(L.e * L.f / ef)
    dup_in = cols // L.m if cols / L.m > 1 else 1
    dup_across = crams // L.c if crams / L.c > 1 else 1
    b = Builder(cfg)
    W_ADDR, I_ADDR, O_ADDR = 0, 1 << 36, 1 << 40
    wsize = (L.m * L.c * L.r * L.s) // mw
    for q in range(mw):
        for off, k in b.chunks(wsize):
            b(q, "load", row=0, addr=W_ADDR + q * wsize + off, size=k, p=i8, tr=1)
            b.bcast(q, 0, k, i8, set(range(t_used)))
    isize = hp * wp * L.c
    for n in range(L.n):
        for e_ in range(n_ef):
            for off, k in b.chunks(isize):
                b(e_ % T, "load", row=0, addr=I_ADDR + (n * n_ef + e_) * isize + off, size=k, p=i8, tr=1)
    for _m in range(math.ceil(L.m / cols)):
        for e_ in range(n_ef):
            t = e_ % T
            for _e2 in range(math.ceil(ef / (dup_in * dup_across))):
                _output_body(b, t, L, cfg, bits, nap, local_shuffle=False)
    osize = ef * L.m
    for e_ in range(n_ef):
        for off, k in b.chunks(osize):
            b(e_ % T, "store", row=0, addr=O_ADDR + e_ * osize + off, size=k, p=i8, tr=1)
    return Workload("conv_weightdup", b.program(), functional=False,
                    meta=dict(template="weightDup", ef=ef, tiles=n_ef, t_used=t_used, dup_in=dup_in,
                              dup_across=dup_across))


def conv(cfg: PimsabConfig, layer: ConvLayer = CONV2D, nap: bool = False, bits: int = 8) -> Workload:
    """The template the artifact picks for ``layer`` (its ``_shuffleOff`` variant when the
    configuration has no shuffle unit)."""
    if template(cfg, layer) == "inputDup":
        return conv_input_dup(cfg, layer, nap, shuffle_off=not cfg.shuffle, bits=bits)
    return conv_weight_dup(cfg, layer, nap, bits)


def conv2d(cfg: PimsabConfig, nap: bool = False, batch: int | None = None, bits: int = 8) -> Workload:
    """Table 5's conv2d (params/conv2d.param), optionally with another batch size or precision."""
    layer = CONV2D if batch is None else replace(CONV2D, n=batch)
    w = conv(cfg, layer, nap, bits)
    w.name = "conv2d_nap" if nap else "conv2d"
    return w


def resnet18(cfg: PimsabConfig, nap: bool = False, layer: str | None = None) -> Workload:
    """The 17 ResNet-18 conv layers: each distinct shape simulated once, counted with its
    multiplicity; ``layer`` (an artifact layer name such as ``conv3_1_2``) runs that layer alone."""
    if layer is not None and layer not in RESNET18_LAYERS:
        raise ValueError(f"no ResNet-18 layer {layer!r} (layers: {', '.join(RESNET18_LAYERS)})")
    parts, weights = [], []
    for name, shape, count in RESNET18:
        if layer is not None and RESNET18_LAYERS[layer] != name:
            continue
        w = conv(cfg, shape, nap)
        w.name = layer or name
        parts.append(w)
        weights.append(1 if layer else count)
    name = ("resnet18_nap" if nap else "resnet18") + (f"_{layer}" if layer else "")
    return Workload(name, parts[0].program, functional=False, parts=parts, weights=weights,
                    meta=dict(layers=sum(weights)))
