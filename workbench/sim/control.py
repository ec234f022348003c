"""Start, stop, restart and inspect the embedded deployment: two server processes, pid files, a
state dir (the systemd analogue).

State dir (`--dir`, default `$WB_SIM_DIR` or `.wb/sim` under the cwd):
    serve.sh            default serve file (created from DEFAULTS when absent)
    config_path         which serve file `restart` re-reads (relative to the folder when inside it)
    clock.bin           the simulated clock the processes share (see clock.py)
    checkpoints.log     (wall, simulated) pairs, to translate `journal --since WALL_TIME`
    run/<unit>.json     pid, process start time, port, the values it was started with
    logs/<unit>.log     timestamped server logs; logs/<unit>.stderr raw interpreter output
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from workbench.errors import BadInput, SimError, SimNotRunning
from workbench.sim import clock
from workbench.sim.config import ServeConfig, parse_serve_text, read_serve_file, render_serve_file, with_overrides
from workbench.sim.logs import UNITS, log_path

__all__ = ["state_dir", "config_path", "up", "down", "restart", "status", "SimStatus",
           "UnitStatus", "running_config", "HEALTH_TIMEOUT_S", "STATUS_EXIT", "status_exit_code"]

# Health can take a while on a loaded machine (the prefill imports torch): a slow start is not a failure.
HEALTH_TIMEOUT_S = 60.0
PORT_RELEASE_S = 5.0  # how long a restart waits for the ports its stopped servers held
STOP_TIMEOUT_S = 5.0
_REPO_ROOT = Path(__file__).resolve().parents[2]


def state_dir(path: str | Path | None = None, *, create: bool = False) -> Path:
    """pdsim's state folder: `path` (--dir), else $WB_SIM_DIR, else the one `wb hypothesis run` uses, the
    workbench's .wb/sim ($WB_ROOT, else the nearest folder up holding hypotheses.yaml, as wb finds its
    workbench), else ./.wb/sim. `create`: the caller makes the folder, so a named one's parent must exist."""
    if isinstance(path, str) and not path.strip():
        # `--dir "$UNSET"`: not the current folder, which would fill with a serve file, pid files and logs
        raise BadInput("--dir is empty", hint="give pdsim's state folder, or leave --dir out")
    if path:
        return _folder(Path(path).expanduser().resolve(), "--dir", create)
    env = os.environ.get("WB_SIM_DIR")
    if env:
        return _folder(Path(env).expanduser().resolve(), "$WB_SIM_DIR", create)
    here = Path.cwd().resolve()
    root = os.environ.get("WB_ROOT")
    if root:
        from workbench.registry.loader import check_root_not_file

        check_root_not_file(Path(root).expanduser(), "$WB_ROOT")
        return (Path(root).expanduser() / ".wb" / "sim").resolve()
    for d in (here, *here.parents):
        if (d / "hypotheses.yaml").is_file():
            return d / ".wb" / "sim"
    return here / ".wb" / "sim"


def _folder(sdir: Path, given: str, create: bool) -> Path:
    """A state folder named by the user, refused when it, or the nearest part of it that exists, is a file (its
    pid files and logs could be neither read nor written: `down` and `up` ended in a traceback). One to be made
    is refused when its parent is missing too: a mistyped folder is an error, not a tree to create (as a
    report's --out and a bundle's -o)."""
    for d in (sdir, *sdir.parents):
        if d.exists():
            if not d.is_dir():
                what = "is a file" if d == sdir else f"lies inside {d}, a file"
                raise BadInput(f"{given} {sdir} {what}, not a folder",
                               hint="name pdsim's state folder (wb creates it when missing)")
            break
    if create and not sdir.exists() and not sdir.parent.is_dir():
        import shlex

        raise BadInput(f"{given} {sdir}: the folder {sdir.parent} does not exist",
                       hint=f"create it first: mkdir -p {shlex.quote(str(sdir.parent))}")
    return sdir


def config_path(sdir: Path) -> Path:
    """The serve file in use: the one `up --config` named last, else DIR/serve.sh. One inside the folder is
    noted relative to it (see `_note_config`)."""
    pointer = sdir / "config_path"
    if pointer.exists():
        return sdir / pointer.read_text().strip()  # an absolute path stays itself
    return sdir / "serve.sh"


