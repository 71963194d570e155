"""The fast bulk decoder (core/bulk_decode.py) against the readable reference
(ISA.decode_array_reference): same rows, same errors, on random words of every ISA that decodes
through ISA.decode_array, with blocks small enough that every path (dense groups, sparse sets,
several blocks) runs."""

import contextlib
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnisa.core import bulk_decode
from nnisa.core.bitfields import Field, Format
from nnisa.core.errors import DecodeError
from nnisa.core.isa import ISA, InstrSpec
from nnisa.targets.cherry.isa import cherry_isa
from nnisa.targets.pim.formats import nnpi
from nnisa.targets.pim.isa import build_isa


def odd_isa():
    """A made-up 64-bit ISA with the corners: opcode in the top bits and opcode 0 unknown, a
    column at two layouts, a signed field in the middle, a 64-bit-top unsigned field, lo = 0."""
    op = Field("op", 63, 60)
    cols = [("op", "i2"), ("a", "i8"), ("b", "i4"), ("c", "u2")]
    a_lo, a_mid = Field("a", 11, 0, signed=True), Field("a", 40, 20)
    b_s, b_top = Field("b", 19, 12, signed=True), Field("b", 59, 41)
    c = Field("c", 55, 48)
    fmt = lambda o, *fs: Format(64, ((op, o),), fs)  # noqa: E731
    return ISA("odd", 64, op, cols, [
        InstrSpec("p", 1, fmt(1, a_lo, b_s)), InstrSpec("q", 2, fmt(2, a_mid, b_top)),
        InstrSpec("r", 3, fmt(3, a_mid, c)), InstrSpec("s", 5, fmt(5)), InstrSpec("t", 15, fmt(15, a_lo, c)),
    ])


ISAS = {
    "pim64": build_isa(64, False), "pim64x": build_isa(64, True), "pim32": build_isa(32, False),
    "pim32x": build_isa(32, True), "pim64-compat": build_isa(64, False, pimsim_compat=True),
    "pim64-odd": build_isa(64, False, odd_pairs=True), "cherry4": cherry_isa(4), "cherry32": cherry_isa(32),
    "odd": odd_isa(),
}


def _words(isa, rng, n, p_bad):
    """Random words: mostly valid (a known opcode, random bits in its fields), some with random
    reserved bits, some fully random (unknown opcodes)."""
    specs = list(isa.instrs)
    bits = isa.word_bits
    out = []
    for _ in range(n):
        s = specs[rng.integers(len(specs))]
        w = s.format.const_value | (int(rng.integers(0, 2 ** 63)) * 2 + int(rng.integers(2))) & s.format.used_mask \
            & ~s.format.const_mask
        r = rng.random()
        if r < p_bad / 2:
            w |= int(rng.integers(0, 2 ** 63)) & s.format.reserved_mask
        elif r < p_bad:
            w = int(rng.integers(0, 2 ** 63)) * 2 + int(rng.integers(2))
        out.append(w & ((1 << bits) - 1))
    return np.array(out, dtype=isa.word_dtype)


def _outcome(fn):
    try:
        return "rows", fn().tobytes()
    except DecodeError as exc:
        return "error", str(exc)


@pytest.fixture(params=[(5, 7, 1 / 8), (64, 3, 0.0), (1000, 1, 1.1), (7, 5, 1 / 8, "threads"),
                        "kernel", "kernel-threads"],
                ids=["tiny-blocks", "all-dense", "all-sparse", "two-threads", "kernel", "kernel-threads"])
def blocks(request, monkeypatch):
    """The numpy blocks (sizes and shares that make every path run) or the compiled kernel (on
    the JIT; tests/targets/pim/test_native_kernels.py compares the native module with it)."""
    p = request.param
    if isinstance(p, str):
        if p.endswith("threads"):
            monkeypatch.setattr(bulk_decode, "PARALLEL_MIN", 1)
        with _kernel(True):
            yield
        return
    monkeypatch.setattr(bulk_decode, "KERNEL", False)
    if len(p) == 4:  # the blocks shared out between two threads
        monkeypatch.setattr(bulk_decode, "PARALLEL_MIN", 1)
    block, step, share = p[:3]
    monkeypatch.setattr(bulk_decode, "BLOCK", block)
    monkeypatch.setattr(bulk_decode, "SAMPLE_STEP", step)
    monkeypatch.setattr(bulk_decode, "SPARSE_SHARE", share)
    yield


@contextlib.contextmanager
def _kernel(on: bool):
    """Decode with the compiled kernel (forced onto the JIT) or with the numpy blocks."""
    from nnisa.core import native

    old = bulk_decode.KERNEL
    bulk_decode.KERNEL = on
    native.use_jit(on)
    try:
        yield
    finally:
        native.use_jit(False)
        bulk_decode.KERNEL = old


@pytest.mark.parametrize("name", sorted(ISAS))
@pytest.mark.parametrize("p_bad", [0.0, 0.002, 0.05])
def test_fast_matches_reference(name, p_bad, blocks):
    isa = ISAS[name]
    rng = np.random.default_rng(abs(hash((name, p_bad))) % 2 ** 32)
    for trial in range(6):
        words = _words(isa, rng, int(rng.integers(0, 400)), p_bad)
        for lenient in (False, True):
            where = (lambda i: f"core 3, word {i}") if trial % 2 else None
            fast = _outcome(lambda: isa.decode_array(words, lenient=lenient, where=where))
            ref = _outcome(lambda: isa.decode_array_reference(words, lenient=lenient, where=where))
            assert fast == ref, (name, lenient)
            if fast[0] == "rows":
                assert bulk_decode.decode_words(isa, words, lenient) is not None  # the fast path ran


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(ISAS)), st.lists(st.integers(0, 2 ** 64 - 1), max_size=40), st.booleans(),
       st.booleans())
