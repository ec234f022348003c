"""`wb isolate` end to end on pdsim: real probes recorded as generated hypotheses, the target restored."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from workbench.sim import control

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)


SEARCH = ["isolate", "--experiment", "agent-repro", "--good", "geometry_fix=on nixl_abort_fix=on",
          "--bad", "geometry_fix=off nixl_abort_fix=on", "--metric", "corruption_rate", "--region", ">= 0.05",
          "--alpha", "0.2", "--budget", "480"]


def _uninterrupted_search_records_each_probe_and_restores_the_target(bench, cli) -> dict:
    registry_before = (bench.root / "hypotheses.yaml").read_bytes()
    # Half the seed's rounds: the search still decides in one run per probe (the geometry bug leaks from
    # the second round), in less than half the time of 80 x 4 (this test records, it does not calibrate).
    exp = bench.root / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("--sessions 80 --rounds 4", "--sessions 80 --rounds 2"))
    # abort fix on in both: the geometry alone separates good from bad (a one-change search, two probes).
    # wb in process (`cli`: the console script's command tree, without its imports); the stopped search below is
    # a process of its own.
    code, out, err = cli(*SEARCH, "--seed", "7", "--json", "--db", bench.db)
    assert code == 0, err[-3000:]
    rec = json.loads(out)
    assert (bench.sim_dir / "serve.sh").read_bytes() == bench.original
    assert control.status(bench.sim_dir).state == "down"
    assert (bench.root / "hypotheses.yaml").read_bytes() == registry_before  # no --write: the YAML is untouched
    res = rec["result"]
    assert rec["changes"] == ["geometry_fix"]
    # pdsim on simulated time is deterministic for a serve file and a workload seed: so is the answer.
    assert (res["status"], res["minimal"]) == ("decided", ["geometry_fix"])
    assert res["units"] == sum(p["units"] for p in res["probes"]) > 0

    import duckdb

    con = duckdb.connect(bench.db, read_only=True)
    try:
        for p in res["probes"]:
            hid = p["hypothesis_id"]
            runs = con.execute("SELECT count(*) FROM runs WHERE hypothesis_id = ? AND status = 'ok'",
                               [hid]).fetchone()[0]
            assert runs == p["looks"] >= 1
            variables = con.execute("SELECT variables_json FROM runs WHERE hypothesis_id = ?", [hid]).fetchone()[0]
            assert json.loads(variables)["geometry_fix"] == p["config"]["geometry_fix"]
            body = json.loads(con.execute("SELECT body_json FROM hypothesis_snapshots WHERE hypothesis_id = ?",
                                          [hid]).fetchone()[0])
            assert body["kind"] == "config" and body["generated"]["by"] == "isolate"
            assert body["parent"] == rec["root_id"]
            details = [json.loads(d) for (d,) in con.execute(
                "SELECT details_json FROM verdicts WHERE hypothesis_id = ?", [hid]).fetchall()]
            assert any(d.get("kind") == "isolate-probe" and d["outcome"] == p["outcome"] for d in details)
        root = con.execute("SELECT verdict, details_json FROM verdicts WHERE hypothesis_id = ?",
                           [rec["root_id"]]).fetchall()
        assert len(root) == 1 and json.loads(root[0][1])["kind"] == "isolate-search"
    finally:
        con.close()

    code, _, err = cli("report", "--db", bench.db)
    assert code == 0, err[-2000:]
    page = (bench.root / "reports" / "isolate.html").read_text()
    assert rec["search_id"] in page and "geometry_fix" in page
    return res


def _wb(*args: str) -> list[str]:
    return [sys.executable, "-m", "workbench.cli.main", *args]


def _probe_runs(db: str) -> dict[str, list[tuple[int, str]]]:
    """Each probe hypothesis's runs as (execution id, status), in the order they were started."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT hypothesis_id, execution_id, status FROM runs WHERE hypothesis_id LIKE 'iso-%' "
                           "ORDER BY id").fetchall()
    finally:
        con.close()
    out: dict[str, list[tuple[int, str]]] = {}
    for hid, ex, status in rows:
        out.setdefault(hid, []).append((ex, status))
    return out


