"""The target interface: run a command on a host, move files to and from it, and reach its HTTP ports.

Every implementation bounds every wait, streams command output to local files as it arrives, and
turns library errors into TargetError at the point they enter.
"""

from __future__ import annotations

import abc
import asyncio
import functools
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Callable, Mapping
from urllib.parse import urlsplit

from workbench.errors import TargetError


@dataclass
class CmdResult:
    command: str
    rc: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    held_open: bool = False  # the command exited while a background process still held its output

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    @property
    def output(self) -> str:
        return self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr

    def excerpt(self, limit: int = 600) -> str:
        text = self.output.strip()
        return text if len(text) <= limit else "…" + text[-limit:]


# How many bytes before a log span's start are fingerprinted (`FileStat.tail`): enough to hold a few log lines,
# whose times and counters tell an old log from a new one regrown past the same byte.
TAIL_BYTES = 256


@dataclass(frozen=True)
class FileStat:
    """A file as a log span checks it: its size, which file it is (device and inode) where the target can tell,
    since a log rotated by a rename and regrown past a run's start has a size that alone looks fine, and a
    fingerprint of the bytes just before byte `tail_at` where it can read them, since a log truncated in place
    (copytruncate) and regrown past that byte is the same file, larger."""

    size: int
    identity: str | None = None
    tail: str | None = None  # sha256 of the up to TAIL_BYTES bytes before byte `tail_at` (`tail_fingerprint`)
    tail_at: int | None = None

    def replaced_since(self, before: "FileStat") -> bool:
        """Whether this is not the file `before` described, grown: shorter than it was, another file, or other
        bytes before the offset both fingerprinted (a check takes it at the start's size: `file_stat(at=)`)."""
        known = self.identity is not None and before.identity is not None
        if self.size < before.size or (known and self.identity != before.identity):
            return True
        compared = self.tail is not None and before.tail is not None and self.tail_at == before.tail_at
        return compared and self.tail != before.tail


def tail_fingerprint(data: bytes) -> str:
    """`FileStat.tail` of the bytes read before its offset (at most TAIL_BYTES of them)."""
    import hashlib

    return hashlib.sha256(data[-TAIL_BYTES:]).hexdigest()


@dataclass
class Clock:
    """Seconds spent inside target commands and waits, per host (the rest of the wall time is the runner's)."""

    target_s: dict[str, float] = field(default_factory=dict)

    def add(self, host: str, seconds: float) -> None:
        self.target_s[host] = self.target_s.get(host, 0.0) + seconds


LOCK_NAME = "wb-target.lock"  # the per-target lock file (see runner.lock)
# Set on the commands a runner sends through a target that holds its lock (the execution's UUID): one of them that
# reaches pdsim over ssh is no child of the runner, yet works under its lock (runner.lock.live_holder).
HOLDER_ENV = "WB_TARGET_HOLDER"


def config_lock_file(config_path: str) -> str:
    """The lock of a deployment kept beside the config file an experiment rewrites (`DIR/.NAME.wb-target.lock`)."""
    p = PurePosixPath(config_path)
    return str(p.parent / f".{p.name}.{LOCK_NAME}")


