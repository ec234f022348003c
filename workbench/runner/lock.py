"""A per-target lock: a small file on the target host, created atomically, held from snapshot to restore.

Two experiments on one deployment would overwrite each other's config between a restart and a
measurement and store runs under the wrong arm. The lock file is created with the shell's noclobber
(an O_EXCL create, on this machine or over SSH alike) and holds who owns it: the execution's UUID,
the runner's host, pid, the pid's start time, the pid space (`pid_space`), its login name and when it was
taken. A lock whose owner ran on this machine and is gone (or whose pid now belongs to another process) is stale:
it is taken over once the caller has checked what the dead owner left (`left_by_dead`: its config file must be
the original it saved, else the new execution would snapshot an arm's config as "the original"). A lock of the
same execution (a resume after kill -9) is taken over too, unless its owner still runs here.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Awaitable, Callable, Collection

from workbench.errors import RunFailure, TargetError
# pid_alive, process_start: part of this module's interface (a lock's owner is judged by them)
from workbench.processes import pid_alive, process_start  # noqa: F401
from workbench.runner.restore import one_line
# HOLDER_ENV, LOCK_NAME: part of this module's interface
from workbench.runner.targets.base import HOLDER_ENV, LOCK_NAME, Target  # noqa: F401

ACQUIRED = "WB-LOCK-ACQUIRED"


class TargetRefused(RunFailure):
    """The execution cannot take the target; nothing on it was touched, no run was tried (exit 2: the user acts on
    what the message names before trying again)."""

    exit_code = 2


class TargetBusy(TargetRefused):
    """Another execution holds the target's lock; nothing on the target was touched.

    Exit 2, as for a `--resume` refused while its runner lives: nothing ran, and the user acts on what the
    message names (waits for that execution, or resumes it, or removes a lock left behind) before trying again."""


def pid_space() -> str:
    """The kernel's boot and the pid namespace this process's pids are numbered in: a pid names one process only
    within them. Host names do not tell machines apart (two hosts, or a container and the host it runs on, may
    share one); a lock's pid is checked only where this is the same. Empty where /proc does not say."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""


