"""The `local` target: commands as asyncio subprocesses of this machine, files on its disk."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import time
from pathlib import Path
from typing import IO

from workbench.errors import TargetError
from workbench.runner.daemon import Capture, holds_output
from workbench.runner.targets.base import TAIL_BYTES, CmdResult, FileStat, Target, tail_fingerprint
from workbench.runner.targets.files import replace_file

KILL_GRACE_S = 3.0
# How long a process the command left behind may take to let go of the command's output. `svc > log &`
# forks first and applies the redirect in the child: bash can exit before the child has, and a look at
# that instant sees the child holding the output it is about to give up. A clean restart shows no holder
# at the first look and pays nothing; a holder that stays is looked at again every POLL_S until this ends.
HELD_GRACE_S = 2.0
POLL_S = 0.025


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _through_links(path: str) -> Path:
    """The file a config path stands for: a symlink (a serve script kept elsewhere, a dangling link too) is
    followed, so an arm's config lands in the file it points to and the link stays a link; renaming a
    sibling over the link itself would replace it with a regular file that the operator's later edits miss."""
    return Path(os.path.realpath(path))


class _LocalFiles:
    """`FileOps` on this machine's disk (see `targets.files`)."""

    async def remove(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    async def create(self, path: str, data: bytes, mode: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode & 0o7777)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                os.fchmod(f.fileno(), mode)  # the create's mode passed through the umask
        except BaseException:
            os.unlink(path)
            raise

    async def owner(self, path: str) -> tuple[int, int] | None:
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return st.st_uid, st.st_gid

    async def chown(self, path: str, uid: int, gid: int) -> bool:
        try:
            os.chown(path, uid, gid, follow_symlinks=False)
        except PermissionError:
            return False
        return True

    async def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)


class LocalTarget(Target):
    kind = "local"

    def __init__(self, hosts: list[str] | None = None, ca_file: str | None = None) -> None:
        super().__init__(hosts or ["local"], ca_file)
        self._holding: set[str] = set()  # commands seen to leave a holder after the whole grace


    async def run(self, host: str, command: str, *, env: dict[str, str] | None = None, timeout: float,
                  stdout_file: IO[bytes] | None = None, stderr_file: IO[bytes] | None = None) -> CmdResult:
        full_env = dict(os.environ)
        full_env.update(env or {})
        t0 = time.monotonic()
        # Output goes to files, never pipes, and wb waits for the process alone (runner/daemon.py): a
        # server the command leaves in the background keeps the files and blocks nothing.
        out, err = Capture(stdout_file), Capture(stderr_file)
        try:
            try:
                proc = await asyncio.create_subprocess_shell(
                    command, stdin=asyncio.subprocess.DEVNULL, stdout=out.fd, stderr=err.fd, env=full_env,
                    start_new_session=True, executable="/bin/bash")
            except OSError as exc:
                raise TargetError(f"cannot start a local command: {exc}") from exc
            from workbench.runner.orphans import forget, note

            noted = note(self.children_dir, proc.pid)
            timed_out = False
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except asyncio.TimeoutError:
                timed_out = True
                await self._kill(proc)
            except BaseException:
                await asyncio.shield(self._kill(proc))
                raise
            finally:
                forget(noted)
            held = not timed_out and await self._still_held(command, proc.pid, [out, err])
            result = CmdResult(command=command, rc=None if timed_out else proc.returncode, stdout=out.text(),
                               stderr=err.text(), duration_s=time.monotonic() - t0, timed_out=timed_out,
                               held_open=held)
        finally:
            out.close()
            err.close()
            self.clock.add(host, time.monotonic() - t0)
        return result

    async def _still_held(self, command: str, pgid: int, captures: list[Capture]) -> bool:
        """Whether a process the command left behind keeps its output after HELD_GRACE_S. A command already
        seen to do so (a restart without a redirect, run again every run) is not waited for again."""
        if not holds_output(pgid, captures):
            return False
        if command in self._holding:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HELD_GRACE_S
        while loop.time() < deadline:
            await asyncio.sleep(POLL_S)
            if not holds_output(pgid, captures):
                return False
        self._holding.add(command)
        return True

    async def _kill(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is not None:
            return
        _killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
        except asyncio.TimeoutError:
            _killpg(proc.pid, signal.SIGKILL)
            try:
                await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
            except asyncio.TimeoutError:
                pass

    async def read_file(self, host: str, path: str) -> tuple[bytes, int] | None:
        p = Path(path)
        try:
            return p.read_bytes(), p.stat().st_mode & 0o7777
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TargetError(f"cannot read {path}: {exc.strerror}") from exc

    async def write_file(self, host: str, path: str, data: bytes, mode: int) -> None:
        p = _through_links(path)
        tmp = p.with_name(f".{p.name}.wb-tmp")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            await replace_file(_LocalFiles(), str(p), str(tmp), data, mode)
        except OSError as exc:
            raise TargetError(f"cannot write {path}: {exc.strerror}") from exc

    async def remove_file(self, host: str, path: str) -> None:
        try:
            _through_links(path).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise TargetError(f"cannot remove {path}: {exc.strerror}") from exc

    async def fetch(self, host: str, path: str, local_path: Path, offset: int = 0) -> bool:
        src = Path(path)
        if not src.is_file():
            return False
        local_path.parent.mkdir(parents=True, exist_ok=True)
        if src.resolve() == local_path.resolve():
            return True
        if not offset:
            shutil.copyfile(src, local_path)
            return True
        with open(src, "rb") as fsrc, open(local_path, "wb") as fdst:
            fsrc.seek(offset)
            shutil.copyfileobj(fsrc, fdst)
        return True

    async def file_stat(self, host: str, path: str, at: int | None = None) -> FileStat | None:
        try:
            st = Path(path).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        end = st.st_size if at is None else at
        tail = None
        if stat.S_ISREG(st.st_mode) and 0 < end <= st.st_size:  # never opened: a FIFO, a device
            try:
                with open(path, "rb") as f:
                    st = os.fstat(f.fileno())  # the file read: size and identity of the same one
                    if end <= st.st_size:
                        f.seek(max(0, end - TAIL_BYTES))
                        tail = tail_fingerprint(f.read(min(end, TAIL_BYTES)))
            except OSError:  # unreadable here: its size and identity still tell a rotation
                pass
        return FileStat(st.st_size, f"{st.st_dev}:{st.st_ino}", tail, end if tail is not None else None)

    async def mkdir(self, host: str, path: str) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
