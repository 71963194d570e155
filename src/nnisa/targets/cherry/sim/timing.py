"""The Cherry cycle model (spec ``cherry.md`` §4): control-unit timing + superscalar queues.

Three unit queues (RAM, LS, AR) indexed by position; position p issues in cycle p.  A push of
type T with n copies inserted at cycle c lands at ``max(done[prev], next_free[T], c + 2)``; the
control unit spends 3 cycles per instruction group and 4 per loop instruction, stalls while a
queue holds more than ``iq_entries - 3`` resident pushes, and the END marker closes the program.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ....core.errors import ConfigError

UNITS = ("ram", "ls", "ar")
UNIT_INDEX = {u: i for i, u in enumerate(UNITS)}


@dataclass
class QueueModel:
    """Cycle model state for one run (programs are timed back to back).

    Parameters
    ----------
    sw, lat, iq_entries, reserve
        Superscalar width, unit latencies (ram, ls, ar, end), queue entries and the reservation rule.
    link
        ``(latency, bytes_per_cycle, tile_bytes)`` for the host-link model, or ``None``.
    record
        Keep every push (unit, position, copies, pc, opcode) for Gantt charts and traces.
    """

    sw: int = 16
    lat: tuple[int, int, int, int] = (4, 3, 10, 1)
    iq_entries: int = 64
    reserve: str = "sw"
    link: tuple[int, int, int] | None = None
    record: bool = False
    offset: int = 0
    busy: list[int] = field(default_factory=lambda: [0, 0, 0])
    pushes: int = 0
    stall_cycles: int = 0
    program_cycles: list[int] = field(default_factory=list)
    events: list[tuple[int, int, int, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.reserve not in ("sw", "copies"):
            raise ConfigError(f"iq_reserve must be sw or copies, not {self.reserve!r}")

    # ---------------------------------------------------------------- one program
    def begin(self) -> None:
        """Dequeue a program: PREPARE in cycles 1-3, first DECODE at cycle 4."""
        self.c = 4
        self.prev = UNIT_INDEX["ls"]
        self.next_free = [0, 0, 0]
        self.done = [0, 0, 0]
        self.length = [0, 0, 0]
        self.resident: list[deque] = [deque(), deque(), deque()]
        self.link_free = 0

    def loop_instruction(self) -> None:
        """DECODE, START_NEW_LOOP/INCREMENT_LOOP, UPDATE_APU, UPDATE_PC."""
        self.c += 4

    def _wait_room(self, c: int) -> int:
        """First cycle >= c at which no queue holds more than iq_entries - 3 resident pushes."""
        limit = self.iq_entries - 3
        start = c
        for q in self.resident:
            while q and q[0] < c:
                q.popleft()
            if len(q) > limit:
                # the oldest len-limit entries must retire: wait past the last of them
                c = max(c, q[len(q) - limit - 1] + 1)
        if c != start:
            for q in self.resident:
                while q and q[0] < c:
                    q.popleft()
            self.stall_cycles += c - start
        return c

    def push(self, unit: int, copies: int, pc: int = -1, op: int = -1) -> int:
        """One INSERT of ``copies`` copies on ``unit``; returns the position of copy 0."""
        c = self._wait_room(self.c + 1)
        pos = max(self.done[self.prev], self.next_free[unit], c + 2)
        if self.link is not None and unit == 0:
            pos = self._link(op, pos, copies, c)
        self.next_free[unit] = pos + (self.sw if self.reserve == "sw" else copies)
        self.done[unit] = pos + self.lat[unit]
        self.prev = unit
        end = pos + copies
        if end > self.length[unit]:
            self.length[unit] = end
        self.resident[unit].append(end - 1)
        self.busy[unit] += copies
        self.pushes += 1
        if self.record:
            self.events.append((unit, self.offset + pos, copies, pc, op))
        self.c = c + 2  # UPDATE_PC, then the next DECODE
        return pos

    def _link(self, op: int, pos: int, copies: int, c: int) -> int:
        latency, bpc, tbytes = self.link
        xfer = -(-tbytes // bpc)
        if op == 20:  # mem_read: prefetch requested when queued; copy t waits for its tile
            for t in range(copies):
                start = max(c, self.link_free)
                self.link_free = start + xfer
                pos = max(pos, start + latency + xfer - t)
        else:  # mem_write: the transfers occupy the link after the copies issue
            for t in range(copies):
                self.link_free = max(pos + t, self.link_free) + xfer
        return pos

    def finish(self) -> int:
        """FINISH and the END marker; returns this program's cycles."""
        f = self._wait_room(self.c)
        end = max([f + 2] + [self.length[u] + self.lat[u] for u in range(3) if self.length[u]])
        if self.link is not None:
            end = max(end, self.link_free)
        cycles = end + 1
        self.program_cycles.append(cycles)
        self.offset += cycles
        return cycles

    @property
    def cycles(self) -> int:
        return sum(self.program_cycles)
