"""Two people run experiments at once against one PostgreSQL store: nothing is lost, each run says who ran it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from workbench.store import open_store

WB = [sys.executable, "-m", "workbench.cli.main"]


def _second_workbench(toy, tmp_path: Path) -> Path:
    """The toy workbench again, on its own copy of the deployment's state folder (its own target)."""
    root, state = tmp_path / "bench2", tmp_path / "state2"
    shutil.copytree(toy.root, root)
    shutil.copytree(toy.state, state)
    exp = root / "experiments" / "toy.yaml"
    exp.write_text(exp.read_text().replace(str(toy.state), str(state)))
    return root


def test_two_users_run_at_once_on_one_postgresql_store(toy, cli, tmp_path: Path, pg_url: str):
    roots = {"ada": toy.root, "grace": _second_workbench(toy, tmp_path)}
    assert cli("db", "upgrade", "--db", pg_url)[0] == 0  # in process: the two runs below are processes of their own
    procs = {}
    for user, root in roots.items():
        env = {**os.environ, "WB_USER": user, "WB_ROOT": str(root)}
        procs[user] = subprocess.Popen([*WB, "hypothesis", "run", "toy-fix", "--db", pg_url, "--replicates", "3"],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for user, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (user, out[-3000:], err[-6000:])
    store = open_store(pg_url)
    try:
        executions = store.executions(hypothesis_id="toy-fix")
        runs = store.runs()
    finally:
        store.dispose()
    assert sorted(e.user_name for e in executions) == ["ada", "grace"]
    assert all(e.user_source == "WB_USER" and e.host for e in executions)
    for e in executions:
        mine = [r for r in runs if r.execution_id == e.id]
        assert len(mine) == 6 and all(r.status == "ok" for r in mine), [(r.arm, r.status, r.error) for r in mine]
        assert all(r.metrics.get("sessions") == 10 for r in mine)


def _state(cli, db: str, env: dict[str, str]) -> dict:
    import json

    code, out, err = cli("review", "list", "toy-fix", "--json", "--db", db, env=env)
    assert code == 0, err
    return json.loads(out)["items"][0]


def _review_round_trip(toy, cli, db: str) -> None:
    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}

    def wb(*args: str) -> None:
        code, out, err = cli(*args, "--db", db, env=env)
        assert code == 0, (args, out[-2000:], err[-2000:])

    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    assert _state(cli, db, env)["state"] == "awaiting review"
    wb("review", "toy-fix", "--approve", "-m", "leaks gone with the fix")
    first = _state(cli, db, env)
    assert first["state"] == "approved" and first["reviews"][0]["author"] == "ada"
    assert first["reviews"][0]["evidence_digest"] == first["current_verdict"]["evidence_digest"]
    wb("hypothesis", "run", "toy-fix", "--replicates", "1")   # new runs: new evidence under the verdict
    stale = _state(cli, db, env)
    assert stale["state"] == "stale" and stale["reviews"][0]["stale"] is True
    wb("review", "toy-fix", "--approve", "-m", "still holds", "--as", "grace")
    again = _state(cli, db, env)
    assert again["state"] == "approved"
    assert [(r["author"], r["author_source"], r["stale"]) for r in again["reviews"]] == \
        [("ada", "WB_USER", True), ("grace", "flag", False)]


def test_review_round_trip_on_duckdb(toy, cli):
    _review_round_trip(toy, cli, toy.db)


def test_review_round_trip_on_postgresql(toy, cli, pg_url: str):
    _review_round_trip(toy, cli, pg_url)


def _wb_as_ada(toy, cli):
    """`wb ARGS --db STORE` as the user ada in the toy workbench; its stdout (asserting exit 0)."""
    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}

    def wb(*args: str) -> str:
        code, out, err = cli(*args, "--db", toy.db, env=env)
        assert code == 0, (args, out[-2000:], err[-2000:])
        return out

    return wb


