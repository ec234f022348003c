"""`wb sim`: the embedded prefill/decode deployment (up, down, restart, status, repro, bench, journal)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from workbench.analysis import display
from workbench.cli._common import JsonOption, echo_wrapped, new_app, parse_sets, print_json

app = new_app("The embedded prefill/decode deployment (pdsim): wb's default target.")


def _timeout(value: float | None) -> float:
    """--timeout of up and restart, seconds above 0 (inf waits as long as it takes), as the CLI's _numbers checks
    it: nan never ran out while the servers stayed unhealthy, and 0 or less started them only to stop them again
    with exit 1."""
    from workbench.sim import control

    return control.HEALTH_TIMEOUT_S if value is None else value


DirOpt = typer.Option(None, "--dir", help="State dir (default $WB_SIM_DIR, else the workbench's .wb/sim, as "
                                           "`wb hypothesis run` uses, else ./.wb/sim).")


@app.command()
def up(dir: Optional[str] = DirOpt,
       config: Optional[Path] = typer.Option(None, "--config", help="Serve file to use from now on."),
       set_: Optional[list[str]] = typer.Option(None, "--set", help="var=value, written into the serve file."),
       timeout: Optional[float] = typer.Option(None, help="Seconds to wait for both /health to answer 200 "
                                                "[default: 60]."),
       json_: JsonOption = False) -> None:
    """Start both servers; returns once both /health answer 200."""
    from workbench.runner.targets.sim import refuse_while_in_use
    from workbench.sim import control

    refuse_while_in_use(dir, "up")
    st = control.up(dir, config=config, sets=parse_sets(set_), timeout=_timeout(timeout))
    _show(st, json_)


@app.command()
def down(dir: Optional[str] = DirOpt, json_: JsonOption = False) -> None:
    """Stop both servers (SIGTERM, then SIGKILL); leaves no process behind."""
    from workbench.runner.targets.sim import refuse_while_in_use
    from workbench.sim import control

    left = refuse_while_in_use(dir, "down")  # a killed run's change to the serve file: kept for its resume
    pids = control.down(dir)
    if left:
        echo_wrapped(f"Note: {left.note()}", err=True)  # on a terminal wrapped between words, its commands whole
    if json_:
        print_json({"stopped": list(pids), "left": left.to_dict() if left else None})
        return
    typer.echo(f"stopped {display.count(len(pids), 'process', 'processes')}"
               + (f": {' '.join(map(str, pids))}" if pids else ""))


@app.command()
def restart(dir: Optional[str] = DirOpt,
            timeout: Optional[float] = typer.Option(None, help="Seconds to wait for health [default: 60]."),
            json_: JsonOption = False) -> None:
    """Stop, re-read the serve file in use, start (the analogue of `systemctl restart`)."""
    from workbench.runner.targets.sim import refuse_while_in_use
    from workbench.sim import control

    refuse_while_in_use(dir, "restart")
    _show(control.restart(dir, timeout=_timeout(timeout)), json_)


@app.command()
def status(dir: Optional[str] = DirOpt, json_: JsonOption = False) -> None:
    """healthy / wedged (health 200 but stuck) / unhealthy / down, per server, and a lock a gone runner left.

    Exit 0 healthy; 1 wedged, unhealthy or degraded (one server down); 3 down (no server runs)."""
    from workbench.runner.targets.sim import left_changed
    from workbench.sim import control

    st = control.status(dir)
    # The exit code stays the servers' health, which scripts wait on; a gone runner's lock is said beside it.
    code = control.status_exit_code(st.state)
    left = left_changed(dir)
    # a reader gone (`wb sim status | head -1`) ends the output: the state's code still stands
    if json_:
        print_json({**st.to_dict(), "left": left.to_dict() if left else None})
    else:
        _show(st, False)
        if left:
            echo_wrapped(f"Note: {left.what}\n{left.hint}")
    raise typer.Exit(code)


def _show(st, as_json: bool) -> None:
    if as_json:
        print_json(st.to_dict())
        return
    typer.echo(f"pdsim: {st.state}   dir={st.dir}   config={st.config_path}")
    for u in st.units.values():
        extra = f" ({u.detail})" if u.detail else ""
        shown = " ".join(f"{k}={'-' if v is None else v}" for k, v in (("pid", u.pid), ("port", u.port),
                                                                          ("health", u.health)))
        typer.echo(f"  {u.unit:<8} {u.state:<9} {shown}{extra}")  # a value not known reads "-", never None
    if st.config:
        typer.echo("  " + " ".join(f"{k}={v}" for k, v in st.config.items()))


@app.command()
def repro(dir: Optional[str] = DirOpt,
          sessions: int = typer.Option(80, help="Concurrent tool-calling sessions."),
          rounds: int = typer.Option(4, help="Rounds per session."),
          ctx: int = typer.Option(300, help="Tokens of the first prompt."),
          max_tokens: int = typer.Option(
              2500, "--max-tokens", help="Most tokens the deployment may generate for each request."),
          timeout: float = typer.Option(200.0, help="Per-request client timeout, seed seconds."),
          tag: str = typer.Option("", help="Tag written into every JSON line."),
          jsonl: Optional[Path] = typer.Option(None, help="Write one JSON line per session here."),
          bench: bool = typer.Option(False, "--bench", help="Also print throughput at C=1 and C=32."),
          json_: JsonOption = False) -> None:
    """Run the seed's repro harness against the running deployment."""
    from workbench.runner.targets.sim import refuse_while_in_use
    from workbench.sim import repro as r

    refuse_while_in_use(dir, "repro")
    res = r.run_repro(dir, sessions=sessions, rounds=rounds, ctx=ctx, max_tokens=max_tokens,
                      timeout=timeout, tag=tag, jsonl=jsonl, out=None if json_ else typer.echo)
    if json_:
        print_json(res.to_dict())
    if bench:
        r.run_bench(dir, out=typer.echo)


@app.command()
def bench(dir: Optional[str] = DirOpt,
          concurrency: Optional[list[int]] = typer.Option(
              None, "--concurrency", "-c", help="Requests in flight at once (repeatable; default 1 and 32)."),
          tokens: int = typer.Option(512, help="Tokens per answer."),
          json_: JsonOption = False) -> None:
    """Decode throughput (tok/s on the seed's clock) at C=1 and C=32, like the seed's check."""
    from dataclasses import asdict

    from workbench.runner.targets.sim import refuse_while_in_use
    from workbench.sim import repro as r

    refuse_while_in_use(dir, "bench")
    results = r.run_bench(dir, concurrency=tuple(concurrency or (1, 32)), tokens=tokens,
                          out=None if json_ else typer.echo)
    if json_:
        print_json({"results": [asdict(x) for x in results]})


@app.command()
def journal(dir: Optional[str] = DirOpt,
            unit: str = typer.Option(..., "--unit", help="decode or prefill."),
            since: Optional[str] = typer.Option(
                None, "--since", help="From this wall-clock time on (each line's first stamp; its sim= field is "
                                      "pdsim's simulated time): ISO-8601 (UTC when no zone is given) or 'N min ago'."),
            json_: JsonOption = False) -> None:
    """Print a server's log lines since a time (the journalctl analogue)."""
    from workbench.sim import logs
    from workbench.sim.control import state_dir

    lines = list(logs.read_journal(state_dir(dir), unit, logs.parse_since(since)))
    if json_:
        print_json({"unit": unit, "lines": lines})
        return
    for line in lines:
        typer.echo(line)