def _note_config(sdir: Path, cfg_file: Path) -> None:
    """Note `cfg_file` as the serve file in use. One inside the folder is noted relative to it: by its absolute
    path, a copy of the folder (cp -r) read, and its --set rewrote, the original folder's serve file."""
    try:
        noted = str(cfg_file.relative_to(sdir))
    except ValueError:
        noted = str(cfg_file)  # the user's own file elsewhere: every folder naming it shares it
    (sdir / "config_path").write_text(noted)


def _ensure_default_config(sdir: Path) -> Path:
    path = sdir / "serve.sh"
    if not path.exists():
        path.write_text(render_serve_file({}))
    return path


@dataclass
class UnitStatus:
    unit: str
    state: str                  # healthy | wedged | unhealthy | down
    pid: int | None = None
    port: int | None = None
    health: int | None = None   # HTTP status of /health, None if unreachable
    detail: str = ""
    debug: dict[str, Any] = field(default_factory=dict)


@dataclass
class SimStatus:
    dir: str
    config_path: str
    config: dict[str, str]
    units: dict[str, UnitStatus]

    @property
    def state(self) -> str:
        states = {u.state for u in self.units.values()}
        if states == {"healthy"}:
            return "healthy"
        if "down" in states:
            return "down" if states == {"down"} else "degraded"
        if "wedged" in states:
            return "wedged"
        return "unhealthy"

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "dir": self.dir, "config_path": self.config_path,
                "config": self.config, "units": {k: asdict(v) for k, v in self.units.items()}}


# --- processes ---------------------------------------------------------------------------

def _pidfile(sdir: Path, unit: str) -> Path:
    return sdir / "run" / f"{unit}.json"


def _proc_start(pid: int) -> str | None:
    """Start time of a live (non-zombie) process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]


def _read_pid(sdir: Path, unit: str) -> dict | None:
    """The pid file's record, or None when there is none or it is not one wb writes (truncated, or JSON of
    another shape: it names no process wb can find, and reading it on ended status and down in a traceback)."""
    p = _pidfile(sdir, unit)
    try:
        info = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or type(info.get("pid")) is not int:
        return None
    other = _serves_elsewhere(info["pid"], sdir)
    return info if other is None else {**info, "elsewhere": other}


def _serves_elsewhere(pid: int, sdir: Path) -> str | None:
    """The state folder pdsim server `pid` serves when it is another than `sdir`, else None. A folder copied
    while its pdsim ran holds pid files naming the original's live servers (the copy's status said healthy, and
    its down stopped them). A server runs in its state folder (`_spawn`), which follows the folder when it is
    moved; a process that is no pdsim server is left to the pid-and-start-time check."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    if not any(a.decode(errors="replace") in (f"workbench.sim.{u}" for u in UNITS) for a in argv):
        return None
    return None if os.path.realpath(cwd) == os.path.realpath(sdir) else cwd


def _alive(info: dict | None) -> bool:
    """Whether the process a pid file names still runs: the pid with the start time noted (a pid is reused). A
    file noting no start time names a process already gone when it was written."""
    return (bool(info) and info.get("start") is not None and not info.get("elsewhere")
            and _proc_start(int(info["pid"])) == info["start"])


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


# Ports handed out for servers lie below the kernel's ephemeral range: a port from that range can
# be taken at any moment as the local end of an outgoing connection, and then the server's later
# bind (at a restart) fails. The defaults 30000/30002 are below it too.
_LOW_PORT = 20000


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def free_ports() -> dict[str, str]:
    """Two distinct free ports as the serve file's prefill_port and decode_port values."""
    prefill = free_port()
    return {"prefill_port": str(prefill), "decode_port": str(free_port(avoid=(prefill,)))}


def free_port(*, avoid: tuple[int, ...] = ()) -> int:
    """A port on 127.0.0.1 that nothing holds now, outside the ephemeral range (bounded search)."""
    import random

    lo, _ = _ephemeral_range()
    top = lo if lo > _LOW_PORT + 1000 else 65535
    rng = random.SystemRandom()
    for _ in range(500):
        port = rng.randrange(_LOW_PORT, top)
        if port not in avoid and port_free(port):
            return port
    raise SimError(f"no free port found on 127.0.0.1 between {_LOW_PORT} and {top}")


