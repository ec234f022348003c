"""The `sim` target: pdsim on this machine. Uses a pdsim already serving in its folder, or starts one on free
ports for the experiment and stops it afterwards (so `wb hypothesis run ID` needs nothing else).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from workbench.errors import SimError
from workbench.runner.targets.base import LOCK_NAME, config_lock_file
from workbench.runner.targets.local import LocalTarget
from workbench.wrapping import keep_whole

UP_TIMEOUT_S = 120.0


def wb_command() -> str:
    """How this wb is invoked from a shell (same interpreter, so the same code and venv)."""
    return shlex.join([sys.executable, "-m", "workbench.cli.main"])


def read_serve_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, _, v = line.partition("=")
        out[k.strip()] = v.strip().strip("'\"")
    return out


class SimTarget(LocalTarget):
    kind = "sim"
    check_restart = False  # wb restarts it itself

    def __init__(self, *, sim_dir: Path, options: dict[str, Any], runs_restart: bool = False) -> None:
        from workbench.optional import require_torch

        require_torch("pdsim (the sim target)")  # before anything runs: the servers would fail on import
        super().__init__(["local"])
        self.sim_dir = sim_dir
        self.options = options
        # The profile's restart starts pdsim before each run's arm is measured (`wb sim restart` starts servers
        # that are down): `setup` then leaves a stopped pdsim down rather than start it on the original serve
        # file for the first run to stop at once (two servers started and stopped for nothing, ~1.3 s of CPU).
        self.runs_restart = runs_restart
        self.started_here = False
        self.served: dict[str, str] = {}
        # Notes that this execution started pdsim, so a resume after kill -9 stops it at the end as well.
        self.marker: Path | None = None

    def context(self) -> dict[str, str]:
        return {"sim_dir": str(self.sim_dir)}

    def describe(self, host: str) -> str:
        # Its one host is this machine ("local", as the local target it is built on), but the user asked for
        # the sim profile: messages ("target ... is in use", "RESTORE INCOMPLETE on ...") name that.
        return f"sim (pdsim in {self.sim_dir})"

    def where(self, host: str) -> str:
        # Its runs read "control@pdsim", the deployment the user ran them on, not "control@local"; the stored
        # host stays "local" (a resume compares it).
        return "pdsim"

    def lock_file(self, options: Mapping[str, Any], config_path: str | None) -> str | None:
        return str(sim_lock(self.sim_dir))

    def keep_notes(self, folder: Path) -> None:
        super().keep_notes(folder)
        self.marker = folder / "sim-started"

    async def _serving_here(self, ports: list[str]) -> bool:
        """Whether this folder's own servers answer /health on `ports` (its status reads each unit's pid file
        and asks that unit's port): a /health answered on the ports alone may be another folder's pdsim (or
        any server) on the ports a stopped folder's serve file still names."""
        from workbench.sim import control

        st = await asyncio.to_thread(control.status, self.sim_dir, debug=False)
        healthy = [str(st.units[u].port) for u in ("prefill", "decode") if st.units[u].state == "healthy"]
        return healthy == [str(p) for p in ports]

    async def setup(self, serve_file: Path, env: dict[str, str]) -> dict[str, str]:
        """Find or start pdsim (or, where the runs' restart starts it, choose its ports); returns template context
        (sim_dir and the ports it serves on)."""
        self.sim_dir.mkdir(parents=True, exist_ok=True)
        current = read_serve_file(serve_file)
        ports = [current.get("prefill_port"), current.get("decode_port")]
        if all(ports) and await self._serving_here([p for p in ports if p]):
            self.started_here = self.marker is not None and self.marker.exists()
            self.served = {"sim_dir": str(self.sim_dir), "prefill_port": str(ports[0]), "decode_port": str(ports[1])}
            return self.served
        ports = self._ports()
        pp, dp = ports["prefill_port"], ports["decode_port"]
        if self.marker is not None:
            # Written before starting: a runner killed while pdsim comes up still leaves the note for --resume.
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.write_text(str(self.sim_dir), encoding="utf-8")
        # Ours from here: a signal or a failure while it comes up (here, or in the first run's restart) still
        # stops it (`teardown`), and the restore does not restart a pdsim that was never up.
        self.started_here = True
        self.served = {"sim_dir": str(self.sim_dir), "prefill_port": pp, "decode_port": dp}
        if self.runs_restart:
            return self.served
        cmd = (f"{wb_command()} sim up --dir {shlex.quote(str(self.sim_dir))} "
               f"--set prefill_port={pp} --set decode_port={dp}")
        res = await self.run("local", cmd, env=env, timeout=UP_TIMEOUT_S)
        if not res.ok:
            raise SimError(f"could not start pdsim in {self.sim_dir}: {res.excerpt()}",
                           hint=f"try it by hand: {cmd}")
        return self.served

    async def deployment_identity(self, host: str) -> str | None:
        """pdsim's server processes (`prefill pid N, decode pid M`): a restart replaces both."""
        from workbench.sim import control

        st = await asyncio.to_thread(control.status, self.sim_dir, debug=False)
        return ", ".join(f"{u.unit} pid {u.pid}" for u in st.units.values() if u.state != "down") or None

    def check_config_path(self, config_path: str) -> None:
        """Refuse a folder whose pdsim reads another serve file than the one each arm is written into (`wb sim up
        --config FILE` names it for every later start and restart): no arm would reach the servers, every run
        would measure FILE's config, and starting pdsim here would rewrite FILE's ports. Refused as a busy
        target is, before it is locked: exit 2, nothing run."""
        import os

        from workbench.runner.lock import TargetBusy
        from workbench.sim import control

        serve_file, in_use = Path(config_path), control.config_path(self.sim_dir)
        if os.path.realpath(in_use) == os.path.realpath(serve_file):
            return
        q = shlex.quote
        take = (f"cp {q(str(in_use))} {q(str(serve_file))} "
                f"&& wb sim up --dir {q(str(self.sim_dir))} --config {q(str(serve_file))}")
        raise TargetBusy(f"pdsim in {self.sim_dir} reads its serve file from {in_use} (named by `wb sim up --config`), "
                         f"but the profile writes each arm into {serve_file}: no arm would reach the servers. "
                         "Nothing was run",
                         hint=f"to run on that config, make it the serve file: {keep_whole(take)}; "
                              "or give another sim folder ($WB_SIM_DIR)")

    def _ports(self) -> dict[str, str]:
        """The ports to start pdsim on: those this execution started it on before, while both are free (the
        ports are part of the rendered serve file: new ones after a --resume made the replicates before and
        after it differ in config), else two free ones, noted for a resume."""
        import json

        from workbench.sim.control import free_ports, port_free

        noted = self.marker.with_name("sim-ports") if self.marker is not None else None
        try:
            old = json.loads(noted.read_text(encoding="utf-8")) if noted is not None else {}
            if all(port_free(int(old[k])) for k in ("prefill_port", "decode_port")):
                return {k: str(old[k]) for k in ("prefill_port", "decode_port")}
        except (OSError, ValueError, TypeError, KeyError, OverflowError):
            pass        # no note (a fresh execution) or an unreadable one: new ports
        ports = free_ports()
        if noted is not None:
            noted.parent.mkdir(parents=True, exist_ok=True)
            noted.write_text(json.dumps(ports), encoding="utf-8")
        return ports

    async def teardown(self) -> str | None:
        """Stop the pdsim this runner started; returns an error text when it would not stop."""
        if not self.started_here:
            return None
        cmd = f"{wb_command()} sim down --dir {shlex.quote(str(self.sim_dir))}"
        res = await self.run("local", cmd, timeout=60)
        self.started_here = False
        if res.ok and self.marker is not None:
            self.marker.unlink(missing_ok=True)
        return None if res.ok else f"`{cmd}` failed: {res.excerpt()}"


