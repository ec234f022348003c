"""Unix habits of every command, through the real `wb` console script: pipes, formats, the JSON envelope,
exit codes, NO_COLOR, a closed pipe, shell completion."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from terminal_kit import in_a_terminal

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

WB = str(Path(sys.executable).with_name("wb"))
REPO = Path(__file__).resolve().parents[2]
SEED_CSV = REPO / "evidence" / "seed-runs.csv"


def sh(cmd: str, env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, env=env,
                          timeout=120, **kw)


def _env(home: Path, seed_csv: Path) -> dict[str, str]:
    env = {**os.environ, "WB_ROOT": str(home / "wbroot"), "WB_DB": str(home / "wb.duckdb"), "WB": WB,
           "SEED": str(seed_csv)}
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per module (two wb processes each test would otherwise repeat): a workbench with the
    seed's evidence imported and wedge-confound's verdict recorded."""
    home = tmp_path_factory.mktemp("seeded")
    (home / "wbroot").mkdir()
    shutil.copy(REPO / "hypotheses.yaml", home / "wbroot" / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", home / "wbroot" / "experiments")
    setup = sh('"$WB" import evidence "$SEED" && "$WB" hypothesis analyze wedge-confound', _env(home, SEED_CSV))
    assert setup.returncode == 0, setup.stderr
    return home


@pytest.fixture
def wbenv(tmp_path: Path, seeded: Path) -> dict[str, str]:
    """A private copy of the seeded workbench and its store: a test may write to it."""
    home = tmp_path / "seeded"
    shutil.copytree(seeded, home)
    return _env(home, SEED_CSV)


def test_piped_listings_keep_whole_values(wbenv):
    """`wb lineage` through a pipe is checked in test_lineage_draws_a_tree_that_fits_the_terminal (one process
    serves both)."""
    got = sh('"$WB" runs list | grep post-bf16-hicache-postfix', wbenv)
    assert got.returncode == 0, got.stderr
    (row,) = got.stdout.splitlines()
    # every value whole on one line: nothing cut at 80 columns, nothing folded mid-word
    assert "hicache=on index_k_dtype=bf16 nixl_abort_fix=on" in row and "wall_s=346.3" in row and "…" not in row
    got = sh('"$WB" hypothesis list | grep "^wedge-confound "', wbenv)
    assert got.stdout.split()[:5] == ["wedge-confound", "hicache-bf16-race", "ab", "nixl_abort_fix", "falsified"]
    # the note column: this status comes from `analyze` pooling the imported evidence, so it is exploratory
    assert got.stdout.split()[5] == "exploratory:" and len(got.stdout.splitlines()) == 1


def test_lineage_draws_a_tree_that_fits_the_terminal(wbenv, cli):
    # Every child was drawn with `└─`, siblings that are not last included, and at 80 columns the lines ran to
    # 99-127 characters though claims were cut with `…`: now `├─` for a sibling with more below it, `│` carrying
    # its parent's line past it, and on a terminal each claim wraps at the terminal's width (never in a pipe).
    import re

    tree = ["hicache-bf16-race",
            "├─ wedge-confound",
            "│  └─ pool-configurator-overcommit",
            "├─ dead-code-dsaindexerpoolhost",
            "│  ├─ live-hostpool-control",
            "│  └─ dead-code-hicache-off",
            "└─ token-granular-geometry",
            "   └─ token-granular-geometry-deployment"]
    got = sh('"$WB" lineage', wbenv)
    assert got.returncode == 0, got.stderr
    assert [line.split("  [")[0] for line in got.stdout.splitlines()] == tree, got.stdout
    assert "…" not in got.stdout
    # the lineage tree in a pipe: a claim is cut to fit a terminal, never in a pipe (the claim read in process)
    code, out, err = cli("hypothesis", "show", "hicache-bf16-race", "--json", env=wbenv)
    claim = json.loads(out)["claim"]
    assert len(claim) > 80 and [line for line in got.stdout.splitlines() if line.startswith("hicache-bf16-race ")] \
        == [f"hicache-bf16-race  [open]  {claim}"], got.stdout
    # On a terminal each claim was cut to the width with `…`, where every other line of the CLI wraps: it wraps
    # between words now, its later lines under the tree's lines carried down, and every word of it is shown.
    shown = in_a_terminal(["lineage"], {**wbenv, "COLUMNS": "80", "NO_COLOR": "1"}, timeout_s=60).decode()
    lines = [re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", line).rstrip("\r") for line in shown.splitlines()]
    heads = [line for line in lines if re.search(r"  \[[a-z]+\]  \S", line)]  # the status whole, a claim after it
    assert [line.split("  [")[0] for line in heads] == tree and len(lines) > len(heads), shown
    assert max(len(line) for line in lines) <= 80 and "…" not in shown, shown
    guides = {"│", "├─", "└─"}
    assert [w for w in " ".join(lines).split() if w not in guides] == \
        [w for w in got.stdout.split() if w not in guides], shown
    assert all(line.startswith(("│ ", "   ")) for line in lines if line not in heads), shown  # under the tree


def test_tsv_and_csv_cut_and_parse(wbenv, cli):
    """One listing through `cut` in a real pipe; the other formats and the refusal are wb's own code, read in
    process (a closed pipe after a header line is test_closed_pipe_ends_quietly_with_exit_0's)."""
    got = sh('"$WB" runs list --format tsv | cut -f2', wbenv)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == "label" and "post-bf16-hicache-postfix" in got.stdout.splitlines()
    code, out, err = cli("lineage", "--format", "csv", env=wbenv)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["id"]: r["status"] for r in rows}["wedge-confound"] == "falsified"
    assert {r["id"]: r["depth"] for r in rows}["token-granular-geometry-deployment"] == "2"
    code, out, err = cli("confounds", "--format", "tsv", env=wbenv)
    assert code == 0, err
    assert out.splitlines()[0].split("\t") == ["flag", "experiment", "outcome", "kind", "factor", "p",
                                               "comparisons", "p_adjusted", "message", "proposal"]
    code, out, err = cli("runs", "list", "--format", "xml", env=wbenv)
    assert code == 2 and "Error: --format 'xml' is not one of table, json, csv, tsv" in err


def test_closed_pipe_ends_quietly_with_exit_0(wbenv):
    got = sh('"$WB" confounds | head -1', wbenv)
    assert got.returncode == 0 and got.stderr == "" and got.stdout.startswith("FLAG")
    # A reader that is gone before wb writes: every write fails with EPIPE, deterministically.
    for args in (["confounds"], ["runs", "list"], ["lineage", "--json"]):
        r, w = os.pipe()
        os.close(r)
        proc = subprocess.run([WB, *args], stdout=w, stderr=subprocess.PIPE, text=True, env=wbenv, timeout=120)
        os.close(w)
        assert (proc.returncode, proc.stderr) == (0, ""), (args, proc.stderr)


def test_a_closed_pipe_keeps_the_exit_code_a_failure_or_a_fail_on_gate_sets(wbenv):
    """`wb hypothesis analyze ID --fail-on falsified | head -1` under pipefail exited 0: the closed pipe stopped the
    command at its next line, before the --fail-on gate (exit 3), so a CI job read its gate as passed. A failing
    command's --json envelope on a closed pipe likewise ended in 0 (under a group), 1, or a traceback (a usage
    error). The reader going away ends the output, not the command: its own exit code stands."""
    got = sh('"$WB" hypothesis analyze wedge-confound --no-record --fail-on falsified | head -1', wbenv)
    assert got.returncode == 3 and got.stdout == "wedge-confound: falsified\n", (got.returncode, got.stderr)
    assert "verdict falsified is in --fail-on (falsified): exit 3" in got.stderr, got.stderr
    for args, code in ((["hypothesis", "analyze", "wedge-confound", "--no-record", "--fail-on", "falsified"], 3),
                       (["runs", "list", "--hypothesis", "nope", "--json"], 2),
                       (["report", "--format", "md", "--open", "--json"], 2),
                       (["runs", "list", "--bogus", "--json"], 2)):
        r, w = os.pipe()
        os.close(r)  # the reader has gone before wb writes a line: deterministic
        proc = subprocess.run([WB, *args], stdout=w, stderr=subprocess.PIPE, text=True, env=wbenv, timeout=120)
        os.close(w)
        assert proc.returncode == code and "Traceback" not in proc.stderr, (args, proc.returncode, proc.stderr)


def _closed_pipe_run(args: list[str], env: dict[str, str], *, stdout_closed: bool = True,
                     stderr_closed: bool = True) -> subprocess.CompletedProcess:
    """`wb ARGS` whose reader has gone before wb writes a line (`2>&1 | true`, `2>&1 | head -1` once head has its
    line): each stream named closed is a pipe whose read end is closed at once, so every write to it fails."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([WB, *args], stdout=w if stdout_closed else subprocess.PIPE,
                              stderr=w if stderr_closed else subprocess.PIPE, text=True, env=env, timeout=120)
    finally:
        os.close(w)


def test_a_closed_stderr_keeps_the_exit_code_wb_gives(wbenv):
    """`wb hypothesis validate 2>&1 | true` exited 0 for a file with an unknown field (2 with `2>/dev/null`), `wb
    runs show 999 2>&1 | true` 0 (2), `wb hypothesis analyze ID --fail-on falsified 2>&1 | head -1` 0 (3): the
    `Error:` line or the gate's line failing on the closed pipe ended the command, and its boundary read that as
    a success. Whatever the pipes do, the exit code is wb's own."""
    hyp = Path(wbenv["WB_ROOT"]) / "hypotheses.yaml"
    text = hyp.read_text()
    assert "\n  - id: dead-code-dsaindexerpoolhost\n" in text
    hyp.write_text(text.replace("\n  - id: dead-code-dsaindexerpoolhost\n",
                                "\n  - id: dead-code-dsaindexerpoolhost\n    colour: blue\n"))
    for args, code in ((["hypothesis", "validate"], 2),  # the file's error, after its lines on stdout
                       (["runs", "show", "999"], 2),  # an Error: line alone
                       (["runs", "list", "--bogus"], 2),  # the parser's Error:
                       (["hypothesis", "analyze", "wedge-confound", "--no-record", "--fail-on", "falsified"], 3),
                       (["hypothesis", "list"], 0)):  # lists the other entries and warns of the broken one
        got = _closed_pipe_run(args, wbenv)
        assert got.returncode == code, (args, got.returncode)
        got = _closed_pipe_run(args, wbenv, stdout_closed=False)
        assert got.returncode == code, (args, got.returncode, got.stdout)
    # stdout closed, stderr read: the command still tells its error, and no traceback
    got = _closed_pipe_run(["hypothesis", "validate"], wbenv, stderr_closed=False)
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr
    assert "Error: " in got.stderr and "unknown field 'colour'" in got.stderr, got.stderr


ENVELOPED = [
    (["hypothesis", "list", "--json"], "hypothesis list", "items"),
    (["hypothesis", "show", "wedge-confound", "--json"], "hypothesis show", "definition"),
    (["hypothesis", "validate", "--json"], "hypothesis validate", "files"),
    (["hypothesis", "analyze", "wedge-confound", "--no-record", "--json"], "hypothesis analyze", "verdict"),
    (["runs", "list", "--json"], "runs list", "items"),
    (["runs", "list", "--format", "json"], "runs list", "items"),
    (["runs", "show", "1", "--json"], "runs show", "variables"),
    (["confounds", "--json"], "confounds", "items"),
    (["lineage", "--json"], "lineage", "edges"),
    (["report", "--format", "md", "--json"], "report", "markdown"),
    (["db", "current", "--json"], "db current", "revision"),
    (["db", "upgrade", "--json"], "db upgrade", "after"),
    (["import", "evidence", "SEED", "--json"], "import evidence", "skipped"),
    (["sim", "down", "--dir", "SIMDIR", "--json"], "sim down", "stopped"),
    (["runs", "delete", "6", "--yes", "--json"], "runs delete", "deleted"),  # last: it removes a run
]


def test_every_command_prints_one_versioned_envelope(wbenv, tmp_path, cli):
    """In process (the envelope is wb's code, not the console script's; a process each took a minute of
    the suite on a loaded machine), and the first command once more through the real `wb` script."""
    for args, command, key in ENVELOPED:
        args = [wbenv["SEED"] if a == "SEED" else str(tmp_path / "sim") if a == "SIMDIR" else a for a in args]
        code, out, err = cli(*args, env=wbenv)
        assert code == 0, (args, err)
        d = json.loads(out)
        assert (d["wb"], d["command"]) == (1, command) and key in d, (args, list(d))
    proc = subprocess.run([WB, *ENVELOPED[0][0]], capture_output=True, text=True, env=wbenv, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["command"] == ENVELOPED[0][1], proc.stderr


def test_root_and_db_flags_reach_every_reading_command(wbenv, tmp_path, cli, monkeypatch):
    env = {k: v for k, v in wbenv.items() if k not in ("WB_ROOT", "WB_DB")}
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.chdir(tmp_path)  # no workbench and no store here: only the flags can find them
    flags = ["--root", wbenv["WB_ROOT"], "--db", wbenv["WB_DB"]]
    for args in (["runs", "list"], ["runs", "show", "1"], ["lineage"], ["report", "--format", "md"], ["confounds"],
                 ["hypothesis", "list"], ["hypothesis", "analyze", "wedge-confound", "--no-record"], ["db", "current"]):
        code, out, err = cli(*args, *flags, env=env)
        assert code == 0, (args, err)
    assert not (tmp_path / "wb.duckdb").exists()


def test_fail_on_turns_a_verdict_into_exit_3(wbenv, cli):
    """In process: the gate is wb's code; a real process ending in 3 under a pipe is
    test_a_closed_pipe_keeps_the_exit_code_a_failure_or_a_fail_on_gate_sets's."""
    base = ["hypothesis", "analyze", "wedge-confound", "--no-record"]
    assert cli(*base, "--fail-on", "falsified,invalid", env=wbenv)[0] == 3
    assert cli(*base, "--fail-on", "invalid,inconclusive", env=wbenv)[0] == 0
    code, out, err = cli(*base, "--fail-on", "falsifed", env=wbenv)
    assert code == 2 and "Error: --fail-on 'falsifed': unknown verdict falsifed" in err


def _in_a_terminal(args: list[str], env: dict[str, str]) -> bytes:
    """Run wb with a pseudo-terminal as stdout (rich then colours), returning what it wrote."""
    return in_a_terminal(args, {**env, "COLUMNS": "100"}, timeout_s=60)


@pytest.mark.parametrize("args", [["--help"], ["hypothesis", "list"]])
def test_no_color_leaves_out_bold_and_dim_too(wbenv, args):
    """Any non-empty NO_COLOR turns off every style (https://no-color.org), not only the colours: the help and a
    table on a terminal were still written bold and dim. Without it the same terminal is styled (the check can fail)."""
    import re

    style = re.compile(rb"\x1b\[[0-9;]*m")
    styled = _in_a_terminal(args, {**wbenv, "TERM": "xterm-256color"})
    assert style.search(styled), styled[:200]
    plain = _in_a_terminal(args, {**wbenv, "TERM": "xterm-256color", "NO_COLOR": "1"})
    assert b"hypothes" in plain and not style.search(plain), style.findall(plain)
    if args == ["--help"]:  # NO_COLOR is honoured: the same two terminals (was test_no_color_is_honoured)
        color = re.compile(rb"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38;)")
        assert color.search(styled), styled[:200]  # the check can fail: a terminal gets colour by default
        assert b"hypothesis" in plain and not color.search(plain)


def test_shell_completion_installs_with_the_shell_named_not_the_parent_process(tmp_path, wbenv):
    """One install serves what test_shell_completion_installs and
    test_completion_uses_the_shell_named_not_the_parent_process each asserted: it is written and sourced."""
    env = {**wbenv, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    shown = subprocess.run([WB, "--show-completion", "bash"], capture_output=True, text=True, env=env, timeout=60)
    assert shown.returncode == 0 and "_WB_COMPLETE" in shown.stdout
    # Run from sh (as a script or CI would), typer's flag ignored "bash" and failed: "Shell sh is not supported".
    env = {**wbenv, "HOME": str(tmp_path)}
    done = subprocess.run(["sh", "-c", f"'{WB}' --install-completion bash"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "_WB_COMPLETE" in (tmp_path / ".bash_completions" / "wb.sh").read_text()
    assert ".bash_completions/wb.sh" in (tmp_path / ".bashrc").read_text()
    shown = subprocess.run(["sh", "-c", f"'{WB}' --show-completion zsh"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith("#compdef wb")
    bad = subprocess.run([WB, "--install-completion", "tcsh"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("Error: --install-completion: 'tcsh' is not one of")
    assert "Traceback" not in bad.stderr


def test_validate_says_one_hypothesis_in_the_singular(tmp_path, workbench_dir, cli):
    one = tmp_path / "one.yaml"
    text = (workbench_dir / "hypotheses.yaml").read_text()
    head, _, _ = text.partition("\n  - id: wedge-confound")
    one.write_text(head.replace("tested_by: wedge-confound", "").replace(
        "tested_by: dead-code-dsaindexerpoolhost", "") + "\n")
    code, out, err = cli("hypothesis", "validate", str(one), "--root", str(workbench_dir))  # wb's wording: in process
    assert code == 0, err
    assert out.strip() == f"{one}: 1 hypothesis ok"


@pytest.mark.parametrize("args", [["import", "evidence"], ["hypothesis", "validate"]], ids=" ".join)
def test_ctrl_c_in_a_command_of_a_group_says_interrupted_once_and_exits_130(tmp_path: Path, args: list[str]):
    """Ctrl-C while `wb import evidence` waits on its file (a named pipe nobody writes): each command group's
    error boundary reported it in turn, so "Interrupted." came twice."""
    import errno
    import signal
    import time

    shutil.copy(REPO / "hypotheses.yaml", tmp_path / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)
    env = {**os.environ, "WB_ROOT": str(tmp_path), "WB_DB": str(tmp_path / "wb.duckdb"), "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen([WB, *args, str(fifo)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    writer = None
    try:
        deadline = time.monotonic() + 60
        while writer is None:  # a writer can open the pipe once wb has opened it to read; wb then waits for data
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                assert exc.errno == errno.ENXIO and time.monotonic() < deadline and proc.poll() is None, exc
                time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # say where wb waits: its signal state, and its stack (faulthandler)
            masks = [line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                     if line.startswith(("SigBlk", "SigIgn", "SigCgt", "State"))]
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"wb did not end on Ctrl-C within 60 s: {masks}\n{err}")
    finally:
        proc.kill()
        if writer is not None:
            os.close(writer)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err == "Interrupted.\n" and out == "", err
    assert not (tmp_path / "wb.duckdb").exists()


@pytest.mark.parametrize("listing, whole, fits", [
    (["hypothesis", "list"], ["id", "parent", "status"], True),
    (["runs", "list"], ["id", "label", "hypothesis", "arm", "status"], True),
    (["review", "list"], ["hypothesis", "state", "verdict"], True),
])
def test_a_terminal_table_never_breaks_an_id_or_a_status(wbenv, cli, listing, whole, fits):
    # On an 80-column terminal `wb hypothesis list` showed `hicache-bf` / `16-race` and `inconclusi` / `ve`:
    # ids and statuses must stay whole on one line (other columns wrap, or the line runs on).
    # It then ran to 128 columns, so the terminal wrapped every line: a column it can do without (the parent,
    # which `wb lineage` draws) is left out, and a line under the table says so. `wb runs list` ran to 109
    # columns: its metrics, what a user lists runs for, read under each row instead. Its hypothesis and
    # arm columns, empty for every imported run, are left out.
    import csv
    import io
    import re

    code, out, err = cli(*listing, "--format", "csv", env=wbenv)  # the values to look for, read in process
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    values = {r[c] for r in rows for c in whole if r.get(c) not in (None, "", "-")}  # "-": no parent
    assert any(len(v) > 12 for v in values), values  # long enough that a squeezed column would fold one
    shown = in_a_terminal(listing, {**wbenv, "COLUMNS": "80", "NO_COLOR": "1"}, timeout_s=60).decode()
    lines = [re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", line) for line in shown.splitlines()]
    broken = sorted(v for v in values if not any(re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", line)
                                                  for line in lines))
    assert not broken, (broken, "\n".join(lines))
    if fits:
        assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    if listing == ["hypothesis", "list"]:
        assert "not shown at this width: parent" in shown and "--format tsv shows every column" in shown, shown
    if listing == ["runs", "list"]:
        # its metrics (and, when none fits, its variables) read under each row, named, rather than left out
        assert "metrics: " in shown and "variables" in shown and "not shown at this width" not in shown, shown