def test_any_words_same_outcome(name, raw, lenient, kernel):
    isa = ISAS[name]
    words = np.array([w & ((1 << isa.word_bits) - 1) for w in raw], dtype=isa.word_dtype)
    with _kernel(kernel):
        assert _outcome(lambda: isa.decode_array(words, lenient=lenient)) == \
            _outcome(lambda: isa.decode_array_reference(words, lenient=lenient))


def test_kernel_only_when_compiled(monkeypatch):
    """In a user's process the kernel runs only from the native module (a JIT compile would cost
    more than the numpy blocks); under use_jit (the warm-up) it runs and so gets built."""
    from nnisa.core import native

    isa, words = ISAS["pim64"], _words(ISAS["pim64"], np.random.default_rng(2), 30, 0.0)
    calls = []
    monkeypatch.setattr(bulk_decode, "_decode_rows", _Spy(bulk_decode._decode_rows, calls))
    monkeypatch.setattr(native, "_JIT_ONLY", [False])
    monkeypatch.setattr(native, "_SEARCH", [])
    monkeypatch.setenv("NNISA_NATIVE", "0")
    native._forget()
    try:
        assert bulk_decode.decode_words(isa, words, False).tobytes() == isa.decode_array_reference(words).tobytes()
        assert calls == []
        native.use_jit()
        assert bulk_decode.decode_words(isa, words, False).tobytes() == isa.decode_array_reference(words).tobytes()
        assert len(calls) == 1
    finally:
        native.use_jit(False)


class _Spy:
    """A kernel stand-in that records its calls (and is what native.use_native is asked about)."""

    def __init__(self, k, calls):
        self.k, self.calls = k, calls

    def native_for(self, args):
        return self.k.native_for(args)

    def __call__(self, *args):
        self.calls.append(len(args))
        return self.k(*args)


def test_input_dtypes_and_shapes():
    isa = ISAS["pim64"]
    words = _words(isa, np.random.default_rng(1), 50, 0.0)
    ref = isa.decode_array_reference(words)
    for w in (words.astype(">u8"), words.astype(np.int64), words.astype(np.uint32)):
        assert isa.decode_array(w).tobytes() == isa.decode_array_reference(w).tobytes()
    assert isa.decode_array(words.astype(">u8")).tobytes() == ref.tobytes()
    small = list(map(int, words[:5] & 0xFFFFFFFF))  # a plain list, as numpy reads it
    assert _outcome(lambda: isa.decode_array(small)) == _outcome(lambda: isa.decode_array_reference(small))
    assert len(isa.decode_array(np.zeros(0, np.uint64))) == 0


def _container(cores: dict[int, list[int]]) -> bytes:
    meta = b"{}"
    parts = [struct.pack("<4sHBBII", b"NNPI", 1, 64, 1, len(cores), len(meta)), meta]
    for c, words in cores.items():
        parts += [struct.pack("<II", c, len(words)), np.array(words, "<u8").tobytes()]
    return b"".join(parts)


def test_nnpi_reports_the_first_bad_core_as_before():
    isa = build_isa(64, True)
    good = isa.encode_array(isa.rows([isa.row("sldi", rd=1, imm=-5), isa.row("setbw", ibiw=8, obiw=8)]))
    ok = [int(w) for w in good]
    prog = nnpi.decode_nnpi(_container({0: ok, 2: ok, 7: ok[:1]}))
    assert {c: len(r) for c, r in prog.cores.items()} == {0: 2, 2: 2, 7: 1}
    assert prog.cores[2].tobytes() == isa.decode_array_reference(good).tobytes()
    bad_op, bad_res = 63, ok[1] | 1 << 40
    with pytest.raises(DecodeError, match=r"core 2, word 1: unknown opcode 63"):
        nnpi.decode_nnpi(_container({0: ok, 2: [ok[0], bad_op], 5: [bad_res]}))
    with pytest.raises(DecodeError, match=r"core 5, word 0 \(setbw\): reserved bits set"):
        nnpi.decode_nnpi(_container({0: ok, 5: [bad_res], 6: [bad_op]}))
    # a bad word before a structural error is reported first, as when cores were decoded one by one
    blob = _container({0: ok, 1: [bad_res]}) + b"\0"
    with pytest.raises(DecodeError, match=r"core 1, word 0 \(setbw\): reserved bits set"):
        nnpi.decode_nnpi(blob)
    with pytest.raises(DecodeError, match="1 trailing bytes"):
        nnpi.decode_nnpi(_container({0: ok, 1: ok}) + b"\0")
    lenient = nnpi.decode_nnpi(_container({0: ok, 5: [bad_res, bad_res]}), lenient=True)
    assert lenient.warnings == ["2 word(s) with non-zero reserved bits (ignored, lenient decoding)"]


def test_zero_word_of_an_unknown_opcode_zero():
    isa = ISAS["odd"]
    for words in (np.zeros(1, np.uint64), np.array([2 << 60, 0], np.uint64)):
        fast = _outcome(lambda: isa.decode_array(words))
        assert fast == _outcome(lambda: isa.decode_array_reference(words)) and "unknown opcode 0" in fast[1]
