"""Array kernels shared by the float and the integer evaluators: im2col, convolution, pooling.

Every function works on float or int64 arrays; the integer paths stay exact.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..core import fixedpoint as fx

# |partial sums| below this are exact in float64, so integer matmuls may use BLAS.
_EXACT_F64 = float(2**53)


def conv_out_size(size: int, k: int, s: int, p0: int, p1: int, d: int = 1) -> int:
    """Output length of a convolution along one axis (floor mode)."""
    return (size + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def pool_out_size(size: int, k: int, s: int, p0: int, p1: int, d: int = 1, ceil: bool = False) -> int:
    """Output length of a pooling window along one axis (ONNX/PyTorch rule for ``ceil_mode``).

    In ceil mode the last window must still start inside the input or the leading padding.
    """
    span = size + p0 + p1 - ((k - 1) * d + 1)
    if not ceil:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + p0:
        out -= 1
    return out


def _pool_geometry(attrs: dict, h: int, w: int) -> tuple[int, int, tuple[int, int, int, int]]:
    """Output size and the padding (incl. ceil-mode overhang) that makes every window full."""
    kh, kw = attrs["kernel"]
    sh, sw = attrs["strides"]
    pt, pl, pb, pr = attrs["pads"]
    dh, dw = attrs.get("dilations", (1, 1))
    ceil = bool(attrs.get("ceil_mode", False))
    oh = pool_out_size(h, kh, sh, pt, pb, dh, ceil)
    ow = pool_out_size(w, kw, sw, pl, pr, dw, ceil)
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt)
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl)
    return oh, ow, (pt, pl, max(pb, need_h, 0), max(pr, need_w, 0))


def _windows(xp: np.ndarray, kernel, strides, dilations, oh: int, ow: int) -> np.ndarray:
    """View ``(..., OH, OW, kh, kw)`` of the windows of an already padded array."""
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    v = sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(-2, -1))
    return v[..., : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]


def _pad2d(x: np.ndarray, pads, value) -> np.ndarray:
    pt, pl, pb, pr = pads
    if not any(pads):
        return x
    width = [(0, 0)] * (x.ndim - 2) + [(pt, pb), (pl, pr)]
    return np.pad(x, width, mode="constant", constant_values=value)


def im2col(x: np.ndarray, kernel, strides, pads, dilations=(1, 1), group: int = 1) -> np.ndarray:
    """Patch matrix of a 2-D convolution.

    Parameters
    ----------
    x : numpy.ndarray
        Input ``(N, C, H, W)``.
    kernel, strides, dilations : tuple of int
        ``(kh, kw)``, ``(sh, sw)``, ``(dh, dw)``.
    pads : tuple of int
        ``(top, left, bottom, right)``; padding is zero.
    group : int
        Number of groups; ``C`` must be divisible by it.

    Returns
    -------
    numpy.ndarray
        ``(N, group, OH*OW, K)`` with ``K = (C/group)*kh*kw``; column ``k`` is input channel
        ``k // (kh*kw)`` (within the group), kernel row ``(k // kw) % kh``, column ``k % kw``
        (see :func:`patch_order`).  Row ``r`` is output pixel ``(r // OW, r % OW)``.
    """
    n, c, h, w = x.shape
    kh, kw = kernel
    oh = conv_out_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = conv_out_size(w, kw, strides[1], pads[1], pads[3], dilations[1])
    win = _windows(_pad2d(x, pads, 0), kernel, strides, dilations, oh, ow)  # N,C,OH,OW,kh,kw
    cg = c // group
    win = win.reshape(n, group, cg, oh, ow, kh, kw).transpose(0, 1, 3, 4, 2, 5, 6)
    return win.reshape(n, group, oh * ow, cg * kh * kw)


def patch_order(cg: int, kh: int, kw: int) -> np.ndarray:
    """Rows ``(c, ky, kx)`` giving the meaning of each column of :func:`im2col` (and each row
    of the weight matrix), ``(cg*kh*kw, 3)`` int64."""
    c, ky, kx = np.meshgrid(np.arange(cg), np.arange(kh), np.arange(kw), indexing="ij")
    return np.stack([c.ravel(), ky.ravel(), kx.ravel()], axis=1).astype(np.int64)


def conv_weight_matrix(weight: np.ndarray, group: int) -> np.ndarray:
    """``(M, C/g, kh, kw)`` weights as ``(g, K, M/g)`` matrices matching :func:`im2col`."""
    m = weight.shape[0]
    return weight.reshape(group, m // group, -1).transpose(0, 2, 1)


def int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact integer ``a @ b`` (numpy broadcasting rules) returning int64.

    Uses float64 BLAS when ``K * max|a| * max|b| < 2**53``: every partial sum is then an
    exactly representable integer whatever the summation order, so the result is exact.
    """
    k = a.shape[-1]
    amax = int(np.abs(a).max(initial=0))
    bmax = int(np.abs(b).max(initial=0))
    if k * amax * bmax < _EXACT_F64:
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


def conv2d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, attrs: dict, exact_int: bool = False) -> np.ndarray:
    """2-D convolution ``(N,C,H,W) * (M,C/g,kh,kw) -> (N,M,OH,OW)`` via im2col + matmul.

    With ``exact_int`` the inputs are integers and the result is exact int64.
    """
    n, _, h, w = x.shape
    kh, kw = attrs["kernel"]
    pads, strides, dil, g = attrs["pads"], attrs["strides"], attrs["dilations"], attrs["group"]
    oh = conv_out_size(h, kh, strides[0], pads[0], pads[2], dil[0])
    ow = conv_out_size(w, kw, strides[1], pads[1], pads[3], dil[1])
    cols = im2col(x, (kh, kw), strides, pads, dil, g)  # N,g,P,K
    wm = conv_weight_matrix(weight, g)  # g,K,Mg
    out = int_matmul(cols, wm) if exact_int else np.matmul(cols, wm)  # N,g,P,Mg
    out = out.transpose(0, 1, 3, 2).reshape(n, weight.shape[0], oh, ow)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def maxpool2d(x: np.ndarray, attrs: dict) -> np.ndarray:
    """Max pooling; padding never wins (padded with -inf, or the dtype minimum for ints)."""
    oh, ow, pads = _pool_geometry(attrs, x.shape[2], x.shape[3])
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    win = _windows(_pad2d(x, pads, fill), attrs["kernel"], attrs["strides"], attrs.get("dilations", (1, 1)), oh, ow)
    return win.max(axis=(-2, -1))


