"""The compile-time latency estimate the pipelined schedules place their messages with.

:class:`CostModel` follows the unit formulas of the timing model (spec §8.2, §8.5) for one core
in isolation, with the configuration's parameters: local-memory beats for vector operations,
``lmv``/``lldi`` and the element widths in force (``setbw`` is tracked per core), the crossbar
latency of ``mvmul``, global-memory beats for ``ld``/``st`` (no queueing) and the NoC latency for
messages.  It ignores contention, so it is a lower bound; the list schedule only uses it to
order tasks and to place ``send``/``recv`` where both partners are expected to be ready.
"""

from __future__ import annotations

from ..isa import OPCODE, build_isa
from .emit import REC_IBIW as _IBIW, REC_LEN as _LEN, REC_OBIW as _OBIW, pack_row

# per-opcode facts of the ISA table (the timing model's vector-op rules)
_VEC = set(build_isa().opcodes_where("unit", "vector"))
_TWO = set(build_isa().opcodes_where("srcs", 2))
_OBYW = set(build_isa().opcodes_where("obyw_wb"))
_SETBW, _MVMUL, _LD, _ST = OPCODE["setbw"], OPCODE["mvmul"], OPCODE["ld"], OPCODE["st"]
_LMV, _LLDI, _SEND, _RECV = OPCODE["lmv"], OPCODE["lldi"], OPCODE["send"], OPCODE["recv"]
_LEN1 = _LEN + 1
# (records are native-endian: the len field's low byte comes first on the hosts we support)
assert pack_row(0, 0, 0, 0, 0x0102, *[0] * 11)[_LEN:_LEN + 2] == b"\x02\x01"
assert max(OPCODE.values()) < 32     # the row-time memo packs (len, opcode) as len << 5 | opcode


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class CostModel:
    """Per-instruction latency (ns) of a core running alone (see the module docstring)."""

    def __init__(self, cfg=None):
        from ..sim.timing_units import Params
        from ..config import default_config
        cfg = cfg if cfg is not None else default_config(64, preset="conformance")
        prm = Params.from_config(cfg, native=False)
        core = cfg.chip_config.core_config
        lm, gm = core.local_memory_config, cfg.chip_config.global_memory_config
        self.l_dw, self.l_rd, self.l_wr = lm.data_width, lm.read_latency_cycle * lm.period, lm.write_latency_cycle * lm.period
        self.g_dw, self.g_rd, self.g_wr = gm.data_width, gm.read_latency_cycle * gm.period, gm.write_latency_cycle * gm.period
        self.vw, self.vlat = core.vector_width, core.vector_latency_cycle
        self.mvm = prm.mvm_ps(8) / 1000 + self.lr(prm.rows * 8) + 30
        self.bw = cfg.chip_config.network_config.bus_width
        self.noc = 15.0          # typical per-flit latency (ns) of a mesh hop sequence
        self.widths: dict[int, tuple[int, int]] = {}
        self._messages: dict[int, float] = {}   # bytes → message time (memo)
        self._steps: dict[tuple[int, int], dict] = {}   # (ib, ob) → len << 5 | op → row time

    def lr(self, nbytes: int) -> float:
        return _cdiv(nbytes, self.l_dw) * self.l_rd

    def lw(self, nbytes: int) -> float:
        return _cdiv(nbytes, self.l_dw) * self.l_wr

    def message(self, nbytes: int) -> float:
        """Time a message of ``nbytes`` keeps its receiver busy (handshake, flits, local write)."""
        t = self._messages.get(nbytes)
        if t is None:
            t = self._messages[nbytes] = (2 * self.noc + _cdiv(nbytes, self.bw) * self.noc + self.lr(nbytes)
                                          + self.lw(nbytes))
        return t

    def run(self, core: int, rows, t0: float, times: list[float]) -> float:
        """Estimated end of ``rows`` (instruction records, :func:`~.emit.pack_row`) on ``core``
        starting at ``t0``; appends every row's end time to ``times``."""
        ib, ob = self.widths.get(core, (8, 8))
        t = t0
        append = times.append
        # a row's increment depends only on (opcode, len) and the current widths: memoised
        # (the same float expression, so the sums are unchanged).  The key is the record's
        # opcode byte and the two low bytes of its len field (len <= 2047: 11 bits).
        steps = self._steps.get((ib, ob))
        if steps is None:
            steps = self._steps[(ib, ob)] = {}
        get = steps.get
        for r in rows:
            op = r[0]
            if op != _SETBW:
                key = (r[_LEN] | r[_LEN1] << 8) << 5 | op        # opcodes are < 32
                dt = get(key)
                if dt is None:
                    dt = steps[key] = self._step(op, key >> 5, ib, ob)
                t += dt
            else:
                ib, ob = r[_IBIW], r[_OBIW]
                steps = self._steps.get((ib, ob))
                if steps is None:
                    steps = self._steps[(ib, ob)] = {}
                get = steps.get
                t += 1
            append(t)
        self.widths[core] = (ib, ob)
        return t

    def _step(self, op: int, n: int, ib: int, ob: int) -> float:
        """Time of one row (opcode ``op``, len field ``n``) under widths ``ib``/``ob``."""
        l_dw, l_rd, l_wr, g_dw = self.l_dw, self.l_rd, self.l_wr, self.g_dw
        vw, vlat, noc, bw = self.vw, self.vlat, self.noc, self.bw
        if op in _VEC:
            iby, oby = -(-ib // 8), -(-ob // 8)
            wb = n * (oby if op in _OBYW else iby)
            return ((2 if op in _TWO else 1) * (-(-(n * iby) // l_dw) * l_rd) + -(-n // vw) * vlat
                    + -(-wb // l_dw) * l_wr + 2)
        if op == _MVMUL:
            return self.mvm + 3
        if op == _LMV:
            k = -(-n // l_dw)
            return k * l_rd + k * l_wr + 2
        if op == _LLDI:
            return -(-n // l_dw) * l_wr + 2
        if op == _LD:
            return noc + -(-n // g_dw) * self.g_rd + -(-n // l_dw) * l_wr + 2
        if op == _ST:
            return -(-n // l_dw) * l_rd + -(-n // bw) * noc + -(-n // g_dw) * self.g_wr + 3
        if op == _SEND or op == _RECV:
            return self.message(n)
        return 1
