"""Taking a target for an execution: its lock, what a dead runner left, a resume's recovery, the snapshot.

A lock another execution's dead runner left is taken over only when the config file is the original that
runner saved (`check_left_by_dead`): a new snapshot of an arm's config would be restored as "the original"
after every run from then on.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from workbench.runner.prepare import preview_values
from workbench.runner.record import Recorder, patient
from workbench.runner.restore import Snapshot, put_back_command, saved_snapshots, take_snapshots
from workbench.runner.targets.base import Target
from workbench.store.engine import Store
from workbench.store.writes import FINISHED
from workbench.wrapping import keep_whole

if TYPE_CHECKING:
    from workbench.runner.lock import Holder, TargetLock

# `state` below is the execution loop's `runner.execute.State` (not imported: execute imports this module).
State = Any


async def config_paths(state: "State", target: Target, context: dict[str, str]) -> dict[str, str]:
    """Each host's config file, checked before anything on the target is locked or touched."""
    p = state.prepared
    paths = ({host: preview_values(p, p.arms[0], context, host)["path"] for host in state.plan.hosts}
             if p.profile.config is not None else {})
    for path in paths.values():
        target.check_config_path(path)
    if p.profile.target.kind in ("local", "ssh"):  # pdsim's serve file is in the folder wb made for it
        await check_config_folders(state, target, paths)
    return paths


async def take_target(state: "State", target: Target, paths: dict[str, str]
                      ) -> tuple["TargetLock", dict[str, Snapshot]]:
    """Lock the target (before anything on it changes; held until after the restore), settle what a killed
    runner left when resuming, then snapshot the config files (`paths`, as `config_paths` gives them). The lock
    is returned before a failure here can leave it held: the caller releases it."""
    p = state.prepared
    lock = target_lock(target, state, paths)
    state.lock_files = [f"{path} on {target.describe(host)}" for host, path in lock.paths.items()]
    try:
        await lock.acquire()  # on a failure, it releases what it took itself
        if state.resumed:
            await asyncio.to_thread(_recover, state)
            await check_saved_originals(state, target, paths, lock.taken_from_self)
        target.keep_notes(state.exec_dir)
        snaps = await take_snapshots(target, paths, state.exec_dir, owner=state.execution_uuid) if paths else {}
    except BaseException:
        if not state.abandoned:  # abandoned (a second stop): left as a kill leaves it, the target maybe unreachable
            await lock.release()
        # A lock the release could not remove is said beside the error that stopped the taking, as after runs.
        locks_kept(state, target, lock, lock.unreleased)
        raise
    for host, snap in snaps.items():  # a mistyped path: each arm written where the service never reads it
        if snap.data is None and p.profile.target.kind in ("local", "ssh"):  # pdsim's is made when wb starts it
            state.progress.log(f"warning: {target.describe(host)}: config.path {snap.path} does not exist: each "
                               "run writes its arm's config there and the restore removes it; if the service reads "
                               "its config from another file, every arm measures it unchanged (fix config.path)")
    return lock, snaps


def locks_kept(state: "State", target: Target, lock: "TargetLock", kept: dict[str, str]) -> None:
    """Note each host whose lock `TargetLock.release` could not remove (`State.left`: said after the restore's notes
    and recorded with the execution): the next run on it is refused."""
    for host, why in kept.items():
        path = lock.paths[host]
        where = f"{target.describe(host)}: " if len(lock.paths) > 1 else ""
        remove = keep_whole(target.manual_command(host, f"rm -f {shlex.quote(path)}"))
        state.left.append(f"{where}its lock {path} was NOT released ({why}): the target may be left locked, "
                          f"refusing the next run; once no run of wb is on it, remove it: {remove}")


async def check_config_folders(state: "State", target: Target, paths: dict[str, str]) -> None:
    """Refuse, before the target is locked or touched, a config.path that is a folder, or whose folder does not
    exist: the lock (and each arm's config) would be written into a folder wb made, which it would leave behind,
    and a mistyped folder means the service reads its config elsewhere."""
    from workbench.runner.lock import TargetRefused

    for host, path in paths.items():
        folder = str(PurePosixPath(path).parent)
        res = await target.run(host, f"if [ ! -d {shlex.quote(folder)} ]; then echo no-folder; "
                                     f"elif [ -d {shlex.quote(path)} ]; then echo a-folder; fi", timeout=60)
        found = res.stdout.strip() if res.ok else ""
        if found not in ("no-folder", "a-folder"):
            continue
        why = f"its folder {folder} does not exist (or cannot be searched)" if found == "no-folder" else \
            "it is a folder, not a file"
        where = state.prepared.profile_line(("config", "path"))
        raise TargetRefused(f"{where + ': ' if where else ''}config.path {path} on {target.describe(host)}: {why}; "
                            "nothing on the target was touched", where=where,
                            hint="correct config.path in the profile (the file the service reads its config from)"
                                 + ("" if found == "a-folder" else ", or create the folder first"))


