"""Reachability probes: count calls to named code in every Python process of a deployment.

`probe_environment` gives the variables that inject the probe (a `sitecustomize` on PYTHONPATH),
`read_counts` reads what the probed processes wrote, `probe_files` is the probe to upload to a host.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from workbench.errors import BadInput
from workbench.processes import pid_alive

__all__ = ["PROBE_DIR", "probe_environment", "read_counts", "probe_files", "parse_target", "systemd_dropin",
           "locate_target"]

PROBE_DIR = Path(__file__).resolve().parent / "inject"
_FILES = ("sitecustomize.py", "_wb_probe.py", "wb-probe-systemd.sh")
ENV_TARGETS = "WB_PROBE_TARGETS"
ENV_OUT = "WB_PROBE_OUT"
ENV_INTERVAL = "WB_PROBE_INTERVAL"
DEFAULT_INTERVAL = 1.0


def parse_target(target: str) -> tuple[str, str]:
    """`package.module:Qualified.name` -> (module, qualname); anything else is bad input."""
    module, sep, qual = target.strip().partition(":")
    parts = module.split(".") + qual.split(".")
    if not sep or not module or not qual or not all(p.isidentifier() for p in parts):
        raise BadInput(f"probe target {target!r} must look like package.module:Qualified.name",
                       hint="e.g. workbench.sim.hicache:DeepSeekV4PagedHostPool (a class means its constructor)")
    return module, qual


def locate_target(target: str) -> tuple[bool, str]:
    """Whether `target` names code this interpreter can see, judged from the source without importing it.

    A pre-flight for local and sim targets (a typo can be refused before anything runs); on an SSH
    target the code lives on the host, where the probe itself reports unresolved targets.
    """
    from workbench.probes.inject import _wb_probe

    module, qual = parse_target(target)
    loaded = __import__("sys").modules.get(module)
    if loaded is not None:
        obj: Any = loaded
        for part in qual.split("."):
            if not hasattr(obj, part):
                return False, f"module {module} has no attribute {qual!r}"
            obj = getattr(obj, part)
        return True, f"{target} is loaded in this process"
    return _wb_probe._look_on_disk(module, qual)


def probe_environment(targets: list[str], out_dir: str, *, probe_dir: str | None = None,
                      interval_s: float = DEFAULT_INTERVAL, base_pythonpath: str | None = None) -> dict[str, str]:
    """Variables to add to every process of the deployment so each counts calls to `targets`.

    PYTHONPATH gets the probe directory first: `probe_dir` (where `probe_files()` were uploaded on a
    remote host) or the local copy inside this package. The rest of PYTHONPATH is `base_pythonpath`,
    or for a local probe this process's PYTHONPATH (a remote host's own value is not known here).
    """
    if not targets:
        raise BadInput("a probe needs at least one target")
    for t in targets:
        parse_target(t)
    if interval_s <= 0:
        raise BadInput(f"probe flush interval must be positive, got {interval_s}")
    pdir = probe_dir if probe_dir is not None else str(PROBE_DIR)
    rest = base_pythonpath if base_pythonpath is not None else (
        os.environ.get("PYTHONPATH", "") if probe_dir is None else "")
    rest_parts = [p for p in rest.split(os.pathsep) if p and p != pdir]
    return {
        "PYTHONPATH": os.pathsep.join([pdir, *rest_parts]),
        ENV_TARGETS: ",".join(t.strip() for t in targets),
        ENV_OUT: str(out_dir),
        ENV_INTERVAL: f"{interval_s:g}",
    }


def probe_files() -> dict[str, bytes]:
    """The probe as relative path -> content, to upload into one directory on an SSH host."""
    return {name: (PROBE_DIR / name).read_bytes() for name in _FILES}


def systemd_dropin(env: dict[str, str]) -> str:
    """A systemd drop-in (`/run/systemd/system/UNIT.service.d/wb-probe.conf`) setting the probe's variables."""
    lines = ["[Service]"]
    for k, v in env.items():
        # systemd unquotes "..." and expands % specifiers: escape both so the value arrives verbatim.
        esc = v.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        lines.append(f'Environment="{k}={esc}"')
    return "\n".join(lines) + "\n"


def _alive_here(doc: dict[str, Any]) -> bool:
    """Whether the process that wrote `doc` may still flush its counts: it runs on this machine and is not gone (a
    zombie, killed and not waited for, is gone: it never writes again)."""
    if doc.get("final") or doc.get("host") != socket.gethostname():
        return False
    try:
        pid = int(doc["pid"])
    except (KeyError, TypeError, ValueError):
        return True  # a file written by hand: waited for as before, up to the timeout
    return pid_alive(pid, None)


def _load(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BadInput(f"probe file {path} is unreadable: {exc}",
                       hint="the probe writes atomically; was the file edited or truncated by hand?") from exc
    if not isinstance(doc, dict) or doc.get("format") != 1 or not isinstance(doc.get("targets"), dict):
        raise BadInput(f"probe file {path} is not a format-1 probe count file")
    return doc


def read_counts(out_dir: str | os.PathLike[str], *, since: float | None = None,
                timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """One row per (process, target): process, pid, target, calls, resolved, plus state, detail, host, final.

    `resolved` is False when the target names no existing code object in that process (module or
    attribute missing, not code, import failed): such a row is not a "0 calls". With `since` (a
    `time.time()`), waits up to `timeout_s` until every still-running local process has written its
    counts after that moment, so calls made just before are included; `stale` marks rows that did not.
    """
    root = Path(out_dir)
    if not root.is_dir():
        return []
    deadline = time.monotonic() + timeout_s
    while True:
        docs = [(p, d) for p in sorted(root.glob("probe-*.json")) if (d := _load(p)) is not None]
        waiting = [d for _, d in docs
                   if since is not None and float(d.get("written_at", 0)) < since and _alive_here(d)]
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    rows: list[dict[str, Any]] = []
    for path, d in docs:
        stale = since is not None and float(d.get("written_at", 0)) < since and not d.get("final")
        for target, t in d["targets"].items():
            rows.append({"process": str(d.get("process", "")), "pid": int(d.get("pid", 0)), "target": target,
                         "calls": int(t.get("calls", 0)), "resolved": bool(t.get("resolved", False)),
                         "state": t.get("state", ""), "detail": t.get("detail", ""),
                         "mechanism": t.get("mechanism", ""), "host": d.get("host", ""),
                         "final": bool(d.get("final")), "stale": stale, "file": path.name})
    return rows