def login_name() -> str:
    """This process's login name ($LOGNAME, $USER…, else the password database), "" when none can be found."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no such variable and a uid with no passwd entry (a bare container)
        return ""


@dataclass
class Holder:
    execution: str
    host: str
    pid: int
    pid_start: str | None
    since: str
    # The owner's restore failed and it left the lock so: no later execution snapshots the arm's config it may
    # have left as "the original". Such a lock is taken over, whether or not its owner still runs, once the
    # config is the original again (`left_by_dead`).
    restore_failed: bool = False
    # What the owner runs ("hypothesis wedge-confound"), for the message of a command refused meanwhile.
    what: str = ""
    # The execution as its store names it ("execution 3 of wedge-confound") and the command that resumes it: a
    # command refused meanwhile, which may have no store (`wb sim`) or another one, names the owner by them.
    name: str = ""
    resume: str = ""
    # The execution's folder on the runner's machine, where it keeps the original config it saved: `wb sim` tells
    # from it whether a dead runner left pdsim changed (`runner.targets.sim.refuse_while_in_use`).
    folder: str = ""
    # The store that holds the execution, as wb names it (a DuckDB file's path, a server's URL with its password
    # masked): `name` numbers the execution in that store, and a command refused on another store, which numbers
    # its own executions from 1 too, says which one.
    store: str = ""
    # Where `pid` means something (`pid_space`); a lock of an older wb holds none, and its host name alone is taken.
    pid_space: str = ""
    # The runner's login name, so a refusal says whom to ask; no lock of an older wb holds it.
    user: str = ""

    @classmethod
    def me(cls, execution: str, what: str = "", *, name: str = "", resume: str = "", folder: str = "",
           store: str = "") -> "Holder":
        pid = os.getpid()
        return cls(execution, socket.gethostname(), pid, process_start(pid),
                   datetime.now(timezone.utc).isoformat(timespec="seconds"), what=what, name=name, resume=resume,
                   folder=folder, store=store, pid_space=pid_space(), user=login_name())

    def text(self) -> str:
        d = dict(self.__dict__)
        if not d["restore_failed"]:  # an ordinary lock reads as before the mark existed
            del d["restore_failed"]
        for key in ("what", "name", "resume", "folder", "store", "pid_space", "user"):
            if not d[key]:
                del d[key]
        return json.dumps(d, sort_keys=True)

    def label(self, known: str | None = None) -> str:
        """The execution as messages name it: `known`, the name the store gives it (`execution 3 of
        wedge-confound`, its id as `wb report` and `wb runs` show it), else the name its runner recorded; a lock of
        an older wb holds neither, and the uuid and what it runs name it. A name its runner recorded comes with the
        store that holds it, where the lock says: a store's numbers mean nothing in another."""
        what = f", {self.what}" if self.what else ""
        if known:
            return known
        if self.name:
            return f"{self.name} in the store {self.store}" if self.store else self.name
        return f"execution {self.execution}{what}"

    def owner(self, known: str | None = None) -> str:
        """The owner as messages name it: execution (`label`), pid, its user where the lock says, host and since
        when."""
        user = f" of user {self.user}" if self.user else ""
        return f"{self.label(known)} (pid {self.pid}{user} on {self.host}, since {self.since})"

    def resume_step(self, command: str | None = None) -> str:
        """How "resume it" goes on: `command` (else the one its runner recorded in the lock, complete: its store, its
        workbench, a search's flags) after a colon, on a line of its own that ends the text. A lock of an older wb
        records none, nor the store or the workbench folder the execution is in: then what is known (the hypothesis
        it runs) and, plainly, what the user must add, never a command that would resume nothing."""
        from workbench.wrapping import keep_whole

        if command or self.resume:
            return f":\n  {keep_whole(command or self.resume)}"
        hypothesis = self.what.removeprefix("hypothesis ") if self.what.startswith("hypothesis ") else ""
        where = ("in the workbench folder it ran from, adding --db and the store that holds it unless that is the "
                 "folder's wb.duckdb")
        if hypothesis.startswith("iso-"):  # a probe of a search: its hypothesis exists only inside the search
            return (f", by resuming the search it is a probe of: `wb isolate --resume` with every flag that search was "
                    f"started with, {where}; its lock, written by an older wb, records neither the flags, the folder "
                    "nor the store")
        run = f"`wb hypothesis run {hypothesis} --resume`" if hypothesis else \
            "`wb hypothesis run ID --resume`, ID the hypothesis it runs,"
        return (f", with {run} {where}; its lock, written by an older wb, records neither the folder nor the store"
                + ("" if hypothesis else " nor the hypothesis"))

    def busy_hint(self, remove_lock: str) -> str:
        """What to do about a target this owner holds, in the same words wherever it is refused (`wb hypothesis run`,
        `wb isolate`, `wb sim`): wait, or stop it. An owner on this machine is alive (a stale lock is not busy): its
        lock is never to be removed under it, nor is it to be resumed. An owner elsewhere may be gone, which only its
        host can tell: then resume it, or give it up (the original config put back by hand, then `remove_lock`, the
        command that removes the lock). Each command ends its line: copied to its end it takes nothing else along."""
        from workbench.wrapping import keep_whole

        kill = keep_whole(f"kill {self.pid}")
        if self.here():
            return ("wait for it to finish, or stop it (Ctrl-C where it runs, or its pid), which restores the target:"
                    f"\n  {kill}")
        return (f"wait for it to finish, or stop it (Ctrl-C where it runs, or its pid on {self.host}), which restores "
                f"the target:\n  {kill}\nif its runner is gone (only {self.host} can tell), resume it on {self.host}, "
                f"which puts the original config back and frees the lock{self.resume_step()}\nor give that run up: "
                f"put the original config back by hand, then remove the lock:\n  {keep_whole(remove_lock)}")

    @classmethod
    def parse(cls, text: str) -> "Holder | None":
        try:
            d = json.loads(text)
            return cls(str(d["execution"]), str(d["host"]), int(d["pid"]), d.get("pid_start"), str(d["since"]),
                       d.get("restore_failed") is True, str(d.get("what") or ""), str(d.get("name") or ""),
                       str(d.get("resume") or ""), str(d.get("folder") or ""), str(d.get("store") or ""),
                       str(d.get("pid_space") or ""), str(d.get("user") or ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def here(self) -> bool:
        """Whether the owner ran where this process's pids are its pids: this host name and, where the lock records
        it, this pid space (another machine or container of the same name is elsewhere)."""
        return self.host == socket.gethostname() and (not self.pid_space or self.pid_space == pid_space())

    def stale(self) -> bool:
        """True when the owner no longer holds the target: its restore failed, or it ran here (`here`) and is
        gone; an owner elsewhere cannot be checked."""
        return self.restore_failed or (self.here() and not pid_alive(self.pid, self.pid_start))


RUNNER_NOTE = "runner.json"


def note_runner(folder: Path, execution: str) -> None:
    """Note in the execution's folder who runs it (the holder its target lock names, kept also where a
    target has no lock), so `wb runs delete` can tell a runner that died from one still writing its runs."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{RUNNER_NOTE}.tmp"
    tmp.write_text(Holder.me(execution).text(), encoding="utf-8")
    os.replace(tmp, folder / RUNNER_NOTE)


def _noted_runner(folder: Path, execution: str) -> "Holder | None":
    """The runner `note_runner` wrote for `execution` in its folder; None without a readable note of it."""
    try:
        holder = Holder.parse((folder / RUNNER_NOTE).read_text(encoding="utf-8"))
    except OSError:
        return None
    return holder if holder is not None and holder.execution == execution else None


def runner_gone(folder: Path, execution: str) -> bool:
    """Whether the runner of `execution` is provably gone, by the rule that takes over a dead owner's lock
    (`Holder.stale`: it ran on this machine and its pid is gone or reused). Without a readable note of this
    execution, or with a runner on another host, nothing is proven: False."""
    holder = _noted_runner(folder, execution)
    return holder is not None and holder.stale()


def runner_alive(folder: Path, execution: str) -> "Holder | None":
    """The runner of `execution` when it provably still runs in another process on this machine; None when
    it is gone or cannot be checked (no note, another host)."""
    holder = _noted_runner(folder, execution)
    if holder is None or not holder.here() or holder.pid == os.getpid() or holder.stale():
        return None
    return holder


def runner_elsewhere(folder: Path, execution: str) -> "Holder | None":
    """The runner of `execution` when its note names another machine: whether it still runs cannot be told
    from here (its pid means nothing on this host)."""
    holder = _noted_runner(folder, execution)
    return holder if holder is not None and not holder.here() else None


def lock_path(target: Target, host: str, config_path: str | None, options: dict[str, Any]) -> str | None:
    """Where the lock lives on `host`: an explicit `lock_path` option, else where the target keeps it (pdsim's
    folder, next to the config file the experiment rewrites, the remote work folder). None: nothing to protect."""
    if options.get("lock_path"):
        return str(options["lock_path"])
    return target.lock_file(options, config_path)


class TargetLock:
    """The locks of one execution on each host of its target."""

    def __init__(self, target: Target, paths: dict[str, str], execution: str,
                 left_by_dead: Callable[[str, str, Holder], Awaitable[None]] | None = None, what: str = "",
                 known: Callable[[str], str | None] | None = None, *, name: str = "", resume: str = "",
                 folder: str = "", store: str = "", abandoned: Callable[[], bool] = lambda: False) -> None:
        self.target = target
        self.paths = paths
        self.me = Holder.me(execution, what, name=name, resume=resume, folder=folder, store=store)
        self.held: list[str] = []
        # (host, lock path, the dead holder) -> raises when what that holder's runner left cannot be taken over
        self.left_by_dead = left_by_dead
        # hosts whose lock this execution's own killed runner left (a resume): what is on them is its doing
        self.taken_from_self: set[str] = set()
        # an execution's uuid -> its name in the store ("execution 3 of wedge-confound"), None when not there
        self.known = known
        # whether the taking was abandoned (a second stop): nothing more is sent to a target that may not answer
        self.abandoned = abandoned
        # host -> why its lock, still this execution's, could not be removed by any release so far (`acquire`'s own
        # release after a failure included, whose caller sees only that failure)
        self.unreleased: dict[str, str] = {}

    async def _try(self, host: str, path: str) -> str | None:
        """None when acquired; else the current holder's text."""
        q = shlex.quote(path)
        cmd = (f"mkdir -p {shlex.quote(str(PurePosixPath(path).parent))} && "
               f"if ( set -C; printf '%s\\n' {shlex.quote(self.me.text())} > {q} ) 2>/dev/null; "
               f"then echo {ACQUIRED}; else cat {q}; fi")
        res = await self.target.run(host, cmd, timeout=60)
        if not res.ok:
            raise TargetError(f"cannot create the lock {path} on {self.target.describe(host)}: {res.excerpt(300)}")
        return None if res.stdout.strip() == ACQUIRED else res.stdout.strip()

    async def _break(self, host: str, path: str, seen: str) -> None:
        """Remove a stale lock, only while it still holds what was judged stale."""
        q = shlex.quote(path)
        await self.target.run(host, f'[ "$(cat {q} 2>/dev/null)" = {shlex.quote(seen)} ] && rm -f {q}; true',
                              timeout=60)

    async def acquire(self) -> None:
        """Take every host's lock, or release what was taken and raise TargetBusy. A stop (a signal's cancel)
        can land after the shell wrote a host's lock and before wb read that it had: that host's lock is removed
        too, where it holds this execution's text (never another's). An abandoned taking (`abandoned`) leaves the
        locks as a kill would: the target it hung on may not answer the removal either."""
        trying = None
        try:
            for host, path in self.paths.items():
                trying = host
                await self._acquire_one(host, path)
            self.target.holder = self.me.execution
        except BaseException:
            if self.abandoned():
                raise
            await self.release()
            if trying is not None:
                why = await self._remove_mine(trying, checked=True)
                if why is not None:
                    self.unreleased[trying] = why
            raise

    async def _acquire_one(self, host: str, path: str) -> None:
        for attempt in range(4):
            seen = await self._try(host, path)
            if seen is None:
                self.held.append(host)
                return
            holder = Holder.parse(seen)
            if holder is None and attempt == 0:
                await asyncio.sleep(0.5)  # an owner between its create and its write: look again
                continue
            mine = holder is not None and holder.execution == self.me.execution and (
                not holder.here() or holder.pid == self.me.pid)  # a resume after kill -9 elsewhere
            if holder is None or holder.stale() or mine:
                if holder is not None and holder.execution != self.me.execution and self.left_by_dead is not None:
                    await self.left_by_dead(host, path, holder)
                if holder is not None and holder.execution == self.me.execution:
                    self.taken_from_self.add(host)
                await self._break(host, path, seen)
                continue
            where = self.target.describe(host)
            known = self.known(holder.execution) if self.known is not None else None
            remove = self.target.manual_command(host, f"rm -f {shlex.quote(path)}")
            raise TargetBusy(f"target {where} is in use by {holder.owner(known)}", hint=holder.busy_hint(remove))
        raise TargetBusy(f"could not take the lock {path} on {self.target.describe(host)} (it kept changing)")

    async def release(self, *, restore_failed: Collection[str] = ()) -> dict[str, str]:
        """Remove the locks this execution holds (never another's); never raises. The lock of a host in
        `restore_failed` is left, marked so (see `Holder.restore_failed`). Returns, host by host, why a lock
        that still holds this execution's text could not be removed (the target is left locked)."""
        mine = shlex.quote(self.me.text())
        kept: dict[str, str] = {}
        for host in list(self.held):
            q = shlex.quote(self.paths[host])
            if host in restore_failed:
                left = shlex.quote(replace(self.me, restore_failed=True).text())
                await self._run_quietly(host, f'[ "$(cat {q} 2>/dev/null)" = {mine} ] && '
                                              f'printf \'%s\\n\' {left} > {q}; true')
            else:
                why = await self._remove_mine(host, checked=True)
                if why is not None:
                    kept[host] = why
            self.held.remove(host)
        self.target.holder = None
        self.unreleased.update(kept)
        return kept

    async def _remove_mine(self, host: str, *, checked: bool = False) -> str | None:
        """Remove `host`'s lock file if it holds this execution's text; never raises. `checked`: why it still holds
        that text afterwards (the removal failed, or the host did not answer), None once it does not."""
        q, mine = shlex.quote(self.paths[host]), shlex.quote(self.me.text())
        # Checked, the command fails only while the file still holds this execution's text.
        after = f'[ "$(cat {q} 2>/dev/null)" != {mine} ]' if checked else "true"
        return await self._run_quietly(host, f'[ "$(cat {q} 2>/dev/null)" = {mine} ] && rm -f {q}; {after}')

    async def _run_quietly(self, host: str, cmd: str) -> str | None:
        """Run `cmd` on `host`; why it failed (its output, or the target's error), None when it did not."""
        try:
            res = await self.target.run(host, cmd, timeout=60)
        except (TargetError, OSError) as exc:
            return str(exc) or type(exc).__name__
        return None if res.ok else (one_line(res.excerpt(300)) or f"exit {res.rc}")


def _ancestors() -> set[int]:
    """This process and its parents up to init (bounded), read from /proc."""
    out, pid = set(), os.getpid()
    for _ in range(64):
        if pid <= 1 or pid in out:
            break
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


def _read_holder(path: Path) -> "tuple[Holder, str] | None":
    """The holder the lock file `path` names and the file's text, unless the lock is free, unreadable, this
    process's or one of its parents', or its runner's that sent this command through the target (HOLDER_ENV names
    it: a runner's own `wb sim restart`, over ssh too, works under its own lock)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    holder = Holder.parse(text)
    if holder is None:
        return None
    if holder.here() and holder.pid in _ancestors():
        return None
    if os.environ.get(HOLDER_ENV) == holder.execution:
        return None
    return holder, text


def left_holder(path: Path) -> "tuple[Holder, str] | None":
    """The holder of the lock file `path` and the file's text when the lock is stale: its runner is gone (kill -9)
    or its restore failed, so what it changed on the target may be left for its resume (or by hand) to restore."""
    found = _read_holder(path)
    return found if found is not None and found[0].stale() else None


def live_holder(path: Path) -> "Holder | None":
    """The execution holding the lock file `path` while it still holds it, unless it is this process or one of its
    parents, or a command sent by its runner through the target (`_read_holder`); None when the lock is free or
    stale."""
    found = _read_holder(path)
    return None if found is None or found[0].stale() else found[0]
