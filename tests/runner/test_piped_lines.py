"""What the runner says on stderr (each failed run, the closing count) reaches a file or a pipe as whole lines:
rich's console folded them at 80 columns ("...interrupted in \\n26.4 s"), so a grep for a run's line missed."""

from __future__ import annotations

import re
import subprocess
import sys

from runner_kit import edit_profile  # noqa: E402  (tests/runner is on sys.path)

LONG = "local-profile-whose-name-alone-runs-past-the-eighty-columns-a-console-assumes-off-a-terminal"


def test_run_end_and_failure_lines_are_whole_when_written_to_a_file(toy, tmp_path):
    """Also: with stdout and stderr in one file, each failed run is named once, by its progress line (the summary
    names it again only where stdout is read apart: test_a_failed_runs_ending_stays_in_the_summary_...)."""
    edit_profile(toy.root, "  local:\n", f"  {LONG}:\n")
    edit_profile(toy.root, "default_profile: local", f"default_profile: {LONG}")
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text().replace("hold: {mode: ok}", "hold: {mode: fail}"))
    out = tmp_path / "out.txt"
    with out.open("w") as f:
        done = subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix",
                               "--db", toy.db, "--replicates", "1", "--seed", "7"],
                              stdout=f, stderr=f, timeout=300, env={**_env(), "COLUMNS": "80"})
    text = out.read_text()
    assert done.returncode in (0, 1, 3), text
    lines = text.splitlines()
    ends = [ln for ln in lines if ln.startswith(f"toy-fix on {LONG}: ")]
    assert ends == [f"toy-fix on {LONG}: 0 of 2 runs ok, 2 failed"], text
    # a failed run's progress line says how it ended: "[1/2] run 1 control r0 on local: failed during its ..."
    failed = [ln for ln in lines if ln.startswith("[") and "workload exited 3: boom (" in ln
              and ln.endswith(" s elapsed)")]
    assert len(failed) == 2, text
    # Off a terminal the progress is plain lines: no blank line that rich's live display left as it closed.
    assert "" not in lines, text
    for run_id in (1, 2):
        named = [ln for ln in lines if re.search(rf"\brun {run_id}\b", ln)]
        assert len(named) == 1 and "workload exited 3: boom (" in named[0], text


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_a_reader_gone_mid_run_stops_it_as_sigpipe_would_and_the_target_is_restored(toy):
    """`wb hypothesis run ... 2>&1 | head -5` once the reader has gone: the first line written to the closed
    pipe (a failed run's) raised BrokenPipeError inside the runner; the experiment went on or failed as a bug
    (and `wb isolate` moved on to its next probe). It now stops as for a signal: restored, exit 128 + 13,
    the execution interrupted and resumable."""
    import os

    from runner_kit import store_rows

    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text().replace("hold: {mode: ok}", "hold: {mode: fail}"))
    r, w = os.pipe()
    os.close(r)  # the reader is gone before wb writes: the first write fails, deterministically
    try:
        done = subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix",
                               "--db", toy.db, "--replicates", "2", "--seed", "7"],
                              stdout=w, stderr=w, timeout=300, env=_env())
    finally:
        os.close(w)
    assert done.returncode == 141
    assert toy.conf.read_bytes() == toy.original
    (status,) = store_rows(toy.db, "SELECT status FROM executions")[0]
    assert status == "interrupted"
    runs = store_rows(toy.db, "SELECT status FROM runs")
    assert len(runs) < 4, runs  # it stopped: not every planned run was made


def test_a_failed_runs_ending_stays_in_the_summary_when_stdout_is_read_apart(toy, tmp_path):
    """`wb hypothesis run ... > summary.txt`: the summary on stdout left out every failed run whose progress line
    on stderr had said how it ended, so the file kept for the record said nothing of why the runs failed. With
    stdout and stderr apart the summary names each; written to one place, the progress line alone does (that
    case: test_run_end_and_failure_lines_are_whole_when_written_to_a_file)."""
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text().replace("hold: {mode: ok}", "hold: {mode: fail}"))
    argv = [sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix", "--db", toy.db,
            "--replicates", "1"]
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as fo, err.open("w") as fe:
        done = subprocess.run([*argv, "--seed", "7"], stdout=fo, stderr=fe, timeout=300, env=_env())
    assert done.returncode == 1, err.read_text()
    said = [ln for ln in out.read_text().splitlines() if ln.startswith("  run ")]
    assert len(said) == 2 and all(ln.endswith("failed during its workload stage: workload exited 3: boom")
                                  for ln in said), out.read_text()


def test_a_failed_runs_line_is_one_line_whatever_its_error_holds(capsys, monkeypatch):
    """A run whose workload printed an error of two lines (`Error: No such option: --bogus-flag`, then the workload's
    own `Hint: usage: ...`) got a progress line ending in the first and a second line opening with `Hint:`, which
    read as wb's own hint, the elapsed time after it. One line per ended run: the error's lines joined with ` / `,
    the elapsed time at the end (the whole error stays in the run's record, `wb runs show`)."""
    from workbench.runner.plan import PlannedRun
    from workbench.runner.progress import RunProgress

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    ticks = iter([0.0, 0.0, 1.0, 3.7])
    pr = PlannedRun(arm="treatment", replicate=0, block=0, order_index=0, host="pdsim", values={})
    ending = ("failed during its workload stage: workload exited 2: Error: No such option: --bogus-flag\n"
              "Hint: usage: python -m workbench.cli.main sim repro [OPTIONS]  (python -m ... --help lists the options)")
    with RunProgress(2, enabled=True, title="wedge-confound on pdsim", clock=lambda: next(ticks, 3.7)) as progress:
        progress.stage(pr, "workload", 3)
        progress.finished(0, "failed", pr, run_id=3, ending=ending)
        said = capsys.readouterr().err
    assert said == ("[1/2] run 3 treatment r0 on pdsim: failed during its workload stage: workload exited 2: Error: "
                    "No such option: --bogus-flag / Hint: usage: python -m workbench.cli.main sim repro [OPTIONS]  "
                    "(python -m ... --help lists the options) (3.7 s elapsed)\n"), said
