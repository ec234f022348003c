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

TAIL = re.compile(r"(\d+/16|\d+ of at most 16|\d+/≤16) \d+:\d\d:\d\d ETA after run 4$")


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
                     where=lambda host: "pdsim", short_title="wedge-confound") as progress:
        progress.seed({0: "ok", 1: "ok", 2: "ok"})
        assert progress._console.width == width
        lines = [_drawn(progress)]
        progress.stage(pr, "workload", 41)
        lines.append(_drawn(progress))
        progress.finished(7, "failed", pr, 41, "failed during its workload stage: boom")
    for line in lines:
        assert len(line) <= width and "…" not in line, line
        assert TAIL.search(line), line
    # Before a run ends the title; at 60 columns the hypothesis alone, as the bar takes the room left.
    assert lines[0].startswith("wedge-confound on sim " if width == 80 else "wedge-confound "), lines[0]
    # The run in progress by its run id; at 80 columns with its arm, replicate and host, at 60 as much as fits.
    said = lines[1][:lines[1].index(" 3")]
    if width == 80 and not sequential:
        assert said.startswith("run 41 treatment r3 on pdsim [workload] "), lines[1]
    else:
        assert said.startswith(("run 41 treatment r3 [workload]", "run 41 [workload]")), lines[1]
    # The line of the run that ended names the same run, by the same number.
    err = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", capsys.readouterr().err).split())  # wrapped at the width
    assert "run 41 treatment r3 on pdsim: failed during its workload stage: boom" in err, err


def _drawn_at(progress: RunProgress, width: int) -> str:
    out = Console(file=io.StringIO(), width=width, force_terminal=True)
    out.print(progress._progress.get_renderable())
    (line,) = Text.from_ansi(out.file.getvalue()).plain.splitlines()
    return line.rstrip()


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("sequential", [False, True])
def test_the_eta_is_the_mean_run_times_the_runs_left_and_never_blank(monkeypatch, sequential):
    # Rich's own ETA is a speed over its last 30 s: with runs of 15-25 s it went blank ("-:--:--") while a run
    # was in progress and jumped between runs. wb's is the mean duration of the runs ended here times the runs
    # left, less what the run in progress has had. In sequential mode the plan is a budget: the ETA is of its whole,
    # the longest the execution may take, and an estimate as the other ("~"): it read "≤", a bound, yet a run longer
    # than the mean moved its end past what it said before (268 -> 287 -> 306 s), as here from 80 s to 100 s.
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    clock = _Clock()
    pr = PlannedRun(arm="control", replicate=0, block=0, order_index=0, host="local", values={})
    bound = "~ " if sequential else ""
    seen = []
    with RunProgress(4, enabled=True, title="t", sequential=sequential, where=lambda host: "pdsim",
                     clock=clock) as progress:
        def eta() -> str:
            line = _drawn_at(progress, 80)
            seen.append(line)
            return line[line.index(" ETA ") + 5:]
        assert eta() == "after run 1"
        progress.stage(pr, "render", 37)
        clock.now += 10
        progress.stage(pr, "workload", 37)
        assert eta() == "after run 1"
        clock.now += 10
        progress.finished(0, "ok", pr, 37)  # one run of 20 s ended, 3 left
        assert eta() == f"{bound}0:01:00"
        progress.stage(pr, "render", 38)
        clock.now += 5
        assert eta() == f"{bound}0:00:55"
        clock.now += 25  # past the mean: the run in progress is taken to end now, not to have negative time left
        assert eta() == f"{bound}0:00:40"
        progress.finished(1, "failed", pr, 38, "failed during its workload stage: boom")  # 20 s and 30 s
        assert eta() == f"{bound}0:00:50"
        assert re.search(r" 0:00:50 ETA ", seen[-1]), seen[-1]  # the elapsed time on the same clock
        progress.stage(pr, "render", 39)
        clock.now += 3
        progress.finished(2, "interrupted", pr, 39)  # not counted: a resume redoes it
        assert eta() == f"{bound}0:00:50"


def test_the_eta_counts_the_gaps_between_runs_and_leaves_out_runs_that_failed_at_once():
    """The mean was of each run's own stages: what came between two runs (the store's settle, a sequential look,
    the next run's start) was left out, so 20 s runs begun every 30 s were told 20 s each, and a run that failed
    at once (1 s) halved the mean. A run's time is now from its start to the next run's start on its host (its end,
    until then); a run that did not end ok within half the mean of those that did is left out, one that ran long
    (a timeout) counts."""
    clock = _Clock()
    progress = RunProgress(5, enabled=False, title="t", clock=clock)

    def start(order: int, run_id: int) -> PlannedRun:
        pr = PlannedRun(arm="control", replicate=order, block=order, order_index=order, host="local", values={})
        progress.stage(pr, "render", run_id)
        return pr

    first = start(0, 1)
    clock.now += 20
    progress.finished(0, "ok", first, 1)
    assert progress.remaining() == "0:01:20"  # 4 runs left at 20 s: what follows it is not known yet
    clock.now += 10  # the store's settle and the next run's start
    second = start(1, 2)
    assert progress.remaining() == "0:02:00"  # 30 s a run, from one start to the next
    clock.now += 1
    progress.finished(1, "failed", second, 2, "failed during its restart stage: boom")
    assert progress.remaining() == "0:01:30"  # failed at once: not a run's time (the mean read 10.5 s)
    clock.now += 2
    third = start(2, 3)
    clock.now += 40
    progress.finished(2, "failed", third, 3, "failed during its workload stage: timed out")
    assert progress.remaining() == "0:01:10"  # a run that timed out took a run's time and more: (30 + 40) / 2 each


