"""The problems a check of the registry files finds: raised at the first (every command that loads the registry),
or collected, file by file, for `wb hypothesis validate` to list them all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.errors import BadInput, ConfigError, ConfigErrors

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment


class SharedFileError(ConfigError):
    """A problem in a file that several fields use (a template_file two profiles render): found through each,
    told once, naming each field (raise_any)."""


class Found:
    """The problems found so far. Checks run `with found.apart():` one at a time; a problem ends the check it
    stands in, and the next runs. Strict (every command but validate): the first problem is raised at once."""

    def __init__(self, *, collect: bool = False) -> None:
        self.collect = collect
        self.problems: list[BadInput] = []
        self.stopped = False
        self.waiting = False  # an entry was left unchecked against its experiment
        self.experiments: dict[Path, Experiment | None] = {}  # each experiment file checked once, by its path
        # Each experiment file whose schema passed, by its path, though its own checks (a template, a metric) failed:
        # the variables it declares stand apart from those, and hypotheses are checked against them.
        self.declared: dict[Path, Experiment] = {}

    @contextmanager
    def apart(self) -> Iterator[None]:
        try:
            yield
        except ConfigError as exc:
            if not self.collect:
                raise
            self.problems.append(exc)

    def stop(self, exc: BadInput) -> None:
        """A problem after which nothing later in its file can be checked (the other files still are)."""
        self.problems.append(exc)
        self.stopped = True

    def raise_any(self) -> None:
        if not self.problems:
            return
        problems = _merged(self.problems)
        files = list(dict.fromkeys(getattr(p, "file", "") for p in problems))
        ordered = sorted(problems, key=lambda p: (files.index(getattr(p, "file", "")), getattr(p, "line", 0) or 0))
        raise ConfigErrors(ordered, stopped=self.stopped, waiting=self.waiting)


def _merged(problems: list[BadInput]) -> list[BadInput]:
    """One problem of a shared file found through several fields at one FILE:LINE is told once, naming each field:
    fixing that line fixes them all."""
    said: dict[tuple[str, int | None, str, str | None], list[ConfigError]] = {}
    out: list[BadInput] = []
    for p in problems:
        if not isinstance(p, SharedFileError) or not p.field:
            out.append(p)
            continue
        text = p.message.removeprefix(f"{p.where} ({p.field}): ")
        key = (p.file, p.line, text, p.hint)
        if key not in said:
            said[key] = []
            out.append(p)
        said[key].append(p)
    for (file, line, text, hint), same in said.items():
        if len(same) > 1:
            # "field a, b": the word said once where each place is a key path alone; places of several parts
            # ("hypothesis h, field x") are kept whole, one from the next by "; "
            places = list(dict.fromkeys(q.field or "" for q in same))
            paths = all(f.startswith("field ") and ", " not in f for f in places)
            fields = "field " + ", ".join(f.removeprefix("field ") for f in places) if paths else "; ".join(places)
            out[out.index(same[0])] = SharedFileError(text, file=file, line=line, field=fields, hint=hint)
    return out
