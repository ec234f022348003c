"""Prefill -> decode KV transfer over real sockets: the bootstrap thread, the sender, the receiver.

Control plane (decode -> prefill, one TCP connection): length-prefixed JSON messages HELLO
(where decode's data port is), TRANSFER (room, destination pages, token count) and ABORT (room).
Prefill handles them in `bootstrap_thread`, a real thread, as NIXL's prefill does.

Data plane (prefill -> decode, one TCP connection): frames DATA (one page of per-token KV and
index-K rows, addressed to a destination page, written one-sided like an RDMA write), DONE
(room complete) and ABORT_DONE (room cancelled, in-band so nothing of the room can follow it).
A `Link` paces the sender at a fixed total bandwidth and each room at a per-stream bandwidth,
both on the seed's clock: bf16's 256 B index-K rows make every transfer longer than fp8's
132 B ones.

The wedge (nixl_abort_fix=off): the bootstrap thread has no ABORT handler. The first ABORT
raises inside its loop and the thread exits without a word; the HTTP server stays up and
/health stays 200, but no later TRANSFER is ever read, so every later request waits in
WaitingForInput until its client gives up. The sender, a separate thread, is never told about
the aborted room and keeps writing it to the pages it was given. With the fix, ABORT cancels
the room and the sender answers ABORT_DONE on the data stream.
"""

from __future__ import annotations

import asyncio
import json
import selectors
import socket
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["FRAME", "DATA", "DONE", "ABORT_DONE", "RoomTable", "PrefillRoom", "BootstrapServer",
           "Sender", "Link", "TransferClient", "encode_msg"]

FRAME = struct.Struct("<BqiiI")          # kind, room, dst page, tokens, payload bytes
DATA, DONE, ABORT_DONE = 1, 2, 3
_LEN = struct.Struct("<I")
PAGE = 64


def encode_msg(obj: dict) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode()
    return _LEN.pack(len(body)) + body


@dataclass
class PrefillRoom:
    room: int
    created: float = field(default_factory=time.monotonic)
    kv: np.ndarray | None = None          # per-token rows, ready once prefill has run
    idx: np.ndarray | None = None
    dst_pages: list[int] | None = None    # from TRANSFER
    cancelled: bool = False
    next_page: int = 0
    next_at: float = 0.0                  # per-room pacing (one transfer stream per room)
    failed: str | None = None


class RoomTable:
    """Rooms known to prefill; a room goes to the sender when it is both computed and registered."""

    def __init__(self, on_ready: Callable[[PrefillRoom], None], *, expire_s: float) -> None:
        self._rooms: dict[int, PrefillRoom] = {}
        self._lock = threading.Lock()
        self._on_ready = on_ready
        self.expire_s = expire_s

    def _get(self, room: int) -> PrefillRoom:
        r = self._rooms.get(room)
        if r is None:
            r = self._rooms[room] = PrefillRoom(room)
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
                self._rooms[room] = PrefillRoom(room, cancelled=True)
                return False
            r.cancelled = True
            if r.kv is not None:
                del self._rooms[room]
            return True

    def expire(self) -> int:
        """Forget rooms older than expire_s (a request whose TRANSFER never came); bounded memory."""
        now = time.monotonic()
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


class Link:
    """Paces bytes at `bytes_per_s` on the seed's clock (time_scale wall s per seed s)."""

    def __init__(self, bytes_per_s: float, time_scale: float) -> None:
        self.wall_per_byte = time_scale / bytes_per_s
        self._debt = 0.0

    def send(self, nbytes: int) -> None:
        self._debt += nbytes * self.wall_per_byte
        if self._debt > 0.002:          # sleep in >=2 ms slices; finer sleeps only add jitter
            time.sleep(self._debt)
            self._debt = 0.0


