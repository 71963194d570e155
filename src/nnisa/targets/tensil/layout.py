"""Tensil's memory layouts (spec §9.3): tensors as vectors of N lanes.

* 4-D activations NCHW are stored **NHWC**: vector ``((n·H + h)·W + w)·⌈C/N⌉ + c div N``, lane
  ``c mod N``;
* 2-D activations ``(n, F)``: vector ``n·⌈F/N⌉ + f div N``; rank-3 ``(n, S, F)`` (token rows of a
  transformer, time steps) are the 2-D ``(n·S, F)``: one row of ``⌈F/N⌉`` vectors per token; so
  are rank 5 and more (attention heads of a batch-lifted model, ``(1, B, heads, S, d)``): rows of
  the last axis, every leading axis flattened;
* conv weights ``[Cout, Cin, kh, kw]`` are stored **HWCCo** with Cin padded to a multiple of N;
* dense weights ``(in, out)`` **HW** with the rows padded to a multiple of N;
* 1-D constants take ``⌈len/N⌉`` vectors; scalars are replicated into one vector.

The compiler stores each layer's bias block right before its weights (``[bias, W rows]``, as
Tensil's XOR build does), so one LoadWeights of N+1 vectors loads bias and weights together.
"""

from __future__ import annotations

import numpy as np


def blocks(c: int, n: int) -> int:
    """⌈c/n⌉."""
    return -(-c // n)


def nhwc_index(n_i: int, h: int, w: int, c: int, H: int, W: int, C: int, N: int) -> tuple[int, int]:
    """(vector, lane) of element ``(n, c, h, w)`` of an NCHW activation."""
    return ((n_i * H + h) * W + w) * blocks(C, N) + c // N, c % N


def hwcco_index(kh: int, kw: int, ci: int, co: int, Kw: int, Cin: int, Cout: int, N: int) -> tuple[int, int]:
    """(vector, lane) of conv weight ``[co, ci, kh, kw]``."""
    cin_pad = blocks(Cin, N) * N
    return ((kh * Kw + kw) * cin_pad + ci) * blocks(Cout, N) + co // N, co % N


def hw_index(i: int, o: int, Out: int, N: int) -> tuple[int, int]:
    """(vector, lane) of dense weight ``(in i, out o)``."""
    return i * blocks(Out, N) + o // N, o % N


def activation_to_vectors(x: np.ndarray, N: int) -> np.ndarray:
    """An activation (NCHW 4-D, or rows of the last axis) → vectors ``(count, N)`` in Tensil's layout."""
    x = np.asarray(x)
    if x.ndim == 4:
        n, C, H, W = x.shape
        cb = blocks(C, N)
        out = np.zeros((n, H, W, cb * N), x.dtype)
        out[..., :C] = x.transpose(0, 2, 3, 1)
        return out.reshape(-1, N)
    if x.ndim == 2:
        n, F = x.shape
        out = np.zeros((n, blocks(F, N) * N), x.dtype)
        out[:, :F] = x
        return out.reshape(-1, N)
    if x.ndim == 1:
        return activation_to_vectors(x[None, :], N)
    if x.ndim == 3 or x.ndim > 4:
        return activation_to_vectors(x.reshape(-1, x.shape[-1]), N)
    raise ValueError(f"cannot lay out a rank-{x.ndim} tensor")


def vectors_to_activation(v: np.ndarray, shape: tuple[int, ...], N: int) -> np.ndarray:
    """Inverse of :func:`activation_to_vectors`."""
    v = np.asarray(v)
    if len(shape) == 4:
        n, C, H, W = shape
        return v.reshape(n, H, W, -1)[..., :C].transpose(0, 3, 1, 2)
    if len(shape) == 2:
        n, F = shape
        return v.reshape(n, -1)[:, :F]
    if len(shape) == 1:
        return v.reshape(-1)[:shape[0]]
    if len(shape) == 3 or len(shape) > 4:
        return vectors_to_activation(v, (int(np.prod(shape[:-1])), shape[-1]), N).reshape(shape)
    raise ValueError(f"cannot lay out a rank-{len(shape)} tensor")


def vector_count(shape: tuple[int, ...], N: int) -> int:
    """Vectors of an activation of ``shape`` (NCHW, or rows of the last axis)."""
    if len(shape) == 4:
        n, C, H, W = shape
        return n * H * W * blocks(C, N)
    if len(shape) == 2:
        return shape[0] * blocks(shape[1], N)
    if len(shape) == 1:
        return blocks(shape[0], N)
    if len(shape) == 3 or len(shape) > 4:
        return int(np.prod(shape[:-1])) * blocks(shape[-1], N)
    raise ValueError(f"cannot lay out a rank-{len(shape)} tensor")


def element_positions(shape: tuple[int, ...], N: int) -> np.ndarray:
    """``(vector count, N)`` int64: the flat (C-order) index of the element each lane holds, -1 on
    padding lanes (the inverse of the layout, for data movement)."""
    ids = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) + 1
    return activation_to_vectors(ids, N) - 1


def conv_weight_vectors(w: np.ndarray, group: int, N: int) -> np.ndarray:
    """``[Cout, Cin/g, kh, kw]`` → HWCCo vectors ``(Kh·Kw·Cin_pad·⌈Cout/N⌉, N)``; groups become a
    block-diagonal full ``Cin × Cout`` matrix."""
    cout, cg, kh, kw = w.shape
    cin = cg * group
    full = np.zeros((cout, cin, kh, kw), w.dtype)
    og = cout // group
    for g in range(group):
        full[g * og:(g + 1) * og, g * cg:(g + 1) * cg] = w[g * og:(g + 1) * og]
    cin_pad, cob = blocks(cin, N) * N, blocks(cout, N)
    out = np.zeros((kh, kw, cin_pad, cob * N), w.dtype)
    out[:, :, :cin, :cout] = full.transpose(2, 3, 1, 0)
    return out.reshape(-1, N)


def dense_weight_vectors(w: np.ndarray, N: int) -> np.ndarray:
    """``(in, out)`` → HW vectors with the rows padded to a multiple of N."""
    i, o = w.shape
    out = np.zeros((blocks(i, N) * N, blocks(o, N) * N), w.dtype)
    out[:i, :o] = w
    return out.reshape(-1, N)


def flattened_dense_rows(w: np.ndarray, C: int, H: int, W: int, N: int) -> np.ndarray:
    """Dense weights ``(C·H·W, out)`` of a Gemm reading a flattened NCHW tensor, re-ordered to the
    NHWC vectors the tensor actually occupies: row ``(h·W + w)·Cpad + c`` ↔ feature ``c·H·W + h·W + w``."""
    cpad = blocks(C, N) * N
    out = np.zeros((H * W * cpad, w.shape[1]), w.dtype)
    src = w.reshape(C, H, W, -1).transpose(1, 2, 0, 3)  # (H, W, C, out)
    out.reshape(H, W, cpad, -1)[:, :, :C] = src
    return out


def replicate(value: float, N: int) -> np.ndarray:
    """A scalar constant replicated into one vector."""
    return np.full((1, N), value, np.float32)
