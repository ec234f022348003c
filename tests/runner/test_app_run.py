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
