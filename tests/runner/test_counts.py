"""The counts wb prints about an execution's runs agree with each other and say how the runs ended; an
interrupted runner exits 128 + the signal's number."""

from __future__ import annotations

import asyncio
import os
import re
import signal

import pytest

from workbench.runner.execute import RunInterrupted
from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)


def _run(toy, **kw):
    kw.setdefault("build_report", False)
    return run_hypothesis("toy-fix", db=toy.db, **kw)


def _signal_at_run(n: int, sig: int = signal.SIGTERM):
    seen = {"n": 0}

    async def fault(stage, pr):
        if stage == "workload":
            seen["n"] += 1
            if seen["n"] == n:
                os.kill(os.getpid(), sig)
                await asyncio.sleep(5)  # the handler cancels this task before the sleep ends
    return fault


def test_interrupted_counts_agree_and_sigterm_exits_143_and_the_interrupted_run_is_one_clear_line(toy, capfd):
    """One execution stopped by SIGTERM in its second run's workload: the counts printed agree, the exit code is
    143, and the interrupted run is one clear line naming its stage, in the summary alone."""
    from workbench.app import RunReport
    from workbench.cli.run_cmd import summary_lines

    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1, seed=3, show_progress=True, fault=_signal_at_run(2))
    text = capfd.readouterr().err
    err = " ".join(text.split())  # rich wraps long lines
    assert "toy-fix on local: 1 of 2 runs ok, interrupted after " in err, err
    assert ei.value.message.startswith("interrupted after 1 of 2 runs ok;"), ei.value.message
    assert ei.value.exit_code == 143
    assert toy.conf.read_bytes() == toy.original
    # The summary that follows an interrupt says it; the progress on stderr does not say it a second time.
    assert not [ln for ln in _run_lines(text) if "interrupted" in ln]
    summary = summary_lines(RunReport(ei.value.partial, None, "interrupted"))
    (line,) = [ln.strip() for ln in summary if ln.startswith("  run ") and "interrupted" in ln]
    assert line.endswith("interrupted during its workload stage"), line
    assert "  " not in line and line.count("interrupted") == 1, line


def test_sigint_exits_130(toy):
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1, seed=3, show_progress=False, fault=_signal_at_run(1, signal.SIGINT))
    assert ei.value.exit_code == 130 and ei.value.message.startswith("interrupted after 0 of 2 runs ok;")
    assert toy.conf.read_bytes() == toy.original


def test_a_resumed_execution_counts_each_planned_run_once_and_does_not_redo_finished_runs(toy):
    """Interrupted in its third run (the second block), the execution's first two runs are finished: the resume
    must not run them again, and what it prints counts each planned run once."""
    from workbench.app import Workbench
    from workbench.cli.run_cmd import summary_lines
    from workbench.errors import BadInput
    from workbench.runner.execute import RunOptions
    from workbench.settings import Settings
    from workbench.store import open_store

    with pytest.raises(RunInterrupted):
        _run(toy, replicates=2, seed=3, show_progress=False, fault=_signal_at_run(3))
    assert toy.conf.read_bytes() == toy.original
    with open_store(toy.db, read_only=True) as store:
        finished = {(r.id, r.order_index) for r in store.runs() if r.status == "ok"}
    assert len(finished) == 2
    before = len(toy.restarts())
    wb = Workbench.open(Settings.from_env(db=toy.db, root=toy.root))
    report = wb.run("toy-fix", RunOptions(resume=True, show_progress=False), report=False)
    assert len(report.execution.runs) == 5  # the interrupted attempt stays recorded
    s = report.to_dict()
    statuses = [r["status"] for r in s["runs"]]
    assert statuses.count("ok") == 4 and statuses.count("interrupted") == 1
    # The finished runs are the same rows, untouched; the resumed execution is the interrupted one.
    assert finished <= {(r["id"], r["order_index"]) for r in s["runs"] if r["status"] == "ok"}
    assert len({r["order_index"] for r in s["runs"] if r["status"] == "ok"}) == 4
    with open_store(toy.db, read_only=True) as store:
        assert [e.status for e in store.executions()] == ["done"]
    # two runs left to do: two restarts for the runs plus one for the restore
    assert len(toy.restarts()) - before == 3
    lines = summary_lines(report, wb.registry.hypothesis("toy-fix"))
    order = next(line for line in lines if line.startswith("order: "))
    assert len(order.split("  (")[0].split()) == 1 + 4, order
    assert "of 4 planned" not in order and "1 interrupted attempt redone by --resume" in order, order
    arms = [line for line in lines if "runs ok" in line]
    assert all("runs ok 2/2" in line for line in arms), arms
    # corruption_rate is a proportion: it reads in percent, as the verdict below it does (it read 0.300); counts stay.
    control, treatment = (next(line for line in arms if line.strip().startswith(a)) for a in ("control", "treatment"))
    assert "corruption_rate=30.0%" in control and "sessions=20" in control, control
    assert "corruption_rate=0.0%" in treatment and "leak=0" in treatment, treatment
    assert "] predicts corruption_rate (treatment) <= 0.02 (2%); the treatment arm (fix=on) had 0/20 = 0.0%" \
        in " ".join(lines), lines
    with pytest.raises(BadInput):
        _run(toy, resume=True)  # nothing left to resume