def test_report_shows_review_state_history_and_who_ran(toy, cli):
    import re

    wb = _wb_as_ada(toy, cli)

    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    wb("review", "toy-fix", "--approve", "-m", "first <look>")
    ran = json.loads(wb("hypothesis", "run", "toy-fix", "--replicates", "1", "--json"))
    # "--json carries them" (README, "Who ran what"): the run's own envelope says who ran it, where, from what.
    assert {k: ran["ran_by"][k] for k in ("user", "user_source", "host")} == \
        {"user": "ada", "user_source": "WB_USER", "host": socket.gethostname()}, ran.get("ran_by")
    assert {"git_revision", "git_dirty", "wb_version"} <= set(ran["ran_by"]), ran["ran_by"]
    wb("report")
    board = (toy.root / "reports" / "index.html").read_text()
    assert re.search(r'class="rstate stale">stale<', board)
    page = (toy.root / "reports" / "hypotheses" / "toy-fix.html").read_text()
    assert "first &lt;look&gt;" in page and "first <look>" not in page
    assert 'class="badge stale">stale<' in page and "saw verdict" in page
    assert "Who ran what" in page and "ada (from WB_USER)" in page
    lineage = (toy.root / "reports" / "lineage.html").read_text()
    assert 'data-review="stale"' in lineage
    md = wb("report", "--format", "md", "--hypothesis", "toy-fix")
    assert "Review: **stale**" in md and "ada: approve" in md and "— stale" in md
    board_md = wb("report", "--format", "md")
    assert "| toy-fix |" in board_md.replace("`", "") and "stale" in board_md


def _site_pages(site: Path) -> dict[str, str]:
    """Every page of a site, with the one line that says when it was built taken out."""
    import re

    return {str(p.relative_to(site)): re.sub(r'<span class="generated">[^<]*</span>', "", p.read_text())
            for p in sorted(site.rglob("*.html"))}


