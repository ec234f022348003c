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

import numpy as np

__all__ = ["Clock", "HOP_S", "reset", "sim_time_at", "current", "UNIT_CODES"]

HOP_S = 0.001                  # one network hop between processes, simulated seconds
SLOTS = 16
UNIT_CODES = {"prefill": 1, "decode": 2, "client": 3, "test": 4}
_FREE, _BUSY, _IDLE = 0, 1, 2
_MAGIC = 0x5044_5349_4D31     # "PDSIM1"
_HEADER = np.dtype([("magic", "<i8"), ("now", "<f8"), ("wall", "<f8"), ("gens", "<i8"),
                    ("rest", "<i8"), ("cp_wall", "<f8")])
_SLOT = np.dtype([("pid", "<i8"), ("gen", "<i8"), ("unit", "<i8"), ("state", "<i8"),
                  ("version", "<i8"), ("next_due", "<f8"), ("port", "<i8"),
                  ("seen", "<i8", (SLOTS,)), ("sent", "<i8", (SLOTS,)), ("recv", "<i8", (SLOTS,))])
_SIZE = _HEADER.itemsize + SLOTS * _SLOT.itemsize
_CP_EVERY_S = 0.05             # wall seconds between checkpoints while the clock moves


def _path(sdir: Path) -> Path:
    return Path(sdir) / "clock.bin"


def _cp_path(sdir: Path) -> Path:
    return Path(sdir) / "checkpoints.log"


def _open(sdir: Path) -> tuple[int, mmap.mmap, np.ndarray, np.ndarray]:
    path = _path(sdir)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    if os.fstat(fd).st_size < _SIZE:
        os.ftruncate(fd, _SIZE)
    mm = mmap.mmap(fd, _SIZE)
    hdr = np.ndarray((1,), dtype=_HEADER, buffer=mm, offset=0)
    slots = np.ndarray((SLOTS,), dtype=_SLOT, buffer=mm, offset=_HEADER.itemsize)
    return fd, mm, hdr, slots


def _checkpoint(sdir: Path, kind: str, wall: float, sim: float) -> None:
    with open(_cp_path(sdir), "a", encoding="utf-8") as fh:
        fh.write(f"{wall:.6f} {sim:.6f} {kind}\n")


def reset(sdir: Path) -> float:
    """A fresh start of the deployment: no participants, the clock at max(previous + 1 s, now)
    rounded up to a whole second. Returns the new simulated time."""
    Path(sdir).mkdir(parents=True, exist_ok=True)
    fd, mm, hdr, slots = _open(Path(sdir))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        prev = float(hdr["now"][0]) if int(hdr["magic"][0]) == _MAGIC else 0.0
        start = float(math.ceil(max(prev + 1.0, time.time())))
        slots[:] = np.zeros(SLOTS, dtype=_SLOT)
        hdr["magic"], hdr["now"], hdr["wall"], hdr["rest"] = _MAGIC, start, time.time(), 1
        _checkpoint(Path(sdir), "start", time.time(), start)
        return start
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        del hdr, slots
        mm.close()
        os.close(fd)


