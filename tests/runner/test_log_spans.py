"""A run's log artifact holds that run's part of the log only: a log the deployment appends to across runs (and
executions) is cut at the byte it had reached when the run started, and the listing says which bytes it covers."""

from __future__ import annotations

import json
from pathlib import Path

from runner_kit import add_toy_ssh_profile, run_hypothesis, store_rows  # noqa: E402  (tests/runner is on sys.path)


def _artifact(db: str, run_id: int, name: str) -> Path:
    ((path,),) = store_rows(db, "SELECT path FROM artifacts WHERE run_id = :r AND name = :n", r=run_id, n=name)
    return Path(path)


def _earlier_execution_wrote(toy) -> int:
    """The restarts log as a long-lived deployment's log is: lines from before this execution. Its size."""
    log = toy.state / "restarts.log"
    log.write_text("".join(f'{{"earlier": {i}}}\n' for i in range(50)))
    return log.stat().st_size


def _check_each_run_holds_its_own_restart(toy, runs: list[dict], before: int, cli) -> None:
    full = (toy.state / "restarts.log").read_text().splitlines()
    assert len(full) >= 50 + len(runs)  # and the restore's restart after the last run
    for i, r in enumerate(runs):
        lines = _artifact(toy.db, r["id"], "restarts").read_text().splitlines()
        assert lines == [full[50 + i]], (r["id"], lines[:3])
        code, out, err = cli("runs", "show", str(r["id"]), "--db", toy.db)
        assert code == 0, err
        (line,) = [ln for ln in out.splitlines() if ln.startswith("artifact restarts:")]
        start = before + sum(len(x) + 1 for x in full[50:50 + i])
        assert f"bytes {start}-{start + len(full[50 + i]) + 1} of {toy.state / 'restarts.log'}" in line, line
        code, out, err = cli("runs", "show", str(r["id"]), "--db", toy.db, "--json")
        spans = json.loads(out)["artifact_spans"]
        assert spans["restarts"]["from_byte"] == start and spans["restarts"]["source"].endswith("restarts.log")


def test_a_log_appended_to_across_runs_is_cut_to_each_runs_part(toy, cli):
    before = _earlier_execution_wrote(toy)
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    _check_each_run_holds_its_own_restart(toy, s["runs"], before, cli)


def test_a_log_fetched_over_ssh_is_cut_the_same_way(toy, ssh_server, cli):
    add_toy_ssh_profile(toy, ssh_server)
    before = _earlier_execution_wrote(toy)
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False, target="ssh")
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    _check_each_run_holds_its_own_restart(toy, s["runs"], before, cli)


def test_a_log_shorter_than_at_the_runs_start_is_kept_whole_and_said_so(toy, cli):
    """A log rotated (or truncated) during the run: the bytes before the start offset are gone, so the whole
    file the run left is kept, and the listing says why it is not cut."""
    _earlier_execution_wrote(toy)
    toy_py = toy.state / "toy.py"
    rotate = '        (state / "restarts.log").write_text("rotated\\n")\n'
    toy_py.write_text(toy_py.read_text().replace('    if cmd == "work":\n', '    if cmd == "work":\n' + rotate))
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False)
    r = s["runs"][0]
    assert _artifact(toy.db, r["id"], "restarts").read_text() == "rotated\n"
    code, out, err = cli("runs", "show", str(r["id"]), "--db", toy.db)
    (line,) = [ln for ln in out.splitlines() if ln.startswith("artifact restarts:")]
    assert "whole file" in line and "shorter" in line, line


def test_the_run_page_says_which_bytes_of_the_log_it_shows(toy):
    before = _earlier_execution_wrote(toy)
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=True)
    page = (toy.root / "reports" / "runs" / f"{s['runs'][0]['id']}.html").read_text()
    assert f"bytes {before}-" in page and "the part written since the run started" in page
