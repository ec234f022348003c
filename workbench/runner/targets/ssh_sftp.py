"""File operations over one SFTP session for the ssh target: symlink chains followed as the local target
follows them, and the `FileOps` a file replace uses."""

from __future__ import annotations

import posixpath
from typing import Any

from workbench.errors import TargetError

MAX_LINKS = 40  # as the kernel's own limit on a chain of symlinks (ELOOP)


async def through_links(sftp: Any, path: str) -> str:
    """The file `path` stands for on the host, following a chain of symlinks (as the local target does): an
    arm's config is written into the file a link points to, so the link stays a link. Resolved here, step by
    step with lstat/readlink, since SFTP's realpath need not follow links and a dangling one must resolve too."""
    import asyncssh

    for _ in range(MAX_LINKS):
        try:
            attrs = await sftp.lstat(path)
        except asyncssh.SFTPNoSuchFile:
            return path
        if attrs.type != asyncssh.FILEXFER_TYPE_SYMLINK:
            return path
        dest = await sftp.readlink(path)
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), dest))
    raise TargetError(f"{path}: more than {MAX_LINKS} symlinks in a chain")


class SftpFiles:
    """`FileOps` over one SFTP session (see `targets.files`)."""

    def __init__(self, sftp: Any) -> None:
        self.sftp = sftp

    async def remove(self, path: str) -> None:
        import asyncssh

        try:
            await self.sftp.lstat(path)
            await self.sftp.remove(path)
        except asyncssh.SFTPNoSuchFile:
            pass

    async def create(self, path: str, data: bytes, mode: int) -> None:
        import asyncssh

        async with self.sftp.open(path, "xb", asyncssh.SFTPAttrs(permissions=mode & 0o7777)) as f:
            await f.write(data)
        await self.sftp.chmod(path, mode)  # the create's mode passed through the server's umask

    async def owner(self, path: str) -> tuple[int, int] | None:
        import asyncssh

        try:
            attrs = await self.sftp.lstat(path)
        except asyncssh.SFTPNoSuchFile:
            return None
        return None if attrs.uid is None or attrs.gid is None else (attrs.uid, attrs.gid)

    async def chown(self, path: str, uid: int, gid: int) -> bool:
        import asyncssh

        try:
            await self.sftp.chown(path, uid, gid)
        except (asyncssh.SFTPPermissionDenied, asyncssh.SFTPFailure):
            return False
        return True

    async def rename(self, src: str, dst: str) -> None:
        import asyncssh

        try:
            await self.sftp.posix_rename(src, dst)
        except asyncssh.SFTPOpUnsupported:
            if await self.sftp.exists(dst):
                await self.sftp.remove(dst)
            await self.sftp.rename(src, dst)
