"""The `ssh` target (asyncssh): host keys verified against known_hosts, keys/agent, ~/.ssh/config aliases,
a jump host, keepalives, bounded connects, SFTP for files and local port forwards for health checks.

Every value in a command was shell-quoted by the renderer; environment variables are sent as quoted
`export` lines on the command's input, which the login shell reads before the command (servers commonly refuse
SSH env requests, and a prefix would show every value, a token too, in the host's process list).
"""

from __future__ import annotations

import asyncio
import shlex
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import IO, Any, Mapping
from urllib.parse import urlsplit, urlunsplit

from workbench.errors import TargetError
from workbench.runner.daemon import remote_exited
from workbench.runner.targets.base import HOLDER_ENV, LOCK_NAME, CmdResult, Target, supervise
from workbench.runner.targets.files import replace_file
from workbench.runner.targets.ssh_dial import MAX_JUMP_DEPTH, config_jump, direct, parse_jump, port_closed, refusal
from workbench.runner.targets.ssh_known_hosts import key_host, port_exact
from workbench.runner.targets.ssh_sftp import SftpFiles, through_links
from workbench.runner.targets.ssh_shell import ENV_FROM_INPUT, EXPORT_SED, env_input, in_own_group

RECONNECT_ATTEMPTS = 5
RECONNECT_DELAY_S = 1.0