def test_bundle_moves_duckdb_to_postgresql_to_duckdb_with_the_same_pages(toy, cli, pg_url: str, tmp_path: Path):
    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}

    def wb(*args: str, root: Path = toy.root) -> str:
        code, out, err = cli(*args, env={**env, "WB_ROOT": str(root)})
        assert code == 0, (args, out[-2000:], err[-2000:])
        return out

    wb("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db)
    wb("review", "toy-fix", "--approve", "-m", "moved with its evidence", "--db", toy.db)
    wb("report", "--db", toy.db, "--out", str(tmp_path / "site-a"))
    # A teammate's folder: the same registry, none of the runner's files (.wb/artifacts stays behind).
    other = tmp_path / "teammate"
    other.mkdir()
    shutil.copy(toy.root / "hypotheses.yaml", other / "hypotheses.yaml")
    shutil.copytree(toy.root / "experiments", other / "experiments")
    wb("bundle", "export", "toy-fix", "-o", str(tmp_path / "one.wbundle"), "--db", toy.db)
    wb("bundle", "import", str(tmp_path / "one.wbundle"), "--db", pg_url, root=other)
    again = wb("bundle", "import", str(tmp_path / "one.wbundle"), "--db", pg_url, "--json", root=other)
    assert '"runs": 0' in again and '"verdicts": 0' in again and '"reviews": 0' in again
    wb("report", "--db", pg_url, "--out", str(tmp_path / "site-pg"), root=other)
    wb("bundle", "export", "toy-fix", "-o", str(tmp_path / "two.wbundle"), "--db", pg_url, root=other)
    back = str(tmp_path / "back.duckdb")
    wb("bundle", "import", str(tmp_path / "two.wbundle"), "--db", back, root=other)
    wb("report", "--db", back, "--out", str(tmp_path / "site-back"), root=other)
    a, pg, b = (_site_pages(tmp_path / s) for s in ("site-a", "site-pg", "site-back"))
    assert a.keys() == pg.keys() == b.keys() and any(k.startswith("runs/") for k in a)
    for name in a:
        assert a[name] == pg[name] == b[name], name
    run_page = next(v for k, v in pg.items() if k.startswith("runs/"))
    # the artifacts came from the store (the teammate's folder has none of the files): the restart's output and the
    # units, shown; none "not found under the artifact root"
    assert "not found under" not in run_page, run_page
    assert "toy restarted with mode=" in run_page and "&#34;outcome&#34;: &#34;done&#34;" in run_page, run_page


def test_a_self_approval_is_allowed_and_marked_everywhere_reviews_show(toy, cli):
    """The person who ran the execution approves it: recorded (a team of one needs it), marked as such."""
    import csv
    import io
    import json

    wb = _wb_as_ada(toy, cli)

    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    wb("review", "toy-fix", "--approve", "-m", "mine, and it holds")
    text = wb("review", "list", "toy-fix")
    assert "toy-fix: approved (self-approved)" in text and "ada: approve on " in text and "(self-approved)" in \
        text.split("ada: approve", 1)[1].splitlines()[0]
    state = json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]
    assert state["self_approved"] is True and [r["self_review"] for r in state["reviews"]] == [True]
    row = next(csv.DictReader(io.StringIO(wb("review", "list", "toy-fix", "--format", "csv"))))
    assert row["self_approved"] == "True" and row["parent_changed"] == "False" and row["decided_by"] == "ada"
    wb("report")
    page = (toy.root / "reports" / "hypotheses" / "toy-fix.html").read_text()
    assert 'class="badge self-approved"' in page and "self-approved: approved by who ran it" in page
    assert "self-approved" in (toy.root / "reports" / "index.html").read_text()
    md = wb("report", "--format", "md", "--hypothesis", "toy-fix")
    assert "Review: **approved** (self-approved" in md
    assert "— self-approved" in next(line for line in md.splitlines() if line.startswith("- ada: approve"))
    wb("review", "toy-fix", "--approve", "-m", "checked it myself", "--as", "grace")
    state = json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]
    assert state["self_approved"] is False and [r["self_review"] for r in state["reviews"]] == [True, False]
    assert "toy-fix: approved  [" in wb("review", "list", "toy-fix")


def _runs_by_key(db: str) -> dict[str, tuple]:
    store = open_store(db, read_only=True)
    try:
        return {r.uuid: (r.status, r.arm, dict(r.metrics)) for r in store.runs()}
    finally:
        store.dispose()


def _executions_by_key(db: str) -> dict[str, str]:
    store = open_store(db, read_only=True)
    try:
        return {e.uuid: e.status for e in store.executions()}
    finally:
        store.dispose()


def test_a_bundle_exported_mid_run_is_brought_up_to_date_by_the_next(toy, cli, pg_url: str, tmp_path: Path):
    """A teammate exports while the run is in flight, then again once it ended: the second import finishes the
    runs and the execution the first left unfinished, with their metrics, as the team store holds them."""
    from runner_kit import run_hypothesis

    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}

    def wb(*args: str) -> str:
        code, out, err = cli(*args, env=env)
        assert code == 0, (args, out[-2000:], err[-2000:])
        return out

    wb("db", "upgrade", "--db", pg_url)
    mid, end, mine = tmp_path / "mid.wbundle", tmp_path / "end.wbundle", str(tmp_path / "mine.duckdb")

    async def export_mid_run(stage, pr):
        if stage == "workload" and pr.order_index == 1 and not mid.exists():
            wb("bundle", "export", "toy-fix", "-o", str(mid), "--db", pg_url)

    run_hypothesis("toy-fix", db=pg_url, replicates=1, seed=3, fault=export_mid_run)
    wb("bundle", "import", str(mid), "--db", mine)
    assert "running" in _executions_by_key(mine).values()  # the first bundle saw it in flight
    wb("bundle", "export", "toy-fix", "-o", str(end), "--db", pg_url)
    out = wb("bundle", "import", str(end), "--db", mine)
    team = _runs_by_key(pg_url)
    assert all(status == "ok" and metrics for status, _, metrics in team.values()) and len(team) == 2
    assert _runs_by_key(mine) == team
    assert _executions_by_key(mine) == _executions_by_key(pg_url) and set(_executions_by_key(mine).values()) == {"done"}
    assert "1 execution updated" in out and "run updated" in out
    again = wb("bundle", "import", str(end), "--db", mine, "--json")
    assert '"runs_updated": 0' in again and '"executions_updated": 0' in again


