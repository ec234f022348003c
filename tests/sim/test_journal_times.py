"""The journal's times: each line's first stamp is the wall time it was written (what `date` shows and `--since`
compares), its simulated time beside it as `sim=`."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone

from pdsim_kit import write_serve
from workbench.sim import control, logs, repro


def _journal(cli, sim_dir, *args: str) -> list[str]:
    """`wb sim journal` in process (`cli`: the console script's command tree, without its imports)."""
    code, out, err = cli("sim", "journal", "--dir", str(sim_dir), "--unit", "decode", *args)
    assert code == 0 and "Traceback" not in err, err
    return out.splitlines()


def test_journal_stamps_are_wall_times_and_since_takes_date_or_a_stamp(sim_dir, cli):
    """After a few runs the lines were stamped 20:45Z while `date` said 19:06Z (pdsim's simulated clock runs ahead),
    so `--since "$(date -u +%FT%T)"` and a time copied from the journal meant different timelines: a stamp copied
    from a line returned nothing at all."""
    control.up(sim_dir, config=write_serve(sim_dir, nixl_abort_fix="on"))
    repro.run_repro(sim_dir, sessions=16, rounds=2, tag="a")
    read_at = datetime.now(timezone.utc)
    first = _journal(cli, sim_dir)
    assert len(first) > 10
    for line in first:
        words = line.split()
        assert logs._stamp(line) <= read_at, line                       # no line from the future
        assert words[3].startswith("sim="), line
    sims = [datetime.fromisoformat(line.split()[3][4:].replace("Z", "+00:00")) for line in first]
    assert max(sims) > read_at                                           # the simulated clock ran ahead
    # A stamp copied from the journal gives that line and the rest.
    stamp = first[len(first) // 2].split()[0]
    k = min(i for i, line in enumerate(first) if line.split()[0] == stamp)  # lines may share a microsecond
    assert _journal(cli, sim_dir, "--since", stamp) == first[k:]
    # `date -u +%FT%T` before a second repro (same servers, no restart) gives that repro's lines and none before.
    subprocess.run(["sleep", "1.1"], check=True)
    t = subprocess.run(["date", "-u", "+%FT%T"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["sleep", "1.1"], check=True)
    repro.run_repro(sim_dir, sessions=4, rounds=1, tag="b")
    second = _journal(cli, sim_dir, "--since", t)
    both = _journal(cli, sim_dir)
    assert second and both[:len(first)] == first and second == both[len(first):]
