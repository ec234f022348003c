"""The `ssh` target (asyncssh): host keys verified against known_hosts, keys/agent, ~/.ssh/config aliases,
a jump host, keepalives, bounded connects, SFTP for files and local port forwards for health checks.

Every value in a command was shell-quoted by the renderer; environment variables are sent as quoted
`export` lines on the command's input, which the login shell reads before the command (servers commonly refuse
SSH env requests, and a prefix would show every value, a token too, in the host's process list).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import IO, Any, Mapping
from urllib.parse import urlsplit, urlunsplit

from workbench.errors import TargetError
from workbench.runner.daemon import remote_exited
from workbench.runner.targets.base import HOLDER_ENV, LOCK_NAME, CmdResult, Target, supervise
from workbench.runner.targets.ssh_dial import MAX_JUMP_DEPTH, config_jump, direct, parse_jump, refusal
from workbench.runner.targets.ssh_errors import SshErrors
from workbench.runner.targets.ssh_files import SshFiles
from workbench.runner.targets.ssh_known_hosts import port_exact
from workbench.runner.targets.ssh_printed import PrintedSsh
from workbench.runner.targets.ssh_shell import env_input, in_own_group

RECONNECT_ATTEMPTS = 5
RECONNECT_DELAY_S = 1.0


class SshTarget(SshErrors, PrintedSsh, SshFiles, Target):
    kind = "ssh"

    def __init__(self, spec: Any) -> None:
        super().__init__(list(spec.hosts), spec.ca_file)
        self.spec = spec
        self._conns: dict[str, Any] = {}
        self._jumps: dict[str, list[Any]] = {}
        self._forwards: dict[tuple[str, str, int], Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def work_root(self, options: Mapping[str, Any]) -> str | None:
        return str(options.get("work_dir", "/tmp/wb-runs")) + f"/{uuid.uuid4().hex[:12]}"

    def lock_file(self, options: Mapping[str, Any], config_path: str | None) -> str | None:
        # Without a config file, the remote work folder stands for the deployment.
        work_dir = PurePosixPath(str(options.get("work_dir", "/tmp/wb-runs")))
        return super().lock_file(options, config_path) or str(work_dir / LOCK_NAME)

    def summary(self) -> str:
        return "ssh:" + ",".join(self.describe(h) for h in self.hosts)

    # ------------------------------------------------------------------ connections
    def _options(self) -> dict[str, Any]:
        s = self.spec
        opts: dict[str, Any] = {"connect_timeout": s.connect_timeout_s, "keepalive_interval": s.keepalive_s,
                                "keepalive_count_max": 3}
        if s.user:
            opts["username"] = s.user
        if s.port:
            opts["port"] = s.port
        # Always an explicit file, never None and never left to ~/.ssh/config: asyncssh takes None, or a config's
        # `UserKnownHostsFile none`, as "do not check", and wb must verify every host key.
        opts["known_hosts"] = port_exact(self.known_hosts_file())
        if s.identity_file:
            opts["client_keys"] = [str(Path(s.identity_file).expanduser())]
        return opts

    def known_hosts_file(self) -> str:
        return str(Path(self.spec.known_hosts or "~/.ssh/known_hosts").expanduser())

    def describe(self, host: str) -> str:
        user = f"{self.spec.user}@" if self.spec.user else ""
        port = f":{self.spec.port}" if self.spec.port else ""
        return f"{user}{host}{port}"

    async def _connect(self, host: str) -> Any:
        import asyncssh

        self.check_local()
        opts = self._options()
        for old in self._jumps.pop(host, []):
            old.close()
        hops: list[Any] = []
        self._jumps[host] = hops
        try:
            # A jump host, the profile's or one ~/.ssh/config names, is connected to here with the same
            # known_hosts: left to asyncssh, a config's jump is reached with the config's own checking.
            chain = self.spec.jump or config_jump(host, opts)
            tunnel = await self._tunnel(chain, opts, hops, 0) if chain else direct(host, opts)
            conn = await asyncio.wait_for(asyncssh.connect(host, tunnel=tunnel, **opts),
                                          self.spec.connect_timeout_s + 5)
        except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
            raise self._translate(host, exc, port=self.spec.port) from exc
        except asyncssh.ConfigParseError as exc:
            raise TargetError(f"cannot read the SSH client config: {exc}",
                              hint="wb reads ~/.ssh/config through asyncssh, which knows most of OpenSSH's "
                                   "options: fix or remove that line") from None
        return conn

    async def _tunnel(self, chain: str, opts: dict[str, Any], hops: list[Any], depth: int) -> Any:
        """The last connection of a `[user@]host[:port],...` chain, each hop verified against known_hosts; the
        first hop goes through the jump ~/.ssh/config names for it, if any."""
        import asyncssh

        if depth >= MAX_JUMP_DEPTH:
            raise TargetError(f"more than {MAX_JUMP_DEPTH} jump hosts in a chain (a loop of ProxyJump in "
                              "~/.ssh/config?)")
        conn = None
        for hop in chain.split(","):
            jhost, jopts = parse_jump(hop.strip())
            for key in ("known_hosts", "client_keys", "connect_timeout", "keepalive_interval"):
                if key in opts:
                    jopts.setdefault(key, opts[key])
            if conn is None:
                first = config_jump(jhost, jopts)
                conn = await self._tunnel(first, opts, hops, depth + 1) if first else None
            try:
                conn = await asyncio.wait_for(asyncssh.connect(jhost, tunnel=conn or direct(jhost, jopts), **jopts),
                                              self.spec.connect_timeout_s + 5)
            except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
                raise self._translate(jhost, exc, jump=hop.strip(), port=jopts.get("port")) from exc
            hops.append(conn)
        return conn

    async def _conn(self, host: str) -> Any:
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            conn = self._conns.get(host)
            if conn is None or conn.is_closed():
                self._drop_forwards(host)
                conn = await self._connect(host)
                self._conns[host] = conn
            return conn

    def _drop_forwards(self, host: str) -> None:
        for key in [k for k in self._forwards if k[0] == host]:
            fwd = self._forwards.pop(key)
            try:
                fwd.close()
            except Exception:
                pass

    async def open(self) -> None:
        """Connect to every host before anything on them is touched. A host that refuses wb there (its key not in
        known_hosts or not matching it, its port closed, the login refused) is a refused target, exit 2: nothing
        on it changed, and the user acts on the cause named before trying again."""
        from workbench.runner.lock import TargetRefused

        try:
            await asyncio.gather(*(self._conn(h) for h in self.hosts))
        except TargetError as exc:
            if not refusal(exc.__cause__):
                raise  # a timeout or a lookup that failed may pass: a failure while running, as before
            raise TargetRefused(exc.message, hint=exc.hint) from exc

    async def reconnect(self, host: str) -> None:
        last: Exception | None = None
        for attempt in range(RECONNECT_ATTEMPTS):
            old = self._conns.pop(host, None)
            if old is not None:
                old.abort()
            try:
                await self._conn(host)
                return
            except TargetError as exc:
                last = exc
                await asyncio.sleep(RECONNECT_DELAY_S * (attempt + 1))
        raise TargetError(f"lost the connection to {self.describe(host)} and could not reconnect: {last}")

    async def close(self) -> None:
        for host in list(self._conns):
            self._drop_forwards(host)
            conn = self._conns.pop(host)
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 3)
            except Exception:
                pass
        for hops in self._jumps.values():
            for jump in hops:
                jump.close()
        self._jumps.clear()
        await super().close()

    async def _call(self, host: str, what: str, fn):
        """Run `fn(conn)`; a dropped connection becomes TargetError (the next call reconnects)."""
        import asyncssh

        conn = await self._conn(host)
        try:
            return await fn(conn)
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, asyncssh.ChannelOpenError,
                asyncssh.SFTPConnectionLost, BrokenPipeError, ConnectionError) as exc:
            self._conns.pop(host, None)
            raise TargetError(f"connection to {self.describe(host)} dropped during {what}: {exc}") from exc

    # ------------------------------------------------------------------ commands
    async def run(self, host: str, command: str, *, env: dict[str, str] | None = None, timeout: float,
                  stdout_file: IO[bytes] | None = None, stderr_file: IO[bytes] | None = None) -> CmdResult:
        t0 = time.monotonic()
        if self.holder is not None:  # no child of the runner on the host: it names the lock it works under
            env = {**(env or {}), HOLDER_ENV: self.holder}
        full = in_own_group(command, bool(env))

        async def go(conn: Any) -> CmdResult:
            proc = await conn.create_process(full, encoding=None)  # its input stays open: see in_own_group
            if env:
                proc.stdin.write(env_input(env))

            async def stop() -> None:
                self._stop(proc)

            held: list[bool] = []
            timed_out, out, err = await supervise(remote_exited(proc), stop, proc.stdout, proc.stderr, stdout_file,
                                                  stderr_file, timeout, raise_reader_errors=True,
                                                  on_held_open=lambda: held.append(True))
            if held:
                proc.close()  # a background process keeps the channel open; its exit status is already here
            rc = None if timed_out else proc.exit_status
            if rc is None and not timed_out and proc.exit_signal:
                rc = 128 + 15
            return CmdResult(command=command, rc=rc, stdout=out, stderr=err,
                             duration_s=time.monotonic() - t0, timed_out=timed_out, held_open=bool(held))

        try:
            return await self._call(host, "a command", go)
        finally:
            self.clock.add(host, time.monotonic() - t0)

    @staticmethod
    def _stop(proc: Any) -> None:
        # A remote command keeps running after its channel closes unless signalled.
        for action in (lambda: proc.send_signal("TERM"), proc.close):
            try:
                action()
            except Exception:
                pass

    # ------------------------------------------------------------------ health over a forward
    async def _fetch(self, host: str, url: str, timeout: float) -> Any:
        """GET a URL as the host sees it: its host:port is reached through a local forward over SSH. The URL's
        host:port still names the request (Host header) and, over https, the certificate the server must show
        (checked against 127.0.0.1, no certificate would pass)."""
        local = await self._forwarded(host, url)
        if local is None:
            return None
        return await self._get(local, timeout, name=urlsplit(url).netloc.rpartition("@")[2])

    async def _forwarded(self, host: str, url: str) -> str | None:
        """`url` rewritten to a local port forwarded to it over SSH; None when the forward fails."""
        parts = urlsplit(url)
        dest_host = parts.hostname or "127.0.0.1"
        dest_port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (host, dest_host, dest_port)
        try:
            fwd = self._forwards.get(key)
            if fwd is None:
                conn = await self._conn(host)
                fwd = await conn.forward_local_port("127.0.0.1", 0, dest_host, dest_port)
                self._forwards[key] = fwd
        except TargetError:
            return None
        except Exception:
            self._conns.pop(host, None)
            return None
        userinfo = parts.netloc.rpartition("@")[0]  # credentials in the URL go with it (basic auth)
        local = f"127.0.0.1:{fwd.get_port()}"
        return urlunsplit((parts.scheme, f"{userinfo}@{local}" if userinfo else local, parts.path or "/",
                           parts.query, ""))
