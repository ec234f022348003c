"""Text wb prints through rich (tables on a terminal, the progress bar) is shown as it is: values come from
logs, configs and users, and a bracket in one is not console markup (it vanished, or raised MarkupError)."""

from __future__ import annotations

from workbench.cli import _common


def test_a_terminal_table_prints_brackets_as_they_are(monkeypatch, capsys):
    monkeypatch.setattr(_common, "is_tty", lambda: True)
    _common.table(["id", "error"], [[1, "[workload] boom [/bold] [red]x"]])
    out = " ".join(capsys.readouterr().out.split())
    assert "[workload] boom [/bold] [red]x" in out, out


def test_the_progress_bar_shows_the_stage_in_brackets(monkeypatch):
    from workbench.runner.plan import PlannedRun
    from workbench.runner.progress import RunProgress

    # The live bar is drawn on a terminal only (off one each ended run is a plain line): rich takes stderr
    # for one here, as it does under FORCE_COLOR.
    monkeypatch.setenv("FORCE_COLOR", "1")
    pr = PlannedRun(arm="treatment", replicate=0, block=0, order_index=0, host="gpu[1]", values={})
    with RunProgress(2, enabled=True, title="toy-fix on local") as progress:
        progress.stage(pr, "workload", 1)
        bar = progress._progress
        task = bar.tasks[0]
        shown = bar.columns[0].render(task).plain
    assert shown.endswith("host=gpu[1]  [workload]"), shown
