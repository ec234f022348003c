"""Who did it, where, from which revision: the provenance every execution and review records.

A person is named from what they said, never guessed silently: `--as`, else `$WB_USER`, else git's
`user.name`, else the login name; the record keeps which of these it came from.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

GIT_TIMEOUT_S = 5


@dataclass(frozen=True)
class Person:
    name: str
    source: str  # flag | WB_USER | git | login

    def describe(self) -> str:
        return f"{self.name} (from {self.source})"


@dataclass(frozen=True)
class Provenance:
    """Who ran an execution, on which machine, from which state of the workbench folder."""

    user: str
    user_source: str
    host: str
    git_revision: str | None
    git_dirty: bool | None
    wb_version: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def columns(self) -> dict[str, object]:
        """As the store's execution columns name them."""
        return {"user_name": self.user, "user_source": self.user_source, "host": self.host,
                "git_revision": self.git_revision, "git_dirty": self.git_dirty}


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _clean(name: str | None) -> str | None:
    """A name fit to store and show: one line, printable, bounded."""
    if not name:
        return None
    name = "".join(ch for ch in name.strip() if ch.isprintable())[:200]
    return name or None


def current_person(root: Path, *, as_name: str | None = None) -> Person:
    """The person acting from `root`: --as, WB_USER, git user.name, then the login name.

    An `--as` given but empty is refused: falling back to another name would record the wrong person."""
    if as_name is not None and not _clean(as_name):
        from workbench.errors import BadInput

        raise BadInput(f"--as {as_name!r} names no one: the reviewer's name is empty",
                       hint="give a name (--as \"Ada Lovelace\"), or leave --as out to use $WB_USER, "
                            "git's user.name or the login name")
    bad = sorted({f"U+{ord(c):04X}" for c in (as_name or "").strip() if not c.isprintable()})
    if bad:  # a name typed is recorded as typed, or not at all (it was recorded with them dropped)
        from workbench.errors import BadInput

        raise BadInput(f"--as holds control characters ({', '.join(bad[:5])})", hint="give the name as plain text")
    for value, source in ((as_name, "flag"), (os.environ.get("WB_USER"), "WB_USER")):
        if _clean(value):
            return Person(_clean(value) or "", source)
    git_name = _clean(_git(root, "config", "user.name"))
    if git_name:
        return Person(git_name, "git")
    try:
        login = _clean(getpass.getuser())
    except (KeyError, OSError):
        login = None
    return Person(login or f"uid {os.getuid()}", "login")


def provenance(root: Path, *, wb_version: str, as_name: str | None = None) -> Provenance:
    person = current_person(root, as_name=as_name)
    revision = _git(root, "rev-parse", "HEAD")
    dirty = None
    if revision is not None:
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        dirty = None if status is None else bool(status)
    return Provenance(user=person.name, user_source=person.source, host=socket.gethostname(),
                      git_revision=revision, git_dirty=dirty, wb_version=wb_version)