def port_free(port: int) -> bool:
    """Whether nothing holds `port` on 127.0.0.1 now (a bind test)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _child_env() -> dict[str, str]:
    # Children inherit the caller's environment (a probe may inject PYTHONPATH and variables);
    # we only make sure this package stays importable.
    env = dict(os.environ)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(_REPO_ROOT) not in parts:
        parts.append(str(_REPO_ROOT))
    env["PYTHONPATH"] = os.pathsep.join(parts)
    # The servers speak plain HTTP on loopback and verify no certificate, but aiohttp builds two TLS contexts as
    # it is imported, each reading the system's CA bundle (~70 ms of a server's ~350 ms start): they get an
    # empty trust store instead, which no certificate passes.
    env["SSL_CERT_FILE"] = os.devnull
    env.pop("SSL_CERT_DIR", None)
    return env


# The signals that stop `sim up`. They wait while a server is spawned and its pid file written: a server started
# is a server `down` can find.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _stops_deferred():
    """Hold Ctrl-C, SIGTERM and SIGHUP until the block ends, then act on them as before. Python runs signal
    handlers in the main thread only, so elsewhere nothing is held (a signal mask would not do: any other
    thread, torch's among them, takes a signal the main thread blocks, and SIGTERM's default ends them all)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    before = {s: signal.signal(s, lambda sig, _frame: came.append(sig)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        for s in dict.fromkeys(came):
            signal.raise_signal(s)


def _spawn(sdir: Path, unit: str, cfg_file: Path, values: Mapping[str, str]) -> dict:
    logs = sdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (sdir / "run").mkdir(parents=True, exist_ok=True)
    with _stops_deferred():
        with open(logs / f"{unit}.stderr", "ab") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", f"workbench.sim.{unit}", "--dir", str(sdir),
                 "--config", str(cfg_file)],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=_child_env(),
                cwd=str(sdir), start_new_session=True)
        # None when the child is already gone: a stop sent to this command's process group can end it before
        # its exec (the vfork child takes a pending signal with default handlers). Its pid file then names no
        # live server, and the start-up check reports it down.
        start = None
        for _ in range(100):
            start = _proc_start(proc.pid)
            if start:
                break
            time.sleep(0.01)
        info = {"pid": proc.pid, "start": start, "unit": unit,
                "port": int(values[f"{unit}_port"]), "config_path": str(cfg_file),
                "values": dict(values), "started_at": time.time()}
        _pidfile(sdir, unit).write_text(json.dumps(info))
    return info


_client: Any = None


def _http() -> Any:
    """One client per process. `httpx.get` builds a client (with its TLS context) per call: ~30 ms of CPU, a
    hundred times the request, and `up` polls /health every 50 ms while the servers start, taking a core from
    them. No kept connections: a server restarted meanwhile would leave a dead one in the pool."""
    global _client
    if _client is None:
        import httpx

        _client = httpx.Client(trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))
    return _client


def _http_get(port: int, path: str, timeout: float = 1.0) -> tuple[int | None, Any]:
    import httpx

    try:
        r = _http().get(f"http://127.0.0.1:{port}{path}", timeout=timeout)
    except httpx.HTTPError:
        return None, None
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, None


def _stderr_tail(sdir: Path, unit: str, n: int = 8) -> str:
    try:
        lines = (sdir / "logs" / f"{unit}.stderr").read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


# --- commands ----------------------------------------------------------------------------