def test_the_description_keeps_its_form_from_stage_to_stage(monkeypatch):
    # It chose a form per stage: at 60 columns "run 37 control r0 [check]", then "run 37 [workload]", the arm gone
    # for the longest stage. The form is chosen for the longest stage name, so only the stage changes.
    from workbench.runner.lifecycle import STAGES

    monkeypatch.setenv("FORCE_COLOR", "1")
    pr = PlannedRun(arm="control", replicate=0, block=0, order_index=0, host="local", values={})
    with RunProgress(6, enabled=True, title="t", sequential=True, where=lambda host: "pdsim") as progress:
        for width in range(56, 101):  # from the narrowest that shows "run 37 [workload]" whole
            lines = []
            for stage in STAGES:
                progress.stage(pr, stage, 37)
                line = _drawn_at(progress, width)
                lines.append(line)
                assert f"[{stage}]" in line, line
            assert len({line.split(" [")[0] for line in lines}) == 1, (width, lines)
            # The bar stays where it is (the description column is as wide whatever the stage).
            assert len({line.find(" of at most ") for line in lines}) == 1, (width, lines)


def test_the_eta_of_several_hosts_counts_the_blocks_that_run_at_once():
    """The runs left over the hosts: 3 blocks of 2 runs on 2 hosts run blocks 0 and 1 at once, then block 2 alone
    (execute._run_blocks), yet its last 2 runs of 10 s were told 0:00:10 (the hosts halved them) and the 4 runs
    left after the first two 0:00:20 (30 s were left)."""
    clock = _Clock()
    blocks = ((0, 1), (2, 3), (4, 5))
    progress = RunProgress(6, enabled=False, title="t", lanes=2, blocks=blocks, clock=clock)

    def run(order: int, run_id: int) -> PlannedRun:
        pr = PlannedRun(arm="control", replicate=order // 2, block=order // 2, order_index=order, host="h",
                        values={})
        progress.stage(pr, "render", run_id)
        return pr

    first = [run(0, 1), run(2, 3)]
    clock.now += 10
    for pr, rid in zip(first, (1, 3)):
        progress.finished(pr.order_index, "ok", pr, rid)
    assert progress.remaining() == "0:00:30"  # the second runs of blocks 0 and 1, then block 2's two
    second = [run(1, 2), run(3, 4)]
    clock.now += 4
    assert progress.remaining() == "0:00:26"
    clock.now += 6
    for pr, rid in zip(second, (2, 4)):
        progress.finished(pr.order_index, "ok", pr, rid)
    assert progress.remaining() == "0:00:20"  # block 2 alone: two runs on one host
    run(4, 5)
    clock.now += 3
    assert progress.remaining() == "0:00:17"


def test_the_eta_of_several_hosts_leaves_out_the_wait_for_the_slower_host():
    """A run's time reached to the next run's start on its host, so a host's last run of a group took in its wait
    for the slower host, and the ETA, which already takes each group's longest block, counted that wait twice.
    Blocks of 2 runs and of 1 on two hosts, 10 s a run and 1 s between: host b's one run of the first group was
    told 21 s (it waited 10 s for host a's second), the mean 14 s, and the next group's 2 runs on host a
    0:00:28 (they take 21 s). Its last run of a group ends at its own end, and the group's gap before the next
    (the store's settle, a sequential look) is added: 11 s, and 0:00:22."""
    clock = _Clock()
    blocks = ((0, 1), (2,), (3, 4), (5,))
    progress = RunProgress(6, enabled=False, title="t", lanes=2, blocks=blocks, clock=clock)

    def run(order: int, run_id: int, host: str) -> PlannedRun:
        pr = PlannedRun(arm="control", replicate=0, block=order, order_index=order, host=host, values={})
        progress.stage(pr, "render", run_id)
        return pr

    a0, b2 = run(0, 1, "a"), run(2, 2, "b")
    clock.now += 10
    progress.finished(0, "ok", a0, 1)
    progress.finished(2, "ok", b2, 2)
    a1 = run(1, 3, "a")  # host b waits for block 0's second run
    clock.now += 10
    progress.finished(1, "ok", a1, 3)
    clock.now += 1  # the store's settle, then the next group begins
    run(3, 4, "a"), run(5, 5, "b")
    assert progress.remaining() == "0:00:22"  # (10 + 11 + 11) / 3 s a run, two runs on host a


@pytest.mark.parametrize("sequential", [False, True])
def test_a_bar_shows_at_60_columns_in_both_modes(monkeypatch, sequential):
    # At 60 columns a sequential execution drew no bar: "run 44 [workload] 15 of at most 24 0:03:13 ETA ≤ 0:01:35"
    # and blanks, where a fixed one drew one. The count gives way first ("15/≤24"), so a bar of 10 cells or more fits.
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "60")
    clock = _Clock()
    with RunProgress(24, enabled=True, title="wedge-confound on sim", sequential=sequential,
                     where=lambda host: "pdsim", short_title="wedge-confound", clock=clock) as progress:
        progress.seed({i: "ok" for i in range(14)})
        pr = PlannedRun(arm="treatment", replicate=7, block=7, order_index=14, host="local", values={})
        progress.stage(pr, "workload", 43)
        clock.now += 13
        progress.finished(14, "ok", pr, 43)
        progress.stage(PlannedRun(arm="control", replicate=7, block=7, order_index=15, host="local", values={}),
                       "workload", 44)
        clock.now += 180
        line = _drawn_at(progress, 60)
    assert len(line) <= 60 and "…" not in line, line
    assert line.startswith("run 44 ") and "[workload]" in line, line
    assert sum(line.count(c) for c in "━╸╺") >= 10, line
    count = "15/≤24" if sequential else "15/24"
    assert line.endswith(f" {count} 0:03:13 ETA {'~ ' if sequential else ''}0:01:44"), line