class Target(abc.ABC):
    """One kind of place runs happen. Hosts are names; `local` targets have the single host `local`.

    Every hook the runner calls is here: the file and command primitives are abstract, every other hook has a
    default, so a target that needs nothing more inherits it.
    """

    kind: str = "?"
    children_dir: Path | None = None  # where local commands note their process groups (see runner.orphans)
    # True when this target started the deployment itself (and stops it in `teardown`): the restore
    # then needs no restart, the deployment goes away.
    started_here: bool = False
    # False where wb itself restarts the deployment (the simulator, the kernel): the manipulation check's
    # look at who listens on the health ports (runner/manipulation.py) would only watch wb's own doing.
    check_restart: bool = True
    # The execution whose lock on this target is held (runner.lock.TargetLock), while it is; None otherwise.
    holder: str | None = None

    def __init__(self, hosts: list[str], ca_file: str | None = None) -> None:
        self.hosts = hosts
        self.ca_file = ca_file  # PEM CA certificates for https URLs; None: SSL_CERT_FILE/DIR, else the public CAs
        self.clock = Clock()
        self._http: dict[bool, Any] = {}  # by "the URL is https": built on first use, kept for the experiment

    async def open(self) -> None:
        """Connect (SSH) or check the machine; raises TargetError when a host cannot be reached."""

    async def close(self) -> None:
        """Release connections; never raises."""
        for client in self._http.values():
            try:
                await client.aclose()
            except Exception:
                pass
        self._http = {}

    async def reconnect(self, host: str) -> None:
        """Re-establish the connection to `host` after a drop (bounded); raises TargetError."""

    @abc.abstractmethod
    async def run(self, host: str, command: str, *, env: dict[str, str] | None = None, timeout: float,
                  stdout_file: IO[bytes] | None = None, stderr_file: IO[bytes] | None = None) -> CmdResult:
        """Run a shell command; a timeout kills it and returns timed_out=True (never raises for rc != 0)."""

    @abc.abstractmethod
    async def read_file(self, host: str, path: str) -> tuple[bytes, int] | None:
        """(content, permission bits), or None when the file does not exist."""

    @abc.abstractmethod
    async def write_file(self, host: str, path: str, data: bytes, mode: int) -> None:
        """Replace the file atomically (write a sibling, then rename over it)."""

    @abc.abstractmethod
    async def remove_file(self, host: str, path: str) -> None:
        """Remove the file when it exists."""

    @abc.abstractmethod
    async def fetch(self, host: str, path: str, local_path: Path, offset: int = 0) -> bool:
        """Copy a file from the host, from byte `offset` on; False when it does not exist."""

    @abc.abstractmethod
    async def file_stat(self, host: str, path: str, at: int | None = None) -> FileStat | None:
        """The file's size and identity (after following links), and the fingerprint of its bytes before byte `at`
        (default: its size; none past its end or where the target cannot read them); None when it does not
        exist."""

    @abc.abstractmethod
    async def mkdir(self, host: str, path: str) -> None:
        """Create a folder (and parents) on the host."""

    async def http_status(self, host: str, url: str, timeout: float) -> int | None:
        """Status of GET `url` as seen from `host` (None when nothing answers)."""
        resp = await self._fetch(host, url, timeout)
        return None if resp is None else resp.status_code

    async def http_text(self, host: str, url: str, timeout: float) -> str | None:
        """Body of GET `url` as seen from `host` when it answers 200 (None otherwise)."""
        resp = await self._fetch(host, url, timeout)
        return resp.text if resp is not None and resp.status_code == 200 else None

    async def _fetch(self, host: str, url: str, timeout: float) -> Any:
        """The response to GET `url` as `host` sees it, None when nothing answers. Here `host` is this machine;
        a target that reaches a host's URLs another way (ssh: a local forward) overrides this alone."""
        return await self._get(url, timeout)

    def check_tls(self) -> None:
        """Check what https URLs are verified with, so that an unusable ca_file is named before the target is
        touched (left to the first poll, every health stage would fail with a TLS error)."""
        tls_context(self.ca_file)

    def _client(self, https: bool) -> Any:
        """One client per scheme for the whole experiment: building one costs more than a poll. Only https URLs
        need the certificates (loading the public CAs is ~50 ms of CPU, which a plain-http target never
        needs): http URLs go through a client whose TLS context trusts no certificate at all."""
        if https not in self._http:
            import httpx

            self._http[https] = httpx.AsyncClient(trust_env=False,
                                                  verify=tls_context(self.ca_file) if https else _trust_nothing())
        return self._http[https]

    async def _get(self, url: str, timeout: float, *, name: str | None = None) -> Any:
        """GET `url`; `name` is the host[:port] the request is for when `url` reaches it another way (a local
        forward): it goes in the Host header, and an https certificate is checked against its host."""
        import httpx

        headers, extensions = {}, {}
        if name is not None:
            headers["Host"] = name
            extensions["sni_hostname"] = urlsplit(f"//{name}").hostname or name
        try:
            return await self._client(urlsplit(url).scheme == "https").get(url, timeout=timeout, headers=headers,
                                                                             extensions=extensions)
        except (httpx.HTTPError, OSError):
            return None

    def describe(self, host: str) -> str:
        return host

    def where(self, host: str) -> str:
        """Where a run on `host` is shown beside its arm ("control@gpu-1", "control r0 on gpu-1"): the host. Only
        shown: the run keeps `host` as the plan gave it."""
        return host

    def manual_command(self, host: str, command: str, env: Mapping[str, str] | None = None) -> str:
        """How a person runs `command` on `host` by hand (for restore instructions), in the environment `env`
        (name -> a shell word as it is pasted: a quoted value, or a "$NAME" reference)."""
        if not env:
            return command
        return "env " + " ".join(f"{k}={w}" for k, w in env.items()) + " sh -c " + shlex.quote(command)

    def manual_copy(self, host: str, local_file: str, path: str) -> str:
        return f"cp {shlex.quote(local_file)} {shlex.quote(path)}"

    def work_root(self, options: Mapping[str, Any]) -> str | None:
        """A fresh folder for this experiment's per-run folders on the target; None: the runner's local
        artifacts folder."""
        return None

    def lock_file(self, options: Mapping[str, Any], config_path: str | None) -> str | None:
        """Where the lock of this deployment lives on a host: next to the config file the experiment rewrites;
        None when there is nothing to protect."""
        return config_lock_file(config_path) if config_path else None

    def check_local(self) -> None:
        """Refuse (TargetError, its `setting` naming the profile's key) what this machine lacks to reach the
        target, such as a file the profile names; checked before anything is touched. Nothing by default."""

    async def deployment_identity(self, host: str) -> str | None:
        """What changes when the deployment on `host` restarts (its processes), to tell a run that the deployment
        was restarted under it; None where the target cannot tell."""
        return None

    def check_config_path(self, config_path: str) -> None:
        """Refuse (raise) a config file the deployment would not read, before the target is locked or touched;
        every config file is read by default."""

    def keep_notes(self, folder: Path) -> None:
        """Where this execution notes what it started (local process groups, see runner.orphans), so a
        `--resume` after kill -9 can stop it."""
        self.children_dir = folder / "children"

    def summary(self) -> str:
        """The target as an execution records it."""
        return self.kind

    def context(self) -> dict[str, str]:
        """Template values the target contributes before it is set up (e.g. its state folder)."""
        return {}

    async def setup(self, serve_file: Path, env: dict[str, str]) -> dict[str, str]:
        """Prepare the deployment before the first run; returns template values (ports, folders)."""
        return {}

    async def teardown(self) -> str | None:
        """Undo `setup` after the restore; returns a warning text when that failed."""
        return None

    async def run_arm(self, variables: dict[str, str],
                      replicate: int) -> tuple[dict[str, float], dict[str, Any]] | None:
        """Run one arm in process: (metrics, fingerprint additions); None: run the profile's workload command."""
        return None

    async def put_files(self, host: str, base: str, files: dict[str, bytes]) -> None:
        """Upload files (relative path -> content) under `base` on the host."""
        for rel, data in files.items():
            path = f"{base}/{rel}"
            await self.mkdir(host, path.rsplit("/", 1)[0])
            await self.write_file(host, path, data, 0o644)

    async def fetch_dir(self, host: str, path: str, local_dir: Path) -> int:
        """Copy a folder from the host (one level); the number of files copied."""
        raise NotImplementedError(f"{type(self).__name__} keeps its run folders local")