def _waiting_on_a_lock(url: str, other: subprocess.Popen, timeout_s: float = 300.0) -> None:
    """Until another connection of the database waits on a lock (an import blocked behind rows or a merge not
    committed yet), or the `other` process has ended without waiting."""
    import time

    from sqlalchemy import create_engine, pool, text

    engine = create_engine(url, poolclass=pool.NullPool)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and other.poll() is None:
            with engine.connect() as conn:
                if conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                     "AND datname = current_database()")).scalar_one():
                    return
            time.sleep(0.2)
    finally:
        engine.dispose()
    assert other.poll() is not None, "the import neither waited nor ended"


def _toy_bundle(toy, cli, tmp_path: Path, pg_url: str) -> tuple[Path, dict[str, str]]:
    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}
    code, _, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db, env=env)
    assert code == 0, err
    assert cli("review", "toy-fix", "--comment", "-m", "first look", "--db", toy.db, env=env)[0] == 0
    bundle = tmp_path / "one.wbundle"
    assert cli("bundle", "export", "toy-fix", "-o", str(bundle), "--db", toy.db, env=env)[0] == 0
    assert cli("db", "upgrade", "--db", pg_url)[0] == 0
    return bundle, env


def _import_while(pg_url: str, bundle: Path, env: dict[str, str], first) -> tuple[str, object]:
    """`wb bundle import` in another process while `first(session)` holds its transaction open; its output."""
    store = open_store(pg_url)
    try:
        with store.session() as s:
            first(s)
            other = subprocess.Popen([*WB, "bundle", "import", str(bundle), "--db", pg_url, "--json"],
                                     env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
            _waiting_on_a_lock(pg_url, other)
        out, err = other.communicate(timeout=300)
        assert other.returncode == 0, err[-3000:]
    finally:
        store.dispose()
    return out, open_store(pg_url)


def test_an_import_meeting_a_run_that_writes_the_same_snapshot_succeeds(toy, cli, pg_url: str, tmp_path: Path):
    """A run starting on the team store writes the hypothesis's snapshot as a teammate imports a bundle holding
    it: the import waits on the run's row, then finds it there (it was refused as a damaged bundle, exit 2:
    'the store refused a row of the bundle (UniqueViolation ...); export it again')."""
    from workbench.store import jsonx, records
    from workbench.team.bundle import read

    bundle, env = _toy_bundle(toy, cli, tmp_path, pg_url)
    snap = read(bundle)["store"]["hypothesis_snapshots"][0]

    def run_starts(s) -> None:
        records.snapshot_hypothesis(s, hypothesis_id=snap["hypothesis_id"], body=jsonx.loads(snap["body_json"]))

    out, store = _import_while(pg_url, bundle, env, run_starts)
    try:
        assert '"runs": 2' in out and '"executions": 1' in out
        assert len(store.runs()) == 2 and len(store.executions()) == 1
    finally:
        store.dispose()


def test_two_imports_of_one_bundle_at_once_into_postgresql_write_its_rows_once(toy, cli, pg_url: str,
                                                                               tmp_path: Path):
    """Two teammates import the same bundle into the team store at once: the second takes its turn after the
    first and adds nothing (a review that met no unique key was written twice)."""
    from workbench.store import bundle_rows
    from workbench.team.bundle import read

    bundle, env = _toy_bundle(toy, cli, tmp_path, pg_url)
    doc = read(bundle)["store"]
    cli("bundle", "import", str(bundle), "--db", pg_url, env=env)  # the team store already has the runs
    with open_store(pg_url) as store, store.session() as s:  # ... but not the review
        from sqlmodel import delete

        from workbench.store.models import Review

        s.exec(delete(Review))
    out, store = _import_while(pg_url, bundle, env, lambda s: bundle_rows.load(s, doc))
    try:
        assert '"reviews": 0' in out and '"runs": 0' in out
        assert [r.body for r in store.reviews()] == ["first look"] and len(store.runs()) == 2
    finally:
        store.dispose()


def test_times_read_from_a_postgresql_server_in_another_zone_are_utc_as_on_duckdb(toy, cli, pg_url: str,
                                                                                 tmp_path: Path, monkeypatch):
    """A team server whose time zone is not UTC (initdb takes the machine's): the times wb shows are the ones
    a DuckDB store shows of the same rows, in UTC (they came in the server's zone: -05:00 beside +00:00)."""
    import json

    from sqlalchemy import create_engine, make_url, pool, text

    monkeypatch.delenv("PGTZ", raising=False)
    engine = create_engine(pg_url, poolclass=pool.NullPool, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{make_url(pg_url).database}" SET timezone TO \'America/New_York\''))
    engine.dispose()
    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}

    def wb(*args: str) -> dict:
        code, out, err = cli(*args, "--json", env=env)
        assert code == 0, (args, out[-2000:], err[-2000:])
        return json.loads(out)

    wb("db", "upgrade", "--db", pg_url)
    wb("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", pg_url)
    wb("review", "toy-fix", "--comment", "-m", "looked at it", "--db", pg_url)
    wb("bundle", "export", "toy-fix", "-o", str(tmp_path / "one.wbundle"), "--db", pg_url)
    copy = str(tmp_path / "copy.duckdb")
    wb("bundle", "import", str(tmp_path / "one.wbundle"), "--db", copy)
    shown = {}
    for db in (pg_url, copy):
        run = wb("runs", "show", "1", "--db", db)
        review = wb("review", "list", "toy-fix", "--db", db)["items"][0]["reviews"][0]
        shown[db] = (run["started_at"], run["ended_at"], review["created_at"])
    assert shown[pg_url] == shown[copy], shown
    assert all(t.endswith("+00:00") for t in shown[pg_url]), shown


def test_resuming_a_teammates_interrupted_execution_is_refused(toy, cli, monkeypatch):
    """bob's --resume of the execution ada started would record his runs under her name and host: refused,
    naming her, before the target is touched; she resumes it herself."""
    import pytest
    from runner_kit import run_hypothesis, sigterm_at_workload

    from workbench.runner.execute import RunInterrupted

    monkeypatch.setenv("WB_USER", "ada")
    with pytest.raises(RunInterrupted):
        run_hypothesis("toy-fix", db=toy.db, replicates=1, seed=3, fault=sigterm_at_workload(2))
    before, restarts = _runs_by_key(toy.db), toy.restarts()
    code, out, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root), "WB_USER": "bob"})
    assert code == 2, (out, err)
    assert "Error:" in err and "started by ada" in err and "Traceback" not in err
    assert _runs_by_key(toy.db) == before and toy.restarts() == restarts
    code, out, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root), "WB_USER": "ada"})
    assert code == 0, err


