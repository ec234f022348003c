"""Simulated time shared by the processes of one deployment (prefill, decode, repro clients).

Why: on the wall clock a stalled process (CPU starvation, a blocking fsync) turned into simulated
timeouts, aborts and wedges, so a verdict depended on the host's load. Here every mechanism runs on
one virtual clock that only moves when *nothing can happen any more at the current instant*:

- Each process is a participant with a slot in a small shared file (`clock.bin` in the state dir):
  busy/idle, its earliest pending event, and per peer how many messages it sent and received.
- Real messages (HTTP, control and data sockets) carry their simulated send time; the receiver
  counts them and handles each at send time + a modelled hop latency, in a deterministic order
  (by the event's key, never by arrival order). A message in flight shows as sent != received.
- A participant whose event loop has nothing ready publishes "idle". The last one to go idle
  sees every slot idle and every (sender, receiver) pair balanced, and moves the clock to the
  earliest pending event (checked twice under a file lock, seqlock-style), then pings the
  participants due then over UDP.

So a slow host makes pdsim slower, never different: for a given serve file and workload seed the
sequence of events, and the per-session outcomes, are the same idle or loaded. A process that
holds the clock (`hold()`) stops time, which is how tests keep requests in flight.

The clock's origin is a wall time (UTC epoch seconds) so the journal's stamps look like times;
each start of the deployment moves it to max(previous + 1 s, now). `checkpoints.log` records
(wall, simulated) pairs so `wb sim journal --since WALL_TIME` can translate a wall time into the
simulated timeline (see `sim_time_at`).
"""

from __future__ import annotations

import asyncio
import fcntl
import heapq
import itertools
import math
import mmap
import os
import selectors
import socket
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from workbench.processes import pid_alive, process_start


__all__ = ["Clock", "HOP_S", "reset", "sim_time_at", "current", "UNIT_CODES"]

HOP_S = 0.001                  # one network hop between processes, simulated seconds
SLOTS = 16
UNIT_CODES = {"prefill": 1, "decode": 2, "client": 3, "test": 4}
_FREE, _BUSY, _IDLE = 0, 1, 2
_MAGIC = 0x5044_5349_4D31     # "PDSIM1"
# clock.bin is 8-byte words, read as int64 or float64 by position (every access below is a word):
# a header (magic, now, wall, gens, rest, cp_wall), then SLOTS slots of pid, gen, unit, state, version,
# next_due, port and per peer slot seen (its gen), sent and recv. Plain memoryviews, not numpy: the
# event loop of every participant reads and writes these words on each turn.
_H_MAGIC, _H_NOW, _H_WALL, _H_GENS, _H_REST, _H_CP_WALL = range(6)
_PID, _GEN, _UNIT, _STATE, _VERSION, _NEXT_DUE, _PORT = range(7)
_SEEN, _SENT, _RECV = 7, 7 + SLOTS, 7 + 2 * SLOTS
_HEADER_WORDS, _SLOT_WORDS = 6, 7 + 3 * SLOTS
_SIZE = 8 * (_HEADER_WORDS + SLOTS * _SLOT_WORDS)
_BASES = tuple(_HEADER_WORDS + i * _SLOT_WORDS for i in range(SLOTS))
_CP_EVERY_S = 0.05             # wall seconds between checkpoints while the clock moves


def _path(sdir: Path) -> Path:
    return Path(sdir) / "clock.bin"


def _cp_path(sdir: Path) -> Path:
    return Path(sdir) / "checkpoints.log"