async def pump(stream: Any, sink: IO[bytes] | None, chunks: list[bytes]) -> None:
    """Copy a stream to a file as it arrives (so a killed run keeps its output) and keep it in memory."""
    if stream is None:
        return
    while True:
        data = await stream.read(65536)
        if not data:
            return
        chunks.append(data)
        if sink is not None:
            sink.write(data)
            sink.flush()


DRAIN_S = 1.0  # how long output may keep arriving after the command ended
QUIET_S = 0.1  # ...but once nothing new arrived for this long, what was available has been read


async def _drain(readers: list[Any], out: list[bytes], err: list[bytes]) -> tuple[set[Any], set[Any]]:
    """Read what the command left in its pipes: stop at EOF, after DRAIN_S, or once they went quiet (a
    background process that inherited them may keep them open for hours)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_S
    done: set[Any] = set()
    pending = set(readers)
    while pending and loop.time() < deadline:
        before = len(out) + len(err)
        more, pending = await asyncio.wait(pending, timeout=min(QUIET_S, max(deadline - loop.time(), 0)))
        done |= more
        if pending and len(out) + len(err) == before:
            break
    return done, pending


async def supervise(wait: Any, stop: Any, stdout: Any, stderr: Any, stdout_file: IO[bytes] | None,
                    stderr_file: IO[bytes] | None, timeout: float, *,
                    raise_reader_errors: bool = False,
                    on_held_open: Callable[[], None] | None = None) -> tuple[bool, str, str]:
    """Await `wait` (the command's end) for at most `timeout` while pumping both streams to their files.

    On timeout the command is stopped (`await stop()`) and `timed_out` is True; on cancellation
    (Ctrl-C, SIGTERM, a fault) it is stopped too, since it must not outlive the runner's decision.
    `wait` must end when the command's process ends, not at EOF on its output (see runner/daemon.py):
    output still open after DRAIN_S is given up and `on_held_open` is called.
    Returns (timed_out, stdout text, stderr text).
    """
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [asyncio.ensure_future(pump(stdout, stdout_file, out)),
               asyncio.ensure_future(pump(stderr, stderr_file, err))]
    timed_out = False
    try:
        try:
            await asyncio.wait_for(wait, timeout)
        except asyncio.TimeoutError:
            timed_out = True
            await stop()
    except BaseException:
        await asyncio.shield(stop())
        for r in readers:
            r.cancel()
        raise
    done, pending = await _drain(readers, out, err)
    for r in pending:
        r.cancel()
    if pending and not timed_out and on_held_open is not None:
        on_held_open()
    # Every reader's error is taken, not only the first: a dropped link fails both streams, and one left unread
    # is logged with its traceback when the task is collected.
    errors = [r.exception() for r in done if not r.cancelled() and r.exception() is not None]
    if raise_reader_errors and not timed_out and errors:
        raise errors[0]  # type: ignore[misc]
    return timed_out, b"".join(out).decode("utf-8", "replace"), b"".join(err).decode("utf-8", "replace")


def _trust_nothing() -> Any:
    """A TLS context that verifies hostnames and certificates against no CA: no https server passes it."""
    import ssl

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def tls_context(ca_file: str | None) -> Any:
    """What https URLs are verified with: the certificates in `ca_file`; without one, those that the standard
    SSL_CERT_FILE / SSL_CERT_DIR name (as OpenSSL, curl and requests read them; the client is built with
    trust_env off, for proxies, so httpx would not), else the public CAs (httpx's default). Raises TargetError
    naming the file or variable when it is missing or holds no certificate."""
    import ssl

    if ca_file is None:
        return _env_tls_context()
    path = Path(ca_file).expanduser()
    if not path.is_file():
        raise TargetError(f"the ca_file {path} does not exist",
                          hint="set ca_file: in the profile's target to the PEM file of the CA that signed the "
                               "service's certificate, or leave it out to trust those SSL_CERT_FILE names, else "
                               "the public CAs")
    try:
        return _loaded_context(str(path), None, _stamp(str(path)))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TargetError(f"cannot use the ca_file {path}: {exc}",
                          hint="ca_file: names a PEM file holding one or more CA certificates") from None


def _env_tls_context() -> Any:
    import ssl

    cafile, capath = os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        return True
    for name, value, exists in (("SSL_CERT_FILE", cafile, os.path.isfile), ("SSL_CERT_DIR", capath, os.path.isdir)):
        if value is not None and not exists(value):
            raise TargetError(f"{name}={value} does not exist",
                              hint=f"set {name} to the CA certificates https health URLs are to be checked against, "
                                   "unset it to trust the public CAs, or name them in the profile's target.ca_file")
    try:
        return _loaded_context(cafile, capath, _stamp(cafile) + _stamp(capath))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TargetError(f"cannot use SSL_CERT_FILE={cafile}: {exc}",
                          hint="SSL_CERT_FILE names a PEM file holding one or more CA certificates") from None


def _stamp(path: str | None) -> tuple[int, int]:
    """What tells a CA file or folder changed since its certificates were loaded: its mtime and size."""
    if path is None:
        return (0, 0)
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _loaded_context(cafile: str | None, capath: str | None, stamp: tuple[int, ...]) -> Any:
    """A TLS context trusting `cafile` / `capath`, loaded once per process while they are unchanged (`stamp`):
    loading a system CA bundle is ~40 ms of CPU, and every execution checks it before touching the target (a
    long-lived caller runs many). The context is only read by the clients that use it; a load that fails is not
    kept, so it fails again, and a file changed since is loaded again."""
    import ssl

    return ssl.create_default_context(cafile=cafile, capath=capath)