def up(dir: str | Path | None = None, *, config: str | Path | None = None,
       sets: Mapping[str, str] | None = None, timeout: float = HEALTH_TIMEOUT_S) -> SimStatus:
    """Start both servers (or restart them if running with another config); returns once both
    /health answer 200. `sets` are written into the serve file in use."""
    from workbench.optional import require_torch

    require_torch("pdsim")
    sdir = state_dir(dir, create=True)
    if config is not None:
        cfg_file = Path(config).expanduser().resolve()
        if cfg_file.is_dir():
            raise BadInput(f"--config {cfg_file} is a folder, not a serve file",
                           hint="name the serve file itself, or omit --config")
        if not cfg_file.is_file():
            said = "is not a regular file" if cfg_file.exists() else "does not exist"
            raise BadInput(f"--config {cfg_file}: the serve file {said}",
                           hint="write one (workbench.sim.config.render_serve_file) or omit --config")
    else:
        cfg_file = config_path(sdir)
    default = config is None and cfg_file == sdir / "serve.sh" and not cfg_file.exists()
    values = parse_serve_text(render_serve_file({}), source=str(cfg_file)) if default else _read_in_use(sdir, cfg_file)
    if sets:
        values = with_overrides(values, sets)  # a bad --set is refused here, before anything is written
        _serve_config("--set " + " --set ".join(f"{k}={v}" for k, v in sets.items()), values)  # and one port twice
    else:  # one port twice in the file: refused before running servers of other values are stopped
        _serve_config(cfg_file, values)
    sdir.mkdir(parents=True, exist_ok=True)
    if config is not None:
        _note_config(sdir, cfg_file)
    elif default:
        _ensure_default_config(sdir)
    if sets:
        cfg_file.write_text(render_serve_file(values))
    infos = {u: _read_pid(sdir, u) for u in UNITS}
    if any(_alive(i) for i in infos.values()):
        if all(_alive(i) and i.get("values") == values and i.get("config_path") == str(cfg_file)
               for i in infos.values()):
            st = _wait_healthy(sdir, timeout)
            return st
        down(sdir)
    return _start(sdir, cfg_file, values, timeout)


def _read_in_use(sdir: Path, cfg_file: Path) -> dict[str, str]:
    """The values of the serve file in use. One that an earlier `up --config` chose and that is gone since is named
    as such: `wb sim up` alone would read it again, only a new --config moves on."""
    if (sdir / "config_path").exists() and not cfg_file.exists() and cfg_file != sdir / "serve.sh":
        raise BadInput(f"serve file {cfg_file} does not exist (named by an earlier `wb sim up --config`)",
                       hint=f"name an existing one: wb sim up --dir {sdir} --config FILE", where=str(cfg_file))
    return read_serve_file(cfg_file)


def _serve_config(source: str | Path, values: dict[str, str]) -> ServeConfig:
    """The servers' config from a serve file's values; `source` names where they came from."""
    cfg = ServeConfig.from_values(values)
    if cfg.prefill_port == cfg.decode_port:
        raise BadInput(f"{source}: prefill_port and decode_port are both {cfg.prefill_port}")
    return cfg


def _start(sdir: Path, cfg_file: Path, values: dict[str, str], timeout: float, release_s: float = 0.0) -> SimStatus:
    """Start both servers on the serve file's ports; `release_s`: how long a port may take to come free (a restart
    waits for its own servers' ports, which the kernel can release a moment after their processes are gone)."""
    cfg = _serve_config(cfg_file, values)
    deadline = time.monotonic() + release_s
    for unit, port in (("prefill", cfg.prefill_port), ("decode", cfg.decode_port)):
        while not port_free(port):
            if time.monotonic() >= deadline:
                raise SimError(f"port {port} ({unit}) is already in use on 127.0.0.1",
                               hint=f"stop whatever listens there, or set {unit}_port in {cfg_file}")
            time.sleep(0.05)
    clock.reset(sdir)              # a fresh start: no participants, time moves on by >= 1 s
    for unit in UNITS:
        _spawn(sdir, unit, cfg_file, values)
    try:
        return _wait_healthy(sdir, timeout)
    except SimError:
        down(sdir)
        raise


def _wait_healthy(sdir: Path, timeout: float) -> SimStatus:
    deadline = time.monotonic() + timeout
    while True:
        st = status(sdir, debug=False)
        if all(u.health == 200 for u in st.units.values()):
            return status(sdir)
        dead = [u for u in st.units.values() if u.state == "down"]
        if dead:
            u = dead[0]
            raise SimError(f"the {u.unit} server exited during start-up",
                           hint=_stderr_tail(sdir, u.unit) or f"see {sdir}/logs/{u.unit}.stderr")
        if time.monotonic() > deadline:
            raise SimError(f"servers not healthy after {timeout:.0f}s: "
                           + ", ".join(f"{u.unit}={u.state}" for u in st.units.values()),
                           hint=f"see {sdir}/logs/")
        time.sleep(0.05)