def default_sim_dir(root: Path, options: dict[str, Any], sim_dir: Path | None = None) -> Path:
    """The profile's `dir`, else the configured sim folder ($WB_SIM_DIR), else .wb/sim in the workbench."""
    d = options.get("dir") or sim_dir
    return Path(str(d)).expanduser().resolve() if d else (root / ".wb" / "sim").resolve()


def sim_lock(sdir: Path) -> Path:
    """The lock of the pdsim in `sdir`: beside the serve file it reads (DIR/.serve.sh.wb-target.lock, or beside
    the file `wb sim up --config` named), where a profile that reaches the same pdsim as a service and rewrites
    that file (`sim-ssh`, over ssh; any `local` one) takes its lock too. One deployment, one lock: a run of each
    kind of profile at once would make both measure one config (the folder's own DIR/wb-target.lock, which the
    `sim` profile took before, let them)."""
    from workbench.sim.control import config_path

    return Path(config_lock_file(str(config_path(sdir))))


def folder_locks(sdir: Path) -> list[Path]:
    """Every lock a run on the pdsim in `sdir` may hold, whichever profile took it: the one beside the serve file
    in use (`sim_lock`), the one beside DIR/serve.sh (a profile's config file, while `wb sim up --config` names
    another), and DIR/wb-target.lock (where the `sim` profile of an earlier wb took it)."""
    found = [sim_lock(sdir)]
    for lock in (Path(config_lock_file(str(sdir / "serve.sh"))), sdir / LOCK_NAME):
        if lock not in found:
            found.append(lock)
    return found


