"""Snapshot of the target's config before the first run, and its restore in `finally`.

The snapshot is kept on local disk in a folder keyed by the execution's UUID (never by one store's
row id: users keep several stores side by side), each copy named by its sha256, readable by its owner only
(the original config may hold a token, which the restore must put back as it was), and removed once every
host was restored. A resumed experiment restores the original and not whatever arm a killed runner left
behind; a snapshot that names another execution, or whose copy no longer matches its hash, is refused. A
failed restore is loud, keeps the snapshot and gives the exact commands.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from workbench.errors import RestoreFailed, RunFailure, TargetError
from workbench.runner.daemon import failure_reason
from workbench.runner.targets.base import Target
from workbench.wrapping import keep_whole

RESTORE_ATTEMPTS = 4


@dataclass
class Snapshot:
    host: str
    path: str
    data: bytes | None  # None: the file did not exist
    mode: int
    local_copy: Path

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "path": self.path, "exists": self.data is not None, "mode": self.mode,
                "local_copy": str(self.local_copy)}


def _safe(host: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in host)


class ForeignSnapshot(RunFailure):
    """A snapshot folder that is not this execution's own (or was altered): restoring from it would be wrong."""


async def take_snapshots(target: Target, paths: dict[str, str], folder: Path, *,
                         owner: str) -> dict[str, Snapshot]:
    """Read each host's config file and keep a copy under `folder`; reuse a copy this execution took earlier
    (resume). `owner` is the execution's UUID, written into the snapshot and checked when it is read back."""
    folder.mkdir(parents=True, exist_ok=True)
    earlier = load_snapshots(folder, owner=owner)
    snaps: dict[str, Snapshot] = {}
    for host, path in paths.items():
        if host in earlier and earlier[host].path == path:
            snaps[host] = earlier[host]
            continue
        found = await target.read_file(host, path)
        data, mode = (found if found is not None else (None, 0o644))
        local = folder / f"original-{hashlib.sha256(data or b'').hexdigest()}"
        if data is not None:
            write_private(local, data)
        snaps[host] = Snapshot(host, path, data, mode, local)
    meta = {"execution": owner,
            "hosts": {h: {**s.to_json(), "sha256": hashlib.sha256(s.data or b"").hexdigest()}
                      for h, s in snaps.items()}}
    write_private(folder / "snapshot.json", json.dumps(meta, indent=2).encode("utf-8"))
    return snaps


def write_private(path: Path, data: bytes) -> None:
    """Write `path` whole (a temp file renamed over it), readable by its owner only (0600, whatever the umask):
    a config's original may hold a token, and it stays on disk until its restore is done."""
    import os

    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a temp file left by a killed runner may have had another mode
        with os.fdopen(fd, "wb") as f:
            fd = -1
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    finally:
        if fd >= 0:
            os.close(fd)
    os.replace(tmp, path)


def discard_snapshots(folder: Path) -> None:
    """Remove the snapshot of an execution whose every host was restored (its lock released): the originals it
    kept (a config may hold a token) are needed again by nothing. A `--resume` snapshots the config afresh,
    which is then the original again."""
    for p in [folder / "snapshot.json", *folder.glob("original-*")]:
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def load_snapshots(folder: Path, *, owner: str) -> dict[str, Snapshot]:
    """The snapshot this execution took earlier; refuses one of another execution or a copy that changed."""
    meta_path = folder / "snapshot.json"
    if not meta_path.is_file():
        return {}
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if not isinstance(meta, dict) or meta.get("execution") != owner:
        raise ForeignSnapshot(f"the snapshot in {folder} is not this execution's own "
                              f"(it names {meta.get('execution') if isinstance(meta, dict) else None!r}, "
                              f"this is {owner}); refusing to restore from it",
                              hint="the target keeps its current config; check it by hand")
    out = {}
    for host, m in meta["hosts"].items():
        local = Path(m["local_copy"])
        data = local.read_bytes() if m["exists"] else None
        if hashlib.sha256(data or b"").hexdigest() != m.get("sha256"):
            raise ForeignSnapshot(f"the snapshot copy {local} no longer matches its sha256; refusing to restore it",
                                  hint="the target keeps its current config; check it by hand")
        out[host] = Snapshot(host, m["path"], data, int(m["mode"]), local)
    return out


def saved_snapshots(folder: Path, owner: str) -> dict[str, Snapshot]:
    """The originals execution `owner` saved in `folder`, by host; none when they are gone, broken or not its."""
    try:
        return load_snapshots(folder, owner=owner)
    except (ForeignSnapshot, OSError, ValueError, KeyError, TypeError):
        return {}


async def left_as_saved(target: Target, host: str, folder: Path, owner: str) -> str | None:
    """None when `host`'s config file is the original execution `owner` saved in `folder` (its runner put it
    back, or died before changing it); else why it is not, or why that cannot be told."""
    snap = saved_snapshots(folder, owner).get(host)
    if snap is None:
        return f"its saved original is not in {folder}, so whether the config is the original cannot be told"
    return None if await holds_original(target, snap) else not_original(snap)


async def holds_original(target: Target, snap: Snapshot) -> bool:
    """Whether the config file on `snap`'s host is the original it saved (no file where there was none)."""
    found = await target.read_file(snap.host, snap.path)
    return (found[0] if found is not None else None) == snap.data


def not_original(snap: Snapshot) -> str:
    """Why a config file is not the original `snap` saved, naming the saved copy only where there is one."""
    if snap.data is None:
        return f"{snap.path} is there, though there was no such file before that run"
    return f"{snap.path} is not the original it saved (a copy of which is {snap.local_copy})"


