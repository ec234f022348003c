"""Helpers the runner tests import (kept out of conftest.py, whose module name is shared by every test folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def add_toy_ssh_profile(toy: Any, server, *, known_hosts: str | None = None, port: int | None = None) -> None:
    """The toy's local profile again, as an ssh target on the test server."""
    p = toy.root / "experiments" / "toy.yaml"
    text = p.read_text()
    local = text[text.index("  local:\n"):]
    ssh = local.replace("  local:\n", "  ssh:\n", 1).replace(
        "    target: {kind: local}",
        f"    target: {{kind: ssh, hosts: [127.0.0.1], user: {server.user}, port: {port or server.port}, "
        f"known_hosts: {known_hosts or server.known_hosts}, identity_file: {server.client_key_path}, "
        f"connect_timeout_s: 3}}").replace(
        "    options: {check_restart: false}", f"    options: {{check_restart: false, work_dir: {toy.state}/remote}}")
    p.write_text(text + ssh)


def edit_profile(root: Path, old: str, new: str, experiment: str = "toy") -> None:
    p = root / "experiments" / f"{experiment}.yaml"
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new))


def run_hypothesis(hypothesis_id: str, *, db: str, root: Path | None = None, build_report: bool = False,
                   fault: Any = None, **options: Any) -> dict[str, Any]:
    """`wb hypothesis run` through the application object, as the JSON it prints (the CLI's contract).

    The workbench folder is `root`, else $WB_ROOT (the toy fixture sets it); progress is off.
    """
    from workbench.app import Workbench
    from workbench.runner.execute import RunOptions
    from workbench.settings import Settings

    options.setdefault("show_progress", False)
    if "sets" in options:
        options["sets"] = dict(options["sets"] or {})
    wb = Workbench.open(Settings.from_env(db=db, root=root))
    return wb.run(hypothesis_id, RunOptions(**options), report=build_report, fault=fault).to_dict()


def store_rows(db: str, sql: str, **params: Any) -> list[tuple]:
    """The rows of one SQL query on a store file, read-only (the store is disposed of afterwards)."""
    from sqlalchemy import text

    from workbench.store import open_store

    store = open_store(db, read_only=True)
    try:
        with store.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql), params).all()]
    finally:
        store.dispose()


def sigterm_at_workload(n: int):
    """A runner fault: SIGTERM to this process as the n-th run's workload stage begins (1-based)."""
    import asyncio
    import os
    import signal

    calls = {"n": 0}

    async def fault(stage: str, pr: Any) -> None:
        if stage == "workload":
            calls["n"] += 1
            if calls["n"] == n:
                os.kill(os.getpid(), signal.SIGTERM)
                await asyncio.sleep(5)  # the handler cancels this task before the sleep ends

    return fault


def stopped_twice(then):
    """An async step of the runner (any arguments) that SIGTERMs this process twice, each taken in by the loop's
    handler before the next, then awaits `then(...)` with its arguments: a stop and at once another, as a double
    Ctrl-C gives. A second stop that abandons the step cancels it before `then`."""
    import asyncio
    import signal

    async def step(*args: Any, **kw: Any) -> Any:
        for _ in range(2):
            signal.raise_signal(signal.SIGTERM)
            for _ in range(1000):  # the loop's handler runs at one of these turns of the loop
                await asyncio.sleep(0)
        return await then(*args, **kw)

    return step
