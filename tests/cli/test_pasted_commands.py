"""A command a message gives to paste is never broken by the wrapping at a terminal's width; the prose around it is,
a hint's later lines too, and a phrase or a comparison that fits on a line stays on one (workbench/wrapping.py)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

import workbench.cli._common as common
from workbench.errors import BadInput, RunFailure
from workbench.runner.lock import Holder
from workbench.runner.takeover import resume_command_at
from workbench.wrapping import WB_COMMANDS, wrap


def test_a_command_in_a_hint_stays_whole_on_one_line_and_the_prose_wraps(tmp_path: Path, capsys,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns `continue with: wb hypothesis run wedge-confound --resume --db` ended a line and the store's path
    began the next: pasted, `--db` had no value. The refusal of a held target said the same command in parentheses,
    broken alike, and its later line (the attempt's record) ran to 104 characters, not wrapped."""
    db = tmp_path / "newuser" / "ex" / "wb.duckdb"
    resume = resume_command_at(f"duckdb:///{db}", db, Path.cwd(), "wedge-confound")
    # The lock's own command, as another process wrote it: none of this one's.
    theirs = resume.replace("/newuser/", "/olduser/")
    holder = Holder.parse(json.dumps({"execution": "e1", "host": "gpu-1", "pid": 4242, "since": "2026-12-06T19:00:00",
                                      "what": "hypothesis wedge-confound", "resume": theirs}))
    assert holder is not None
    busy = (f"{holder.busy_hint('/tmp/newuser/ex/sim/wb.lock')}\n  (this attempt is recorded as execution 9, status "
            "refused: no run, no verdict; --resume passes over it)")
    monkeypatch.setattr(common, "_stderr_width", lambda: 80)
    common._report(RunFailure("interrupted after 3 of 8 runs; the target was restored",
                              hint=f"continue with: {resume}"))
    common._report(BadInput("target pdsim is in use by execution 8 of wedge-confound", hint=busy))
    common._report(BadInput("no store", hint=f"create it with: wb db upgrade --db {db}"))
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert sum(resume in line for line in lines) == 1 and sum(theirs in line for line in lines) == 1, err
    assert any(line.endswith(f"wb db upgrade --db {db}") for line in lines), err
    assert all(len(line) <= 80 or line.lstrip(" (").startswith("wb ") for line in lines), err
    assert "  (this attempt is recorded as execution 9, status refused: no run, no verdict;" in lines, err
    assert "    --resume passes over it)" in lines, err


def test_a_phrase_within_a_phrase_and_a_comparison_stay_on_one_line() -> None:
    """A phrase in parentheses too wide for a line was broken anywhere between its words, a phrase within it too
    (`P(X >=` / `15.3 | n = 111, p = 0.02)`), and `92/325` ended a line whose next began `= 28.3%`."""
    text = ("the upper bound lies beyond the predicted region (at most 2%; binomial tail P(X >= 15.3 | n = 111, "
            "p = 0.02) = 0.0001, against the region)")
    lines = wrap(text, 80, "  ")
    assert any("P(X >= 15.3 | n = 111, p = 0.02) = 0.0001," in line for line in lines), lines
    assert all(len(line) <= 80 for line in lines), lines
    lines = wrap("corruption over all units of the post-fix run, errors counted as clean: 92/325 = 28.3%", 80, "  ")
    assert lines[-1].strip() == "92/325 = 28.3%", lines
    assert wrap("wb reads ~/.ssh/config through asyncssh, which knows most options", 36)[0] == \
        "wb reads ~/.ssh/config through", "prose that starts with wb is not a command"


def test_the_wrapping_knows_every_command_the_cli_has() -> None:
    """wb's commands were listed by hand twice, for `wb --help`'s order and for the wrapping, checked only against each
    other: a command the CLI gained in neither list was prose to the wrapping ("wb foo --x," kept its comma). The
    wrapping's list is the one `wb --help` orders by, and it is the CLI's own commands."""
    import typer

    from workbench.cli.main import app
    from workbench.wrapping import _COMMAND

    group = typer.main.get_command(app)
    assert set(group.commands) == set(WB_COMMANDS), set(group.commands) ^ set(WB_COMMANDS)  # type: ignore[attr-defined]
    assert common.COMMAND_ORDER is WB_COMMANDS
    # A command after a colon, and one written out, is found for every one of wb's commands.
    assert all(_COMMAND.search(f"to see it: wb {c} --json") for c in WB_COMMANDS)
    assert all(wrap(f"see wb {c} --json, then go on", 40) == [f"see wb {c} --json", "  then go on"]
               for c in WB_COMMANDS)