def refuse_while_in_use(sim_dir: str | Path | None, command: str) -> "LeftChanged | None":
    """Refuse `wb sim COMMAND` (one that changes, stops or loads the deployment) while an execution holds one of
    the sim folder's locks (`folder_locks`): the serve file rewritten or the servers restarted under a run made
    both arms measure one config, recorded as evidence. The runner's own commands (its children, or its commands
    over ssh, which name it) pass. Exit 2, nothing changed; `wb sim status` and `wb sim journal` read only and
    are never refused.

    A lock whose runner was killed (or whose restore failed) before it put pdsim's serve file back refuses too
    (`_left_changed`): a change made now would be overwritten by that run's resume, or make the resume refuse.
    `down` alone passes (stopping the servers changes neither the serve file nor what the resume restores): what
    it returns says what still restores it. A stale lock whose runner left the original in place is removed.

    The lock is checked where it lies, also for a run on another machine: `wb sim` drives the pdsim of the machine
    it runs on, and a runner takes that pdsim's lock in its folder there, over ssh too. A holder that ran elsewhere
    (`Holder.here`: another host, or one of this name with other pids) is never judged gone from here, so a user's
    `wb sim` on an ssh host neither breaks a remote run's lock nor stops pdsim under it."""
    from workbench.runner.lock import TargetBusy, live_holder
    from workbench.sim.control import state_dir

    sdir = state_dir(sim_dir)
    held = [(lock, h) for lock in folder_locks(sdir) if (h := live_holder(lock)) is not None]
    if held:
        lock, holder = held[0]
        raise TargetBusy(f"pdsim in {sdir} is in use by {holder.owner()}: `wb sim {command}` would change the "
                         "deployment under its runs. Nothing was changed",
                         hint=f"{holder.busy_hint('rm -f ' + shlex.quote(str(lock)))}\n(`wb sim status` and "
                              "`wb sim journal` "
                              "work meanwhile)")
    left = _left_changed(sdir)
    if left is None:
        return None
    if command != "down":
        raise TargetBusy(f"{left.what}. `wb sim {command}` would change it. Nothing was changed",
                         hint=f"{left.hint}\n(`wb sim status` and `wb sim journal` work meanwhile)")
    return left


@dataclass(frozen=True)
class LeftChanged:
    """A lock of pdsim's folder whose runner is gone (killed, or its restore failed), as `wb sim status` and `down`
    tell it and `up`, `restart`, `repro` and `bench` are refused for: what that runner left, and the ways on."""

    lock: str
    execution: str  # as messages name it
    pid: int
    host: str
    # "changed": the serve file is not the original its runner saved (its resume, or the commands in `hint`, put that
    # back); "unknown": whether it is cannot be told (no saved original to compare with); "stale": its runner saved
    # no original in its folder, so it ended or stopped before changing anything, and the lock is only left over.
    left: str
    what: str
    hint: str
    resume: str | None  # the command that resumes that run, where its resume restores pdsim

    def note(self) -> str:
        """What `wb sim down`, which passes, says of it."""
        if self.left == "changed":
            return f"{self.what}. The serve file, the lock and the saved original are kept; {self.hint}"
        return f"{self.what}; {self.hint}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def left_changed(sim_dir: str | Path | None) -> LeftChanged | None:
    """What a gone runner's lock of the pdsim in `sim_dir` left (`LeftChanged`), read only: `wb sim status` frees
    nothing. None when no lock is stale, or its runner left the original in place (the next command that changes
    pdsim frees that lock)."""
    from workbench.sim.control import state_dir

    return _left_changed(state_dir(sim_dir), free=False)