class Sender:
    """Ships ready rooms page by page, round-robin, over the data connection to decode."""

    def __init__(self, log, link: Link, *, idx_token_bytes: int, room_wall_per_byte: float) -> None:
        self.log = log
        self.link = link
        self.room_wall_per_byte = room_wall_per_byte
        self.idx_token_bytes = idx_token_bytes
        self._active: OrderedDict[int, PrefillRoom] = OrderedDict()
        self._cancel: set[int] = set()
        self._cv = threading.Condition()
        self._sock: socket.socket | None = None
        self._stop = threading.Event()
        self.sent_rooms = 0
        self.thread = threading.Thread(target=self._run, name="kv_sender", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._cv:
            self._cv.notify_all()

    def connect(self, port: int) -> None:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._cv:
            old, self._sock = self._sock, s
            self._active.clear()                 # a new decode knows none of the old rooms
            self._cv.notify_all()
        if old is not None:
            old.close()

    def add(self, room: PrefillRoom) -> None:
        with self._cv:
            self._active[room.room] = room
            self._cv.notify_all()

    def cancel(self, room: int) -> None:
        with self._cv:
            self._cancel.add(room)
            self._cv.notify_all()

    @property
    def active(self) -> int:
        return len(self._active)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cv:
                if not self._active and not self._cancel:
                    self._cv.wait(timeout=0.2)
                    continue
                sock = self._sock
                cancels, self._cancel = self._cancel, set()
                for room in cancels:
                    self._active.pop(room, None)
                now = time.monotonic()
                batch = [r for r in self._active.values() if r.next_at <= now]
                if not batch and not cancels:
                    soonest = min(r.next_at for r in self._active.values())
                    self._cv.wait(timeout=min(0.05, max(0.0, soonest - now)))
                    continue
            if sock is None:
                time.sleep(0.01)
                continue
            try:
                for room in cancels:
                    sock.sendall(FRAME.pack(ABORT_DONE, room, -1, 0, 0))
                for r in batch:
                    self._send_page(sock, r)
            except OSError as exc:
                self.log.warning("sender: data connection lost (%s); dropping %d rooms",
                                 exc, len(batch))
                with self._cv:
                    if self._sock is sock:
                        self._sock = None
                        self._active.clear()

    def _send_page(self, sock: socket.socket, r: PrefillRoom) -> None:
        n = r.kv.shape[0]
        start = r.next_page * PAGE
        if start >= n:
            sock.sendall(FRAME.pack(DONE, r.room, -1, n, 0))
            with self._cv:
                self._active.pop(r.room, None)
            self.sent_rooms += 1
            return
        end = min(n, start + PAGE)
        payload = r.kv[start:end].tobytes() + r.idx[start:end].tobytes()
        sock.sendall(FRAME.pack(DATA, r.room, r.dst_pages[r.next_page], end - start, len(payload))
                     + payload)
        r.next_page += 1
        r.next_at = max(r.next_at, time.monotonic()) + len(payload) * self.room_wall_per_byte
        self.link.send(len(payload))


class BootstrapServer:
    """Listens for decode's control connection; `bootstrap_thread` reads and handles messages."""

    def __init__(self, log, rooms: RoomTable, sender: Sender, *, abort_fix: bool) -> None:
        self.log = log
        self.rooms = rooms
        self.sender = sender
        self.abort_fix = abort_fix
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.alive = False
        self.died_at: float | None = None
        self.messages = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._thread_main, name="bootstrap_thread",
                                       daemon=True)
        self._handlers = {"HELLO": self._on_hello, "TRANSFER": self._on_transfer}
        if abort_fix:
            # The fix (ported from the mooncake backend): ABORT has a handler.
            self._handlers["ABORT"] = self._on_abort

    def start(self) -> None:
        self.alive = True
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _thread_main(self) -> None:
        try:
            self._loop()
        except Exception:  # noqa: BLE001
            # The seed's bootstrap_thread had no handler for decode's ABORT: the exception ended
            # the thread and nothing was logged. We keep that silence; /debug/state shows it.
            pass
        finally:
            self.alive = False
            self.died_at = time.time()

    def _loop(self) -> None:
        # Held on self: when the thread dies its connections stay open, unread, as in the seed.
        self._sel = sel = selectors.DefaultSelector()
        self.listener.setblocking(False)
        sel.register(self.listener, selectors.EVENT_READ, None)
        self._bufs = bufs = {}
        while not self._stop.is_set():
            for key, _ in sel.select(timeout=0.2):
                if key.data is None:
                    conn, _ = self.listener.accept()
                    conn.setblocking(False)
                    bufs[conn] = bytearray()
                    sel.register(conn, selectors.EVENT_READ, "conn")
                    continue
                conn = key.fileobj
                try:
                    chunk = conn.recv(1 << 16)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    sel.unregister(conn)
                    conn.close()
                    bufs.pop(conn, None)
                    continue
                buf = bufs[conn]
                buf += chunk
                while len(buf) >= 4:
                    (size,) = _LEN.unpack_from(buf)
                    if len(buf) < 4 + size:
                        break
                    msg = json.loads(bytes(buf[4:4 + size]))
                    del buf[:4 + size]
                    self.messages += 1
                    self._handlers[msg["type"]](msg)     # KeyError on ABORT without the fix
            self.rooms.expire()

    def _on_hello(self, msg: dict) -> None:
        self.log.info("bootstrap: decode connected (data port %d)", msg["data_port"])
        self.sender.connect(int(msg["data_port"]))

    def _on_transfer(self, msg: dict) -> None:
        self.rooms.registered(int(msg["room"]), [int(p) for p in msg["pages"]])

    def _on_abort(self, msg: dict) -> None:
        room = int(msg["room"])
        self.rooms.cancel(room)
        self.sender.cancel(room)          # the sender stops the room and answers ABORT_DONE
        self.log.info("bootstrap: ABORT room=%d handled (%s)", room, msg.get("reason", ""))


class TransferClient:
    """Decode's side: the control connection to prefill's bootstrap port and the data receiver."""

    def __init__(self, log, on_frame: Callable[[int, int, int, int, bytes], None]) -> None:
        self.log = log
        self.on_frame = on_frame
        self._writer: asyncio.StreamWriter | None = None
        self._server: asyncio.base_events.Server | None = None
        self.data_port = 0
        self._lock = asyncio.Lock()

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
            writer.write(encode_msg({"type": "HELLO", "data_port": self.data_port}))
            await writer.drain()
            self._writer = writer
            self.log.info("connected to prefill bootstrap port %d", port)

    async def send(self, msg: dict) -> None:
        if not self.connected:
            raise ConnectionError("no bootstrap connection to prefill")
        self._writer.write(encode_msg(msg))
        await self._writer.drain()

    async def _on_data_conn(self, reader: asyncio.StreamReader, writer) -> None:
        try:
            while True:
                head = await reader.readexactly(FRAME.size)
                kind, room, page, ntok, nbytes = FRAME.unpack(head)
                payload = await reader.readexactly(nbytes) if nbytes else b""
                self.on_frame(kind, room, page, ntok, payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
