"""`Workbench.run`: the runner executes, the application analyses, and the site is rebuilt only when wanted."""

from __future__ import annotations

from workbench.app import Workbench
from workbench.runner.execute import RunOptions
from workbench.settings import Settings


def test_the_site_is_rebuilt_only_when_one_exists_or_is_asked_for(toy):
    wb = Workbench.open(Settings.from_env(db=toy.db, root=toy.root))
    opts = RunOptions(replicates=1, show_progress=False, seed=1)
    first = wb.run("toy-fix", opts)
    assert first.report is None and not (toy.root / "reports").exists()
    assert first.analysis is not None and first.analysis.execution_id == first.execution.execution_id
    with wb.store(read_only=True) as store:
        assert store.latest_verdict("toy-fix").execution_id == first.execution.execution_id
    page = toy.root / "reports" / "hypotheses" / "toy-fix.html"
    wb.report()
    built = page.stat().st_mtime_ns
    second = wb.run("toy-fix", opts)
    assert second.report == str(page) and page.stat().st_mtime_ns > built  # the existing site was kept current
    third = wb.run("toy-fix", opts, report=False)
    assert third.report is None
    assert toy.conf.read_bytes() == toy.original


def test_a_site_built_while_the_run_ran_is_kept_current_by_it(toy, monkeypatch):
    """`wb report` run while `wb hypothesis run` ran made reports/; the run, which had looked for a site as it
    started, ended "report: not rebuilt" and left that site without its own runs. Whether a site is there to keep
    current is decided when the runs are done."""
    import workbench.runner.execute as execute_mod

    wb = Workbench.open(Settings.from_env(db=toy.db, root=toy.root))
    real = execute_mod.execute

    def execute_then_site_built(*args, **kwargs):
        done = real(*args, **kwargs)
        wb.report()  # as another `wb report` would, once the runs are recorded and before the run ends
        return done

    monkeypatch.setattr(execute_mod, "execute", execute_then_site_built)
    result = wb.run("toy-fix", RunOptions(replicates=1, show_progress=False, seed=1))
    page = toy.root / "reports" / "hypotheses" / "toy-fix.html"
    assert result.report == str(page), result.report_error
    assert toy.conf.read_bytes() == toy.original