def test_an_approval_pinned_to_the_evidence_read_is_refused_once_the_verdict_moved_on(toy, cli):
    """grace reads the verdict (its evidence digest), ada's new run lands a new verdict, grace approves: with
    --evidence naming what she read, the approval is refused and nothing recorded (it was bound to the new
    verdict, which no one had looked at, and showed as approved)."""
    import json

    wb = _wb_as_ada(toy, cli)
    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    read = json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]["current_verdict"]["evidence_digest"]
    # A short digest (was test_a_short_evidence_digest_is_refused_with_the_current_digest_as_its_hint, on a run
    # of its own): `--evidence 2c48` (too short to pin anything) was refused with a fixed example digest in the
    # hint, 80c2f3b49b, which is no verdict's: the hint now names the digest the current verdict rests on.
    code, out, err = cli("review", "toy-fix", "--approve", "-m", "holds", "--as", "grace", "--evidence", read[:4],
                         "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 2 and "Error:" in err and "Traceback" not in err, (out, err)
    assert f"--evidence {read[:10]}" in err and "80c2f3b49b" not in err, err
    assert json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]["reviews"] == []
    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    code, out, err = cli("review", "toy-fix", "--approve", "-m", "holds", "--as", "grace", "--evidence", read[:10],
                         "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 2 and "Error:" in err and read[:10] in err and "Traceback" not in err, (out, err)
    state = json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]
    assert state["reviews"] == [] and state["state"] == "awaiting review"
    now = state["current_verdict"]["evidence_digest"]
    wb("review", "toy-fix", "--approve", "-m", "holds", "--as", "grace", "--evidence", now[:10])
    assert json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]["state"] == "approved"


