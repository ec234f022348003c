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
    import io

    from rich.console import Console

    from workbench.runner.plan import PlannedRun
    from workbench.runner.progress import RunProgress

    # The live bar is drawn on a terminal only (off one each ended run is a plain line): rich takes stderr
    # for one here, as it does under FORCE_COLOR.
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    pr = PlannedRun(arm="treatment", replicate=0, block=0, order_index=0, host="gpu[1]", values={})
    with RunProgress(2, enabled=True, title="toy-fix on local") as progress:
        progress.stage(pr, "workload", 1)
        out = Console(file=io.StringIO(), width=120, color_system=None)
        out.print(progress._progress.get_renderable())
        shown = out.file.getvalue()
    assert shown.startswith("run 1 treatment r0 on gpu[1] [workload] "), shown
