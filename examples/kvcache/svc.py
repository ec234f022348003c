"""kvcache: a small key-value cache over HTTP, and a load generator for it (standard library only).

    python svc.py serve CONF            serve on 127.0.0.1:<port> with the KEY=VALUE settings of CONF
    python svc.py load --url URL --clients N --ops K --out FILE

Settings: port, compression (on/off: values are zlib-compressed in memory), batch_writes (on/off:
writes are buffered and applied every `batch_interval_ms`). The batch path has a bug: a read does not
look at the writes still waiting in the buffer, so a client that reads its own write can see the old
value. Compression is innocent. Endpoints: GET /health, GET /config (the settings in force and the
server's pid), PUT /kv/KEY (body: value), GET /kv/KEY.

The load generator runs N concurrent clients, each doing K write-then-read pairs on its own keys, and
writes one JSON line per client: {"client", "outcome": ok|stale|error, "ops", "stale_reads", "ms"}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULTS = {"port": "18080", "compression": "off", "batch_writes": "off", "batch_interval_ms": "200"}


def read_conf(path: str) -> dict[str, str]:
    conf = dict(DEFAULTS)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                conf[key.strip()] = value.strip()
    return conf


class Store:
    """Values by key. With batch_writes, writes wait in a buffer that a flusher applies every
    batch_interval_ms; reads do not look at the buffer (the planted bug)."""

    def __init__(self, conf: dict[str, str]) -> None:
        self.compress = conf["compression"] == "on"
        self.batch = conf["batch_writes"] == "on"
        self.interval = int(conf["batch_interval_ms"]) / 1000
        self.data: dict[str, bytes] = {}
        self.pending: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()
        if self.batch:
            threading.Thread(target=self._flusher, daemon=True).start()

    def _flusher(self) -> None:
        while True:
            time.sleep(self.interval)
            with self.lock:
                for k, v in self.pending:
                    self.data[k] = v
                self.pending.clear()

    def put(self, key: str, value: bytes) -> None:
        stored = zlib.compress(value) if self.compress else value
        with self.lock:
            if self.batch:
                self.pending.append((key, stored))
            else:
                self.data[key] = stored

    def get(self, key: str) -> bytes | None:
        with self.lock:
            stored = self.data.get(key)  # the bug: writes still in self.pending are not consulted
        if stored is None:
            return None
        return zlib.decompress(stored) if self.compress else stored


def make_handler(conf: dict[str, str], store: Store) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: object) -> None:
            pass

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, b"ok")
            elif self.path == "/config":
                self._send(200, json.dumps({**conf, "pid": os.getpid()}, sort_keys=True).encode())
            elif self.path.startswith("/kv/"):
                value = store.get(self.path[4:])
                self._send(404, b"") if value is None else self._send(200, value)
            else:
                self._send(404, b"")

        def do_PUT(self) -> None:
            if not self.path.startswith("/kv/"):
                self._send(404, b"")
                return
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            store.put(self.path[4:], body)
            self._send(204, b"")

    return Handler


class Server(ThreadingHTTPServer):
    request_queue_size = 256  # 50 clients connect at once; the default backlog of 5 resets them
    daemon_threads = True


def serve(conf_path: str) -> None:
    conf = read_conf(conf_path)
    server = Server(("127.0.0.1", int(conf["port"])), make_handler(conf, Store(conf)))
    print(f"kvcache pid {os.getpid()} serving on :{conf['port']} with {conf}", flush=True)
    server.serve_forever()


def _request(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def client(url: str, index: int, ops: int, tag: str) -> dict[str, object]:
    t0 = time.monotonic()
    stale = 0
    try:
        for i in range(ops):
            key, value = f"{tag}-c{index}-k{i % 2}", f"v{i}".encode()
            _request("PUT", f"{url}/kv/{key}", value)
            status, got = _request("GET", f"{url}/kv/{key}")
            stale += got != value
    except OSError as exc:
        return {"client": index, "outcome": "error", "error": str(exc), "ops": ops}
    return {"client": index, "outcome": "stale" if stale else "ok", "ops": ops, "stale_reads": stale,
            "ms": round(1000 * (time.monotonic() - t0), 1)}


def load(args: argparse.Namespace) -> None:
    t0 = time.monotonic()
    results: list[dict[str, object]] = [{} for _ in range(args.clients)]

    def one(i: int) -> None:
        results[i] = client(args.url, i, args.ops, args.tag)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(args.out, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    stale = sum(r["outcome"] == "stale" for r in results)
    errors = sum(r["outcome"] == "error" for r in results)
    print(f"clients={args.clients} stale={stale} errors={errors} wall={time.monotonic() - t0:.2f}s")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="svc.py")
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("conf")
    ld = sub.add_parser("load")
    ld.add_argument("--url", required=True)
    ld.add_argument("--clients", type=int, default=50)
    ld.add_argument("--ops", type=int, default=6)
    ld.add_argument("--tag", default="load")
    ld.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.cmd == "serve":
        serve(args.conf)
    else:
        load(args)


if __name__ == "__main__":
    main(sys.argv[1:])