def _stop_in_second_probe(bench, args: list[str]) -> tuple[subprocess.CompletedProcess, dict, object]:
    """Run `wb isolate`, SIGINT it once the second probe's config (the bad one) is in place: probe 0 decided.
    Before the signal, the lock's record is read and `wb sim restart` is tried (in this process: its refusal is
    the command's); returned beside the stopped search."""
    import signal
    import time

    from typer.testing import CliRunner

    from workbench.cli.main import app
    from workbench.runner.targets.sim import sim_lock

    proc = subprocess.Popen(_wb(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    seen_good, t0 = False, time.monotonic()
    while True:  # probe 0 runs the good config (geometry_fix=on), probe 1 the bad one
        serve = (bench.sim_dir / "serve.sh").read_text()
        seen_good = seen_good or "geometry_fix=on" in serve
        if seen_good and "rendered by wb" in serve and "geometry_fix=off" in serve:
            break
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() - t0 < 400
        time.sleep(0.05)
    try:
        held = json.loads(sim_lock(bench.sim_dir).read_text())
        refused = CliRunner().invoke(app, ["sim", "restart"])
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), held, refused


def test_isolate_on_pdsim_records_each_probe_restores_and_resumes_a_stopped_search(bench, cli):
    """The search runs whole first (each probe recorded, the target restored): that is the reference. A
    stopped search used to say "wb isolate has no --resume: run the same command again to search afresh":
    every decided probe ran again. Resumed, probe 0 is read back from the store (no new run), probe 1 continues
    its own execution, and the answer is the uninterrupted search's, probe for probe.

    Ctrl-C in a probe used to end with "continue with: wb hypothesis run iso-…-p1 --resume", a hypothesis that
    exists only inside the search ("no hypothesis 'iso-…'"), and a command refused meanwhile gave "wb isolate
    --resume with the flags of search …", not a command to run: the hint (and the lock's record) now names the
    command that resumes this very search."""
    import shlex

    expected = _uninterrupted_search_records_each_probe_and_restores_the_target(bench, cli)
    exp = bench.root / "experiments" / "agent-repro.yaml"
    bench.db = str(bench.root / "stopped.duckdb")  # the same search again, from scratch, in a store of its own
    stopped, held, refused = _stop_in_second_probe(bench, [*SEARCH, "--seed", "7", "--db", bench.db])
    assert refused.exit_code == 2 and f"is in use by {held['name']}" in refused.stderr, refused.stderr
    assert re.fullmatch(r"execution [0-9]+ of iso-.*-p1", held["name"]), held
    assert held["resume"].startswith("wb isolate ") and held["resume"].endswith(" --resume"), held
    # Its runner lives here: the refusal says to wait or stop it (a resume is for a runner that is gone).
    assert f"restores the target:\n  kill {held['pid']}\n" in refused.stderr, refused.stderr
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    assert (bench.sim_dir / "serve.sh").read_bytes() == bench.original
    assert "Traceback" not in stopped.stderr and "search afresh" not in stopped.stderr, stopped.stderr[-2000:]
    assert "wb hypothesis run" not in stopped.stderr, stopped.stderr[-2000:]
    assert "Error: `wb isolate` probe 1 interrupted after" in stopped.stderr, stopped.stderr[-2000:]
    hint = stopped.stderr.split("resumes with: ", 1)[1].strip().splitlines()[0]
    command = shlex.split(hint)
    assert command[:2] == ["wb", "isolate"] and command[-1] == "--resume" and "--seed 7" in hint, hint
    assert hint.startswith("wb isolate --experiment agent-repro ") and "--seed 7 " in hint, hint
    assert f"--db {bench.db} " in hint, hint
    assert held["resume"] == hint  # the lock's record holds the very command, each value quoted
    before = _probe_runs(bench.db)
    [p0] = [h for h in before if h.endswith("-p0")]
    assert before[p0] and all(s == "ok" for _, s in before[p0]), before

    edited = exp.read_text()
    exp.write_text(edited.replace("--sessions 80 --rounds 2", "--sessions 80 --rounds 3"))
    code, _, refused = cli(*command[1:])
    assert code == 2, refused[-3000:]
    assert "Error: --resume: probe 0 of search" in refused and "changed since" in refused
    assert _probe_runs(bench.db) == before  # refused before anything ran
    exp.write_text(edited)

    code, out, err = cli(*command[1:], "--json")
    assert code == 0, err[-3000:]
    rec = json.loads(out)
    assert (bench.sim_dir / "serve.sh").read_bytes() == bench.original
    assert control.status(bench.sim_dir).state == "down"
    after = _probe_runs(bench.db)
    assert after[p0] == before[p0]  # probe 0 was not run again
    p0_execution = before[p0][0][0]
    assert rec["resume"]["reused"] == [{"probe": 0, "execution_id": p0_execution}], rec["resume"]
    # The probe in flight (its config was in place, so its execution had started) kept its execution.
    assert [x["probe"] for x in rec["resume"]["continued"]] == [1] and rec["resume"]["ran"] == [], rec["resume"]
    p1 = p0[:-1] + "1"
    assert {ex for ex, _ in after[p1]} == {rec["resume"]["continued"][0]["execution_id"]}
    assert after[p1][:len(before.get(p1, []))] == before.get(p1, [])  # its runs so far are kept as they were
    res = rec["result"]
    assert (res["status"], res["minimal"], res["units"]) == (expected["status"], expected["minimal"], expected["units"])
    keys = ("index", "applied", "phase", "outcome", "result_k", "result_n", "looks", "units", "max_units")
    assert [{k: p[k] for k in keys} for p in res["probes"]] == [{k: p[k] for k in keys} for p in expected["probes"]]
    # It says it was resumed in its text (the JSON above: "resume"; the report's page: test_isolate_cli.py).
    from workbench.cli.isolate import search_lines

    said = search_lines(rec)[1]
    assert said.startswith("resumed after a stop (interrupted, ") and said.endswith(
        f"1 probe read back from stored runs (p0: execution {p0_execution}), 1 probe continued where it stopped "
        f"(p1: execution {rec['resume']['continued'][0]['execution_id']})"), said

    code, _, err = cli(*command[1:])
    assert code == 2 and "already finished (decided)" in err, err[-2000:]


def test_a_pdsim_reading_another_serve_file_is_refused_and_left_alone(bench, cli, tmp_path):
    """pdsim started with `wb sim up --config FILE` reads FILE at every restart, not the serve file the profile
    writes each arm into: the search rewrote FILE's ports, stopped the deployment, never applied an arm (every
    probe ran FILE's fp8 config) and answered 'no failure to isolate: the bad config does not fail'. It is
    refused before anything runs, naming both files; FILE and the running deployment are left as they were."""
    from workbench.sim.config import render_serve_file

    own = tmp_path / "my-serve.sh"
    own.write_text(render_serve_file({**control.free_ports(), "index_k_dtype": "fp8", "hicache": "off"}))
    before = own.read_bytes()
    st = control.up(bench.sim_dir, config=own)
    pids = sorted(u.pid for u in st.units.values())
    code, _, err = cli(*SEARCH, "--seed", "7", "--db", bench.db)  # in process: the refusal is the command's
    assert code == 2, err[-3000:]
    assert "Traceback" not in err
    assert f"pdsim in {bench.sim_dir} reads its serve file from {own}" in err, err[-2000:]
    assert f"writes each arm into {bench.sim_dir / 'serve.sh'}" in err, err[-2000:]
    assert own.read_bytes() == before and (bench.sim_dir / "serve.sh").read_bytes() == bench.original
    after = control.status(bench.sim_dir)
    assert after.state == "healthy" and sorted(u.pid for u in after.units.values()) == pids
    import duckdb

    if os.path.exists(bench.db):  # nothing recorded: no probe, no search
        con = duckdb.connect(bench.db, read_only=True)
        try:
            assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
            assert con.execute("SELECT count(*) FROM verdicts").fetchone()[0] == 0
        finally:
            con.close()


def test_a_target_taken_between_probes_stops_the_search_as_a_failure_while_running(bench, monkeypatch):
    """Another execution took pdsim after probe 0 ended: probe 1 was refused (TargetBusy) and wb isolate exited 2,
    the code that says "bad input or a busy target: nothing was run", though probe 0 had run and the stopped
    search was recorded. It exits 1, with the busy target named and the command that resumes the search."""
    import socket

    from typer.testing import CliRunner

    from workbench.cli.main import app
    from workbench.isolate.adapter import RunnerOracle
    from workbench.isolate.records import load_searches
    from workbench.runner.lock import process_start
    from workbench.runner.targets.sim import sim_lock
    from workbench.store import open_store

    # One round: only probe 0 runs, on the good config (geometry_fix=on), which leaks in no round; its 0/80
    # decides a pass in one run as at 2 or 4 rounds (the bad config's leaks, from the second round, never run).
    exp = bench.root / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("--sessions 80 --rounds 4", "--sessions 80 --rounds 1"))
    done = RunnerOracle._done

    def then_taken(self, req, result):  # another execution takes the target as probe 0 ends
        if req.index == 0:
            holder = {"execution": "f" * 32, "host": socket.gethostname(), "pid": os.getpid(),
                      "pid_start": process_start(os.getpid()), "since": "2026-12-01T09:00:00+00:00"}
            sim_lock(bench.sim_dir).write_text(json.dumps(holder, sort_keys=True) + "\n")
        return done(self, req, result)

    monkeypatch.setattr(RunnerOracle, "_done", then_taken)
    res = CliRunner().invoke(app, [*SEARCH, "--seed", "7", "--db", bench.db])
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "is in use by execution ffff" in res.output, res.output
    assert "the probes decided so far stay recorded and are not run again when the search resumes with: " in (
        res.output), res.output
    with open_store(bench.db) as store:
        [st] = load_searches(store)
    assert st.status == "interrupted" and [p["index"] for p in st.record["result"]["probes"]] == [0]
    sim_lock(bench.sim_dir).unlink()
