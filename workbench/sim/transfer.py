"""Prefill -> decode KV transfer over real sockets: the bootstrap thread, the sender, the receiver.

Control plane (decode -> prefill, one TCP connection): length-prefixed JSON messages HELLO
(where decode's data port is), TRANSFER (room, destination pages, token count) and ABORT (room).
Prefill handles them in `bootstrap_thread`, a real thread, as NIXL's prefill does.

Data plane (prefill -> decode, one TCP connection): frames DATA (one page of per-token KV and
index-K rows, addressed to a destination page, written one-sided like an RDMA write), DONE
(room complete) and ABORT_DONE (room cancelled, in-band so nothing of the room can follow it).
The sender paces pages at a fixed total bandwidth and each room at a per-stream bandwidth, on
the simulated clock: bf16's 256 B index-K rows make every transfer longer than fp8's 132 B ones.

Every message and frame carries its simulated send time; the receiver handles it one hop later
in the order it was sent (see `clock`). The bootstrap thread runs in lock-step with prefill's
event loop: the loop hands it each control message when the message is due and waits until the
thread has handled it, so the thread acts at a simulated instant, not whenever the OS runs it.

The wedge (nixl_abort_fix=off): the bootstrap thread has no ABORT handler. The first ABORT
raises inside its loop and the thread exits without a word; the HTTP server stays up and
/health stays 200, but no later TRANSFER is ever handled, so every later request waits in
WaitingForInput until its client gives up. The sender is never told about the aborted room and
keeps writing it to the pages it was given. With the fix, ABORT cancels the room and the sender
answers ABORT_DONE on the data stream.
"""

from __future__ import annotations

import asyncio
import json
import queue
import socket
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from workbench.sim.clock import HOP_S, Clock

__all__ = ["FRAME", "DATA", "DONE", "ABORT_DONE", "RoomTable", "PrefillRoom", "BootstrapServer",
           "Sender", "TransferClient", "encode_msg", "read_messages"]

FRAME = struct.Struct("<BqiiId")         # kind, room, dst page, tokens, payload bytes, due time
DATA, DONE, ABORT_DONE = 1, 2, 3
_LEN = struct.Struct("<I")
PAGE = 64


def encode_msg(obj: dict) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode()
    return _LEN.pack(len(body)) + body


async def read_messages(reader: asyncio.StreamReader):
    """Length-prefixed JSON messages from a stream until it closes."""
    while True:
        try:
            head = await reader.readexactly(_LEN.size)
            (size,) = _LEN.unpack(head)
            body = await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        yield json.loads(body)


@dataclass
class PrefillRoom:
    room: int
    created: float = 0.0
    kv: np.ndarray | None = None          # per-token rows, ready once prefill has run
    idx: np.ndarray | None = None
    dst_pages: list[int] | None = None    # from TRANSFER
    cancelled: bool = False
    next_page: int = 0
    next_at: float = 0.0                  # per-room pacing (one transfer stream per room)


class RoomTable:
    """Rooms known to prefill; a room goes to the sender when it is both computed and registered."""

    def __init__(self, on_ready: Callable[[PrefillRoom], None], *, expire_s: float,
                 now: Callable[[], float]) -> None:
        self._rooms: dict[int, PrefillRoom] = {}
        self._lock = threading.Lock()
        self._on_ready = on_ready
        self.expire_s = expire_s
        self._now = now

    def _get(self, room: int) -> PrefillRoom:
        r = self._rooms.get(room)
        if r is None:
            r = self._rooms[room] = PrefillRoom(room, created=self._now())
        return r

    def _maybe_ready(self, r: PrefillRoom) -> None:
        if r.kv is not None and r.dst_pages is not None and not r.cancelled:
            del self._rooms[r.room]
            self._on_ready(r)

    def computed(self, room: int, kv: np.ndarray, idx: np.ndarray) -> None:
        with self._lock:
            r = self._get(room)
            if r.cancelled:
                self._rooms.pop(room, None)
                return
            r.kv, r.idx = kv, idx
            self._maybe_ready(r)

    def registered(self, room: int, dst_pages: list[int]) -> None:
        with self._lock:
            r = self._get(room)
            r.dst_pages = dst_pages
            self._maybe_ready(r)

    def cancel(self, room: int) -> bool:
        """Drop a room that has not reached the sender; False if it is not here."""
        with self._lock:
            r = self._rooms.get(room)
            if r is None:
                self._rooms[room] = PrefillRoom(room, created=self._now(), cancelled=True)
                return False
            r.cancelled = True
            if r.kv is not None:
                del self._rooms[room]
            return True

    def expire(self) -> int:
        """Forget rooms older than expire_s (a request whose TRANSFER never came); bounded memory."""
        now = self._now()
        with self._lock:
            old = [k for k, r in self._rooms.items() if now - r.created > self.expire_s]
            for k in old:
                del self._rooms[k]
        return len(old)

    def counts(self) -> dict[str, int]:
        with self._lock:
            rs = list(self._rooms.values())
        return {"waiting_for_transfer_msg": sum(1 for r in rs if r.kv is not None),
                "waiting_for_prefill": sum(1 for r in rs if r.kv is None and not r.cancelled)}


