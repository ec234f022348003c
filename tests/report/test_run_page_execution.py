"""A run's page says how its execution ended, as `wb runs show` does: the target may have been left locked or
running, or its restore failed."""

from __future__ import annotations

from pathlib import Path

from workbench.report import run_page
from workbench.report.context import Page
from workbench.report.data import StoreData
from workbench.report.site import _env
from workbench.store.entities import ExecutionRecord, RunRecord


def test_a_runs_page_gives_its_executions_recorded_error(tmp_path: Path) -> None:
    """The page named the execution's mode, status and profile only: a done execution whose lock was not released
    (or whose pdsim was not stopped) read as cleanly ended, while `wb runs show` gives its recorded error."""
    left = ("its lock /srv/.serve.sh.wb-target.lock was NOT released (rm: cannot remove: Operation not permitted): "
            "the target may be left locked, refusing the next run; once no run of wb is on it, remove it: rm -f "
            "/srv/.serve.sh.wb-target.lock")
    run = RunRecord(id=7, execution_id=3, hypothesis_id="toy-fix", experiment_id="toy", experiment_version=1,
                    source="runner", label=None, arm="control", replicate=0, order_index=0, block=0, host="local",
                    target="local", status="ok", stage="collect", phase=None, started_at=None, ended_at=None,
                    variables={"fix": "off"}, config_hash=None, provenance=None, error=None).to_dict()
    ex = ExecutionRecord(id=3, hypothesis_id="toy-fix", experiment_id="toy", experiment_version=1, profile="local",
                         target="local", mode="ab", status="done", plan={}, overrides={}, config_diff={},
                         started_at=None, ended_at=None, wb_version="0", error=left)
    data = StoreData(runs={7: run}, executions={3: ex.to_dict()})
    page = Page("run 7", "../", "runs", "now")
    ctx = run_page.build(run, data, page, tmp_path, [tmp_path], None, None, True)
    html = _env().get_template("run.html.j2").render(ctx=ctx)
    assert "<h3>Execution error</h3>" in html and "its lock /srv/.serve.sh.wb-target.lock was NOT released" in html
    quiet = run_page.build(run, StoreData(runs={7: run}, executions={3: {**ex.to_dict(), "error": None}}), page,
                           tmp_path, [tmp_path], None, None, True)
    assert "Execution error" not in _env().get_template("run.html.j2").render(ctx=quiet)