def _left_changed(sdir: Path, *, free: bool = True) -> LeftChanged | None:
    """What a stale lock's runner left (its restore never ran, or failed), naming the commands that restore it; None
    when no lock is stale or its runner left the original. `free`: such a lock is then removed (a change made after
    it would else be "restored" over by its resume), with the original that runner saved: the config as it is from
    then on is pdsim's own, which a later resume of that run takes as it finds it (else that resume refused once
    anything wrote the serve file, `wb sim up` included), and the note that it started pdsim (else that resume
    stopped a pdsim the user started since)."""
    from workbench.runner.lock import left_holder
    from workbench.runner.restore import discard_snapshots

    for lock in folder_locks(sdir):
        found = left_holder(lock)
        if found is None:
            continue
        holder, text = found
        left, why, by_hand = _not_original(holder)
        if left is None:
            if free:
                with contextlib.suppress(OSError):
                    if lock.read_text(encoding="utf-8") == text:  # unless another took it meanwhile
                        lock.unlink()
                        if holder.folder:  # always, where its original was compared (`_not_original`)
                            discard_snapshots(Path(holder.folder))
                            (Path(holder.folder) / "sim-started").unlink(missing_ok=True)
            continue
        return _left(sdir, lock, holder, left, why, by_hand)
    return None


def _left(sdir: Path, lock: Path, holder: Any, left: str, why: str, by_hand: str | None) -> LeftChanged:
    """The `LeftChanged` of `holder`'s lock: each command to paste ends its line (a copy to its end takes nothing
    else along)."""
    runner = f"pid {holder.pid} on {holder.host}, since {holder.since}"
    remove = keep_whole(f"rm -f {shlex.quote(str(lock))}")
    out = dict(lock=str(lock), execution=holder.label(), pid=holder.pid, host=holder.host, left=left)
    if left == "stale":
        return LeftChanged(**out, what=f"pdsim in {sdir} holds a stale lock of {holder.label()}, whose runner "
                                       f"({runner}) is gone: {why}",
                           hint=f"remove the lock:\n  {remove}", resume=None)
    how = ("could not put the original back (its restore failed)" if holder.restore_failed
           else "was killed before it restored it")
    what = f"pdsim in {sdir} was left changed by {holder.label()}, whose runner ({runner}) {how}: {why}"
    if left == "unknown":
        return LeftChanged(**out, what=what, hint=f"if the serve file is as it should be, remove the lock:\n  {remove}",
                           resume=None)
    what += ("; the serve file holds that run's config (one of its arms), not pdsim's own, and its lock is still held"
             + ("" if holder.restore_failed else " though its runner is gone"))
    frees = "the next `wb sim up`, `down`, `restart`, `repro` or `bench` then frees the lock"
    reads = "(`wb sim status` and `journal` only read)"
    if holder.restore_failed:  # its execution ended: there is no run to resume
        return LeftChanged(**out, what=what, hint=f"put the original back by hand; {frees} {reads}:\n  {by_hand}",
                           resume=None)
    return LeftChanged(
        **out, what=what, resume=holder.resume or None,
        hint=("either resume that run: it finishes the run's remaining runs (or stops at once on Ctrl-C), puts the "
              "original serve file back, frees the lock and leaves pdsim as that execution found it (stopped, where it "
              f"started pdsim){holder.resume_step()}\nor give that run up: put the original back by hand; {frees} and "
              f"drops the saved original, so that a later resume of that run takes pdsim as it finds it then {reads}:"
              f"\n  {by_hand}"))


def _not_original(holder: "Any") -> tuple[str | None, str, str | None]:
    """Whether the config files the stale lock's runner saved are the originals now: None where every one is, else
    "changed" (one is not: the shell command that puts it back by hand comes with why), "unknown" (that cannot be
    told) or "stale" (its runner saved none in its folder: it ended, or stopped before it changed anything)."""
    from workbench.runner.restore import not_original, put_back_command, saved_snapshots

    folder = Path(holder.folder) if holder.folder else None
    snaps = saved_snapshots(folder, holder.execution) if folder is not None else {}
    if not snaps:
        if folder is None:
            return "unknown", ("its lock names no saved original, so whether the serve file is the original cannot be "
                               "told"), None
        if not folder.is_dir():
            return "unknown", (f"its folder {folder} is gone, so whether the serve file is the original cannot be "
                               "told"), None
        return "stale", (f"it saved no original in {folder}, so it ended (its restore done) or stopped before it "
                         "changed the serve file"), None
    for snap in snaps.values():
        try:
            now: bytes | None = Path(snap.path).read_bytes()
        except FileNotFoundError:
            now = None
        except OSError as exc:
            return "unknown", f"{snap.path} cannot be read ({exc.strerror or exc})", None
        if now != snap.data:
            return "changed", not_original(snap), put_back_command(LocalTarget(), snap)
    return None, "", None
