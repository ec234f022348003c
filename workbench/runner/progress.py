"""Progress of an experiment on stderr (rich): run k of n, arm, stage, elapsed and ETA."""

from __future__ import annotations

import time
from typing import Any

from workbench.runner.plan import PlannedRun


class RunProgress:
    """A rich progress bar, or nothing when disabled (tests, `--json` piped into a file still shows it on stderr)."""

    def __init__(self, total: int, *, enabled: bool, title: str, sequential: bool = False) -> None:
        # A sequential execution's plan is its budget (design.max_replicates blocks), not what will run.
        self.total = total
        self.sequential = sequential
        self.enabled = enabled
        self.title = title
        self.t0 = time.monotonic()
        self._progress: Any = None
        self._task: Any = None
        self.done = 0

    def __enter__(self) -> "RunProgress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.title, total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            # The live bar is cleared and replaced by one whole line, so the summary that follows on stdout
            # starts on a line of its own (a bar left behind had no newline before it on some terminals).
            self._progress.__exit__(*exc)
            self._progress.console.print(f"{self.title}: {self._count()} finished in "
                                         f"{time.monotonic() - self.t0:.1f} s", highlight=False)

    def _count(self) -> str:
        if self.sequential:
            return f"{self.done} run(s) (sequential, at most {self.total})"
        return f"{self.done} of {self.total} run(s)"

    def stage(self, pr: PlannedRun, stage: str, position: int) -> None:
        if self._progress is not None:
            of = " of at most " if self.sequential else "/"
            self._progress.update(self._task, description=(
                f"run {position}{of}{self.total}  arm={pr.arm} r{pr.replicate} host={pr.host}  [{stage}]"))

    def finished(self, status: str) -> None:
        self.done += 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1)

    def log(self, text: str) -> None:
        from workbench.secrets import redact_text

        text = redact_text(text)
        if self._progress is not None:
            self._progress.console.print(text)
        elif self.enabled:
            import sys

            sys.stderr.write(text + "\n")