def test_a_long_text_wraps_in_linear_time_and_keep_whole_remembers_a_bounded_number() -> None:
    """Each word was checked against every kept piece (a comparison, a command): 4000 comparisons took 1.7 s to wrap,
    8000 took 4.7 s. A text with 1200 commands after colons ran out of recursion (one call per command). And every
    command `keep_whole` was given was kept for the process's life, each wrap searching the text for all of them."""
    import time

    from workbench import wrapping

    text = " ".join(f"x{i} = {i}," for i in range(6000))
    start = time.process_time()
    lines = wrap(text, 80)
    assert time.process_time() - start < 0.8
    assert all(len(line) <= 80 for line in lines) and " ".join(lines).replace("   ", " ") == text
    lines = wrap("do this: rm -f /a; " * 1200, 80)
    assert "rm -f /a;" in lines[1], lines[:3]
    for i in range(1000):
        wrapping.keep_whole(f"rm -f /tmp/held-{i}.lock")
    assert len(wrapping._commands) <= 256
    assert wrap("then remove it by hand with rm -f /tmp/held-999.lock", 40)[-1] == "  rm -f /tmp/held-999.lock"


def test_prose_after_a_command_written_in_a_hint_wraps(tmp_path: Path) -> None:
    """A `wb COMMAND ...` written out runs to a word that ends in `:`, `;`, `,` or `)`: the prose after one in a hint
    ran on with it, one piece ('wb bundle export --sign wrote', 'wb review list H shows the digest to review'), past
    a narrow terminal's width. The hints put the command in backticks, which end it."""
    from workbench.team.signing import _signature_bytes

    with pytest.raises(BadInput) as caught:
        _signature_bytes(tmp_path, tmp_path / "b.wbundle")  # a folder, not a signature
    hint = caught.value.hint
    assert hint is not None and "`wb bundle export --sign`" in hint
    assert wrap(hint, 36) == ["ask the sender for the FILE.sig that", "  `wb bundle export --sign` wrote"]


def test_a_command_written_out_ends_with_its_sentence() -> None:
    """A `wb COMMAND ...` written out ran to a word ending in `:`, `;`, `,` or `)` only: one that ended its sentence
    took the next sentence with it ('(see wb runs show 5). Then fix the deployment ...' was one piece of 80
    characters at 40 columns). A folder's `.` and the `...` of flags left out are still its words."""
    lines = wrap("nothing was recorded (see wb runs show 5). Then fix the deployment and run it again", 40)
    assert all(len(line) <= 40 for line in lines), lines
    lines = wrap("the store is older than this wb: run wb db upgrade. Then run the hypothesis again", 40)
    assert all(len(line) <= 40 for line in lines) and "  wb db upgrade" in lines, lines
    assert "  wb sim up --dir . --config /srv/serve.conf" in wrap("run wb sim up --dir . --config /srv/serve.conf", 30)
    lines = wrap("resume with wb isolate ... --resume --db /a/b.duckdb", 30)
    assert "  wb isolate ... --resume --db /a/b.duckdb" in lines


def test_hints_that_name_a_command_say_it_after_a_colon_so_the_prose_wraps():
    """'wb runs list shows the run ids; nothing was deleted': a wb command written out runs to a word that ends a
    clause, so the prose after it was taken for the command's arguments and kept on one line past the width. The
    command goes after a colon, at the end of its clause."""
    from workbench.cli.runs import _run_ids
    from workbench.wrapping import wrap

    with pytest.raises(BadInput) as refused:
        _run_ids(["abc"])
    hint = refused.value.hint
    assert hint == "to see the run ids: wb runs list; nothing was deleted"
    assert all(len(line) <= 30 for line in wrap(hint, 30)), wrap(hint, 30)


def test_a_command_to_paste_ends_its_line_with_nothing_after_it() -> None:
    """A command kept whole shared its line with the prose after it ('... --db /x/wb.duckdb (it finishes'), so a
    copy to the command's end took the prose along. A kept command starts a line where it does not fit on the
    current one, and the text after it starts the next."""
    from workbench.wrapping import keep_whole

    cmd = keep_whole("wb hypothesis run wedge-confound --resume --db /tmp/x/ws/wb.duckdb")
    for width in (80, 60):
        lines = wrap(f"restore it with the command that resumes that run, {cmd} and it finishes the run's "
                     "remaining runs and frees the lock", width)
        assert any(line.endswith(cmd) for line in lines), lines
        rm = keep_whole("rm -f /tmp/x/ws/.wb/sim/serve.sh")
        lines = wrap(f"put the original back by hand with {rm} and the next wb command then frees the lock", width)
        assert any(line.endswith(rm) for line in lines) and all(len(line) <= width for line in lines), lines


