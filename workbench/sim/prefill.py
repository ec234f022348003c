"""The prefill server: aiohttp HTTP (/health, /prefill, /bootstrap, /debug/state), a prefill worker
(HiCache prefix load + the forward pass), the bootstrap thread and the KV sender, all on the
deployment's simulated clock (see `clock`).

Run as `python -m workbench.sim.prefill --dir DIR --config FILE`; `wb sim up` does that.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

import numpy as np
from aiohttp import web

from workbench.sim import datapath as dp
from workbench.sim.clock import HOP_S, Clock
from workbench.sim.config import ServeConfig
from workbench.sim.logs import setup_server_logging
from workbench.sim.transfer import BootstrapServer, RoomTable, Sender

__all__ = ["PrefillServer", "main", "DEVICE_PAGES", "HOST_PAGES", "LINK_BYTES_PER_S", "serve",
           "run_server"]

DEVICE_PAGES = 128             # the prefill's device pool: one request in flight at a time
HOST_PAGES = 3072              # HiCache host pool: enough for the C=80 repro's working set
LINK_BYTES_PER_S = 5e6         # prefill -> decode link, simulated seconds
ROOM_BYTES_PER_S = 0.25e6      # one room's transfer stream
PREFILL_S = (0.02, 3e-5)       # forward pass: fixed + per new token, simulated seconds
ROOM_EXPIRE_S = 600.0          # a computed room whose TRANSFER never came is dropped after this


class PrefillServer:
    def __init__(self, cfg: ServeConfig, state_dir: Path, clock: Clock) -> None:
        from workbench.sim import hicache as hc

        self.cfg = cfg
        self.clock = clock
        self.log = setup_server_logging(state_dir, "prefill", clock.now)
        self.device = hc.DeepSeekV4TokenToKVPool(DEVICE_PAGES, cfg.index_k_dtype)
        geometry_bug = cfg.causal_model == "seed" and not cfg.geometry_fix
        self.hicache = (hc.build_hicache_stack(self.device, host_pages=HOST_PAGES,
                                               geometry_bug=geometry_bug)
                        if cfg.hicache else None)
        self.sender = Sender(self.log, clock, link_bps=LINK_BYTES_PER_S,
                             room_bps=ROOM_BYTES_PER_S)
        self.rooms = RoomTable(self.sender.add, expire_s=ROOM_EXPIRE_S, now=clock.now)
        self.bootstrap = BootstrapServer(self.log, clock, self.rooms, self.sender,
                                         abort_fix=cfg.nixl_abort_fix)
        self._work: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self.prefilled = 0
        self.errors = 0

    # --- worker ----------------------------------------------------------------------------
    async def _work_loop(self) -> None:
        """One request at a time: the copies and rows now, then the forward pass's simulated
        duration before the next request starts."""
        while True:
            room, tokens = await self._work.get()
            try:
                n_new = self._prefill(room, tokens)
            except Exception as exc:  # noqa: BLE001 - one bad request must not stop the worker
                self.errors += 1
                self.log.error("room=%d prefill failed: %r", room, exc)
                continue
            self.prefilled += 1
            self.rooms.expire()
            await self.clock.sleep(PREFILL_S[0] + PREFILL_S[1] * n_new, (30,))

    def _prefill(self, room: int, tokens: np.ndarray) -> int:
        n = len(tokens)
        n_pages = -(-n // dp.PAGE)
        pages = self.device.alloc(n_pages)
        if pages is None:
            raise RuntimeError(f"prompt of {n} tokens does not fit the device pool")
        try:
            entry, hit, loaded = None, 0, 0
            if self.hicache is not None:
                entry, hit = self.hicache.match(tokens)
                if entry is not None:
                    loaded = self.hicache.load(entry, hit, pages)
            new = tokens[loaded:]
            self.device.write_rows(pages, loaded, dp.kv_rows(new), dp.index_k_rows(
                new, self.cfg.index_k_dtype))
            kv, idx = self.device.read_rows(pages, n)
            if self.hicache is not None:
                self.hicache.insert(tokens, pages, entry, hit)
        finally:
            self.device.free(pages)
        self.rooms.computed(room, kv, idx)
        return n - loaded

    # --- HTTP ------------------------------------------------------------------------------
    async def health(self, request: web.Request) -> web.Response:
        # Like the seed's /health: answers 200 as long as the HTTP server runs, wedged or not.
        return web.json_response({"status": "ok"})

    async def bootstrap_info(self, request: web.Request) -> web.Response:
        return web.json_response({"bootstrap_port": self.bootstrap.port})

    async def prefill(self, request: web.Request) -> web.Response:
        body = await request.json()
        src = body.get("src")
        self.clock.received(src)
        room = int(body["room"])
        await self.clock.sleep_until(float(body.get("vt", self.clock.now())) + HOP_S, (2, room))
        self._work.put_nowait((room, np.asarray(body["input_ids"], dtype=np.int64)))
        self.clock.sent(src)
        return web.json_response({"queued": True, "room": room, "vt": self.clock.now()})

    async def state(self, request: web.Request) -> web.Response:
        return web.json_response({
            "unit": "prefill",
            "bootstrap_alive": self.bootstrap.alive,
            "bootstrap_died_at": self.bootstrap.died_at,
            "bootstrap_messages": self.bootstrap.messages,
            "queue": self._work.qsize() if self._work is not None else 0,
            "prefilled": self.prefilled,
            "errors": self.errors,
            "sender_active": self.sender.active,
            "rooms_sent": self.sender.sent_rooms,
            "rooms": self.rooms.counts(),
            "hicache": dict(self.hicache.stats) if self.hicache is not None else None,
            "config": self.cfg.__dict__,
        })

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 << 20)
        app.on_startup.append(self.on_startup)
        app.on_cleanup.append(self.on_cleanup)
        app.add_routes([web.get("/health", self.health), web.get("/bootstrap", self.bootstrap_info),
                        web.post("/prefill", self.prefill), web.get("/debug/state", self.state)])
        return app

    async def on_startup(self, app: web.Application) -> None:
        self._work = asyncio.Queue()
        self._worker = asyncio.create_task(self._work_loop())
        await self.bootstrap.start()

    async def on_cleanup(self, app: web.Application) -> None:
        if self._worker is not None:
            self._worker.cancel()

    def stop(self) -> None:
        self.sender.stop()
        self.bootstrap.stop()


async def serve(server, port: int, log) -> None:
    """Serve until SIGTERM/SIGINT; shutdown is bounded. Handlers are not cancelled when a client
    disconnects: a client's give-up reaches the server on the simulated clock instead."""
    runner = web.AppRunner(server.app(), handler_cancellation=False, shutdown_timeout=0.5,
                           access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, reuse_address=True)
    await site.start()
    log.info("listening on 127.0.0.1:%d", port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping")
    server.stop()
    await asyncio.wait_for(runner.cleanup(), timeout=3)


def run_server(unit: str, make, argv: list[str] | None) -> None:
    """Parse --dir/--config, join the deployment's clock, build the server, serve on its port."""
    ap = argparse.ArgumentParser(prog=f"pdsim-{unit}")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--config", required=True)
    args = ap.parse_args(argv)
    cfg = ServeConfig.load(args.config)
    clock = Clock(Path(args.dir), unit)
    try:
        server = make(cfg, Path(args.dir), clock)
        server.log.info("starting: %s", " ".join(f"{k}={v}" for k, v in cfg.__dict__.items()))
        port = cfg.prefill_port if unit == "prefill" else cfg.decode_port
        with asyncio.Runner(loop_factory=clock.new_loop) as runner:
            clock.attach(runner.get_loop())
            runner.run(serve(server, port, server.log))
    finally:
        clock.close()


def main(argv: list[str] | None = None) -> None:
    run_server("prefill", PrefillServer, argv)


if __name__ == "__main__":
    main()