def target_lock(target: Target, state: "State", paths: dict[str, str]) -> "TargetLock":
    from workbench.runner.lock import TargetLock, lock_path
    from workbench.secrets import redact_text

    opts = dict(state.prepared.profile.options)
    where = {h: lock_path(target, h, paths.get(h), opts) for h in state.plan.hosts}

    async def left_by_dead(host: str, lock_file: str, holder: "Holder") -> None:
        await check_left_by_dead(state, target, host, lock_file, holder)

    def known(uuid: str) -> str | None:
        record = _known(state, uuid)
        return None if record is None else f"execution {record.id} of {record.hypothesis_id}"

    hyp = state.prepared.hypothesis
    origin = state.origin or {}
    if not origin.get("isolate") and hyp.generated is not None and hyp.generated.by == "isolate":
        origin = {"isolate": {"search_id": hyp.generated.search, "experiment": hyp.experiment}}
    resume = _resume_of(state, hyp.id, origin)
    return TargetLock(target, {h: w for h, w in where.items() if w}, state.execution_uuid, left_by_dead,
                      f"hypothesis {hyp.id}", known, name=f"execution {state.execution_id} of {hyp.id}",
                      resume=resume or "", folder=str(state.exec_dir), store=redact_text(state.store.name),
                      abandoned=lambda: bool(state.abandoned))


def _resume_of(state: "State", hypothesis_id: str, origin: dict[str, Any] | None = None) -> str | None:
    """How an execution of this store is resumed: `resume_command`, or, for a probe of a search (whose hypothesis
    exists only inside the search; `origin` holds the search's key), the `wb isolate ... --resume` command the
    search recorded, every flag it was started with (a secret value masked, as wherever wb shows one). An execution
    of an older wb recorded none: built from the search's flags as the store holds them (its key, or its record),
    with this store and workbench; None where the store holds none of them (`Holder.resume_step` says what then)."""
    from workbench.runner.search_command import stored_search_command
    from workbench.secrets import redact_text

    isolate = (origin or {}).get("isolate")
    if not isolate:
        return resume_command(state.store, state.prepared.root, hypothesis_id)
    if origin and origin.get("resume"):
        return redact_text(str(origin["resume"]))
    return stored_search_command(state.store, isolate, store_and_root(state.store.url, state.store.path,
                                                                       state.prepared.root))


def resume_command(store: Store, root: Path | str, hid: str) -> str:
    """The command that resumes the execution, with the store it is in (it named no store: run elsewhere, it
    read the default one and found nothing to resume) and the workbench's absolute folder (--root), so that it
    works pasted in any folder."""
    return resume_command_at(store.url, store.path, root, hid)


def resume_command_at(url: str, path: Path | None, root: Path | str, hid: str) -> str:
    """`resume_command` for the store at `url` (`path`, a DuckDB file's), before it is opened."""
    return keep_whole(shlex.join(["wb", "hypothesis", "run", hid, "--resume", *store_and_root(url, path, root)]))


def continue_with(command: str, lead: str = "continue with") -> str:
    """`lead: command`, saying where the store's password goes when the command's --db has it masked
    (`url_for_command`): without it, the command cannot reach the store."""
    from workbench.secrets import MASK

    words = shlex.split(command)
    db = words[words.index("--db") + 1] if "--db" in words[:-1] else ""
    return (f"{lead}, the store's password put in place of {MASK} in --db: {command}" if MASK in db
            else f"{lead}: {command}")


def store_and_root(url: str, path: Path | None, root: Path | str) -> list[str]:
    """--db naming the store (a URL's password masked, for the user to put back: `continue_with`) and --root the
    workbench's absolute folder, as the --db is absolute: a command with them works pasted in any folder."""
    from workbench.store.engine import url_for_command, url_has_password

    db = ["--db", str(path) if path is not None else url_for_command(url) if url_has_password(url) else url]
    return [*db, "--root", str(Path(root).resolve())]


def _known(state: "State", uuid: str) -> Any:
    """The store's record of the execution `uuid` (a lock's holder), None when this store does not hold it."""
    return next((e for e in state.store.executions() if e.uuid == uuid), None)


