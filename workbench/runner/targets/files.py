"""Writing a config file on a target, the one way every target does it: the bytes go into a new file of wb's own
next to it, which gets the file's mode, owner and group and is then renamed over it.

Each target supplies the file operations (`FileOps`: os calls here, SFTP requests over ssh); the order and what
each step guarantees are decided once, in `replace_file`.
"""

from __future__ import annotations

from typing import Protocol


class FileOps(Protocol):
    async def remove(self, path: str) -> None:
        """Remove what is at `path` (a link itself, never what it points to); nothing there is fine."""

    async def create(self, path: str, data: bytes, mode: int) -> None:
        """Create `path` exclusively with `mode` (failing on anything there, a link included), holding `data`."""

    async def owner(self, path: str) -> tuple[int, int] | None:
        """The (uid, gid) of the file at `path`; None when there is none or it is not known."""

    async def chown(self, path: str, uid: int, gid: int) -> bool:
        """Give `path` that owner and group; False where this login may not give a file away."""

    async def rename(self, src: str, dst: str) -> None:
        """Rename `src` over `dst`, replacing it in one step where the target can."""


async def replace_file(ops: FileOps, real: str, tmp: str, data: bytes, mode: int) -> None:
    """Put `data` at `real` (a file, links already followed) through `tmp`, its temporary name.

    Whatever is already at `tmp` (a leftover of a killed write, a link someone planted there) is removed, never
    written through or renamed over the config; the exclusive create fails rather than follow anything put back
    in between. The new file gets `real`'s owner and group before the rename: run as root, wb rewrites files a
    service's own user owns, and a config renamed over them as root's would be unreadable to that service. Where
    the login may not give a file away (not root), the replacement stays the login's own.
    """
    await ops.remove(tmp)
    await ops.create(tmp, data, mode)
    old, new = await ops.owner(real), await ops.owner(tmp)
    if old is not None and new is not None and old != new:
        await ops.chown(tmp, *old)
    await ops.rename(tmp, real)