class SshTarget(Target):
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

    def check_local(self) -> None:
        """The known_hosts file and the key file, before any connection: a missing, unreadable or undecodable
        one is named as such (a known_hosts file that is no text ended in a UnicodeDecodeError traceback)."""
        self._check_known_hosts()
        self._check_identity()

    def _check_known_hosts(self) -> None:
        import asyncssh

        kh = self.known_hosts_file()
        port = self.spec.port or 22
        hint = (f"fetch the key on a trusted path (`ssh-keyscan -p {port} HOST`), compare its fingerprint with "
                f"the host's own, then add it to {kh} (or set known_hosts: in the profile's target)")
        if not Path(kh).exists():
            raise TargetError(
                f"the known_hosts file {kh} does not exist: wb verifies every SSH host key and has none to check "
                f"{', '.join(self.describe(h) for h in self.hosts)} against", hint=hint, setting="known_hosts")
        if not Path(kh).is_file():
            raise TargetError(f"the known_hosts file {kh} is not a file", hint=hint, setting="known_hosts")
        try:
            asyncssh.read_known_hosts(kh)
        except (OSError, ValueError) as exc:  # unreadable, or no text (UnicodeDecodeError)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise TargetError(f"cannot read the known_hosts file {kh}: {reason}", hint=hint,
                              setting="known_hosts") from None

    def _check_identity(self) -> None:
        """The profile's key file, loaded once before any connection: a missing file, or one that is no key or
        needs a passphrase, is named as such (asyncssh's error named neither the file nor the key)."""
        import asyncssh

        if not self.spec.identity_file:
            return
        path = Path(self.spec.identity_file).expanduser()
        if not path.is_file():
            raise TargetError(f"the identity_file {path} does not exist", setting="identity_file",
                              hint="set identity_file: in the profile's target to your private key, or leave it "
                                   "out to use the agent and ~/.ssh's default keys")
        try:
            asyncssh.read_private_key(str(path))
        except (asyncssh.KeyImportError, OSError) as exc:
            raise TargetError(f"cannot use the identity_file {path}: {exc}", setting="identity_file",
                              hint="wb asks for no passphrase: load the key into the agent (ssh-add) and leave "
                                   "identity_file out, or name an unencrypted private key") from None

    def describe(self, host: str) -> str:
        user = f"{self.spec.user}@" if self.spec.user else ""
        port = f":{self.spec.port}" if self.spec.port else ""
        return f"{user}{host}{port}"

    def _client_opts(self, port_flag: str, host: str) -> list[str]:
        """Options that ssh and scp spell alike (the port flag differs: -p for ssh, -P for scp)."""
        argv = []
        if self.spec.port:
            argv += [port_flag, str(self.spec.port)]
        argv += self._checks()
        chain = self._printed_jump(host)
        if chain:
            argv += ["-o", "ProxyCommand=" + self._proxy(chain)]
        return argv

    def _checks(self) -> list[str]:
        # The printed commands verify host keys as wb does, whatever the operator's ssh config says.
        argv = ["-i", self.spec.identity_file] if self.spec.identity_file else []
        return argv + ["-o", f"UserKnownHostsFile={self.known_hosts_file()}", "-o", "StrictHostKeyChecking=yes"]

    def _printed_jump(self, host: str) -> str | None:
        if self.spec.jump:
            return self.spec.jump
        try:
            return config_jump(host, {k: v for k, v in self._options().items() if k in ("username", "port")})
        except Exception:  # instructions are printed whatever the config holds; ssh then reads it itself
            return None

    def _proxy(self, chain: str) -> str:
        """OpenSSH's ProxyCommand reaching %h:%p through each hop of a jump chain, every hop checked as the
        printed command itself is (ssh -J checks a jump host as ~/.ssh/config says, against its own known_hosts).
        A hop's own ProxyCommand is inside the next one's, its % tokens doubled so that they reach it unexpanded."""
        proxy = None
        for hop in chain.split(","):
            jhost, jopts = parse_jump(hop.strip())
            argv = ["ssh", *self._checks()]
            if proxy:
                argv += ["-o", "ProxyCommand=" + proxy.replace("%", "%%")]
            if "port" in jopts:
                argv += ["-p", str(jopts["port"])]
            if "username" in jopts:
                argv += ["-l", jopts["username"]]
            proxy = shlex.join([*argv, "-W", "[%h]:%p", jhost])
        return proxy or ""

    def _dest(self, host: str) -> str:
        return f"{self.spec.user}@{host}" if self.spec.user else host

    def _ssh_argv(self, host: str) -> list[str]:
        return ["ssh", *self._client_opts("-p", host), self._dest(host)]

    def manual_command(self, host: str, command: str, env: Mapping[str, str] | None = None) -> str:
        """The ssh command line; `env` goes on the input as export lines, as for wb's own commands (each value
        quoted by the pasting shell, through printf and sed as any POSIX shell has them, so a "$NAME" reference
        is never on the host's command line). It
        is read to its end (`eval "$(cat)"`), not as `in_own_group` reads it: a pasted command's input ends at
        once, which would stop the group a watcher of it guards."""
        ssh = shlex.join(self._ssh_argv(host))
        if not env:
            return ssh + " " + shlex.quote(command)
        exports = " ".join(f"printf 'export %s=' {k}; printf '%s\\n' {w} | {EXPORT_SED};" for k, w in env.items())
        return f"{{ {exports} }} | {ssh} {shlex.quote(ENV_FROM_INPUT + command)}"

    def manual_copy(self, host: str, local_file: str, path: str) -> str:
        return shlex.join(["scp", *self._client_opts("-P", host), local_file, f"{self._dest(host)}:{path}"])

    def _translate(self, host: str, exc: BaseException, *, port: int | None, jump: str | None = None) -> TargetError:
        """`exc` from connecting to `host` on `port`, the port dialled as given (None: ~/.ssh/config's, else 22);
        `jump`: the hop of a jump chain that `host` is, as written there."""
        import asyncssh

        where = f"jump host {jump}" if jump else self.describe(host)
        if isinstance(exc, asyncssh.HostKeyNotVerifiable):
            kh = self.known_hosts_file()  # as read: `~` is the runner's home, which sudo or $HOME may have moved
            real, name, port = key_host(host, port)
            entry = name if port == 22 else f"[{name}]:{port}"  # as ssh writes a known_hosts line
            scan = f"ssh-keyscan -p {port} {real}"
            compare = "compare with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host"
            if not self._known(name, port):
                return TargetError(
                    f"refusing {where}: {kh} holds no host key for {entry}",
                    hint=(f"fetch its key on a trusted path (`{scan} > key.txt`), {compare} against "
                          f"`ssh-keygen -lf key.txt`, then append key.txt to {kh}"))
            return TargetError(
                f"refusing {where}: its host key does not match {kh} ({exc.reason})",
                hint=(f"verify the key out of band: `{scan} | ssh-keygen -lf -` on a trusted path and {compare}; "
                      f"only if it legitimately changed, run `ssh-keygen -R '{entry}' -f {kh}` and add the "
                      f"verified key"))
        if isinstance(exc, asyncssh.PermissionDenied):
            return TargetError(f"{where} refused the login: {exc.reason}",
                               hint="check user, identity_file or the agent (ssh-add -l)")
        if port_closed(exc):
            real, _, port = key_host(host, port)
            setting = ("the profile's jump: as host:port, or ProxyJump or Port in ~/.ssh/config" if jump
                       else "the profile's port:, or Port in ~/.ssh/config")
            return TargetError(f"cannot reach {where}: {real} refused the connection on port {port}",
                               hint=f"check the port ({setting}) and that sshd runs there")
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return TargetError(f"{where} did not answer within {self.spec.connect_timeout_s:g} s",
                               hint="check the host name, port and network (ssh -v)")
        if isinstance(exc, OSError):
            return TargetError(f"cannot reach {where}: {exc.strerror or exc}",
                               hint="check the host name, port, ~/.ssh/config and that sshd runs there")
        if isinstance(exc, asyncssh.Error):
            return TargetError(f"SSH to {where} failed: {exc.reason}")
        return TargetError(f"SSH to {where} failed: {exc}")

    def _known(self, name: str, port: int) -> bool:
        """Whether the known_hosts file holds any host key (or CA) for `name` on `port`."""
        try:
            found = port_exact(self.known_hosts_file())(name, "", port)
        except (OSError, ValueError):
            return True  # unreadable here: say no more than that the key does not match
        return bool(found[0] or found[1])

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

    # ------------------------------------------------------------------ files
    async def read_file(self, host: str, path: str) -> tuple[bytes, int] | None:
        import asyncssh

        async def go(conn: Any) -> tuple[bytes, int] | None:
            async with conn.start_sftp_client() as sftp:
                try:
                    attrs = await sftp.stat(path)
                    async with sftp.open(path, "rb") as f:
                        data = await f.read()
                except asyncssh.SFTPNoSuchFile:
                    return None
                return data, (attrs.permissions or 0o644) & 0o7777

        return await self._sftp(host, f"reading {path}", go)

    async def write_file(self, host: str, path: str, data: bytes, mode: int) -> None:
        async def go(conn: Any) -> None:
            async with conn.start_sftp_client() as sftp:
                real = await through_links(sftp, path)
                await replace_file(SftpFiles(sftp), real, f"{real}.wb-tmp", data, mode)

        await self._sftp(host, f"writing {path}", go)

    async def remove_file(self, host: str, path: str) -> None:
        import asyncssh

        async def go(conn: Any) -> None:
            async with conn.start_sftp_client() as sftp:
                try:
                    await sftp.remove(await through_links(sftp, path))
                except asyncssh.SFTPNoSuchFile:
                    pass

        await self._sftp(host, f"removing {path}", go)

    async def fetch(self, host: str, path: str, local_path: Path) -> bool:
        import asyncssh

        async def go(conn: Any) -> bool:
            local_path.parent.mkdir(parents=True, exist_ok=True)
            async with conn.start_sftp_client() as sftp:
                try:
                    await sftp.get(path, str(local_path))
                except asyncssh.SFTPNoSuchFile:
                    return False
            return True

        return await self._sftp(host, f"fetching {path}", go)

    async def mkdir(self, host: str, path: str) -> None:
        async def go(conn: Any) -> None:
            async with conn.start_sftp_client() as sftp:
                await sftp.makedirs(path, exist_ok=True)

        await self._sftp(host, f"creating {path}", go)

    async def put_files(self, host: str, base: str, files: dict[str, bytes]) -> None:
        async def go(conn: Any) -> None:
            async with conn.start_sftp_client() as sftp:
                for rel, data in files.items():
                    dest = f"{base}/{rel}"
                    await sftp.makedirs(dest.rsplit("/", 1)[0], exist_ok=True)
                    async with sftp.open(dest, "wb") as f:
                        await f.write(data)

        await self._sftp(host, f"uploading to {base}", go)

    async def fetch_dir(self, host: str, path: str, local_dir: Path) -> int:
        import asyncssh

        async def go(conn: Any) -> int:
            local_dir.mkdir(parents=True, exist_ok=True)
            async with conn.start_sftp_client() as sftp:
                try:
                    names = await sftp.listdir(path)
                except asyncssh.SFTPNoSuchFile:
                    return 0
                n = 0
                for name in names:
                    if name in (".", ".."):
                        continue
                    await sftp.get(f"{path}/{name}", str(local_dir / name))
                    n += 1
                return n

        return await self._sftp(host, f"fetching {path}", go)

    async def _sftp(self, host: str, what: str, fn):
        import asyncssh

        t0 = time.monotonic()
        try:
            return await self._call(host, what, fn)
        except asyncssh.SFTPError as exc:
            raise TargetError(f"{what} on {self.describe(host)} failed: {exc.reason}") from exc
        except OSError as exc:
            raise TargetError(f"{what} on {self.describe(host)} failed: {exc}") from exc
        finally:
            self.clock.add(host, time.monotonic() - t0)

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
