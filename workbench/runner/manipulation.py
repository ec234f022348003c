"""The manipulation check: did the arm's treatment reach the service that was measured?

A restart can "succeed" while the old process keeps serving (the new one failed to bind its port, a
script killed the wrong pid): every run would then measure the old config. Two checks, both after
the health wait:
- by default, the processes listening on the health URLs' ports must have changed across the restart
  (read with `ss -tlnp` on the target; skipped, with a note, where that shows no process);
  `options.check_restart: false` turns it off for a service that reloads in place;
- a profile's `verify` step (a URL or a command) must answer with every `contains` text, rendered per
  arm (e.g. a debug endpoint echoing the settings, or `{{ config_sha256 }}`).
A run that fails either is invalid: its arm was not applied (the message names the arm, control or treatment).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from workbench.runner.render import render_command, render_text


def ports_of(urls: list[str]) -> list[int]:
    out = []
    for u in urls:
        parts = urlsplit(u)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if port not in out:
            out.append(port)
    return out


def _enabled(h: Any) -> bool:
    return (h.target.check_restart and bool(h.profile.restart) and h.profile.health is not None
            and h.profile.options.get("check_restart", True) is not False)


async def listeners(h: Any, host: str, urls: list[str]) -> dict[int, frozenset[int]] | None:
    """pids listening on each health port, as the target sees them; None when they cannot be known."""
    if not _enabled(h):
        return None
    out: dict[int, frozenset[int]] = {}
    for port in ports_of(urls):
        res = await h.target.run(host, f"ss -Htlnp 'sport = :{port}'", timeout=15)
        if not res.ok:
            return None
        pids = frozenset(int(p) for p in re.findall(r"pid=(\d+)", res.stdout))
        if res.stdout.strip() and not pids:
            return None  # something listens but ss shows no process (another user's): cannot tell
        out[port] = pids
    return out


def _not_applied(arm: str | None) -> str:
    return f"arm {arm} not applied" if arm else "the arm was not applied"


def restart_problem(before: dict[int, frozenset[int]] | None, after: dict[int, frozenset[int]] | None,
                    arm: str | None = None) -> str | None:
    """Why the restart did not replace the serving process (in the run of `arm`), or None."""
    if before is None or after is None:
        return None
    for port, pids in after.items():
        # The same set of processes: nothing restarted. (A socket held by a supervisor, as with systemd
        # socket activation, stays in both sets while the worker beside it changes.)
        if pids and pids == before.get(port, frozenset()):
            same = ", ".join(str(p) for p in sorted(pids))
            return (f"{_not_applied(arm)}: the restart exited 0 but port {port} is still served by the same "
                    f"process (pid {same}), so the run would measure the old config")
    return None


async def verify_problem(h: Any, host: str, values: dict[str, Any], env: dict[str, str]) -> str | None:
    """Run the profile's verify step; why its answer does not show this arm's values, or None."""
    spec = h.profile.verify
    if spec is None:
        return None
    from workbench.registry.timeouts import timeouts

    limit = timeouts(h.profile.options).verify_s
    expected = [render_text(c, values, where=f"verify.contains[{i}]") for i, c in enumerate(spec.contains)]
    if spec.url is not None:
        url = render_text(spec.url, values, where="verify.url")
        body = await h.target.http_text(host, url, limit)
        where = url
        if body is None:
            return f"{_not_applied(values.get('arm'))}? verify: {url} did not answer"
    else:
        cmd = render_command(spec.command or "", values, where="verify.command")
        res = await h.target.run(host, cmd, env=env, timeout=limit)
        where = f"`{cmd}`"
        if not res.ok:
            return (f"{_not_applied(values.get('arm'))}? verify: {where} failed "
                    f"({'timed out' if res.timed_out else f'exit {res.rc}'})")
        body = res.stdout
    missing = [e for e in expected if e not in body]
    if missing:
        shown = body.strip().replace("\n", " ")[:200]
        shown_missing = ", ".join(repr(m) for m in missing)
        return (f"{_not_applied(values.get('arm'))}: verify {where} does not show {shown_missing} "
                f"(it answered {shown!r})")
    return None


async def changed_under_run(h: Any, host: str, values: dict[str, Any], rendered: str | None,
                            before: str | None) -> str | None:
    """Why the deployment measured was not the one this run set up, or None: after the workload, the config
    file must still hold what wb wrote for the arm and the deployment must not have been restarted (`before`:
    `Target.deployment_identity` before the workload). A serve file rewritten or a restart under a run (by
    hand, or by a command that ignored the target lock) made both arms of an execution measure one config."""
    if rendered is not None and h.profile.config is not None:
        path = values["path"]
        found = await h.target.read_file(host, path)
        now = None if found is None else found[0].decode("utf-8", "replace")
        if now != rendered:
            return (f"the config changed during the run: {path} " + (
                "was removed" if now is None else f"no longer holds what wb wrote for arm {values.get('arm')} "
                f"({_line_diff(rendered, now)})") + "; the run measured another config and is not evidence")
    after = await h.target.deployment_identity(host)
    if before is not None and after != before:
        return (f"the deployment was restarted during the run ({before} before the workload, "
                f"{after or 'down'} after it); the run is not evidence")
    return None


_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _assignments(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = _ASSIGN.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip().strip("'\"")
    return out


def _line_diff(wrote: str, now: str) -> str:
    """What differs, up to three items: each `name=value` wb wrote that now has another value or is gone, else
    the lines that differ each way."""
    old, new = _assignments(wrote), _assignments(now)
    changed = [f"wrote {k}={v}, now " + (f"{k}={new[k]}" if k in new else "no " + k)
               for k, v in old.items() if new.get(k) != v][:3]
    if changed:
        return "; ".join(changed)
    gone = [line for line in wrote.splitlines() if line not in now.splitlines()][:3]
    added = [line for line in now.splitlines() if line not in wrote.splitlines()][:3]
    return f"wrote {'; '.join(gone) or 'the same lines'}, now {'; '.join(added) or 'the same lines in another order'}"