class Sender:
    """Ships ready rooms page by page over the data connection to decode: one page on the link
    at a time (`link_bps`), each room at most at `room_bps`, ready rooms in turn."""

    def __init__(self, log, clock: Clock, *, link_bps: float, room_bps: float) -> None:
        self.log = log
        self.clock = clock
        self.link_bps = link_bps
        self.room_bps = room_bps
        self._active: OrderedDict[int, PrefillRoom] = OrderedDict()
        self._cancel: list[int] = []
        self._sock: socket.socket | None = None
        self.peer: str | None = None          # decode's clock id, from HELLO
        self._link_free = 0.0
        self._tick = None
        self.sent_rooms = 0

    def connect(self, port: int, peer: str | None) -> None:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        old, self._sock, self.peer = self._sock, s, peer
        self._active.clear()                     # a new decode knows none of the old rooms
        if old is not None:
            old.close()

    def add(self, room: PrefillRoom) -> None:
        self._active[room.room] = room
        self._kick()

    def cancel(self, room: int) -> None:
        self._cancel.append(room)
        self._kick()

    def stop(self) -> None:
        if self._tick is not None:
            self._tick.cancel()

    @property
    def active(self) -> int:
        return len(self._active)

    def _kick(self) -> None:
        now = self.clock.now()
        if self._cancel:
            due = now
        elif self._active:
            due = max(self._link_free, min(r.next_at for r in self._active.values()), now)
        else:
            return
        if self._tick is not None:
            self._tick.cancel()
        self._tick = self.clock.at(due, (20,), self._run)

    def _run(self) -> None:
        self._tick = None
        now = self.clock.now()
        cancels, self._cancel = self._cancel, []
        try:
            for room in cancels:
                self._active.pop(room, None)
                self._send(FRAME.pack(ABORT_DONE, room, -1, 0, 0, now + HOP_S))
            if now >= self._link_free:
                ready = [r for r in self._active.values() if r.next_at <= now]
                if ready:
                    r = ready[0]
                    self._active.move_to_end(r.room)      # round robin
                    self._send_page(r, now)
        except OSError as exc:
            self.log.warning("sender: data connection lost (%s); dropping %d rooms", exc,
                             len(self._active))
            self._sock = None
            self._active.clear()
        self._kick()

    def _send(self, data: bytes) -> None:
        if self._sock is None:
            raise OSError("no data connection to decode")
        self._sock.sendall(data)
        self.clock.sent(self.peer)

    def _send_page(self, r: PrefillRoom, now: float) -> None:
        n = r.kv.shape[0]
        start = r.next_page * PAGE
        if start >= n:
            self._send(FRAME.pack(DONE, r.room, -1, n, 0, now + HOP_S))
            self._active.pop(r.room, None)
            self.sent_rooms += 1
            return
        end = min(n, start + PAGE)
        payload = r.kv[start:end].tobytes() + r.idx[start:end].tobytes()
        # Due at decode when its last byte is through the link (the link's time covers the hop),
        # which is also when the next page may start: one instant serves both ends.
        done_at = now + len(payload) / self.link_bps
        self._send(FRAME.pack(DATA, r.room, r.dst_pages[r.next_page], end - start, len(payload),
                              done_at) + payload)
        r.next_page += 1
        r.next_at = max(r.next_at, now) + len(payload) / self.room_bps
        self._link_free = done_at