class _Words:
    """clock.bin mapped into memory: `q` reads and writes its words as int64, `d` as float64."""

    def __init__(self, sdir: Path) -> None:
        self.fd = os.open(_path(sdir), os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size < _SIZE:
            os.ftruncate(self.fd, _SIZE)
        self.mm = mmap.mmap(self.fd, _SIZE)
        self.q = memoryview(self.mm).cast("q")
        self.d = memoryview(self.mm).cast("d")

    @property
    def closed(self) -> bool:
        return self.mm.closed

    def snapshot(self) -> tuple[memoryview, memoryview]:
        """A copy of every word at once (int64 view, float64 view)."""
        raw = memoryview(self.mm[:])
        return raw.cast("q"), raw.cast("d")

    @contextmanager
    def locked(self):
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self.q.release()
        self.d.release()
        self.mm.close()
        os.close(self.fd)


def _checkpoint(sdir: Path, kind: str, wall: float, sim: float) -> None:
    with open(_cp_path(sdir), "a", encoding="utf-8") as fh:
        fh.write(f"{wall:.6f} {sim:.6f} {kind}\n")


def reset(sdir: Path) -> float:
    """A fresh start of the deployment: no participants, the clock at max(previous + 1 s, now)
    rounded up to a whole second. Returns the new simulated time."""
    Path(sdir).mkdir(parents=True, exist_ok=True)
    w = _Words(Path(sdir))
    try:
        with w.locked():
            prev = w.d[_H_NOW] if w.q[_H_MAGIC] == _MAGIC else 0.0
            if not math.isfinite(prev):  # a clock some earlier bug left at nan or inf: a fresh start forgets it
                prev = 0.0
            start = float(math.ceil(max(prev + 1.0, time.time())))
            w.q[_HEADER_WORDS:] = memoryview(bytes(8 * SLOTS * _SLOT_WORDS)).cast("q")
            w.q[_H_MAGIC] = _MAGIC
            w.d[_H_NOW], w.d[_H_WALL] = start, time.time()
            w.q[_H_REST] = 1
            _checkpoint(Path(sdir), "start", time.time(), start)
            return start
    finally:
        w.close()


def current(sdir: Path) -> tuple[float, float] | None:
    """(wall, simulated) of the clock's latest move, or None if it never ran here."""
    if not _path(sdir).exists():
        return None
    w = _Words(Path(sdir))
    try:
        if w.q[_H_MAGIC] != _MAGIC:
            return None
        return w.d[_H_WALL], w.d[_H_NOW]
    finally:
        w.close()


def sim_time_at(sdir: Path, wall: float) -> float:
    """The simulated time the deployment showed at wall time `wall` (epoch seconds).

    Between a start or a rest (nothing pending) and the next move the clock stood still, so a wall
    time there maps just after that instant: lines logged before it are excluded, the next lines
    included. While the clock moved, the mapping is interpolated between checkpoints."""
    cps: list[tuple[float, float, str]] = []
    try:
        for line in _cp_path(sdir).read_text(encoding="utf-8").splitlines():
            w, s, kind = line.split()
            cps.append((float(w), float(s), kind))
    except (OSError, ValueError):
        pass
    cur = current(sdir)
    before = [c for c in cps if c[0] <= wall]
    if not before:
        return wall
    w0, s0, kind = before[-1]
    if kind in ("start", "rest"):
        return s0 + 1e-6
    after = [c for c in cps if c[0] > wall]
    w1, s1 = (after[0][0], after[0][1]) if after else (cur if cur else (w0, s0))
    if w1 <= w0:
        return s1 + 1e-6
    return s0 + (s1 - s0) * min(1.0, (wall - w0) / (w1 - w0))


class _Timer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Clock:
    """One participant: its slot, its event heap, its message counters."""

    def __init__(self, sdir: Path, unit: str) -> None:
        self.sdir = Path(sdir)
        self.unit = unit
        self._w = _Words(self.sdir)
        self._q, self._d = self._w.q, self._w.d
        self._heap: list = []
        self._seq = itertools.count()
        self._peers: dict[int, list[int]] = {}      # slot -> [gen, sent, recv]
        self._holds = 0
        self._idle = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dispatch_pending = False
        self._last_cp = 0.0
        self._wake = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._wake.bind(("127.0.0.1", 0))
        self._wake.setblocking(False)
        self._ping = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.slot, self.gen = self._register()
        self._base = _BASES[self.slot]     # the first word of our slot

    # --- registration ----------------------------------------------------------------------
    def _register(self) -> tuple[int, int]:
        q, d = self._q, self._d
        with self._w.locked():
            if q[_H_MAGIC] != _MAGIC:
                q[_H_MAGIC] = _MAGIC
                d[_H_NOW], d[_H_WALL] = float(math.ceil(time.time())), time.time()
            self._reap_dead()
            free = [i for i, b in enumerate(_BASES) if q[b + _STATE] == _FREE]
            if not free:
                raise RuntimeError(f"no free slot in the simulated clock {_path(self.sdir)}")
            i = free[0]
            gen = q[_H_GENS] + 1
            q[_H_GENS] = gen
            b = _BASES[i]
            q[b + _SEEN:b + _SLOT_WORDS] = memoryview(bytes(8 * 3 * SLOTS)).cast("q")
            q[b + _PID], q[b + _GEN], q[b + _UNIT] = _owner(), gen, UNIT_CODES[self.unit]
            d[b + _NEXT_DUE], q[b + _PORT] = math.inf, self._wake.getsockname()[1]
            q[b + _VERSION] += 2
            q[b + _STATE] = _BUSY
        return i, gen

    def _reap_dead(self) -> bool:
        """Free the slots of processes that died without leaving (kill -9, a crash)."""
        q = self._q
        freed = False
        for b in _BASES:
            if q[b + _STATE] != _FREE and not _owner_alive(q[b + _PID]):
                q[b + _STATE] = _FREE
                q[b + _PID] = 0
                freed = True
        return freed

    def close(self) -> None:
        """Leave the clock (the slot is freed; nothing of ours is in flight any more)."""
        if self._w.closed:
            return
        q, b = self._q, self._base
        with self._w.locked():
            if q[b + _GEN] == self.gen:
                q[b + _VERSION] += 2
                q[b + _STATE], q[b + _PID] = _FREE, 0
        self._try_advance()
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.remove_reader(self._wake.fileno())
            except (ValueError, RuntimeError):
                pass
        self._wake.close()
        self._ping.close()
        del self._q, self._d
        self._w.close()

    # --- time and events -------------------------------------------------------------------
    def now(self) -> float:
        return self._d[_H_NOW]

    def at(self, due: float, key: tuple, callback: Callable[[], Any]) -> _Timer:
        """Run `callback` when the clock reaches `due`; events due together run in key order."""
        t = _Timer()
        heapq.heappush(self._heap, (due, key, next(self._seq), t, callback))
        if due <= self.now():
            self._schedule_dispatch()
        return t

    async def sleep_until(self, due: float, key: tuple = (99,)) -> None:
        fut = asyncio.get_running_loop().create_future()
        self.at(due, key, lambda: fut.done() or fut.set_result(None))
        await fut

    async def sleep(self, seconds: float, key: tuple = (99,)) -> None:
        await self.sleep_until(self.now() + seconds, key)

    async def wait_event(self, event: asyncio.Event, until: float, key: tuple = (98,)) -> bool:
        """Wait for `event` or the simulated time `until`; True if the event is set."""
        if event.is_set():
            return True
        timer = asyncio.get_running_loop().create_future()
        h = self.at(until, key, lambda: timer.done() or timer.set_result(None))
        ev = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait([ev, timer], return_when=asyncio.FIRST_COMPLETED)
        finally:
            h.cancel()
            ev.cancel()
        return event.is_set()

    def _next_due(self) -> float:
        while self._heap and self._heap[0][3].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else math.inf

    def _schedule_dispatch(self) -> None:
        if self._loop is not None and not self._dispatch_pending:
            self._dispatch_pending = True
            self._loop.call_soon(self._dispatch)

    def _dispatch(self) -> None:
        self._dispatch_pending = False
        now = self.now()
        while self._next_due() <= now:
            _, _, _, t, cb = heapq.heappop(self._heap)
            if not t.cancelled:
                cb()

    def _on_wake(self) -> None:
        try:
            while self._wake.recv(64):
                pass
        except (BlockingIOError, OSError):
            pass
        self._schedule_dispatch()

    # --- messages --------------------------------------------------------------------------
    @property
    def src(self) -> str:
        return f"{self.slot}.{self.gen}"

    def peer(self, unit: str) -> str | None:
        """The `slot.gen` of the live participant of a unit (the newest), or None."""
        code, q = UNIT_CODES[unit], self._q
        best = None
        for i, b in enumerate(_BASES):
            if q[b + _STATE] != _FREE and q[b + _UNIT] == code and (best is None or q[b + _GEN] > best[1]):
                best = (i, q[b + _GEN])
        return f"{best[0]}.{best[1]}" if best else None

    def _count(self, peer: str | None, idx: int, n: int) -> None:
        if not peer:
            return
        slot, gen = (int(x) for x in peer.split("."))
        rec = self._peers.get(slot)
        if rec is None or rec[0] != gen:
            rec = self._peers[slot] = [gen, 0, 0]
        rec[idx] += n

    def sent(self, peer: str | None, n: int = 1) -> None:
        self._count(peer, 1, n)

    def unsent(self, peer: str | None) -> None:
        """A send that failed before the peer could read it."""
        self._count(peer, 1, -1)

    def received(self, peer: str | None) -> None:
        self._count(peer, 2, 1)

    # --- busy / idle -----------------------------------------------------------------------
    @contextmanager
    def hold(self):
        """Keep the clock still while the body runs (it counts as busy)."""
        self._holds += 1
        self._publish(_BUSY)
        try:
            yield
        finally:
            self._holds -= 1

    @property
    def holding(self) -> bool:
        return self._holds > 0

    def _publish(self, state: int) -> None:
        q, b = self._q, self._base
        if q[b + _GEN] != self.gen:
            return
        if state == _BUSY and not self._idle:
            return
        q[b + _VERSION] += 1
        if state == _IDLE:
            self._d[b + _NEXT_DUE] = self._next_due()
            for slot, (gen, snt, rcv) in self._peers.items():
                q[b + _SEEN + slot], q[b + _SENT + slot], q[b + _RECV + slot] = gen, snt, rcv
        q[b + _STATE] = state
        q[b + _VERSION] += 1
        self._idle = state == _IDLE

    def idle(self, reap: bool = False) -> None:
        """Called by the event loop when it has nothing ready: publish, then try to move time
        (`reap`: also free the slots of dead processes if the clock looks stuck)."""
        self._publish(_IDLE)
        self._try_advance(reap)

    def busy(self) -> None:
        self._publish(_BUSY)

    def _try_advance(self, reap: bool = False) -> None:
        if _BUSY in self._q[_HEADER_WORDS + _STATE::_SLOT_WORDS].tolist():
            return                        # fast path: someone is working, the clock cannot move
        with self._w.locked():
            q, d = self._w.snapshot()     # the words at one instant; published only if unchanged since
            live = [i for i, b in enumerate(_BASES) if q[b + _STATE] != _FREE]
            if not live:
                return
            if any(q[b + _VERSION] % 2 for b in _BASES) or any(q[_BASES[i] + _STATE] != _IDLE for i in live):
                return
            now = d[_H_NOW]
            due = [d[_BASES[i] + _NEXT_DUE] for i in live]
            if min(due) <= now:
                self._ping_due(q, d, now)
                return
            # Every message between two live participants arrived: what one sent to the other (as
            # counted for that peer's current generation) the other received.
            for i in live:
                bi = _BASES[i]
                for j in live:
                    bj = _BASES[j]
                    sent = q[bi + _SENT + j] if q[bi + _SEEN + j] == q[bj + _GEN] else 0
                    recv = q[bj + _RECV + i] if q[bj + _SEEN + i] == q[bi + _GEN] else 0
                    if sent != recv:
                        if reap:
                            self._reap_dead()
                        return
            versions = self._q[_HEADER_WORDS + _VERSION::_SLOT_WORDS].tolist()
            if versions != q[_HEADER_WORDS + _VERSION::_SLOT_WORDS].tolist():
                return
            self._move(q, d, min(due), now)

    def _move(self, q: memoryview, d: memoryview, nxt: float, now: float) -> None:
        """Set the clock to `nxt` (under the lock), note a checkpoint now and then, wake those due
        (`q`, `d`: the snapshot the move was decided on)."""
        hq, hd = self._q, self._d
        wall = time.time()
        if math.isinf(nxt):
            if not hq[_H_REST]:
                hq[_H_REST] = 1
                _checkpoint(self.sdir, "rest", wall, now)
            return
        hd[_H_NOW], hd[_H_WALL] = nxt, wall
        if hq[_H_REST] or wall - hd[_H_CP_WALL] > _CP_EVERY_S:
            hq[_H_REST], hd[_H_CP_WALL] = 0, wall
            _checkpoint(self.sdir, "active", wall, nxt)
        self._ping_due(q, d, nxt)

    def _ping_due(self, q: memoryview, d: memoryview, now: float) -> None:
        for i, b in enumerate(_BASES):
            if q[b + _STATE] == _FREE or d[b + _NEXT_DUE] > now:
                continue
            if i == self.slot:
                self._schedule_dispatch()        # no need to wake ourselves through the kernel
                continue
            try:
                self._ping.sendto(b"!", ("127.0.0.1", q[b + _PORT]))
            except OSError:
                pass

    # --- event loop ------------------------------------------------------------------------
    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        loop.add_reader(self._wake.fileno(), self._on_wake)
        if self._next_due() <= self.now():
            self._schedule_dispatch()

    def new_loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.SelectorEventLoop(_ClockSelector(self))

    def stamp(self) -> datetime:
        return datetime.fromtimestamp(self.now(), tz=timezone.utc)


class _ClockSelector(selectors.DefaultSelector):
    """The event loop's selector: an empty ready queue means this participant is idle."""

    _WAIT_S = 0.25      # wall backstop: re-check the clock now and then (a peer may have died)

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout=None):
        c = self._clock
        if (timeout is not None and timeout <= 0) or c.holding:
            return super().select(timeout)
        c.idle()
        if c._dispatch_pending:         # we moved the clock to our own next event
            c.busy()
            return super().select(0)
        events = super().select(self._WAIT_S if timeout is None else min(timeout, self._WAIT_S))
        if not events:
            c.idle(reap=True)           # nothing for a while: is a peer dead?
        c.busy()
        return events


# A slot's pid word holds its owner's pid and, above it, the kernel's start time of that process (pid_max is at most
# 2**22; 41 bits of clock ticks last centuries), so that a pid reused by another process is not taken for the owner
# (`workbench.processes.pid_alive`). A word holding a pid alone (no start known) is checked by its pid.
_PID_BITS = 22


def _owner(pid: int | None = None, start: str | None = None) -> int:
    """The pid word of `pid` (this process) started at `start` (read from /proc where not given)."""
    pid = os.getpid() if pid is None else pid
    start = process_start(pid) if start is None else start
    return (int(start) << _PID_BITS | pid) if start and start.isdigit() and int(start) < 1 << 41 else pid


def _owner_alive(word: int) -> bool:
    if word < 1:
        return False
    pid, start = word & ((1 << _PID_BITS) - 1), word >> _PID_BITS
    return pid_alive(pid, str(start) if start else None)
