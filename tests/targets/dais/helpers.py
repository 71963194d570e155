"""Shared helpers of the DAIS tests: hand-built programs in the spec's Appendix C notation."""

import numpy as np

from nnisa.targets.dais.program import Program

V1_EXAMPLE = [1, 0, 2, 2, 5, 0, 0, 0, 4, 2, 2, 3, 0, 1,
              -1, 0, -1, 0, 0, 1, 7, 0, -1, 1, -1, 0, 0, 1, 7, 0, 1, 1, 1, -2, -1, 1, 8, 2,
              1, 0, 0, -2, -1, 1, 8, 2, 0, 2, 3, 1, 0, 1, 9, 2]
LEGACY_EXAMPLE = [2, 2, 5, 0, 0, 4, 2, 2, 3, 0, 1] + V1_EXAMPLE[14:]
EXAMPLE_IO = [((1, 0), (6, 0)), ((0, 1), (3, -6)), ((-128, 127), (-387, -762)), ((3.7, -2.2), (9, 18)),
              ((200, -300), (-468, 264))]


def prog(ops, n_in, outs, *, inp_shifts=None, out_shifts=None, out_negs=None, tables=(), **kw):
    """Program from Appendix-C records ``(opcode, id0, id1, lo, hi, k, I, f)``."""
    rows = [(o, a, c, (hi << 32) | (lo & 0xFFFFFFFF), k, i, f) for o, a, c, lo, hi, k, i, f in ops]
    n_out = len(outs)
    return Program.from_arrays(inp_shifts=inp_shifts or [0] * n_in, out_idxs=outs,
                               out_shifts=out_shifts or [0] * n_out, out_negs=out_negs or [0] * n_out,
                               ops=np.array(rows, np.int64).reshape(-1, 7), tables=tables, **kw)


def words(p):
    from nnisa.targets.dais.formats.binary import write_binary
    return write_binary(p)


def random_template(rng, K: int, N: int, kif=(1, 4, 2)):
    """A solved conv-style CMVM template: a random ``K×N`` matrix (about 30 % zeros, entries in
    [-64, 64)) on ``K`` inputs of dtype ``kif`` in a scratch builder."""
    from nnisa.targets.dais.compiler import cmvm
    from nnisa.targets.dais.program import ProgramBuilder
    W = rng.integers(-64, 64, (K, N)).astype(float)
    W[rng.random(W.shape) < 0.3] = 0
    scratch = ProgramBuilder(K)
    tmpl = cmvm.CMVMCompiler(scratch, [(scratch.add_op(-1, j, -1, 0, kif), *kif) for j in range(K)])
    tmpl.solve(cmvm._to_int_matrix(W)[0])
    return tmpl