def current(sdir: Path) -> tuple[float, float] | None:
    """(wall, simulated) of the clock's latest move, or None if it never ran here."""
    if not _path(sdir).exists():
        return None
    fd, mm, hdr, slots = _open(Path(sdir))
    try:
        if int(hdr["magic"][0]) != _MAGIC:
            return None
        return float(hdr["wall"][0]), float(hdr["now"][0])
    finally:
        del hdr, slots
        mm.close()
        os.close(fd)


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
        self._fd, self._mm, self._hdr, self._slots = _open(self.sdir)
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

    # --- registration ----------------------------------------------------------------------
    @contextmanager
    def _locked(self):
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _register(self) -> tuple[int, int]:
        with self._locked():
            if int(self._hdr["magic"][0]) != _MAGIC:
                self._hdr["magic"], self._hdr["now"] = _MAGIC, float(math.ceil(time.time()))
                self._hdr["wall"] = time.time()
            self._reap_dead()
            free = [i for i in range(SLOTS) if self._slots[i]["state"] == _FREE]
            if not free:
                raise RuntimeError(f"no free slot in the simulated clock {_path(self.sdir)}")
            i = free[0]
            gen = int(self._hdr["gens"][0]) + 1
            self._hdr["gens"] = gen
            s = self._slots[i]
            s["seen"], s["sent"], s["recv"] = 0, 0, 0
            s["pid"], s["gen"], s["unit"] = os.getpid(), gen, UNIT_CODES[self.unit]
            s["next_due"], s["port"] = math.inf, self._wake.getsockname()[1]
            s["version"] = int(s["version"]) + 2
            s["state"] = _BUSY
        return i, gen

    def _reap_dead(self) -> bool:
        """Free the slots of processes that died without leaving (kill -9, a crash)."""
        freed = False
        for i in range(SLOTS):
            s = self._slots[i]
            if s["state"] != _FREE and not _pid_alive(int(s["pid"])):
                s["state"] = _FREE
                s["pid"] = 0
                freed = True
        return freed

    def close(self) -> None:
        """Leave the clock (the slot is freed; nothing of ours is in flight any more)."""
        if self._mm.closed:
            return
        with self._locked():
            s = self._slots[self.slot]
            if int(s["gen"]) == self.gen:
                s["version"] = int(s["version"]) + 2
                s["state"], s["pid"] = _FREE, 0
        self._try_advance()
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.remove_reader(self._wake.fileno())
            except (ValueError, RuntimeError):
                pass
        self._wake.close()
        self._ping.close()
        del self._hdr, self._slots
        self._mm.close()
        os.close(self._fd)

    # --- time and events -------------------------------------------------------------------
    def now(self) -> float:
        return float(self._hdr["now"][0])

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
        code = UNIT_CODES[unit]
        best = None
        for i in range(SLOTS):
            s = self._slots[i]
            if s["state"] != _FREE and s["unit"] == code and (best is None or s["gen"] > best[1]):
                best = (i, int(s["gen"]))
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
        s = self._slots[self.slot]
        if int(s["gen"]) != self.gen:
            return
        if state == _BUSY and not self._idle:
            return
        s["version"] = int(s["version"]) + 1
        if state == _IDLE:
            s["next_due"] = self._next_due()
            for slot, (gen, snt, rcv) in self._peers.items():
                s["seen"][slot], s["sent"][slot], s["recv"][slot] = gen, snt, rcv
        s["state"] = state
        s["version"] = int(s["version"]) + 1
        self._idle = state == _IDLE

    def idle(self, reap: bool = False) -> None:
        """Called by the event loop when it has nothing ready: publish, then try to move time
        (`reap`: also free the slots of dead processes if the clock looks stuck)."""
        self._publish(_IDLE)
        self._try_advance(reap)

    def busy(self) -> None:
        self._publish(_BUSY)

    def _try_advance(self, reap: bool = False) -> None:
        st = self._slots["state"]
        if (st == _BUSY).any():           # fast path: someone is working, the clock cannot move
            return
        with self._locked():
            a = self._slots.copy()
            live = a["state"] != _FREE
            if not live.any():
                return
            if (a["version"] % 2).any() or (a["state"][live] != _IDLE).any():
                return
            now = float(self._hdr["now"][0])
            due = a["next_due"][live]
            if (due <= now).any():
                self._ping_due(a, now)
                return
            gens = a["gen"]
            seen_ok = a["seen"] == gens[None, :]
            sent = np.where(seen_ok, a["sent"], 0)
            recv = np.where(seen_ok, a["recv"], 0)
            pair = live[:, None] & live[None, :]
            if (sent != recv.T)[pair].any():
                if reap:
                    self._reap_dead()
                return
            if not np.array_equal(a["version"], self._slots["version"]):
                return
            self._move(a, float(due.min()), now)

    def _move(self, a: np.ndarray, nxt: float, now: float) -> None:
        """Set the clock to `nxt` (under the lock), note a checkpoint now and then, wake those due."""
        wall = time.time()
        if math.isinf(nxt):
            if not int(self._hdr["rest"][0]):
                self._hdr["rest"] = 1
                _checkpoint(self.sdir, "rest", wall, now)
            return
        self._hdr["now"], self._hdr["wall"] = nxt, wall
        if int(self._hdr["rest"][0]) or wall - float(self._hdr["cp_wall"][0]) > _CP_EVERY_S:
            self._hdr["rest"], self._hdr["cp_wall"] = 0, wall
            _checkpoint(self.sdir, "active", wall, nxt)
        self._ping_due(a, nxt)

    def _ping_due(self, a: np.ndarray, now: float) -> None:
        for i in np.nonzero((a["state"] != _FREE) & (a["next_due"] <= now))[0]:
            if i == self.slot:
                self._schedule_dispatch()        # no need to wake ourselves through the kernel
                continue
            try:
                self._ping.sendto(b"!", ("127.0.0.1", int(a["port"][i])))
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


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
