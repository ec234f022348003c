"""The decode server: admission into an over-committable KV pool, the transfer wait
(WaitingForInput), a batched decode loop, and the indexer that writes the answer.

Run as `python -m workbench.sim.decode --dir DIR --config FILE`; `wb sim up` does that.
Everything here runs on the deployment's simulated clock (see `clock`). A client's timeout
travels with its request (`deadline`): the server learns that the client gave up one hop after
the deadline, on the simulated clock, rather than whenever the host gets round to reading the
closed socket.

Why requests fail with no client timing out (the seed's 40/80 errors after the abort fix): the
pool configurator sizes the decode pool's token capacity with the fp8 index-K row (584 + 132
B/token) whatever the dtype, while bf16 rows take 584 + 256. Admission trusts that capacity, so
under load bf16 rooms get pages beyond the physical arena; the first write of a transfer into
such a page fails, the transfer is retried once in a new room, and if that fails too the
request gets HTTP 503 at once. Decode tells prefill to drop each failed room with an ABORT
message, sent ABORT_FLUSH_S later. No client timed out or cancelled, nothing waited in
WaitingForInput. fp8 is sized right and only queues for pages, as is bf16 with `pool_configurator_fix=on`
(a request larger than the whole pool is then refused at admission). Without the abort fix that
cleanup ABORT is what kills prefill's bootstrap thread: the wedge, after which every request
waits in WaitingForInput until its client times out.

Pages of a room that failed or was abandoned mid-transfer (the abort race):
- seed world, or either world with the fix: kept until the transfer is closed (DONE, or the
  ABORT_DONE that follows the last frame of a cancelled room), and frames are credited to the
  room named in their header, so nothing of the room can reach another request;
- wedge world (causal_model=wedge) without the fix, as NIXL's decode with no abort handshake:
  the failed room's pages go to its retry (the ones no write failed on, back to front) while
  prefill, never told to stop, keeps writing the failed room's frames into them, and a
  transfer counts as complete when every page it owns has been written, whoever wrote it. The
  retry is declared complete before its own rows arrive and decodes on a half-written buffer
  laid out for other positions: token salad.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np
from aiohttp import web

from workbench.sim import datapath as dp
from workbench.sim import indexer
from workbench.sim.batching import STEP_S, DecodeKVPool, RoomFailed, Scheduler
from workbench.sim.clock import HOP_S, Clock
from workbench.sim.config import ServeConfig
from workbench.sim.logs import setup_server_logging
from workbench.sim.prefill import run_server
from workbench.sim.transfer import ABORT_DONE, DATA, DONE, TransferClient

__all__ = ["DecodeServer", "DecodeKVPool", "main", "STEP_S", "WAIT_LOG_S"]

PAGE = dp.PAGE
WAIT_LOG_S = 60.0              # log WaitingForInput once a room waited this long, and again after
BOOTSTRAP_TIMEOUT_S = 600.0    # decode gives up on a room that never got its KV
ADMIT_TIMEOUT_S = 600.0
ABORT_FLUSH_S = 10.0           # a room's ABORT goes to prefill this long after it is queued
RETRY_BACKOFF_S = 1.5          # before a failed transfer is retried in a new room
OUT_RESERVE = 600              # pages reserved per request for its output tokens
CLIENT_GONE = 499              # the status a request gets once its client has given up


@dataclass
class DecodeRoom:
    room: int
    rid: str
    pages: list[int]
    n_tokens: int
    started: float
    prompt_pages: frozenset = frozenset()
    event: asyncio.Event = field(default_factory=asyncio.Event)
    received: set = field(default_factory=set)
    complete: bool = False
    failed: str | None = None
    abandoned: bool = False     # failed or abandoned before its transfer closed
    closed: bool = False        # DONE or ABORT_DONE seen: nothing more of it can arrive
    freed: bool = False
    waiting_logged: int = 0


class DecodeServer:
    def __init__(self, cfg: ServeConfig, state_dir: Path, clock: Clock) -> None:
        self.cfg = cfg
        self.clock = clock
        self.log = setup_server_logging(state_dir, "decode", clock.now)
        self.rooms: dict[int, DecodeRoom] = {}
        self._room_ids = itertools.count(1 + (cfg.seed % 1000) * 1_000_000)
        self._raw_requests = itertools.count()
        self.counters = {"requests": 0, "ok": 0, "oom_failures": 0, "aborts_sent": 0,
                         "client_disconnects": 0, "waiting_for_input_logs": 0,
                         "stale_writes": 0, "foreign_pages": 0, "retries": 0}
        self.page_owner: dict[int, int] = {}
        # Wedge world without the abort fix: pages of a failed or abandoned room are reused
        # before prefill has stopped writing them.
        self._racy = cfg.causal_model == "wedge" and not cfg.nixl_abort_fix
        self.page_writer: dict[int, int] = {}     # which room's frame last wrote each page
        self._prefill_url = f"http://127.0.0.1:{cfg.prefill_port}"

    # --- lifecycle -------------------------------------------------------------------------
    async def on_startup(self, app: web.Application) -> None:
        self.pool = DecodeKVPool(self.cfg.decode_pool_mb, self.cfg.index_k_dtype, self.clock,
                                 configurator_fix=self.cfg.pool_configurator_fix)
        self.sched = Scheduler(self.clock)
        self.tc = TransferClient(self.log, self.clock, self._on_frame)
        await self.tc.start()
        self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30),
                                          connector=aiohttp.TCPConnector(limit=0))
        self.log.info("KV pool: %d pages by the configurator (%d B/token assumed), %d backed "
                      "by memory (%d B/token)", self.pool.logical_pages,
                      self.pool.budget_row_bytes, self.pool.physical_pages,
                      dp.KV_BYTES + self.pool.idx_bytes)

    async def on_cleanup(self, app: web.Application) -> None:
        await self.http.close()
        await self.tc.close()

    def stop(self) -> None:
        """Nothing to stop outside the event loop (on_cleanup does the rest)."""

    async def _ensure_bootstrap(self) -> None:
        if self.tc.connected:
            return
        # Connecting is set-up, not simulated work: the clock stands still meanwhile.
        with self.clock.hold():
            async with self.http.get(self._prefill_url + "/bootstrap") as resp:
                info = await resp.json()
            await self.tc.connect(int(info["bootstrap_port"]))

    # --- transfer frames (called from the data receiver) -----------------------------------
    def _on_frame(self, kind: int, room: int, page: int, ntok: int, payload: bytes) -> None:
        r = self.rooms.get(room)
        if kind == DATA:
            # One-sided write into the page the frame names, whoever owns it now.
            ok = self.pool.write_page(page, ntok, payload)
            self.page_writer[page] = room
            if r is None or r.freed:
                self.counters["stale_writes"] += 1
            if r is not None and not ok and r.failed is None and not r.complete:
                r.failed = (f"KV page {page} has no memory behind it (pool configurator budgeted "
                            f"{self.pool.budget_row_bytes} B/token, rows are "
                            f"{dp.KV_BYTES + self.pool.idx_bytes} B/token)")
                r.event.set()
            if not ok:
                return
            if self.cfg.causal_model == "wedge":
                # Wedge world: completion is counted per page of whoever owns the page now, so
                # a stale page of an aborted room counts toward the surviving request that
                # reuses it, which then starts decoding on a half-written buffer.
                owner = self.rooms.get(self.page_owner.get(page, -1))
            else:
                owner = r if (r is not None and not r.freed) else None
            if owner is not None and page in owner.prompt_pages and owner.failed is None:
                owner.received.add(page)
                if len(owner.received) == len(owner.prompt_pages) and not owner.complete:
                    owner.complete = True
                    owner.event.set()
        elif kind in (DONE, ABORT_DONE):
            if r is None:
                return
            r.closed = True
            if r.abandoned and not r.freed:
                asyncio.get_running_loop().create_task(self._free(r))

    async def _free(self, r: DecodeRoom) -> None:
        if r.freed:
            return
        r.freed = True
        self.rooms.pop(r.room, None)
        for p in r.pages:
            if self.page_owner.get(p) == r.room:
                del self.page_owner[p]
        await self.pool.free(r.pages)

    async def _abandon(self, r: DecodeRoom, reason: str, free: bool = True) -> None:
        """A room whose request is over before its transfer closed. Its pages are freed now
        when nothing more can arrive, or in the wedge world without the fix (the race); with
        free=False they stay with the room for its retry to take over (same rule)."""
        r.abandoned = True
        self.clock.at(self.clock.now() + ABORT_FLUSH_S, (42, r.room),
                      lambda: self._send_abort(r.room, reason))
        self.log.info("room=%d rid=%s abort queued (%s)", r.room, r.rid, reason)
        if r.closed or (self._racy and free):
            await self._free(r)

    def _send_abort(self, room: int, reason: str) -> None:
        try:
            self.tc.send({"type": "ABORT", "room": room, "reason": reason})
            self.counters["aborts_sent"] += 1
            self.log.info("room=%d sent ABORT to prefill (%s)", room, reason)
        except (ConnectionError, OSError) as exc:
            self.log.warning("room=%d ABORT not sent: %s", room, exc)

    async def _wait_kv(self, r: DecodeRoom) -> None:
        k = 0
        while not r.event.is_set():
            k += 1
            if await self.clock.wait_event(r.event, r.started + k * WAIT_LOG_S, (43, r.room)):
                break
            waited = self.clock.now() - r.started
            if not r.received:
                r.waiting_logged += 1
                self.counters["waiting_for_input_logs"] += 1
                self.log.warning("room=%d rid=%s KVPoll.WaitingForInput for %.0fs: no KV from "
                                 "prefill yet", r.room, r.rid, waited)
            if waited > BOOTSTRAP_TIMEOUT_S:
                raise RoomFailed(f"no KV for room {r.room} after {waited:.0f}s")
        if r.failed:
            raise RoomFailed(r.failed)

    # --- HTTP ------------------------------------------------------------------------------
    async def _admit(self, n: int, need: int, rid: str,
                     reuse: DecodeRoom | None = None) -> DecodeRoom:
        pages = None
        if reuse is not None and not reuse.freed:
            # Wedge world without the fix: after a short back-off the failed room's pages (but
            # those a write already found without memory) go straight to its retry, while
            # prefill, never told to stop, is still writing them.
            reuse.freed = True
            self.rooms.pop(reuse.room, None)
            for p in reuse.pages:
                if self.page_owner.get(p) == reuse.room:
                    del self.page_owner[p]
            await self.clock.sleep(RETRY_BACKOFF_S, (44, reuse.room))
            kept = await self.pool.keep_working(reuse.pages)
            if len(kept) > -(-n // PAGE):
                pages = list(kept)          # reversed below: the retry's page table is the
            else:                           # failed room's, back to front
                await self.pool.free(kept)
        if pages is None:
            pages = await self.pool.admit(need, self.clock.now() + ADMIT_TIMEOUT_S)
        # The page table lists pages in reverse allocation order: the deepest pages of the free
        # stack (the ones over-commit reaches, which have no memory) come first, so a transfer
        # into them fails on its first frame while the rest of its frames are still on their way.
        pages = pages[::-1]
        r = DecodeRoom(next(self._room_ids), rid, pages, n, started=self.clock.now(),
                       prompt_pages=frozenset(pages[: -(-n // PAGE)]))
        self.rooms[r.room] = r
        for p in pages:
            self.page_owner[p] = r.room
        self.log.info("room=%d rid=%s admitted: %d prompt tokens, %d pages", r.room, rid, n,
                      len(pages))
        return r

    async def _receive(self, r: DecodeRoom, input_ids: list) -> None:
        """Dispatch to prefill, register the room (TRANSFER), wait for its KV."""
        try:
            await self._ensure_bootstrap()
            peer = self.tc.peer
            self.clock.sent(peer)
            try:
                async with self.http.post(self._prefill_url + "/prefill", json={
                        "room": r.room, "input_ids": input_ids, "vt": self.clock.now(),
                        "src": self.clock.src}) as resp:
                    status, body = resp.status, await resp.json()
            except BaseException:
                self.clock.unsent(peer)
                raise
            self.clock.received(peer)
            await self.clock.sleep_until(float(body.get("vt", self.clock.now())) + HOP_S,
                                         (3, r.room))
            if status != 200:
                raise RoomFailed(f"prefill answered {status}")
            self.tc.send({"type": "TRANSFER", "room": r.room,
                          "pages": r.pages[: -(-r.n_tokens // PAGE)], "n": r.n_tokens})
        except (aiohttp.ClientError, ConnectionError, OSError, ValueError) as exc:
            raise RoomFailed(f"prefill unreachable: {exc}") from exc
        await self._wait_kv(r)

    async def generate(self, request: web.Request) -> web.Response:
        """Receive a request, handle it one hop after it was sent (in the order of its key),
        and cancel it one hop after its client's deadline."""
        body = await request.json()
        src = body.get("src")
        self.clock.received(src)
        key = body.get("key")
        k = tuple(key) if isinstance(key, list) else (next(self._raw_requests),)
        await self.clock.sleep_until(float(body.get("vt", self.clock.now())) + HOP_S, (4, *k))
        inner = asyncio.ensure_future(self._generate(body))
        gone = None
        if body.get("deadline") is not None:
            gone = self.clock.at(float(body["deadline"]) + HOP_S, (6, *k), inner.cancel)
        try:
            await asyncio.wait([inner])
        finally:
            if gone is not None:
                gone.cancel()
        if inner.cancelled():
            status, payload = CLIENT_GONE, {"error": "the client gave up"}
        else:
            status, payload = inner.result()
        self.clock.sent(src)
        return web.json_response({**payload, "vt": self.clock.now()}, status=status)

    async def _generate(self, body: dict) -> tuple[int, dict]:
        tokens = np.asarray(body["input_ids"], dtype=np.int64)
        max_tokens = int(body.get("max_tokens", 2500))
        rid = str(body.get("rid", ""))
        fixed_len = body.get("ignore_eos", False)
        self.counters["requests"] += 1
        n = len(tokens)
        t0 = self.clock.now()
        need = -(-(n + min(max_tokens, OUT_RESERVE)) // PAGE)
        r: DecodeRoom | None = None
        try:
            # A transfer that failed on a page without memory is retried once in a new room.
            failed: DecodeRoom | None = None
            for attempt in range(2):
                try:
                    r = await self._admit(n, need, rid, reuse=failed if self._racy else None)
                except RoomFailed as exc:
                    return 413, {"error": str(exc)}
                except asyncio.TimeoutError:
                    return 503, {"error": "no KV pool space"}
                t_admit = self.clock.now()
                try:
                    await self._receive(r, body["input_ids"])
                    break
                except RoomFailed as exc:
                    oom = "no memory behind it" in str(exc)
                    self.counters["oom_failures"] += oom
                    self.log.error("room=%d rid=%s failed: %s", r.room, rid, exc)
                    await self._abandon(r, "transfer_failed", free=attempt == 1 or not oom)
                    failed = r
                    if attempt == 1 or not oom:
                        return 503, {"error": str(exc), "room": r.room}
                    self.counters["retries"] += 1
            t_kv = self.clock.now()
            foreign = sum(1 for p in r.prompt_pages if self.page_writer.get(p) != r.room)
            if foreign:
                self.counters["foreign_pages"] += foreign
                self.log.warning("room=%d rid=%s decoding with %d of %d pages last written by "
                                 "another room's transfer", r.room, rid, foreign,
                                 len(r.prompt_pages))
            # The answer follows from the rows as they are when decoding starts (autoregression
            # carries any early damage through the rest of the answer).
            kv, idx = self.pool.rows(r.pages, n)
            gen = indexer.generate(dp.token_ids_of(kv), idx, self.cfg.index_k_dtype,
                                   max_tokens=max_tokens)
            steps = max_tokens if fixed_len else len(gen.output_ids)
            await self.sched.run(steps)
            out_ids = gen.output_ids if not fixed_len else dp.filler_tokens(r.room, steps).tolist()
            self.counters["ok"] += 1
            return 200, {
                "text": gen.text, "output_ids": out_ids, "finish_reason": gen.finish_reason,
                "room": r.room, "prompt_tokens": n,
                "timings": {"admit_s": t_admit - t0, "kv_s": t_kv - t_admit,
                            "decode_s": self.clock.now() - t_kv}}
        except asyncio.CancelledError:
            self.counters["client_disconnects"] += 1
            if r is not None and not r.complete and not r.abandoned:
                await asyncio.shield(self._abandon(r, "client_disconnected"))
            raise
        finally:
            if r is not None and r.complete and not r.freed:
                await asyncio.shield(self._free(r))

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def state(self, request: web.Request) -> web.Response:
        now = self.clock.now()
        waiting = [r for r in self.rooms.values()
                   if not r.event.is_set() and not r.received and not r.abandoned]
        return web.json_response({
            "unit": "decode",
            "bootstrap_connected": self.tc.connected,
            "waiting_for_input": len(waiting),
            "stuck": sum(1 for r in waiting if now - r.started > WAIT_LOG_S),
            "rooms": len(self.rooms),
            "pool": {"logical_pages": self.pool.logical_pages,
                     "physical_pages": self.pool.physical_pages,
                     "free_pages": self.pool.free_pages},
            "counters": self.counters,
            "decoded_tokens": self.sched.tokens,
            "sim_time": now,
            "config": self.cfg.__dict__,
        })

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 << 20)
        app.on_startup.append(self.on_startup)
        app.on_cleanup.append(self.on_cleanup)
        app.add_routes([web.get("/health", self.health), web.post("/generate", self.generate),
                        web.get("/debug/state", self.state)])
        return app


def main(argv: list[str] | None = None) -> None:
    run_server("decode", DecodeServer, argv)


if __name__ == "__main__":
    main()