async def check_left_by_dead(state: "State", target: Target, host: str, lock_file: str, holder: "Holder") -> None:
    """Refuse a target whose lock a runner of another execution left (it died, or its restore failed), unless its
    config file is the original that runner saved: a new snapshot would take an arm's config for the original,
    and every restore after it would put the arm's config back."""
    from workbench.runner.lock import TargetBusy
    from workbench.runner.restore import left_as_saved

    folder = state.artifacts_root / f"execution-{holder.execution}"
    why = await left_as_saved(target, host, folder, holder.execution)
    if why is None:
        state.took_over = True  # the service was maybe never restarted on that original: the restore restarts it
        recorded = await asyncio.to_thread(_record_dead, state, holder)
        state.progress.log(f"taking over the lock of {holder.name or f'execution {holder.execution}'}: "
                           + ("the restore that failed in it has been made good: the config is the original it saved"
                              if holder.restore_failed else
                              f"its runner (pid {holder.pid}) is gone and the config is the original it saved")
                           + (f"; execution {recorded} is recorded interrupted" if recorded is not None else ""))
        return
    known = _known(state, holder.execution)
    which = (f"execution {known.id} of {known.hypothesis_id}" if known is not None
             else holder.name or f"execution {holder.execution}")
    resume = _holder_resume(state, known, holder)
    # A lock its runner could not mark (the link that failed the restore was down) is told by the error it recorded.
    if holder.restore_failed or (known is not None and "RESTORE FAILED" in (known.error or "")):
        raise TargetBusy(
            f"target {target.describe(host)} was left by {which}, whose restore failed (its runner, pid {holder.pid} "
            f"on {holder.host}, could not put the original config back): {why}",
            hint=_restore_by_hand(target, host, folder, holder.execution, lock_file))
    raise TargetBusy(
        f"target {target.describe(host)} was left by {which}, whose runner (pid {holder.pid} on {holder.host}, "
        f"since {holder.since}) died before restoring it: {why}",
        hint=f"resume it, which puts the original back first{holder.resume_step(resume)}\nor "
             f"{_put_back_by_hand(target, host, saved_snapshots(folder, holder.execution).get(host), lock_file)}")


def _record_dead(state: "State", holder: "Holder") -> int | None:
    """Record the execution whose lock is taken over, when this store holds it "running" and its runner is gone
    (killed: it never recorded its end), as interrupted, and its runs in flight with it: left running, `wb runs`,
    the site and a resume's message told it running (and a resume's "running, superseded ... stopped") for good.
    Its id where it was so recorded. A runner whose restore failed may still be running and recording its end: it is
    left to, unless it ran here and is gone."""
    from workbench.runner.lock import pid_alive

    known = _known(state, holder.execution)
    if known is None or known.status != "running":
        return None
    if holder.restore_failed and not (holder.here() and not pid_alive(holder.pid, holder.pid_start)):
        return None
    found = f"when execution {state.execution_id} took over the lock of its target"
    error = f"its runner (pid {holder.pid} on {holder.host}) stopped without recording its end; found {found}"
    done = patient(lambda: state.store.interrupt_dead_execution(known.id, error=error, found=found))
    return known.id if done else None


async def check_saved_originals(state: "State", target: Target, paths: dict[str, str], locked: set[str]) -> None:
    """A resume puts back, at its end, the original its runner saved (it stopped before restoring: killed, or its
    restore failed). Where that runner's lock is gone (removed by hand, or taken over by a run once the original was
    back in place) and the config is not that original, someone wrote it since, and which config is meant to stay
    cannot be told: putting the old original back could undo their change, and taking what is there for the
    original could keep an arm's config for good (a recorded run's, or the one in flight when the runner died).
    Refused (TargetBusy, exit 2; nothing on the target touched), with the ways on."""
    from workbench.runner.lock import TargetBusy
    from workbench.runner.restore import holds_original, load_snapshots

    saved = {h: s for h, s in load_snapshots(state.exec_dir, owner=state.execution_uuid).items()
             if h in paths and s.path == paths[h]}
    changed, kept_arm = [], []  # hosts whose lock is gone and config is not the original; hosts still locked
    for host, snap in saved.items():
        if await holds_original(target, snap):
            continue
        (kept_arm if host in locked else changed).append(snap)
    if not changed:
        return
    where = ", ".join(f"{s.path} on {target.describe(s.host)}" for s in changed)
    name = f"execution {state.execution_id} of {state.prepared.hypothesis.id}"
    raise TargetBusy(
        f"the config {where} is not the original {name} saved, and its lock has been removed since its runner "
        "stopped without restoring it: the config was written since, and the resume would put that original back "
        "over it at its end", hint=_changed_since_hint(target, changed, kept_arm, state.exec_dir))


