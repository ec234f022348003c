"""A real SSH server on 127.0.0.1 for tests (asyncssh): key login, exec via bash (the channel's input its
stdin), SFTP, direct-tcpip forwards.

It runs in its own thread and event loop. `drop()` aborts every open connection (a dropped link);
`refuse(True)` makes it close new connections right after accept.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path


class SshServer:
    def __init__(self, folder: Path) -> None:
        import asyncssh

        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key_path = folder / "id_ed25519"
        self.client_key.write_private_key(str(self.client_key_path))
        os.chmod(self.client_key_path, 0o600)
        self.known_hosts = folder / "known_hosts"
        self.user = os.environ.get("USER") or "root"
        self.loop = asyncio.new_event_loop()
        self.conns: list = []
        self.procs: set = set()
        self.port = 0
        self.commands: list[str] = []
        self.owner: dict = {}
        self._server = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> "SshServer":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(15)
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {self.host_key.export_public_key().decode().strip()}\n")
        return self

    async def _start(self) -> None:
        import asyncssh

        outer = self

        class Server(asyncssh.SSHServer):
            def connection_made(self, conn):  # noqa: D401
                self.conn = conn
                outer.conns.append(conn)

            def connection_lost(self, exc):
                # Like sshd with no terminal: a lost connection ends no command (its input reaches its end).
                pass

            def begin_auth(self, username):
                return True

            def public_key_auth_supported(self):
                return True

            def validate_public_key(self, username, key):
                return key.export_public_key() == outer.client_key.export_public_key()

            def connection_requested(self, dest_host, dest_port, orig_host, orig_port):
                return True

        self._server = await asyncssh.create_server(
            Server, "127.0.0.1", 0, server_host_keys=[self.host_key], process_factory=self._handle,
            sftp_factory=True, encoding=None)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, process) -> None:
        cmd = process.command or "true"
        if isinstance(cmd, bytes):
            cmd = cmd.decode("utf-8", "replace")
        self.commands.append(cmd)
        proc = await asyncio.create_subprocess_exec(
            "/bin/bash", "-c", cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, env={**os.environ, "SHELL": "/bin/bash"})
        self.procs.add(proc)
        self.owner[proc] = process.get_extra_info("connection")

        async def pump(src, dst) -> None:
            while True:
                data = await src.read(65536)
                if not data:
                    return
                try:
                    dst.write(data)
                except Exception:
                    return

        async def feed() -> None:
            # The channel's input, as sshd gives it to the command, closed at the client's EOF.
            try:
                while True:
                    data = await process.stdin.read(65536)
                    if not data:
                        break
                    proc.stdin.write(data)
                    await proc.stdin.drain()
            except Exception:
                pass
            finally:
                proc.stdin.close()

        feeding = asyncio.ensure_future(feed())
        try:
            # Pipes are pumped by hand: a daemon left holding them must not block the exit status.
            pumps = asyncio.gather(pump(proc.stdout, process.stdout), pump(proc.stderr, process.stderr))
            rc = await proc.wait()
            try:
                await asyncio.wait_for(pumps, 1.0)
            except asyncio.TimeoutError:
                pass
            process.exit(rc if rc >= 0 else 128 - rc)
        except Exception:
            pass  # like sshd: a channel gone ends no command
        finally:
            feeding.cancel()
            self.procs.discard(proc)
            self.owner.pop(proc, None)

    def drop(self) -> None:
        """Abort every open connection, as a dropped network link would."""
        def _abort() -> None:
            for c in self.conns:
                c.abort()
            self.conns.clear()
        self.loop.call_soon_threadsafe(_abort)

    def stop(self) -> None:
        for proc in list(self.procs):  # what a test left running: its own process group, bash -c's session
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        async def _stop() -> None:
            for c in self.conns:
                c.abort()
            if self._server is not None:
                self._server.close()
        asyncio.run_coroutine_threadsafe(_stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