class BootstrapServer:
    """Listens for decode's control connection; `bootstrap_thread` handles its messages."""

    def __init__(self, log, clock: Clock, rooms: RoomTable, sender: Sender, *,
                 abort_fix: bool) -> None:
        self.log = log
        self.clock = clock
        self.rooms = rooms
        self.sender = sender
        self.abort_fix = abort_fix
        self.port = 0
        self.alive = False
        self.died_at: float | None = None
        self.messages = 0
        self._inbox: queue.Queue = queue.Queue()
        self._seq = 0
        self.thread = threading.Thread(target=self._thread_main, name="bootstrap_thread",
                                       daemon=True)
        self._handlers = {"HELLO": self._on_hello, "TRANSFER": self._on_transfer}
        if abort_fix:
            # The fix (ported from the mooncake backend): ABORT has a handler.
            self._handlers["ABORT"] = self._on_abort

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_conn, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self.alive = True
        self.thread.start()

    def stop(self) -> None:
        self._inbox.put(None)

    async def _on_conn(self, reader: asyncio.StreamReader, writer) -> None:
        async for msg in read_messages(reader):
            self.clock.received(msg.get("src"))
            self._seq += 1
            self.clock.at(float(msg.get("vt", self.clock.now())) + HOP_S, (10, self._seq),
                          lambda m=msg: self._deliver(m))

    def _deliver(self, msg: dict) -> None:
        """Hand the message to the thread and wait until it is handled (lock-step). A dead thread
        reads nothing: the message stays in its inbox, as unread bytes stayed in the seed's."""
        if not self.thread.is_alive():
            self._inbox.put((msg, None))
            return
        done = threading.Event()
        self._inbox.put((msg, done))
        while not done.wait(0.5):
            if not self.thread.is_alive():
                return

    def _thread_main(self) -> None:
        try:
            while True:
                item = self._inbox.get()
                if item is None:
                    return
                msg, done = item
                try:
                    self.messages += 1
                    self._handlers[msg["type"]](msg)     # KeyError on ABORT without the fix
                finally:
                    if done is not None:
                        done.set()
        except Exception:  # noqa: BLE001
            # The seed's bootstrap_thread had no handler for decode's ABORT: the exception ended
            # the thread and nothing was logged. We keep that silence; /debug/state shows it.
            pass
        finally:
            self.alive = False
            self.died_at = self.clock.now()

    def _on_hello(self, msg: dict) -> None:
        self.log.info("bootstrap: decode connected (data port %d)", msg["data_port"])
        self.sender.connect(int(msg["data_port"]), msg.get("src"))

    def _on_transfer(self, msg: dict) -> None:
        self.rooms.registered(int(msg["room"]), [int(p) for p in msg["pages"]])

    def _on_abort(self, msg: dict) -> None:
        room = int(msg["room"])
        self.rooms.cancel(room)
        self.sender.cancel(room)          # the sender stops the room and answers ABORT_DONE
        self.log.info("bootstrap: ABORT room=%d handled (%s)", room, msg.get("reason", ""))


class TransferClient:
    """Decode's side: the control connection to prefill's bootstrap port and the data receiver."""

    def __init__(self, log, clock: Clock, on_frame: Callable[[int, int, int, int, bytes], None]
                 ) -> None:
        self.log = log
        self.clock = clock
        self.on_frame = on_frame
        self._writer: asyncio.StreamWriter | None = None
        self._server: asyncio.base_events.Server | None = None
        self.data_port = 0
        self.peer: str | None = None          # prefill's clock id
        self._lock = asyncio.Lock()
        self._frames = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_data_conn, "127.0.0.1", 0,
                                                  limit=1 << 22)
        self.data_port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._server is not None:
            self._server.close()

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self, port: int, timeout: float = 5.0) -> None:
        async with self._lock:
            if self.connected:
                return
            _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port),
                                               timeout)
            self._writer = writer
            self.peer = self.clock.peer("prefill")
            self.send({"type": "HELLO", "data_port": self.data_port})
            self.log.info("connected to prefill bootstrap port %d", port)

    def send(self, msg: dict) -> None:
        if not self.connected:
            raise ConnectionError("no bootstrap connection to prefill")
        self._writer.write(encode_msg({**msg, "vt": self.clock.now(), "src": self.clock.src}))
        self.clock.sent(self.peer)

    async def _on_data_conn(self, reader: asyncio.StreamReader, writer) -> None:
        try:
            while True:
                head = await reader.readexactly(FRAME.size)
                kind, room, page, ntok, nbytes, vt = FRAME.unpack(head)
                payload = await reader.readexactly(nbytes) if nbytes else b""
                self.clock.received(self.peer)
                self._frames += 1
                self.clock.at(vt, (11, self._frames),
                              lambda a=(kind, room, page, ntok, payload): self.on_frame(*a))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