def down(dir: str | Path | None = None, *, timeout: float = STOP_TIMEOUT_S) -> list[int]:
    """Stop both servers (SIGTERM, then SIGKILL after `timeout`); returns the pids stopped."""
    sdir = state_dir(dir)
    stopped = []
    infos = {u: _read_pid(sdir, u) for u in UNITS}
    live = {u: i for u, i in infos.items() if _alive(i)}
    for i in live.values():
        try:
            os.kill(int(i["pid"]), signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    for u, i in live.items():
        pid = int(i["pid"])
        while _alive(i) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.02)
        if _alive(i):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                with contextlib.suppress(ProcessLookupError):  # it ended since the check
                    os.kill(pid, signal.SIGKILL)
            for _ in range(200):
                _reap(pid)
                if not _alive(i):
                    break
                time.sleep(0.01)
        _reap(pid)
        stopped.append(pid)
    for u in UNITS:
        _pidfile(sdir, u).unlink(missing_ok=True)
    return stopped


def restart(dir: str | Path | None = None, *, timeout: float = HEALTH_TIMEOUT_S) -> SimStatus:
    """`systemctl restart` of both units: stop, re-read the serve file in use, start."""
    sdir = state_dir(dir, create=True)
    cfg_file = config_path(sdir)
    if cfg_file == sdir / "serve.sh":
        sdir.mkdir(parents=True, exist_ok=True)
        _ensure_default_config(sdir)
    values = _read_in_use(sdir, cfg_file)
    _serve_config(cfg_file, values)  # a serve file it cannot start from is refused while the servers still run
    down(sdir)
    return _start(sdir, cfg_file, values, timeout, release_s=PORT_RELEASE_S)


def status(dir: str | Path | None = None, *, debug: bool = True) -> SimStatus:
    """healthy / wedged (health 200 but no transfer can start) / unhealthy / down, per server."""
    sdir = state_dir(dir)
    cfg_file = config_path(sdir)
    units: dict[str, UnitStatus] = {}
    values: dict[str, str] = {}
    for unit in UNITS:
        info = _read_pid(sdir, unit)
        if not _alive(info):
            detail = f"process {info['pid']} is gone" if info is not None else (
                "unreadable pid file" if _pidfile(sdir, unit).exists() else "no pid file")
            if info is not None and info.get("elsewhere"):
                detail = (f"process {info['pid']} serves pdsim in {info['elsewhere']}, not this folder "
                          "(a pid file copied with it)")
            units[unit] = UnitStatus(unit, "down", pid=info and info["pid"],
                                     port=info and info.get("port"), detail=detail)
            continue
        values = info.get("values", values)
        code, _ = _http_get(info["port"], "/health")
        u = UnitStatus(unit, "healthy" if code == 200 else "unhealthy", pid=info["pid"],
                       port=info["port"], health=code)
        if code != 200:
            u.detail = "process alive, /health not answering 200"
        elif debug:
            _, dbg = _http_get(info["port"], "/debug/state")
            u.debug = dbg or {}
            if unit == "prefill" and dbg and not dbg.get("bootstrap_alive", True):
                u.state, u.detail = "wedged", "bootstrap thread is dead; /health still 200"
            if unit == "decode" and dbg and dbg.get("stuck"):
                u.state = "wedged"
                requests = "request" if dbg["stuck"] == 1 else "requests"
                u.detail = f"{dbg['stuck']} {requests} stuck in WaitingForInput; /health still 200"
        units[unit] = u
    return SimStatus(dir=str(sdir), config_path=str(cfg_file), config=values, units=units)


# `wb sim status`'s exit code by state: a script tells healthy from wedged from stopped without parsing text.
STATUS_EXIT = {"healthy": 0, "wedged": 1, "unhealthy": 1, "degraded": 1, "down": 3}


def status_exit_code(state: str) -> int:
    return STATUS_EXIT[state]


def running_config(dir: str | Path | None = None) -> ServeConfig:
    """The config the running decode server was started with (for the repro harness)."""
    sdir = state_dir(dir)
    info = _read_pid(sdir, "decode")
    if not _alive(info):
        import shlex

        raise SimNotRunning(f"pdsim in {sdir} is not running: nothing was run",
                            hint=f"start it with `wb sim up --dir {shlex.quote(str(sdir))}`")
    return ServeConfig.from_values(info["values"])


def journal_path(dir: str | Path | None, unit: str) -> Path:
    return log_path(state_dir(dir), unit)
