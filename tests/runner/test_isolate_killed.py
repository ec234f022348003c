"""`wb isolate` killed outright (SIGKILL) in its first probe, on the toy local deployment: the probe's
execution is the only trace (no probe verdict, no search record), and `wb isolate --resume` must still find
the search, put the serve file back and finish it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

from runner_kit import edit_profile  # noqa: E402  (tests/runner is on sys.path)

SEARCH = ["isolate", "--experiment", "toy", "--good", "fix=on", "--bad", "fix=off", "--metric", "corruption_rate",
          "--region", ">= 0.1"]


def test_a_search_killed_in_its_first_probe_is_resumed_and_restores_the_target(toy, cli):
    # The workload waits while a file exists: the test holds the first probe's first run in its workload.
    edit_profile(toy.root, 'workload: {command: "',
                 f'workload: {{command: "while [ -e {toy.state}/hold ]; do sleep 0.05; done; ')
    edit_profile(toy.root, "timeout_s: 3}", "timeout_s: 600}")
    hold = toy.state / "hold"
    hold.touch()
    wb = [sys.executable, "-m", "workbench.cli.main", *SEARCH, "--db", toy.db]
    proc = subprocess.Popen(wb + ["--seed", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, env=dict(os.environ))
    try:
        t0 = time.monotonic()
        while b"# toy serve file" not in toy.conf.read_bytes():  # the rendered config is in place
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() - t0 < 240
            time.sleep(0.05)
        time.sleep(0.5)  # in its workload now (the restart and health check took well under this)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert toy.conf.read_bytes() != toy.original  # left as the killed runner had it
    # A fresh search is refused; its hint names the command that puts the original back (it named
    # `wb hypothesis run iso-…-p0 --resume`, a hypothesis that exists only inside the search), and the refused
    # attempt is not recorded (a --resume without --seed picked it, and was refused in turn).
    # After the kill, wb runs in process (`cli`: the console script's command tree, without its imports).
    code, _, fresh = cli(*wb[3:], "--seed", "2")
    assert code == 2 and "was left by execution" in fresh, fresh[-2000:]
    assert "wb hypothesis run iso-" not in fresh, fresh
    # The complete command, every flag the search was started with (--db, --seed 1: not the refused one's 2),
    # quoted; run as printed, it resumes the search.
    resume = fresh.split("resume it, which puts the original back first:\n  ", 1)[1].split("\n", 1)[0]
    assert resume.startswith("wb isolate --experiment toy ") and resume.endswith(" --resume"), fresh
    assert "--region '>= 0.1'" in resume and " --seed 1 " in resume and f" --db {toy.db} " in resume, resume
    hold.unlink()
    code, out, err = cli(*shlex.split(resume)[1:], "--json")
    assert code == 0, err[-3000:]
    assert toy.conf.read_bytes() == toy.original
    rec = json.loads(out)
    assert (rec["result"]["status"], rec["result"]["minimal"]) == ("decided", ["fix"])
    assert rec["resume"]["continued"][0]["probe"] == 0  # the probe in flight, continued where it stopped


def test_a_per_replicate_variable_without_a_default_renders_in_every_check(toy, cli):
    """A workload seed declared `per_replicate` with no default passed validate, but the preflight rendered
    the templates without it ("'wseed' is undefined", exit 2) and each refused search was recorded."""
    edit_profile(toy.root, "  mode: {values:", "  wseed: {type: int, per_replicate: true}\n  mode: {values:")
    edit_profile(toy.root, 'workload: {command: "', 'workload: {command: "echo seed={{ wseed }}; ')
    code, out, err = cli(*SEARCH, "--db", toy.db, "--json")
    assert code == 0, err[-2000:]
    assert json.loads(out)["result"]["minimal"] == ["fix"]
    assert toy.conf.read_bytes() == toy.original


def test_a_search_whose_target_is_refused_before_its_first_probe_records_no_attempt(toy, cli):
    """config.path in a folder that does not exist is refused before the target is touched (TargetRefused); wb
    isolate took only a busy target for 'refused before any probe': this refusal was stored as an interrupted
    search attempt, with a --resume hint that could only meet the same refusal."""
    from runner_kit import store_rows

    edit_profile(toy.root, 'path: "{{ state }}/serve.conf"', 'path: "{{ state }}/nosuch/serve.conf"')
    code, _, err = cli(*SEARCH, "--db", toy.db)
    assert code == 2, err[-2000:]
    assert "its folder" in err and "does not exist" in err and "wb isolate " not in err, err
    assert store_rows(toy.db, "SELECT count(*) FROM runs")[0][0] == 0
    assert store_rows(toy.db, "SELECT count(*) FROM verdicts WHERE hypothesis_id LIKE 'iso-%'")[0][0] == 0
    assert not (toy.state / "nosuch").exists() and toy.conf.read_bytes() == toy.original
