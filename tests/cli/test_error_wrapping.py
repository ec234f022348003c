"""An error's `Error:` line and `Hint:` on a terminal: prose wrapped at its width, a command to paste never broken
(each of a pasted command's lines would run as a command of its own)."""

from __future__ import annotations

import workbench.cli._common as common
from workbench.errors import BadInput, ConfigErrors, RunFailure

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


def test_the_count_line_of_several_problems_wraps_as_the_lines_above_it(monkeypatch, capsys):
    """The line after the problems (`1 problem found; ...`) was written whole, past the terminal's width, where the
    `Error:` lines above it wrap; a hypothesis refused for its parent's problem makes it long."""
    monkeypatch.setattr(common, "_stderr_width", lambda: 80)
    refused = ("hypothesis 'token-granular-geometry-deployment' is not run until it is fixed: its parent "
               "'token-granular-geometry' has it")
    common._report(ConfigErrors([BadInput("unknown field 'clam'", hint="did you mean 'claim'?")], refused=refused))
    lines = capsys.readouterr().err.splitlines()
    assert all(len(line) <= 80 for line in lines) and len(lines) == 4, lines
    assert " ".join(line.strip() for line in lines[2:]) == f"1 problem found; {refused}", lines


def test_piped_the_hint_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(common, "_stderr_width", lambda: None)
    common._report(RunFailure("stopped", hint=f"continue with: {RESUME}"))
    assert capsys.readouterr().err.splitlines() == ["Error: stopped", f"Hint: continue with: {RESUME}"]


def test_a_command_to_paste_in_any_wrapped_line_is_kept_whole_and_the_prose_after_it_wraps():
    """`wb bundle show --extract`'s "next: wb bundle import FILE --root DIR (or copy ...)" went through the same
    wrap (echo_wrapped) and was broken between the command's words on a terminal. A command after a colon is one
    unit up to a phrase in parentheses after it (outside its quotes) or the line's end."""
    from workbench.wrapping import wrap

    command = "wb bundle import /home/someone/bundles/wedge-confound.wbbundle --root /home/someone/extracted/wedge"
    lines = wrap(f"next: {command} (or copy the definitions you want into your workbench first)", 80)
    assert lines == ["next:", f"  {command}", "  (or copy the definitions you want into your workbench first)"], lines
    quoted = "wb hypothesis run h --db '/srv/a (b)/wb.duckdb'"
    lines = wrap(f"restore it by continuing: {quoted} (it puts the original back as it ends)", 60)
    assert lines[1] == f"  {quoted}" and lines[2:] == ["  (it puts the original back as it ends)"], lines
    # "wb" as a word of prose is no command: "... the value the run used: wb does not show secrets)"
    assert wrap("the run used: wb does not show secrets", 20) == ["the run used: wb", "  does not show", "  secrets"]


def test_the_restore_lines_command_that_removes_a_kept_lock_is_kept_whole():
    """The restore line (stderr's last, wrapped on a terminal by the progress) ends with what the end left: a lock
    not released, "remove it: ssh ... 'rm -f PATH'". It was broken between `ssh -p 2222` and the rest."""
    from workbench.wrapping import wrap

    remove = "ssh -p 2222 deploy@gpu-node-7 'rm -f /srv/deploy/state/wb-target.lock'"
    line = ("restored: /srv/deploy/serve.conf put back byte for byte, restarted (1 command), healthy; its lock "
            "/srv/deploy/state/wb-target.lock was NOT released (rm: cannot remove: Operation not permitted): the "
            f"target may be left locked, refusing the next run; once no run of wb is on it, remove it: {remove}")
    lines = wrap(line, 80)
    assert lines[-1] == f"  {remove}" and all(len(x) <= 80 for x in lines), lines
    # a local lock's own command ends where the next host's clause begins, without the `;` that ends its clause
    lines = wrap("h1: ... remove it: rm -f /srv/some/long/path/wb-target.lock; h2: its lock /c was NOT released", 40)
    assert lines == ["h1: ... remove it:", "  rm -f /srv/some/long/path/wb-target.lock",
                     "  h2: its lock /c was NOT released"], lines


def test_errors_wrap_at_the_width_of_the_terminal_stderr_is_on(monkeypatch):
    """The width was the one rich gives stdout: with stdout piped (`wb ... | less`, a script capturing it) an
    error on a 60-column terminal was wrapped at 80, or at whatever $COLUMNS said of another terminal."""
    import fcntl
    import os
    import struct
    import sys
    import termios

    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    with open(side, "w", closefd=True) as tty:
        monkeypatch.setattr(sys, "stderr", tty)
        monkeypatch.delenv("COLUMNS", raising=False)
        try:
            assert common._stderr_width() == 60
            # A warning on stderr (`echo_wrapped(..., err=True)`) too: it took stdout's width.
            common.echo_wrapped("warning: " + "the site was built from another store than this one, " * 2, err=True)
            tty.flush()
            lines = os.read(main, 4096).decode().splitlines()
            assert len(lines) > 1 and all(len(line) <= 60 for line in lines), lines
        finally:
            os.close(main)


def test_validates_count_line_wraps_on_a_terminal_and_is_one_line_piped(monkeypatch, capsys):
    """`wb hypothesis validate`'s last line ('1 problem found; more may show once it is fixed (...)', 155
    characters) was written as it was on a terminal too, past its width."""
    from workbench.errors import BadInput, ConfigErrors

    error = ConfigErrors([BadInput("hypotheses.yaml:3: field isolates: unknown variable x")], waiting=True)
    summary = error.summary()
    assert len(summary) > 80
    monkeypatch.setattr(common, "_stderr_width", lambda: 80)
    common._report(error)
    lines = capsys.readouterr().err.splitlines()
    assert lines[1] == "1 problem found; more may show once it is fixed (a hypothesis with a problem in", lines
    assert all(len(line) <= 80 for line in lines) and " ".join(s.strip() for s in lines[1:]) == summary, lines
    monkeypatch.setattr(common, "_stderr_width", lambda: None)
    common._report(error)
    assert capsys.readouterr().err.splitlines()[1:] == [summary]