def _changed_since_hint(target: Target, changed: list[Snapshot], kept_arm: list[Snapshot], folder: Path) -> str:
    """Put each saved original back, then resume; or, where every other host is its original again, drop the saved
    originals (the resume then reads the configs afresh as the originals)."""
    lines = ["if it is the config of an arm (what the stopped run left), put the saved original back, then resume:"]
    lines += ["  " + put_back_command(target, snap) for snap in changed]
    if kept_arm:
        lines.append("(the saved originals are still needed: "
                     + ", ".join(target.describe(s.host) for s in kept_arm) + " still holds the stopped run's config)")
    else:
        q = shlex.quote(str(folder))
        drop = keep_whole(f"rm -f {q}/snapshot.json {q}/original-*")
        lines += ["if it is what the service is to keep from now on, drop the saved originals, then resume (the "
                  "configs are read afresh as the originals):", f"  {drop}"]
    return "\n".join(lines)


def _holder_resume(state: "State", known: Any, holder: "Holder") -> str | None:
    """The command that resumes a dead holder: built from this store's record of it (`known`), unless that is a
    probe of a search whose plan kept no command while its lock did (the lock's is then the complete one); for
    an execution of another store, the lock's own; None where neither has one (`Holder.resume_step` says what
    the user must give then)."""
    if known is not None:
        origin = (known.plan or {}).get("origin") or {}
        plan_kept_none = bool(origin.get("isolate")) and not origin.get("resume")
        if not (plan_kept_none and holder.resume):
            return _resume_of(state, known.hypothesis_id, origin)
    return holder.resume or None


def _put_back_by_hand(target: Target, host: str, snap: Snapshot | None, lock_file: str) -> str:
    """How to give the dead holder's run up by hand, each command on a line of its own that ends it. With its saved
    original, putting that back is all: the next run finds it in place and takes the lock over
    (`check_left_by_dead`); removing the lock too is not needed. With none saved, what is there cannot be told from
    the original: the user puts it back as they know it, then removes the lock."""
    if snap is None:
        remove = keep_whole(target.manual_command(host, f"rm -f {shlex.quote(lock_file)}"))
        return ("put the original config back by hand (its runner saved no copy to compare with), then remove the "
                f"lock:\n  {remove}")
    how = ("remove the config it wrote (there was no such file before)" if snap.data is None
           else "put the original back by hand")
    return (f"{how}; the next run then finds the original in place and takes the lock over:\n"
            f"  {put_back_command(target, snap)}")


def _restore_by_hand(target: Target, host: str, folder: Any, owner: str, lock_file: str) -> str:
    """What to do about a target whose restore failed: put the original back, then run again (the lock, left so
    that no run takes the arm's config for the original, is then taken over). The command that puts it back last,
    on a line of its own."""
    snap = saved_snapshots(folder, owner).get(host)
    how = ("put the original config back by hand" if snap is None else
           "remove the config it wrote, which did not exist before," if snap.data is None else "put the original back")
    told = ("" if snap is None else
            f"\nto {'remove it' if snap.data is None else 'put it back'}:\n  {put_back_command(target, snap)}")
    return (f"{how} and restart the service, as the failed run printed; then run again: wb takes the lock over "
            f"once the config is the original (removing {lock_file} instead would make the config as it is now "
            f"the original of every later run){told}")


def _recover(state: "State") -> None:
    """Before resuming (holding the target's lock): write what the journal kept, settle rows a crash left
    half-way, stop the children a killed runner left behind, and count again what is done."""
    from workbench.runner.orphans import reap

    rec = Recorder(state.store, state.prepared, state.execution_id, state.exec_dir)
    try:
        rec.replay()
        rec.reconcile()
    finally:
        rec.close()
    for line in reap(state.exec_dir / "children"):
        state.progress.log(line)
    ended = ended_runs(state.store, state.execution_id)
    state.done |= set(ended)
    state.progress.seed(ended)


def ended_runs(store: Store, execution_id: int) -> dict[int, str]:
    """Order index -> status of the last attempt of each planned run of the execution that ended (a run
    interrupted and not redone yet is not among them)."""
    ended: dict[int, str] = {}
    for r in sorted(store.runs(execution_id=execution_id), key=lambda r: r.id):
        if r.order_index is not None:
            if r.status in FINISHED:
                ended[int(r.order_index)] = r.status
            else:
                ended.pop(int(r.order_index), None)
    return ended