def pool_counts(attrs: dict, h: int, w: int) -> np.ndarray:
    """Divisor of AveragePool per output pixel, ``(OH, OW)`` int64.

    Counts the window elements inside the input (``count_include_pad`` false) or inside the
    explicitly padded input (true); the ceil-mode overhang never counts.
    """
    oh, ow, full = _pool_geometry(attrs, h, w)
    pt, pl, pb, pr = attrs["pads"]
    inc = bool(attrs.get("count_include_pad", False))
    mask_h = np.zeros(full[0] + h + full[2], np.int64)
    mask_w = np.zeros(full[1] + w + full[3], np.int64)
    if inc:
        mask_h[: pt + h + pb] = 1
        mask_w[: pl + w + pr] = 1
    else:
        mask_h[pt : pt + h] = 1
        mask_w[pl : pl + w] = 1
    kh, kw = attrs["kernel"]
    sh, sw = attrs["strides"]
    dh, dw = attrs.get("dilations", (1, 1))
    ch = sliding_window_view(mask_h, (kh - 1) * dh + 1)[: (oh - 1) * sh + 1 : sh, ::dh].sum(-1)
    cw = sliding_window_view(mask_w, (kw - 1) * dw + 1)[: (ow - 1) * sw + 1 : sw, ::dw].sum(-1)
    return np.outer(ch, cw)


def window_sum(x: np.ndarray, attrs: dict) -> np.ndarray:
    """Sum over every pooling window (zero padding), ``(N, C, OH, OW)``."""
    oh, ow, pads = _pool_geometry(attrs, x.shape[2], x.shape[3])
    win = _windows(_pad2d(x, pads, 0), attrs["kernel"], attrs["strides"], attrs.get("dilations", (1, 1)), oh, ow)
    return win.sum(axis=(-2, -1))


def avgpool2d(x: np.ndarray, attrs: dict) -> np.ndarray:
    """Float average pooling with the divisor of :func:`pool_counts`."""
    counts = pool_counts(attrs, x.shape[2], x.shape[3])
    return (window_sum(x, attrs) / counts).astype(x.dtype)


# integer division and float rounding of the integer model are the shared fixed-point rules
div_round_away = fx.div_round_away
round_half_away = fx.round_half_away


def ceil_log2(x: float) -> int:
    """Smallest ``e`` with ``2**e >= x`` (``x > 0``)."""
    m, e = math.frexp(x)
    return e - 1 if m == 0.5 else e