@pytest.mark.parametrize("width", [80, 60])
def test_each_command_a_refusal_gives_to_paste_is_alone_on_its_line(tmp_path: Path, capsys, width: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns the commands of a held or left target's refusal, and of `wb sim down`'s note, shared their line
    with what followed: '(wb hypothesis run wedge-confound --resume --db /tmp/x/ws/wb.duckdb: it', '...wb.duckdb
    (it', '(rm -f /tmp/x/ws/.wb/sim/serve.sh: the next wb'; copied to the command's end, `--db` got the path with
    a colon, and `rm -f` removed nothing. Each command now ends its line, with nothing before it but the indent."""
    import asyncio
    import os
    import socket

    from workbench.runner.lock import Holder, TargetBusy, pid_space
    from workbench.runner.restore import take_snapshots
    from workbench.runner.targets.base import config_lock_file
    from workbench.runner.targets.local import LocalTarget
    from workbench.runner.targets.sim import refuse_while_in_use
    from workbench.runner.takeover import _put_back_by_hand, _restore_by_hand

    ws = tmp_path / "x" / "ws"
    sdir, folder = ws / ".wb" / "sim", ws / "execution-e1"
    sdir.mkdir(parents=True)
    serve, lock = sdir / "serve.sh", Path(config_lock_file(str(sdir / "serve.sh")))
    resume = resume_command_at(f"duckdb:///{ws / 'wb.duckdb'}", ws / "wb.duckdb", ws, "wedge-confound")
    serve.write_text("nixl_abort_fix=off\n")
    [snap] = asyncio.run(take_snapshots(LocalTarget(), {"local": str(serve)}, folder, owner="e" * 32)).values()
    [written] = asyncio.run(take_snapshots(LocalTarget(), {"local": str(ws / "new.conf")}, ws / "e2",
                                           owner="f" * 32)).values()
    serve.write_text("nixl_abort_fix=on\n")  # the arm's config, left by the runner killed
    gone = next(pid for pid in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{pid}"))
    holder = {"execution": "e" * 32, "host": socket.gethostname(), "pid": gone, "pid_start": "never",
              "since": "2026-12-06T19:00:00", "what": "hypothesis wedge-confound", "resume": resume,
              "folder": str(folder), "pid_space": pid_space()}
    held = Holder.parse(json.dumps({**holder, "host": "gpu-1"}))
    assert held is not None
    errors = [BadInput("target pdsim is in use", hint=held.busy_hint(f"rm -f {lock}")),
              BadInput("target local was left", hint="resume it, which puts the original back first:\n  "
                       f"{resume}\nor {_put_back_by_hand(LocalTarget(), 'local', snap, str(lock))}"),
              BadInput("left", hint=_put_back_by_hand(LocalTarget(), "local", written, str(lock))),
              BadInput("restore failed", hint=_restore_by_hand(LocalTarget(), "local", folder, "e" * 32, str(lock)))]
    lock.write_text(json.dumps(holder))  # killed (kill -9): its pid is gone
    with pytest.raises(TargetBusy) as refused:
        refuse_while_in_use(sdir, "restart")
    errors.append(refused.value)
    note = refuse_while_in_use(sdir, "down")
    assert note is not None
    lock.write_text(json.dumps({**holder, "host": "gpu-1"}))  # a live runner elsewhere
    with pytest.raises(TargetBusy) as refused:
        refuse_while_in_use(sdir, "up")
    errors.append(refused.value)
    monkeypatch.setattr(common, "_stderr_width", lambda: width)
    monkeypatch.setattr(common, "stderr_is_tty", lambda: True)
    monkeypatch.setattr(common, "terminal_width", lambda: width)
    for error in errors:
        common._report(error)
    common.echo_wrapped(f"Note: {note.note()}", err=True)
    lines = capsys.readouterr().err.splitlines()
    rm, cp, unlock = f"rm -f {ws / 'new.conf'}", f"cp {snap.local_copy} {serve}", f"rm -f {lock}"
    # The lock's removal only where the runner, elsewhere, may be gone: the two refusals of one held elsewhere.
    for cmd, times in ((resume, 5), (cp, 4), (rm, 1), (unlock, 2)):
        assert sum(cmd in line for line in lines) == times and all(
            line.strip() == cmd for line in lines if cmd in line), (cmd, lines)
    # Prose between words (a path wider than a line runs on); a command runs on, on its own line.
    assert all(len(line) <= width or line.strip() in (resume, cp, rm, unlock) or " " not in line.strip()
               for line in lines), lines


def test_the_resume_command_names_the_workbench_wherever_it_is_pasted(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Given from inside the workbench the resume command named no --root, though its --db was absolute: pasted from
    another folder it failed (`no hypotheses.yaml in /tmp`). It names the workbench's absolute folder always, quoted
    for the shell."""
    root = tmp_path / "my bench"
    (root / "sub").mkdir(parents=True)
    db = root / "wb.duckdb"
    monkeypatch.chdir(root / "sub")
    resume = resume_command_at(f"duckdb:///{db}", db, "..", "wedge-confound")
    assert resume == f"wb hypothesis run wedge-confound --resume --db '{db}' --root '{root}'", resume
    assert shlex.split(resume)[-4:] == ["--db", str(db), "--root", str(root)], resume


@pytest.mark.parametrize("width", [80, 60])
def test_a_command_written_out_ends_its_line_and_the_punctuation_after_it_is_left_out(tmp_path: Path,
                                                                                     width: int) -> None:
    """A command a hint writes out (not one `keep_whole` was given) was kept whole to the end of its clause, and
    the punctuation that ended the clause stayed on its line ('wb runs list;', 'wb sim up ... --config /b/arm.conf;',
    'wb hypothesis run wedge-confound)'): a copy to the line's end pasted it as part of the last argument. It ends
    its line as a built command does; a clause's `;` `,` `.` `:` is left out there and a `)` starts the next line."""
    from workbench.cli.runs import _run_ids
    from workbench.runner.lock import TargetBusy
    from workbench.runner.targets.sim import SimTarget

    with pytest.raises(BadInput) as refused:
        _run_ids(["abc"])
    assert refused.value.hint == "to see the run ids: wb runs list; nothing was deleted"
    assert wrap(refused.value.hint, width) == ["to see the run ids: wb runs list", "  nothing was deleted"]
    sdir = tmp_path / "sim"
    sdir.mkdir()
    (sdir / "config_path").write_text(str(tmp_path / "serve.sh"))
    with pytest.raises(TargetBusy) as busy:
        SimTarget(sim_dir=sdir, options={}).check_config_path(str(tmp_path / "arm.conf"))
    hint = busy.value.hint
    assert hint is not None
    lines = wrap(hint, width)
    cmd = f"cp {tmp_path / 'serve.sh'} {tmp_path / 'arm.conf'} && wb sim up --dir {sdir} --config {tmp_path}/arm.conf"
    assert f"  {cmd}" in lines and lines[-1] == "  or give another sim folder ($WB_SIM_DIR)", lines
    assert wrap("nothing to decide (see wb runs show 5, or run wb hypothesis run wedge-confound). Then fix it",
                width) == ["nothing to decide (see wb runs show 5", "  or run wb hypothesis run wedge-confound",
                           "  ). Then fix it"]
    # A command wb built is one only where it stands as words: not the start of a longer path.
    from workbench.wrapping import keep_whole

    keep_whole("rm -f /tmp/x/a")
    for text in ("remove it with rm -f /tmp/x/ab and then go on", "remove it with rm -f /tmp/x/a.lock and then go"):
        assert " ".join(wrap(text, 30)).split() == text.split(), wrap(text, 30)


def test_a_control_character_in_the_text_comes_out_as_it_went_in() -> None:
    """The wrapping held a command's spaces with \\x01 while it wrapped and turned every \\x01 back into a space: one
    in the text itself (a path, a title) came out as a space, in the prose and in a command alike."""
    for text in ("no hypotheses.yaml in /tmp/a\x01b, nor in any folder above it (from /tmp/a\x01b/sub)",
                 "interrupted; continue with: wb hypothesis run h\x01 --resume --db /tmp/a\x01b/wb.duckdb"):
        for width in (80, 40):
            lines = wrap(text, width)
            assert "".join(lines).count("\x01") == 2 and " ".join(" ".join(lines).split()) == text, lines


@pytest.mark.parametrize("url", ["postgresql://wb@db.example/wb?password=s3cretpw",
                                 "postgresql+psycopg://wb@db.example/wb?sslmode=require&PASSWORD=s3cretpw",
                                 "postgresql://wb@db.example/wb?sslpassword=s3cretpw"])
def test_a_resume_command_never_shows_a_password_given_in_the_urls_query(tmp_path: Path, url: str) -> None:
    """libpq takes a password in the URL's query as well as before the host: such a --db was taken for one without
    a password, and the resume commands (a run's, a search's) printed it, and the lock recorded it, in clear."""
    from workbench.settings import Settings
    from workbench.isolate.resume import _where

    assert "s3cretpw" not in resume_command_at(url, None, tmp_path, "wedge-confound")
    assert "s3cretpw" not in " ".join(_where(Settings(root=tmp_path, db=url)))


@pytest.mark.parametrize("url", ["postgresql://wb:s3cret/pw@db.example/wb", "postgresql://wb:p@ss@db.example/wb",
                                 "postgresql://wb@db.example/wb?sslmode=require&sslpassword=s3cretpw",
                                 "postgresql://wb@db.example/wb?oauth_client_secret=s3cretpw&password=pw"])
def test_a_resume_command_keeps_a_stores_url_with_its_password_masked(tmp_path: Path, url: str) -> None:
    """A --db carrying a password was left out of the resume commands (a run's, a search's): pasted, they read the
    default store, and nothing said so. The URL is given with the mask where the password goes (before the host,
    in each libpq secret parameter), for the user to replace: unchanged, the server refuses it."""
    from workbench.isolate.resume import _where
    from workbench.settings import Settings

    for words in (shlex.split(resume_command_at(url, None, tmp_path, "wedge-confound")),
                  _where(Settings(root=tmp_path, db=url))):
        db = words[words.index("--db") + 1]
        assert "s3cret" not in db and "pw@" not in db and "ss@" not in db and "<redacted>" in db, db
        assert db.startswith("postgresql://wb") and "db.example/wb" in db, db


def _search_spec():
    """A search of agent-repro's geometry_fix, as `wb isolate` builds it from its flags."""
    import math

    from workbench.isolate.adapter import IsolateSpec
    from workbench.isolate.region import parse_region

    return IsolateSpec(experiment="agent-repro", good={"geometry_fix": "on"}, bad={"geometry_fix": "off"},
                       changes=("geometry_fix",), hold={}, metric="corruption_rate", region=parse_region(">= 0.05"),
                       profile=None, alpha=0.05, budget=math.inf, seed=7, search_id="a1b2c3")


def test_a_searchs_resume_command_names_the_workbench_and_store_absolutely(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`wb isolate --root .. --db ../wb.duckdb` gave its resume command (printed, and recorded in each probe's lock
    for whoever meets it) those relative paths: pasted in another folder it found no workbench, or another store.
    They are absolute, as a run's resume command has them."""

    from workbench.isolate.resume import resume_command
    from workbench.settings import Settings

    root = tmp_path / "my bench"
    (root / "sub").mkdir(parents=True)
    monkeypatch.chdir(root / "sub")
    spec = _search_spec()
    resume = shlex.split(resume_command(spec, Settings(root=Path(".."), db="../wb.duckdb")))
    assert resume[-5:] == ["--db", str(root / "wb.duckdb"), "--root", str(root), "--resume"], resume


def test_a_searchs_resume_command_names_the_workbench_when_no_root_was_given(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A search given no --root (its workbench found from the folder it ran in) printed a resume command without
    one: pasted in another folder, it found no workbench or another. It names the store and the registry's root the
    search ran with, absolutely, as a run's resume command does."""
    from types import SimpleNamespace

    from workbench.isolate.resume import resume_command
    from workbench.settings import Settings

    root = tmp_path / "my bench"
    (root / "sub").mkdir(parents=True)
    monkeypatch.chdir(root / "sub")
    spec = _search_spec()
    store = SimpleNamespace(url=f"duckdb:///{root / 'wb.duckdb'}", path=root / "wb.duckdb")
    resume = shlex.split(resume_command(spec, Settings(), store=store, root=Path("..")))
    assert resume[-5:] == ["--db", str(root / "wb.duckdb"), "--root", str(root), "--resume"], resume
    url = SimpleNamespace(url="postgresql+psycopg://wb:s3cretpw@db.example/wb", path=None)
    resume = shlex.split(resume_command(spec, Settings(), store=url, root=root))
    assert resume[-5:] == ["--db", "postgresql+psycopg://wb:<redacted>@db.example/wb", "--root", str(root),
                           "--resume"], resume
