"""Instruction semantics of Cherry (spec ``cherry.md`` §3.2) on register banks.

Two paths: :func:`exec_group` applies one instruction to ``n`` copies at once (banks ``0..n-1``,
every sample of a batched machine, one numpy operation per instruction, the simulator's default) and :func:`exec_copy` is the
readable per-copy reference on 2-D tiles.  Tests run random programs through both.
Registers are ``regs[code, bank]`` (codes INPUT 0, WEIGHTS 1, OUTPUT 2, ACC 3); a bank is ``regs[:, bank]``.
"""

from __future__ import annotations

import numpy as np

from ..isa import OP, code_length
from .element import quantize, quantize_inplace

IN, WT, OUT, ACC = 0, 1, 2, 3
ARITH_BINARY = {OP["add"]: np.add, OP["sub"]: np.subtract, OP["mul"]: np.multiply, OP["div"]: np.divide,
                OP["pow"]: np.power}


def _unary(op: int, x: np.ndarray) -> np.ndarray:
    if op == OP["relu"]:
        return np.maximum(x, np.float32(0))
    if op == OP["exp"]:
        return np.exp(x)
    if op == OP["log"]:
        return np.log2(x)
    return (x > 0).astype(np.float32)  # gtz (NaN > 0 is False)


def _reduce(o: np.ndarray, a: np.ndarray, is_max: bool, acc: int, axis: int, n: int) -> np.ndarray:
    """Reduction of OUTPUT tiles ``o`` (..., SZ, SZ) → the new ACC row 0 (axis 0), column 0
    (axis 1) or element (0, 0) (axis 2).  Elements combine sequentially in index order (row-major
    for axis 2) in float32, then the previous ACC value joins when ``acc`` is set."""
    f = np.maximum if is_max else np.add
    if axis == 0:
        items = [o[..., k, :] for k in range(n)]
        dst = a[..., 0, :]
    elif axis == 1:
        items = [o[..., :, k] for k in range(n)]
        dst = a[..., :, 0]
    else:
        items = [o[..., r, c] for r in range(n) for c in range(n)]
        dst = a[..., 0, 0]
    r = np.array(items[0], dtype=np.float32, copy=True)
    for it in items[1:]:
        r = f(r, it)
    if acc:
        r = f(r, dst)
    return np.asarray(r, dtype=np.float32)


def exec_group(op: int, row: tuple, regs: np.ndarray, n: int, fmt: str, sz: int) -> None:
    """Apply a processing instruction to banks ``0..n-1`` (load/store/mem are done by the machine).

    ``regs[code, bank, ..., SZ, SZ]``: any axes between the bank and the tile (the machine's sample
    axis) are carried along; results are computed into the destination register and rounded there
    (``regs[code, :n]`` is contiguous)."""
    X, W = regs[IN, :n], regs[WT, :n]
    if op == OP["matmul"]:
        A = regs[ACC, :n]
        A += np.matmul(X, W)
        quantize_inplace(A, fmt)
    elif op == OP["mulacc"]:
        A = regs[ACC, :n]
        A += X * W
        quantize_inplace(A, fmt)
    elif op in ARITH_BINARY:
        O = regs[OUT, :n]
        ARITH_BINARY[op](X, W, out=O)
        quantize_inplace(O, fmt)
    elif op in (OP["relu"], OP["exp"], OP["log"], OP["gtz"]):
        O = regs[OUT, :n]
        O[...] = _unary(op, X)
        quantize_inplace(O, fmt)
    elif op in (OP["sum"], OP["max"]):
        acc, axis, count = row[7], row[8], row[9]
        A = regs[ACC, :n]
        r = quantize(_reduce(regs[OUT, :n], A, op == OP["max"], acc, axis, code_length(count, sz)), fmt)
        if axis == 0:
            A[..., 0, :] = r
        elif axis == 1:
            A[..., :, 0] = r
        else:
            A[..., 0, 0] = r
    elif op == OP["copy"]:
        tgt, src, tr = row[10], row[11], row[12]
        v = regs[src, :n].copy()
        regs[tgt, :n] = np.swapaxes(v, -1, -2) if tr else v
    elif op == OP["zero"]:
        regs[row[10], :n] = 0
    else:  # pragma: no cover - the machine dispatches the rest
        raise AssertionError(op)


def exec_copy(op: int, row: tuple, bank: np.ndarray, fmt: str, sz: int) -> None:
    """Reference: apply a processing instruction to one bank ``bank[code]`` (2-D tiles)."""
    X, W = bank[IN], bank[WT]
    if op == OP["matmul"]:
        prod = np.zeros((sz, sz), np.float32)
        prod[...] = X @ W
        bank[ACC] = quantize(bank[ACC] + prod, fmt)
    elif op == OP["mulacc"]:
        bank[ACC] = quantize(bank[ACC] + X * W, fmt)
    elif op in ARITH_BINARY:
        bank[OUT] = quantize(ARITH_BINARY[op](X, W), fmt)
    elif op in (OP["relu"], OP["exp"], OP["log"], OP["gtz"]):
        bank[OUT] = quantize(_unary(op, X), fmt)
    elif op in (OP["sum"], OP["max"]):
        acc, axis, count = row[7], row[8], row[9]
        n = code_length(count, sz)
        O, A = bank[OUT], bank[ACC]
        comb = np.maximum if op == OP["max"] else np.add
        if axis == 2:
            groups = [([(r, c) for r in range(n) for c in range(n)], (0, 0))]
        elif axis == 0:
            groups = [([(r, j) for r in range(n)], (0, j)) for j in range(sz)]
        else:
            groups = [([(i, c) for c in range(n)], (i, 0)) for i in range(sz)]
        for cells, dst in groups:
            r = O[cells[0]]
            for cell in cells[1:]:
                r = comb(r, O[cell])
            if acc:
                r = comb(r, A[dst])
            A[dst] = quantize(np.array([r], np.float32), fmt)[0]
    elif op == OP["copy"]:
        tgt, src, tr = row[10], row[11], row[12]
        v = bank[src].copy()
        bank[tgt] = v.T if tr else v
    elif op == OP["zero"]:
        bank[row[10]] = 0
    else:  # pragma: no cover
        raise AssertionError(op)


#: FLOPs per copy (§4.4, tinygrad cherry's profiler counts)
def flops_per_copy(op: int, sz: int) -> int:
    if op == OP["matmul"]:
        return 2 * sz ** 3
    if op == OP["mulacc"]:
        return 2 * sz * sz
    if op in ARITH_BINARY or op in (OP["relu"], OP["exp"], OP["log"], OP["gtz"], OP["sum"], OP["max"]):
        return sz * sz
    return 0