def _run_lines(err: str) -> list[str]:
    """The lines the runner printed on stderr (`err`) about single runs (rich may wrap a long one: joined back)."""
    text = " ".join(err.split())
    ends = (" toy-fix on local", " not waiting for ")  # what the runner prints next: its summary, the restore
    out = []
    for part in text.split("run ")[1:]:
        if re.match(r"\d+ \(?(control|treatment) r", part):
            for end in ends:
                part = part.split(end)[0]
            out.append(("run " + part).strip())
    return out


def test_a_failed_run_line_keeps_its_stage_and_brackets_and_runs_that_all_failed_are_not_called_finished(toy,
                                                                                                          capfd):
    # The workload's own output may hold brackets: printed as they are, never read as console markup.
    toy_py = toy.state / "toy.py"
    toy_py.write_text(toy_py.read_text().replace('print("boom"', 'print("boom [/bold] [red]x[/red]"'))
    s = _run(toy, replicates=1, seed=3, show_progress=True, sets={"mode": "fail"})
    assert {r["status"] for r in s["runs"]} == {"failed"}
    text = capfd.readouterr().err
    # Every run failed: the closing line counts them failed, never "finished" (its wording does not depend on how
    # many runs failed: one replicate).
    err = " ".join(text.split())  # rich wraps long lines
    assert "toy-fix on local: 0 of 2 runs ok, 2 failed restored: " in err, err
    assert "finished" not in err
    lines = [ln for ln in _run_lines(text) if "failed" in ln]
    assert len(lines) == 2, lines
    for line in lines:
        assert "failed during its workload stage: workload exited 3: boom [/bold] [red]x[/red]" in line, line


def test_a_failed_run_is_named_once_with_all_it_ended_with_and_no_doubled_space(toy, cli):
    """A failed run was named three times: its progress line ("[1/2] run 1 treatment r0 on local: failed (1.3 s
    elapsed)"), the error under it, and the summary on stdout repeating that error. One line on stderr now says it
    all; the summary names it again only where stdout is read apart from stderr (as here, captured in-process; one
    place for both: test_piped_lines). No run line or summary line has a doubled space after its status ("failed:
    workload …" once printed the status, then the stored "[stage] …" error after a blank)."""
    code, out, err = cli("hypothesis", "run", "toy-fix", "--set", "mode=fail", "--replicates", "1", "--seed", "3",
                         "--db", toy.db, env={"WB_ROOT": str(toy.root), "COLUMNS": "400"})
    assert code == 1, err
    text = out + err
    assert "workload exited 3" in text, text
    assert not re.search(r"(failed|invalid|interrupted):  ", text), text
    assert not re.search(r"(failed|invalid|interrupted): \[", text), text
    for run_id in (1, 2):
        named = [ln for ln in err.splitlines() if re.search(rf"\brun {run_id}\b", ln)]
        assert len(named) == 1, err
        assert re.fullmatch(rf"\[\d/2\] run {run_id} (control|treatment) r0 on local: failed during its workload "
                            r"stage: workload exited 3: boom \([\d.]+ s elapsed\)", named[0]), named[0]
        apart = [ln for ln in out.splitlines() if re.search(rf"\brun {run_id}\b", ln)]
        assert len(apart) == 1 and apart[0].endswith("failed during its workload stage: workload exited 3: boom"), out
    assert err.rstrip().endswith("did not finish ok, runs 1 and 2 (see their errors above); the first's whole "
                                 "record: wb runs show 1"), err


def test_a_signal_while_a_runs_row_is_created_leaves_no_pending_run(toy, monkeypatch):
    """Ctrl-C while the first run's row was being written (an SSH target's first run, just connected) left that
    row `pending` for good: the summary said "run 1 (control r0) pending" and `wb runs list` kept a run that
    neither ran nor was interrupted. A row the interrupted execution created but never started now goes, as a
    row created ahead does."""
    import threading

    from workbench.runner.record import Recorder

    flushing = threading.Event()
    create, flush = Recorder._create, Recorder.flush

    def create_then_signal(self, pr):
        run_id = create(self, pr)
        os.kill(os.getpid(), signal.SIGINT)
        flushing.wait(30)  # the row is written once the interrupted execution flushes its writes
        return run_id

    async def flush_once_signalled(self):
        flushing.set()
        await flush(self)

    monkeypatch.setattr(Recorder, "_create", create_then_signal)
    monkeypatch.setattr(Recorder, "flush", flush_once_signalled)
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1, seed=3, show_progress=False)
    assert ei.value.exit_code == 130
    from runner_kit import store_rows

    assert store_rows(toy.db, "SELECT id, status FROM runs") == []
    assert toy.conf.read_bytes() == toy.original
    # No run began: the summary's order line says so (it read "order:   (0 of 2 planned)").
    from workbench.app import RunReport
    from workbench.cli.run_cmd import summary_lines

    lines = summary_lines(RunReport(ei.value.partial, None, "interrupted before the planned runs were made"))
    assert "order: no run began  (0 of 2 planned)" in lines, lines
