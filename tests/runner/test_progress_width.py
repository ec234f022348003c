"""The live progress bar at a terminal's width: rich's own columns cut whichever was widest, so at 80 columns the
count and the times became "0/16 0:00:… ETA -:--:…". The description gives way first; the bar names the run by
the store's run id, as the line of a run that ended does (it said "run 8/16", a position in the plan)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.text import Text

from workbench.runner.plan import PlannedRun
from workbench.runner.progress import RunProgress

TAIL = re.compile(r"(\d+/16|\d+ of at most 16) \d+:\d\d:\d\d ETA (-:--:--|\d+:\d\d:\d\d)$")


def _drawn(progress: RunProgress) -> str:
    """The live bar as the terminal shows it, at the width rich found for it (COLUMNS)."""
    out = Console(file=io.StringIO(), width=progress._console.width, force_terminal=True)
    out.print(progress._progress.get_renderable())
    (line,) = Text.from_ansi(out.file.getvalue()).plain.splitlines()
    return line.rstrip()


@pytest.mark.parametrize("sequential", [False, True])
@pytest.mark.parametrize("width", [80, 60])
def test_the_count_and_times_stay_whole_at_a_narrow_terminal(monkeypatch, capsys, width, sequential):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes stderr for a terminal, as under a user's shell
    monkeypatch.setenv("COLUMNS", str(width))
    pr = PlannedRun(arm="treatment", replicate=3, block=0, order_index=7, host="local", values={})
    with RunProgress(16, enabled=True, title="wedge-confound on sim", sequential=sequential,
                     where=lambda host: "pdsim") as progress:
        progress.seed({0: "ok", 1: "ok", 2: "ok"})
        assert progress._console.width == width
        lines = [_drawn(progress)]
        progress.stage(pr, "workload", 41)
        lines.append(_drawn(progress))
        progress.finished(7, "failed", pr, 41, "failed during its workload stage: boom")
    for line in lines:
        assert len(line) <= width and "…" not in line, line
        assert TAIL.search(line), line
    assert lines[0].startswith("wedge-confound on sim "), lines[0]
    # The run in progress by its run id; at 80 columns with its arm, replicate and host, at 60 as much as fits.
    said = lines[1][:lines[1].index(" 3")]
    if width == 80 and not sequential:
        assert said.startswith("run 41 treatment r3 on pdsim [workload] "), lines[1]
    else:
        assert said.startswith(("run 41 treatment r3 [workload]", "run 41 [workload]")), lines[1]
    # The line of the run that ended names the same run, by the same number.
    err = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", capsys.readouterr().err).split())  # wrapped at the width
    assert "run 41 treatment r3 on pdsim: failed during its workload stage: boom" in err, err
