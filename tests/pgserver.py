"""A real PostgreSQL server for the tests: initdb in a temp dir, a free port on 127.0.0.1, always stopped.

PostgreSQL refuses to run as root, so when the tests run as root the server runs as the `postgres`
user (which Debian's package creates); otherwise as the current user. Tests that need it are
skipped only where no PostgreSQL binaries exist at all (CI installs them: see scripts/setup.sh).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 60


def pg_bindir() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or None."""
    base = Path("/usr/lib/postgresql")
    found = sorted((p for p in base.glob("*/bin") if (p / "initdb").exists()),
                   key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    """A loopback port nothing listens on (bound, read, closed): for a server to take, or to dial as closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@dataclass
class PgServer:
    bindir: Path
    root: Path
    port: int

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh, empty database; its SQLAlchemy URL."""
        name = "wb_" + uuid.uuid4().hex[:10]
        subprocess.run(_as_server_user([str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                                        "-U", "postgres", name]), check=True, capture_output=True, timeout=60)
        return self.url(name)

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        subprocess.run(_as_server_user([str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", "postgres",
                                        "-A", "trust", "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True, timeout=120)
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                f"-c full_page_writes=off -c synchronous_commit=off -c max_connections=50")
        subprocess.run(_as_server_user([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-l",
                                        str(self.root / "server.log"), "-o", opts, "-w", "-t",
                                        str(START_TIMEOUT_S), "start"]),
                       check=True, capture_output=True, timeout=START_TIMEOUT_S + 30)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"PostgreSQL did not listen on {self.port}: {self.log_tail()}")

    def stop(self) -> None:
        subprocess.run(_as_server_user([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "immediate",
                                        "-w", "-t", "30", "stop"]), capture_output=True, timeout=60)

    def log_tail(self) -> str:
        try:
            return (self.root / "server.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""


def start_server() -> PgServer:
    bindir = pg_bindir()
    if bindir is None:
        raise FileNotFoundError("no PostgreSQL server binaries (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="wb-pg-"))
    os.chmod(root, 0o755)
    server = PgServer(bindir=bindir, root=root / "pg", port=free_port())
    try:
        server.start()
    except BaseException:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server
