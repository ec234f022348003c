"""The ssh target's file operations, each over an SFTP session of the host's connection: read, write (a replace
that keeps a symlink a link), remove, fetch and upload; a failure names the file and the host."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from workbench.errors import TargetError
from workbench.runner.targets.base import TAIL_BYTES, FileStat, tail_fingerprint
from workbench.runner.targets.files import replace_file
from workbench.runner.targets.ssh_sftp import SftpFiles, through_links


STAT_TIMEOUT_S = 30.0  # one `stat` of a declared log; a host that slow fails the check, not the run


class SshFiles:
    """Part of SshTarget (its `_call`, `run`, `describe` and `clock`)."""

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

    async def fetch(self, host: str, path: str, local_path: Path, offset: int = 0) -> bool:
        import asyncssh

        async def go(conn: Any) -> bool:
            local_path.parent.mkdir(parents=True, exist_ok=True)
            async with conn.start_sftp_client() as sftp:
                try:
                    if not offset:
                        await sftp.get(path, str(local_path))
                        return True
                    async with sftp.open(path, "rb") as f:
                        await f.seek(offset)
                        with open(local_path, "wb") as dst:
                            while chunk := await f.read(1 << 20):
                                dst.write(chunk)
                except asyncssh.SFTPNoSuchFile:
                    return False
            return True

        return await self._sftp(host, f"fetching {path}", go)

    async def file_stat(self, host: str, path: str, at: int | None = None) -> FileStat | None:
        """Its size and, from the host's `stat` (GNU or BusyBox), its device and inode, which SFTP's attributes do
        not carry: a log rotated by a rename is then told as another file. Then, for a regular file, its bytes
        before `at` (default: the size `stat` gave) as hex, by `dd` (which seeks to them: a log of many GB is not
        read from its start at each check) and `od`, fingerprinted here: a log truncated in place and regrown is
        then told too. A host without such a `stat` gives the size alone, over SFTP (a rotation shows there only as
        a file shorter than it was)."""
        import shlex

        q = shlex.quote(path)
        end = shlex.quote(str(at)) if at is not None else '"$size"'
        res = await self.run(host, f"s=$(stat -L -c '%s %d:%i' -- {q}) || exit 1; printf '%s\\n' \"$s\"; "
                                   f"size=${{s%% *}}; n={end}; if [ -f {q} ] && [ 0 -lt \"$n\" ] && "
                                   f"[ \"$n\" -le \"$size\" ]; then k=$((n < {TAIL_BYTES} ? n : {TAIL_BYTES})); "
                                   f"dd if={q} bs=1 skip=$((n - k)) count=\"$k\" | od -An -v -tx1; "
                                   "fi 2>/dev/null; true", timeout=STAT_TIMEOUT_S)
        first, _, rest = res.stdout.partition("\n")
        size, _, identity = first.strip().partition(" ")
        if res.ok and size.isdigit() and identity:
            try:
                read = bytes.fromhex("".join(rest.split()))
            except ValueError:  # not od's output: no fingerprint, as from a host without these commands
                read = b""
            tail = tail_fingerprint(read) if read else None
            return FileStat(int(size), identity, tail, (int(size) if at is None else at) if tail else None)
        return await self._sftp_size(host, path)

    async def _sftp_size(self, host: str, path: str) -> FileStat | None:
        import asyncssh

        async def go(conn: Any) -> FileStat | None:
            async with conn.start_sftp_client() as sftp:
                try:
                    return FileStat((await sftp.stat(path)).size or 0)
                except asyncssh.SFTPNoSuchFile:
                    return None

        return await self._sftp(host, f"reading the size of {path}", go)

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
