"""An error's `Error:` line and `Hint:` on a terminal: prose wrapped at its width, a command to paste never broken
(each of a pasted command's lines would run as a command of its own)."""

from __future__ import annotations

import workbench.cli._common as common
from workbench.errors import RunFailure

RESUME = ("wb hypothesis run wedge-confound --resume --root /home/someone/projects/deploy-debugging "
          "--db /home/someone/projects/deploy-debugging/wb.duckdb")


def test_a_resume_command_in_a_hints_first_line_is_kept_whole_on_a_terminal(monkeypatch, capsys):
    """Ctrl-C's `Hint: continue with: wb hypothesis run ... --resume ...` (one line) was wrapped between words at
    80 columns, so the command to paste ran over three lines."""
    monkeypatch.setattr(common, "_stderr_width", lambda: 80)
    common._report(RunFailure("interrupted after 3 of 8 runs; the target was restored",
                              hint=f"continue with: {RESUME}"))
    lines = capsys.readouterr().err.splitlines()
    assert any(line.strip() == RESUME for line in lines) or f"Hint: continue with: {RESUME}" in lines, lines
    assert lines[1].startswith("Hint: continue with:"), lines


def test_a_short_resume_command_stays_on_the_hints_line_and_prose_still_wraps(monkeypatch, capsys):
    monkeypatch.setattr(common, "_stderr_width", lambda: 80)
    prose = "no probe was decided yet, and what was recorded of this attempt stays; the search resumes with"
    common._report(RunFailure("stopped", hint=f"{prose}: wb isolate --resume 3"))
    lines = capsys.readouterr().err.splitlines()
    assert all(len(line) <= 80 for line in lines) and len(lines) == 3, lines
    assert lines[-1].endswith("resumes with: wb isolate --resume 3"), lines


def test_piped_the_hint_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(common, "_stderr_width", lambda: None)
    common._report(RunFailure("stopped", hint=f"continue with: {RESUME}"))
    assert capsys.readouterr().err.splitlines() == ["Error: stopped", f"Hint: continue with: {RESUME}"]