def test_a_refused_bundle_import_leaves_an_empty_postgresql_database_empty(toy, cli, pg_url: str, tmp_path: Path):
    """A team store not yet set up (no `wb db upgrade`): a bundle this workbench cannot take is refused before
    the store is touched (it was refused, 'nothing was imported', after wb had created the whole schema)."""
    from sqlalchemy import create_engine, inspect, pool

    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}
    assert cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db, env=env)[0] == 0
    bundle = tmp_path / "one.wbundle"
    assert cli("bundle", "export", "toy-fix", "-o", str(bundle), "--db", toy.db, env=env)[0] == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "hypotheses.yaml").write_text("format: 1\nhypotheses: []\n")
    shutil.copytree(toy.root / "experiments", other / "experiments")
    code, out, err = cli("bundle", "import", str(bundle), "--db", pg_url, env={**env, "WB_ROOT": str(other)})
    assert code == 2 and "does not define" in err and "nothing was imported" in err, (out, err)
    engine = create_engine(pg_url, poolclass=pool.NullPool)
    try:
        assert inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


def test_an_independent_approval_keeps_a_later_self_approval_from_marking_the_state(toy, cli):
    """grace (who ran nothing) approved, then ada, who ran it, approved too: the state rested on ada's approval
    (the latest) and every view said "approved (self-approved)" though a second person had looked. The state is
    approved by grace; only ada's own review is marked."""
    import csv
    import io
    import json

    wb = _wb_as_ada(toy, cli)
    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    wb("review", "toy-fix", "--approve", "-m", "looked at it", "--as", "grace")
    wb("review", "toy-fix", "--approve", "-m", "mine, and it holds")
    text = wb("review", "list", "toy-fix")
    assert "toy-fix: approved  [" in text and "toy-fix: approved (self-approved)" not in text, text
    assert "(self-approved)" in text.split("ada: approve", 1)[1].splitlines()[0], text
    state = json.loads(wb("review", "list", "toy-fix", "--json"))["items"][0]
    assert state["self_approved"] is False and [r["self_review"] for r in state["reviews"]] == [False, True]
    row = next(csv.DictReader(io.StringIO(wb("review", "list", "toy-fix", "--format", "csv"))))
    assert (row["self_approved"], row["decided_by"]) == ("False", "grace"), row
    wb("report")
    page = (toy.root / "reports" / "hypotheses" / "toy-fix.html").read_text()
    assert 'class="badge self-approved"' in page and "approved by who ran it" not in page
    assert "self-approved" not in (toy.root / "reports" / "index.html").read_text()
