"""Progress of an experiment on stderr (rich): the run in progress by its run id, arm and stage; runs ended of
those planned, elapsed time and ETA."""

from __future__ import annotations

import math
import os
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable

from workbench.analysis import display
from workbench.runner.lifecycle import STAGES
from workbench.runner.plan import PlannedRun

if TYPE_CHECKING:
    from workbench.analysis.looks import SequentialLook

# The reader of wb's output went away (`wb ... 2>&1 | head -5`). As a shell's SIGPIPE ends the writer, it
# stops the experiment: what is still written goes to /dev/null (the restore must not fail half-way on it),
# a run in progress stops as for a signal (`on_output_gone`, set by the runner while it runs), and no
# execution starts afterwards (`output_gone`: a `wb isolate` search stops before its next probe).
_output_gone = False
on_output_gone: Callable[[], None] | None = None


def output_gone() -> bool:
    return _output_gone


def to_devnull(*, ttys_only: bool) -> None:
    """Point stdout and stderr at /dev/null (only those that are terminals, with `ttys_only`): what is still
    written goes nowhere instead of failing half-way through a restore."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            try:
                if not ttys_only or os.isatty(fd):
                    os.dup2(null, fd)
            except OSError:
                pass
    finally:
        os.close(null)


def _lost_output() -> None:
    global _output_gone
    if _output_gone:
        return
    _output_gone = True
    to_devnull(ttys_only=False)
    if on_output_gone is not None:
        on_output_gone()


def reader_gone() -> None:
    """A write of wb's failed for its reader gone (the CLI's streams tell it, `cli._pipes`): an experiment running
    stops as when a line of its progress failed; none starts afterwards. Only then is all output sent nowhere: a
    command that runs none still tells its error on stderr where stdout alone was closed."""
    global _output_gone
    if on_output_gone is not None:
        _lost_output()
    else:
        _output_gone = True


def _written(write: Callable[[], Any]) -> None:
    try:
        write()
    except BrokenPipeError:
        _lost_output()


def _stderr_console(console_cls: Any) -> Any:
    """Rich's console for stderr. Off a terminal (a file, a pipe) rich still folds at 80 columns, mid-phrase
    ("... in \n26.4 s"); there every line is written whole, as the tables of `wb ... | grep` are."""
    import sys

    try:
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):
        terminal = False

    class _Console(console_cls):  # type: ignore[misc, valid-type]
        def on_broken_pipe(self) -> None:
            # rich's own answer is SystemExit(1) from wherever it was writing, mid-run: the run stops as for
            # a signal instead, and is restored (`_lost_output`).
            self.quiet = True
            _lost_output()

    from workbench.settings import colour_system

    return _Console(stderr=True, soft_wrap=not terminal, color_system=colour_system())


# A run that did not end ok within this share of the mean time of those that did failed at once: the ETA leaves it out.
FAILED_FAST = 0.5


class RunProgress:
    """A rich progress bar on a terminal, one plain line per ended run off one, nothing when disabled (tests);
    `--json` piped into a file still shows it on stderr."""

    def __init__(self, total: int, *, enabled: bool, title: str, sequential: bool = False,
                 where: Callable[[str], str] = str, short_title: str | None = None, lanes: int = 1,
                 blocks: tuple[tuple[int, ...], ...] = (), clock: Callable[[], float] = time.monotonic) -> None:
        # A sequential execution's plan is its budget (design.max_replicates blocks), not what will run.
        self.total = total
        self.where = where  # a run's host as shown (Target.where: pdsim for the sim target's one host)
        self.sequential = sequential
        self.enabled = enabled
        self.title = title
        self.short_title = short_title  # the bar's title where the whole one leaves no room (the hypothesis alone)
        self.restored: str | None = None  # what the target's restore did (execute sets it): the line after the last
        self.said_restored = False  # that line was written (progress on, and the run not refused)
        self.lanes = lanes  # runs in progress at once (one per host)
        # Each block's runs (order indexes), in the plan's order: `lanes` blocks run at once, the next `lanes` once
        # all of them ended (execute._run_blocks), so a block left alone at the end has one host, not `lanes`.
        self.blocks = blocks
        self.clock = clock  # the elapsed time's and the ETA's (tests drive it)
        self.t0 = clock()
        self.began: dict[int, float] = {}  # run id -> when its first stage began, for the runs in progress
        self.running: dict[int, int] = {}  # run id -> its order index, for the runs in progress
        # Run id -> how long each run that ended here took (a resume's earlier runs: unknown), from its start to the
        # next run's start on its host, so what comes between runs counts (the store's settle, a sequential look);
        # until the next one starts, to its end. A host's last run of a group ends at its own end, plus the time from
        # the group's last end to the next group's start: the wait for a slower host is the group's longest block,
        # which the ETA already takes.
        self.took: dict[int, float] = {}
        self.took_ok: set[int] = set()  # those of them that ended ok
        # Host -> (run id, order index, start, end) of the last run that ended there.
        self._last_on: dict[str, tuple[int, int, float, float]] = {}
        self._group = {i: k // max(lanes, 1) for k, block in enumerate(blocks) for i in block}  # order index -> group
        self._group_end: dict[int, float] = {}  # group -> when its last run that ended here ended
        self._console: Any = None  # stderr's console while enabled; the live bar draws on it on a terminal
        self._progress: Any = None
        self._task: Any = None
        # The last status of each planned run (by order index) that ended: an interrupted attempt is not
        # counted (a resume redoes it), so every count wb prints about these runs agrees.
        self.ended: dict[int, str] = {}
        self.deleted = 0  # planned runs that ended and were deleted since (`wb runs delete` beside the runner)
        self.interrupted = False
        self.refused = False  # the target was busy and nothing ran: the error says it all, no counts
        self.told: set[int] = set()  # runs that did not end ok whose ending a line here gave (finished)

    @property
    def done(self) -> int:
        return len(self.ended)

    def seed(self, ended: dict[int, str]) -> None:
        """The runs an earlier attempt of this execution already ended (a resume)."""
        self.ended.update(ended)
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done)

    def settle(self, stored: dict[int, str]) -> None:
        """Count again from what the store holds (order index -> last ended status): a run that ended and
        was deleted since is no longer counted as made, but as deleted."""
        self.deleted += len(set(self.ended) - set(stored))
        self.ended = dict(stored)

    def __enter__(self) -> "RunProgress":
        if self.enabled:
            from rich.console import Console

            self._console = _stderr_console(Console)
        if self._console is not None and self._console.is_terminal:
            from rich.progress import Progress

            # Only on a terminal: off one the live display draws nothing until it closes, and then a blank line.
            self._progress = Progress(_RunLine(self.sequential, self.remaining), console=self._console,
                                      transient=True, get_time=self.clock)
            _written(self._progress.__enter__)
            self._task = self._progress.add_task(self.title, total=self.total, completed=self.done,
                                                 forms=(self.title,) + ((self.short_title,) * bool(self.short_title)))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            # The live bar is cleared and replaced by one whole line, so the summary that follows on stdout
            # starts on a line of its own (a bar left behind had no newline before it on some terminals).
            _written(lambda: self._progress.__exit__(*exc))
        if self._console is None or self.refused:
            return
        stopped = ", interrupted" if self.interrupted else ""
        took = self.clock() - self.t0
        if not self.ended and not self.deleted:  # stopped before any run ended (the target unreachable, a signal)
            self._line(f"{self.title}: no run ended ({'at most ' if self.sequential else ''}{self.total} planned)"
                       f"{stopped}; it stopped after {took:.1f} s")
        else:  # the time of a whole execution is the summary's (`time: ...`); an interrupted one prints none
            self._line(f"{self.title}: {self.count_text()}" + (f", interrupted after {took:.1f} s" if stopped else ""))
        if self.restored:
            self._line(self.restored)
            self.said_restored = True

    def count_text(self) -> str:
        """How many planned runs ended and how: "3 of 4 runs ok, 1 failed", "0 of 4 runs ok, 4 invalid",
        "3 of 4 runs ok, 1 deleted", "1 run ok (sequential, at most 6)"."""
        by = {st: sum(1 for v in self.ended.values() if v == st) for st in ("ok", "failed", "invalid")}
        text = (f"{display.count(by['ok'], 'run')} ok (sequential, at most {self.total})" if self.sequential
                else f"{by['ok']} of {display.count(self.total, 'run')} ok")
        text += "".join(f", {by[st]} {st}" for st in ("failed", "invalid") if by[st])
        return text + (f", {self.deleted} deleted" if self.deleted else "")

    def stage(self, pr: PlannedRun, stage: str, run_id: int) -> None:
        """The live bar names the run in progress as its ended line will (`finished`): by the store's run id,
        which `wb runs show` takes, its arm, replicate and host, then the stage. The bar's count says how many
        ended; a narrow terminal drops the host, then the arm, before the count and the times (`_RunLine`). Which
        of them fit is judged for the longest stage name (`fits`), so they do not come and go from stage to stage."""
        if run_id not in self.began:
            self.began[run_id] = now = self.clock()
            before = self._last_on.pop(pr.host, None)
            if before is not None:  # the run before it on this host took until this one began
                run, order, start, end = before
                group, wait = self._group.get(order), 0.0
                if group is not None and group != self._group.get(pr.order_index):  # the group's last run here
                    wait = self._group_end.get(group, end) - end  # for a slower host, whose block the ETA takes
                self.took[run] = now - start - wait
        self.running[run_id] = pr.order_index
        if self._progress is not None:
            named = f"run {run_id} {pr.arm} {display.replicate(pr.replicate)}"

            def forms(st: str) -> tuple[str, ...]:
                return f"{named} on {self.where(pr.host)} [{st}]", f"{named} [{st}]", f"run {run_id} [{st}]"

            self._progress.update(self._task, description=forms(stage)[0], forms=forms(stage),
                                  fits=forms(max(STAGES, key=len)))

    def remaining(self) -> str:
        """The ETA as the bar shows it after "ETA": the time a run takes here (`run_time`) for each run left,
        less what the runs in progress have had (each taken to end now once past the mean), the blocks that run at
        once (one a host) each group as long as its longest block (`blocks`; without them, the runs left over the
        hosts). Steady, where rich's speed over its last 30 s went blank ("-:--:--") and jumped with runs of
        15-25 s. Before a run ended here, which run's end gives it ("after run 1"). In sequential mode it is of the
        whole budget, the most the execution may run (it may stop at any look), and marked as an estimate, "~ 0:04:03":
        it read "≤", yet a run longer than the mean moves it past what it said before, and no bound from the runs so far
        holds (the next run may be the first to time out)."""
        mean = self.run_time()
        if mean is None:
            return f"after run {self.done + 1}"
        now = self.clock()
        if self.blocks:  # each group of `lanes` blocks takes as long as its longest block's runs left
            had = {self.running[r]: min(now - t, mean) for r, t in self.began.items() if r in self.running}
            lanes = max(self.lanes, 1)
            work = sum(max(sum(mean - had.get(i, 0.0) for i in block if i not in self.ended) for block in group)
                       for group in (self.blocks[k:k + lanes] for k in range(0, len(self.blocks), lanes)))
        else:
            left = max(self.total - self.done, 0)
            work = (mean * left - sum(min(now - t, mean) for t in self.began.values())) / max(min(self.lanes, left), 1)
        eta = str(timedelta(seconds=math.ceil(max(work, 0.0))))
        return f"~ {eta}" if self.sequential else eta

    def run_time(self) -> float | None:
        """The time a run takes here, for the ETA: the mean of the runs that ended here (`took`: each from its start
        to the next one's start), leaving out a run that did not end ok within half the mean of those that did (it
        failed before doing a run's work, and would pull the mean down); one that took longer (a timeout) counts.
        None before a run ended here."""
        ok = [t for r, t in self.took.items() if r in self.took_ok]
        floor = FAILED_FAST * sum(ok) / len(ok) if ok else 0.0
        counted = [t for r, t in self.took.items() if r in self.took_ok or t >= floor]
        return sum(counted) / len(counted) if counted else None

    def finished(self, order_index: int, status: str, pr: PlannedRun | None = None, run_id: int | None = None,
                 ending: str | None = None) -> None:
        """A run ended with `status`; an interrupted one is not counted (it is redone by a resume). `ending`: how a
        run that did not end ok ended ("failed during its workload stage: …", PlannedRun's outcome.describe()).

        Off a terminal there is no live bar (rich redraws one in place only on a terminal), so that a log or a CI
        job does not see minutes of silence, each ended run gets one line instead. A run that did not end ok gets
        that line on a terminal too, above the bar: the one place it is named, with how it ended (`told`; the
        summary on stdout leaves it out)."""
        began = self.began.pop(run_id, None) if run_id is not None else None
        if run_id is not None:
            self.running.pop(run_id, None)
        if status == "interrupted":
            self.interrupted = True
            return
        if began is not None and run_id is not None:
            now = self.clock()
            self.took[run_id] = now - began
            if status == "ok":
                self.took_ok.add(run_id)
            self._last_on[pr.host if pr is not None else ""] = (run_id, order_index, began, now)
            if order_index in self._group:
                group = self._group[order_index]
                self._group_end[group] = max(self._group_end.get(group, now), now)
        self.ended[order_index] = status
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done)
        if self._console is None or (self._progress is not None and status == "ok"):
            return
        from workbench.secrets import redact_text

        of = " of at most " if self.sequential else "/"
        named = f"{pr.arm} {display.replicate(pr.replicate)} on {self.where(pr.host)}" if pr is not None else ""
        what = " ".join([f"run {run_id}"] * (run_id is not None) + [named] * bool(named)) or "a run"
        # One line per ended run, its time at the end: an error of several lines (a workload's own `Hint:` under its
        # `Error:`) is joined, not left to open lines that read as wb's own; `wb runs show` keeps it whole.
        said = " / ".join(ln.strip() for ln in redact_text(ending).splitlines() if ln.strip()) \
            if ending and status != "ok" else status
        self._line(f"[{self.done}{of}{self.total}] {what}: {said} ({self.clock() - self.t0:.1f} s elapsed)")
        if status != "ok" and run_id is not None:
            self.told.add(run_id)

    def looked(self, look: "SequentialLook | None") -> None:
        """A sequential execution judged its runs so far: one line saying the look, the most that remain and where
        each prediction stands (on a terminal above the live bar, which rich keeps at the bottom)."""
        if self._console is not None and look is not None:
            self._line(look.line())

    def _line(self, text: str) -> None:
        if self._console.is_terminal:  # between words, a parenthesis kept whole: rich broke `(it was down` / `before)`
            from workbench.wrapping import wrap

            text = "\n".join(out for line in text.split("\n") for out in wrap(line, self._console.width))
        _written(lambda: self._console.print(text, markup=False, highlight=False))

    def log(self, text: str) -> None:
        from workbench.secrets import redact_text

        text = redact_text(text)
        if self._console is not None:
            # Plain text: a run's error quotes its output, whose brackets are not console markup.
            self._line(text)
        elif self.enabled:
            import sys

            _written(lambda: (sys.stderr.write(text + "\n"), sys.stderr.flush()))


class _RunLine:
    """The live bar's one column: a run's description, a bar, the runs ended of those planned, the elapsed time
    and the ETA, fitted to the terminal's width when drawn. The count and the times are always whole; the
    description takes the longest of its forms (task field `forms`, longest first) that leaves room for a bar,
    else for none, else the shortest cut with an ellipsis, judged by the form as wide as it can grow (field `fits`:
    the same with the longest stage name) and given that width; the bar takes what is left, at most 40 columns. A
    sequential count's words ("of at most") give way to "3/≤16" before the bar does.
    (Rich's own columns cut whichever was widest: at 80 columns the count and times became "0:00:…".)"""

    BAR_MIN, BAR_MAX = 10, 40

    def __init__(self, sequential: bool, remaining: Callable[[], str]) -> None:
        self.sequential = sequential
        self.remaining = remaining  # RunProgress.remaining

    def get_table_column(self) -> Any:
        from rich.table import Column

        return Column(no_wrap=True)

    def __call__(self, task: Any) -> Any:
        return _FittedLine(task, self)

    def tail(self, task: Any, short: bool = False) -> list[Any]:
        """The count, the elapsed time and the ETA, in rich's styles ("3/16" or "3 of at most 16": a sequential
        execution's plan is its budget; `short`, "3/≤16", where the words leave no room for a bar)."""
        from rich.progress import MofNCompleteColumn, TimeElapsedColumn
        from rich.text import Text

        done, total = int(task.completed), int(task.total)
        count = Text(f"{done}/≤{total}" if short else f"{done} of at most {total}", style="progress.download") \
            if self.sequential else MofNCompleteColumn().render(task)
        eta = Text(self.remaining(), style="progress.remaining")
        return [count, TimeElapsedColumn().render(task), Text("ETA"), eta]


class _FittedLine:
    """One task's line at the width it is drawn at (`_RunLine`)."""

    def __init__(self, task: Any, column: _RunLine) -> None:
        self.task, self.column = task, column

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement(1, options.max_width)

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len
        from rich.progress import BarColumn
        from rich.table import Column, Table
        from rich.text import Text

        forms = self.task.fields.get("forms") or (self.task.description,)
        fits = self.task.fields.get("fits") or forms
        # The count's words give way before the bar does: "3 of at most 16", where no form leaves a bar room, "3/≤16".
        for short in (False, True):
            tail = self.column.tail(self.task, short)
            room = options.max_width - sum(t.cell_len + 1 for t in tail)  # each with the space before it
            with_bar = [i for i, f in enumerate(fits) if cell_len(f) + 1 + _RunLine.BAR_MIN <= room]
            if with_bar or not self.column.sequential:
                break
        alone = [i for i, f in enumerate(fits) if cell_len(f) <= room]
        i = (with_bar or alone or [len(forms) - 1])[0]
        text = forms[i]
        shown = min(cell_len(fits[i]), max(room, 1))
        bar = min(_RunLine.BAR_MAX, room - shown - 1)
        cells: list[Any] = [Text(text)]  # plain: a host or an arm may hold brackets, not markup
        columns = [Column(width=shown, no_wrap=True, overflow="ellipsis")]
        if bar >= _RunLine.BAR_MIN:
            cells.append(BarColumn(bar_width=bar).render(self.task))
            columns.append(Column(width=bar, no_wrap=True))
        cells += tail
        columns += [Column(no_wrap=True) for _ in tail]
        grid = Table.grid(*columns, padding=(0, 1))
        grid.add_row(*cells)
        yield grid
