"""JSON forms of DAIS programs (spec §4.2, §4.3): nnisa's lossless columnar JSON and da4ml's
positional ``CombLogic`` JSON (``CombLogic.save`` / ``CombLogic.load`` interop).
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction

import numpy as np

from ....core.jsonsafe import as_int, int_array, loads
from ..errors import DaisFormatError
from ..program import Program, int_bounds, minimal_kif, qint_floats


# --- nnisa JSON ----------------------------------------------------------------------------------

def to_nnisa_json(p: Program) -> str:
    meta = {"qint": p.meta.get("qint"), "latency": p.meta.get("latency"), "cost": p.meta.get("cost"),
            "adder_size": p.meta.get("adder_size", 1), "carry_size": p.meta.get("carry_size", -1)}
    doc = {"format": "dais", "spec_version": "legacy" if p.spec_version is None else p.spec_version,
           "firmware_version": p.firmware_version, "n_in": p.n_in, "n_out": p.n_out,
           "inp_shifts": p.inp_shifts.tolist(), "out_idxs": p.out_idxs.tolist(),
           "out_shifts": p.out_shifts.tolist(), "out_negs": p.out_negs.tolist(),
           "ops": p.ops_array().tolist(), "tables": [t.tolist() for t in p.tables], "meta": meta}
    return json.dumps(doc, separators=(", ", ": "))


def from_nnisa_json(text: str, file=None) -> Program:
    d = loads(text, file, DaisFormatError)
    try:
        if not isinstance(d, dict) or d.get("format") != "dais":
            raise KeyError("format")
        sv = d["spec_version"]
        meta = {} if d.get("meta") is None else d["meta"]
        if not isinstance(meta, dict):
            raise DaisFormatError("meta must be an object", file=file)
        meta = {k: v for k, v in meta.items() if v is not None}
        return Program.from_arrays(spec_version=None if sv == "legacy" else int(sv),
                                   firmware_version=d.get("firmware_version", 0), inp_shifts=d["inp_shifts"],
                                   out_idxs=d["out_idxs"], out_shifts=d["out_shifts"], out_negs=d["out_negs"],
                                   ops=int_array(d["ops"], "ops", file=file, error=DaisFormatError).reshape(-1, 7),
                                   tables=d.get("tables", []), meta=meta, file=file)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, DaisFormatError) or hasattr(exc, "where"):
            raise
        raise DaisFormatError(f"not a nnisa DAIS JSON document ({exc})", file=file) from None


# --- da4ml CombLogic JSON ------------------------------------------------------------------------

def _qint(values, n: int, file) -> tuple[float, float, float]:
    """An op's ``[min, max, step]``: three finite numbers."""
    q = tuple(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan for v in values)
    if len(q) != 3 or not all(math.isfinite(v) for v in q):
        raise DaisFormatError(f"op {n}: qint must be three finite numbers, got {str(values)[:80]}", file=file)
    return q


def _lut_pad(key_qint) -> int:
    qmin, _, qstep = (Fraction(v) for v in key_qint)
    k, i, _ = minimal_kif(*key_qint)
    return round((qmin + Fraction(2) ** i) / qstep) if k else round(qmin / qstep)


def from_da4ml_json(obj, file=None):
    """Parse da4ml ``CombLogic.save`` output (path text or parsed list).

    Returns a :class:`Program`, or a list of programs for a ``Pipeline.save`` file.
    """
    if isinstance(obj, (str, bytes)):
        obj = loads(obj, file, DaisFormatError)
    if isinstance(obj, list) and len(obj) == 1 and isinstance(obj[0], list) and obj[0] and \
            isinstance(obj[0][0], list) and len(obj[0][0]) >= 8:
        return [from_da4ml_json(c, file) for c in obj[0]]
    try:
        shape, inp_shifts, out_idxs, out_shifts, out_negs, ops, carry, adder = obj[:8]
        luts = obj[8] if len(obj) > 8 else None
        tables = [np.asarray(t["table"], dtype=np.int64) for t in (luts or [])]
        qints = [_qint(op[4], n, file) for n, op in enumerate(ops)]
        rows = []
        for n, op in enumerate(ops):
            id0, id1, opc, data = (as_int(v, f"op {n}", file=file, error=DaisFormatError) for v in op[:4])
            k, i, f = minimal_kif(*op[4])
            if opc == 8:
                data = (_lut_pad(qints[id0]) << 32) | (data & 0xFFFFFFFF)
            rows.append((opc, id0, id1, data, k, i, f))
        meta = {"qint": qints, "latency": [float(op[5]) for op in ops], "cost": [float(op[6]) for op in ops],
                "adder_size": adder, "carry_size": carry}
        if luts:
            meta["lut_specs"] = [t["spec"] for t in luts]
        if len(shape) != 2 or len(inp_shifts) != shape[0] or len(out_idxs) != shape[1]:
            raise ValueError("shape does not match the header arrays")
        ops_arr = np.array(rows, dtype=object).reshape(-1, 7)
        ops_arr[:, 3] = [((int(v) + 2**63) % 2**64) - 2**63 for v in ops_arr[:, 3]]
        return Program.from_arrays(spec_version=1, inp_shifts=inp_shifts, out_idxs=out_idxs,
                                   out_shifts=out_shifts, out_negs=[int(bool(v)) for v in out_negs],
                                   ops=ops_arr.astype(np.int64), tables=tables, meta=meta, file=file)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        if hasattr(exc, "where"):
            raise
        raise DaisFormatError(f"not a da4ml CombLogic JSON document ({exc})", file=file) from None