def put_back_command(target: Target, snap: Snapshot) -> str:
    """The shell command that puts `snap`'s original back by hand: a copy of the saved file, or, where there was
    no file, the removal of the one written since."""
    if snap.data is None:
        return keep_whole(target.manual_command(snap.host, f"rm -f {shlex.quote(snap.path)}"))
    return keep_whole(target.manual_copy(snap.host, str(snap.local_copy), snap.path))


def manual_instructions(target: Target, snap: Snapshot, restart: list[str], lead: str, *,
                        env: dict[str, str] | None = None, secrets: dict[str, str] | None = None,
                        put_back: bool = True) -> str:
    """`lead`, then the commands that do by hand what the restore does: copy the original back (unless `put_back`
    is False: it already reads back in place), then each restart with the profile's env, as the restore runs it.
    Every value is quoted for the shell it is pasted into; a secret (a secret-named or masked env value, a secret
    variable's value in a command, `secrets`: name -> value) is never shown but referenced as "$NAME", which `lead`
    asks the user to set first."""
    from workbench.secrets import looks_secret, redact_text

    words, hidden = {}, []
    for name, value in (env or {}).items():
        secret = looks_secret(name) or redact_text(value) != value
        words[name] = f'"${name}"' if secret else shlex.quote(value)
        hidden += [name] if secret else []
    lines = [put_back_command(target, snap)] if put_back else []
    for cmd in restart:
        for name, value in (secrets or {}).items():
            cmd, found = _referenced(cmd, value, f'"${name}"')
            if found and name not in words:
                words[name] = f'"${name}"'
                hidden.append(name)
        lines.append(keep_whole(target.manual_command(snap.host, cmd, env=words)))
    if hidden:
        lead += (f" (first set {', '.join(hidden)} in this shell to the value"
                 f"{'s' if len(hidden) > 1 else ''} the run used: wb does not show secrets)")
    return lead + ":\n" + "\n".join(lines)


_SAFE = re.compile(r"[\w@%+=:,./-]")  # the characters shlex.quote leaves a word unquoted for


def _referenced(command: str, value: str, reference: str) -> tuple[str, bool]:
    """`command` with each word the renderer made of `value` (shlex.quote of it) replaced by `reference`; an
    unquoted value only where it is a whole word, not part of a longer one."""
    word = shlex.quote(value)
    out, pos, found = [], 0, False
    i = command.find(word) if value else -1
    while i >= 0:
        end = i + len(word)
        whole = word.startswith("'") or ((i == 0 or not _SAFE.match(command[i - 1]))
                                         and (end == len(command) or not _SAFE.match(command[end])))
        if whole:
            out += [command[pos:i], reference]
            pos, found = end, True
        i = command.find(word, end if whole else i + 1)
    return "".join(out) + command[pos:], found


async def restore_host(target: Target, snap: Snapshot, restart: list[str], *, env: dict[str, str] | None,
                       restart_timeout: float, do_restart: bool = True,
                       after: Callable[[], Awaitable[None]] | None = None,
                       secrets: dict[str, str] | None = None) -> None:
    """Put the original bytes back, restart, and read the file back to confirm; retries across reconnects.
    `secrets` (name -> value: the secret variables the restart commands were rendered with) are referenced by
    name in the commands printed for a restore by hand."""
    last: Exception | None = None
    for attempt in range(RESTORE_ATTEMPTS):
        back_in_place = False  # the original reads back: a failure after it is the restart's alone
        try:
            if snap.data is None:
                await target.remove_file(snap.host, snap.path)
            else:
                await target.write_file(snap.host, snap.path, snap.data, snap.mode)
            back = await target.read_file(snap.host, snap.path)
            if (back[0] if back else None) != snap.data:
                raise TargetError(f"{snap.path} on {target.describe(snap.host)} does not read back as the original")
            back_in_place = True
            if do_restart:
                for cmd in restart:
                    res = await target.run(snap.host, cmd, env=env, timeout=restart_timeout)
                    if not res.ok:
                        why = f"restart `{cmd}` {failure_reason(res, restart_timeout)}"
                        if res.timed_out:  # it already had its full time: a retry would only wait as long again
                            raise _incomplete(target, snap, restart, why, env, secrets)
                        raise TargetError(why)
            if after is not None:
                await after()
            return
        except TargetError as exc:
            last = exc
            if back_in_place and attempt == RESTORE_ATTEMPTS - 1:
                raise _incomplete(target, snap, restart, str(exc), env, secrets) from None
            try:
                await target.reconnect(snap.host)
            except TargetError as exc2:
                last = exc2
    raise RestoreFailed(
        f"RESTORE FAILED on {target.describe(snap.host)}: {snap.path} may still hold an arm's config "
        f"({one_line(str(last))})",
        hint=manual_instructions(target, snap, restart if do_restart else [], "restore it by hand now", env=env,
                                 secrets=secrets))


def restores_failed(failures: list[RestoreFailed]) -> RestoreFailed:
    """The error of an execution whose restore failed on each host of `failures` (in order): each host's failure
    is told on its own, with its own commands to restore that host by hand."""
    if len(failures) == 1:
        return failures[0]
    return RestoreFailed(failures[0].message, failures=list(failures))


def one_line(text: str) -> str:
    """A command's output inside a message of one line (its lines joined by ' / ')."""
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())


def _incomplete(target: Target, snap: Snapshot, restart: list[str], why: str, env: dict[str, str] | None,
                secrets: dict[str, str] | None) -> RestoreFailed:
    """The original config is back in place, but the service did not restart on it."""
    return RestoreFailed(f"RESTORE INCOMPLETE on {target.describe(snap.host)}: {snap.path} holds the original "
                         f"config again, but {one_line(why)}",
                         hint=manual_instructions(target, snap, restart, "restart the service by hand now", env=env,
                                                  secrets=secrets, put_back=False))

