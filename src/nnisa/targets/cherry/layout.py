"""Tensor layouts of the Cherry runtime (spec ``cherry.md`` §5.3): tiled matrices and views.

A device tensor is a batch of matrices (B, R, C) stored as ceil(R/SZ) x ceil(C/SZ) zero-padded
tiles per batch index, row-major.  A *view* says how a model tensor (logical shape) maps to such
a batch of matrices:

* ``{"kind": "plain", "shape": S, "mat": [B, R, C]}``: logical.reshape(B, R, C);
* ``{"kind": "nhwc", "shape": [N, C, H, W]}``: channels-last rows, matrix (1, N·H·W, C).
"""

from __future__ import annotations

import numpy as np

from ...frontend.kernels import _pad2d, _pool_geometry, _windows, conv_out_size, im2col


def tiles_of(rows: int, cols: int, sz: int) -> tuple[int, int]:
    return -(-rows // sz), -(-cols // sz)


def to_tiles(mat: np.ndarray, sz: int) -> np.ndarray:
    """(B, R, C) → (B·RT·CT, SZ, SZ) tiles, zero-padded."""
    b, r, c = mat.shape
    rt, ct = tiles_of(r, c, sz)
    pad = np.zeros((b, rt * sz, ct * sz), np.float32)
    pad[:, :r, :c] = mat
    return pad.reshape(b, rt, sz, ct, sz).transpose(0, 1, 3, 2, 4).reshape(-1, sz, sz)


def from_tiles(tiles: np.ndarray, b: int, r: int, c: int, sz: int) -> np.ndarray:
    """(B·RT·CT, SZ, SZ) tiles → (B, R, C)."""
    rt, ct = tiles_of(r, c, sz)
    full = tiles.reshape(b, rt, ct, sz, sz).transpose(0, 1, 3, 2, 4).reshape(b, rt * sz, ct * sz)
    return full[:, :r, :c]


def plain(shape, mat=None) -> dict:
    """A plain view; default matrix: leading axes → batch, last two axes → matrix."""
    shape = [int(d) for d in shape]
    if mat is None:
        if len(shape) == 0:
            mat = [1, 1, 1]
        elif len(shape) == 1:
            mat = [1, 1, shape[0]]
        else:
            mat = [int(np.prod(shape[:-2], dtype=np.int64)), shape[-2], shape[-1]]
    return {"kind": "plain", "shape": shape, "mat": [int(v) for v in mat]}


def nhwc(shape) -> dict:
    return {"kind": "nhwc", "shape": [int(d) for d in shape]}


def mat_shape(view: dict) -> tuple[int, int, int]:
    if view["kind"] == "plain":
        return tuple(view["mat"])
    n, c, h, w = view["shape"]
    return (1, n * h * w, c)


def to_matrix(x: np.ndarray, view: dict) -> np.ndarray:
    """Logical tensor → (B, R, C) matrices of ``view``."""
    x = np.asarray(x, np.float32)
    if view["kind"] == "plain":
        return x.reshape(mat_shape(view))
    n, c, h, w = view["shape"]
    return x.reshape(n, c, h, w).transpose(0, 2, 3, 1).reshape(1, n * h * w, c)


def from_matrix(m: np.ndarray, view: dict) -> np.ndarray:
    """(B, R, C) matrices of ``view`` → logical tensor."""
    if view["kind"] == "plain":
        return m.reshape(view["shape"])
    n, c, h, w = view["shape"]
    return m.reshape(n, h, w, c).transpose(0, 3, 1, 2)


def im2col_matrix(x: np.ndarray, p: dict) -> np.ndarray:
    """(N, C, H, W) → (1, N·E·F, C·kh·kw) patch matrix (zero padding), columns (c, ky, kx)."""
    cols = im2col(x, tuple(p["kernel"]), tuple(p["strides"]), tuple(p["pads"]), tuple(p["dilations"]), 1)
    n, _, pix, k = cols.shape
    return cols.reshape(1, n * pix, k)


def pool_windows(x: np.ndarray, p: dict) -> np.ndarray:
    """(N, C, H, W) → (kh·kw, N·E·F, C): window element (ky, kx) of every output, channels last.

    Padding takes the most negative finite float32 so the device's exact select max never sees
    an infinity (every window holds at least one real element).
    """
    n, c, h, w = x.shape
    attrs = {"kernel": tuple(p["kernel"]), "strides": tuple(p["strides"]), "pads": tuple(p["pads"]),
             "dilations": tuple(p.get("dilations", (1, 1))), "ceil_mode": bool(p.get("ceil_mode", False))}
    oh, ow, pads = _pool_geometry(attrs, h, w)
    xp = _pad2d(x.astype(np.float32), pads, -np.finfo(np.float32).max)
    win = _windows(xp, attrs["kernel"], attrs["strides"], attrs["dilations"], oh, ow)  # N,C,OH,OW,kh,kw
    kk = attrs["kernel"][0] * attrs["kernel"][1]
    return np.ascontiguousarray(win.transpose(4, 5, 0, 2, 3, 1).reshape(kk, n * oh * ow, c))


def conv_out_hw(h: int, w: int, p: dict) -> tuple[int, int]:
    kh, kw = p["kernel"]
    pads, st, dil = p["pads"], p["strides"], p["dilations"]
    return (conv_out_size(h, kh, st[0], pads[0], pads[2], dil[0]),
            conv_out_size(w, kw, st[1], pads[1], pads[3], dil[1]))