def to_da4ml_json(p: Program) -> str:
    """Render as da4ml ``CombLogic`` JSON (``CombLogic.load`` reads it back to the same binary).

    The readable reference; writers use :func:`.fastrender.to_da4ml_json_fast` (the same text).
    """
    lat = p.meta.get("latency") or [0.0] * p.n_ops
    cost = p.meta.get("cost") or [0.0] * p.n_ops
    stored = p.meta.get("qint")
    qints = [tuple(stored[i]) if stored is not None and stored[i] is not None else qint_floats(k, i_, f)
             for i, (k, i_, f) in enumerate(zip(p.k.tolist(), p.I.tolist(), p.f.tolist()))]
    for a, q in lut_key_qints(p).items():
        qints[a] = q
    lo = p.data_lo()
    # the op rows are most of the document: rendered directly (json.dumps' exact text for these
    # values; float texts memoised by value and sign, so 0.0 and -0.0 keep their own text)
    fnum: dict = {}
    num = lambda v: fnum.get((v, math.copysign(1.0, v))) or fnum.setdefault(  # noqa: E731
        (v, math.copysign(1.0, v)), json.dumps(float(v)))
    ops = Raw(",".join(
        f"[{a},{c},{o},{lo_i if o == 8 else d},[{','.join(num(v) for v in q)}],{num(la)},{num(co)}]"
        for a, c, o, d, lo_i, q, la, co in zip(p.id0.tolist(), p.id1.tolist(), p.opcode.tolist(), p.data.tolist(),
                                               lo.tolist(), qints, lat, cost)))
    return da4ml_document(p, ops)


def lut_key_qints(p: Program) -> dict[int, tuple[float, float, float]]:
    """da4ml ``qint`` of each LUT key op without a stored qint: narrowed to the table's domain."""
    out = {}
    lo, hi = p.data_lo(), p.data_hi()
    for i in np.flatnonzero(p.opcode == 8).tolist():  # narrow LUT keys' qint first (they precede i)
        a = int(p.id0[i])
        if p.meta.get("qint") is None or p.meta["qint"][a] is None:
            ka, ia, fa = int(p.k[a]), int(p.I[a]), int(p.f[a])
            lo_a = int_bounds(ka, ka + ia + fa)[0]
            qmin = Fraction(lo_a + int(hi[i])) * Fraction(2) ** -fa
            qmax = qmin + (len(p.tables[int(lo[i])]) - 1) * Fraction(2) ** -fa
            out[a] = (float(qmin), float(qmax), float(Fraction(2) ** -fa))
            if minimal_kif(*out[a]) != (ka, ia, fa):
                raise DaisFormatError(f"op {i}: LUT key not representable as da4ml JSON")
    return out


def da4ml_document(p: Program, ops: Raw) -> str:
    """The da4ml JSON document around the pre-rendered op rows ``ops``."""
    lo = p.data_lo()
    luts = None
    if p.tables:
        luts = []
        specs = p.meta.get("lut_specs")
        for t, tab in enumerate(p.tables):
            if specs is not None and t < len(specs):
                spec = specs[t]
            else:
                users = np.flatnonzero((p.opcode == 8) & (lo == t))
                f = int(p.f[users[0]]) if len(users) else 0
                sc = 2.0 ** -f
                h = hashlib.sha256(tab.astype("<i4").tobytes() + str(f).encode()).hexdigest()
                spec = {"hash": h, "out_qint": {"min": float(tab.min()) * sc, "max": float(tab.max()) * sc,
                                                "step": sc},
                        "inp_width": int(np.ceil(np.log2(max(len(tab), 1))))}
            luts.append({"spec": spec, "table": tab.tolist()})
    doc = [[p.n_in, p.n_out], p.inp_shifts.tolist(), p.out_idxs.tolist(), p.out_shifts.tolist(),
           [bool(v) for v in p.out_negs.tolist()], ops, p.meta.get("carry_size", -1),
           p.meta.get("adder_size", 1), luts]
    return "[" + ",".join(f"[{x.text}]" if isinstance(x, Raw) else json.dumps(x, separators=(",", ":"))
                          for x in doc) + "]"


class Raw:
    """Pre-rendered JSON array content (see :func:`da4ml_document`)."""

    def __init__(self, text: str):
        self.text = text


def is_da4ml_json(text: str) -> bool:
    return text.lstrip().startswith("[")
