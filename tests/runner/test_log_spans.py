"""A run's log artifact holds the span of the log its log metrics count: from the workload's start (after the
restart and health checks, where `run_start` is taken) until the metrics were collected, cut out of a log the
deployment appends to across runs and executions; a log rotated during the run is copied from the new file's start,
never cut at the old one's byte. The listing says which bytes it covers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from runner_kit import add_toy_ssh_profile, edit_profile, run_hypothesis, store_rows  # noqa: E402  (on sys.path)

COUNT = 'waiting_for_input: {command: "cat {{ state }}/aborts.txt", parse: int}'


def _artifact(db: str, run_id: int, name: str) -> Path:
    ((path,),) = store_rows(db, "SELECT path FROM artifacts WHERE run_id = :r AND name = :n", r=run_id, n=name)
    return Path(path)


def _service_log(toy, *, after_count: str = "echo counted") -> int:
    """The toy's service log declared as an artifact, with lines from before this execution (a long-lived
    deployment's log); the metric command writes to it after counting (`after_count`). Its size."""
    edit_profile(toy.root, '      restarts: "{{ state }}/restarts.log"\n',
                 '      restarts: "{{ state }}/restarts.log"\n      service: "{{ state }}/service.log"\n')
    edit_profile(toy.root, COUNT,
                 COUNT.replace('aborts.txt"', f'aborts.txt; {after_count} >> {{{{ state }}}}/service.log"'))
    log = toy.state / "service.log"
    log.write_text("".join(f"earlier {i}\n" for i in range(50)))
    return log.stat().st_size


def _span_line(cli, db: str, run_id: int, name: str) -> str:
    code, out, err = cli("runs", "show", str(run_id), "--db", db)
    assert code == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith(f"artifact {name}:")]
    return line


def _check_each_run_holds_its_workloads_span(toy, runs: list[dict], cli) -> None:
    full = (toy.state / "service.log").read_text().splitlines(keepends=True)
    works = [i for i, line in enumerate(full) if line.startswith("work ")]
    assert len(works) == len(runs) and all(full[i - 1].startswith("restart ") for i in works), full
    for r, i in zip(runs, works):
        assert _artifact(toy.db, r["id"], "service").read_text() == full[i], r["id"]  # no restart, no "counted"
        assert full[i + 1] == "counted\n"  # what the metric command wrote after it counted
        start = sum(len(line) for line in full[:i])
        line = _span_line(cli, toy.db, r["id"], "service")
        assert f"bytes {start}-{start + len(full[i])} of {toy.state / 'service.log'} (written from the workload's " \
               "start until its metrics were collected" in line, line
        # What the collect commands wrote is out of the span, and said: a count that read the log then saw it.
        assert "; 8 B were written to it while the collect commands ran, after this span's end" in line, line
        code, out, err = cli("runs", "show", str(r["id"]), "--db", toy.db, "--json")
        spans = json.loads(out)["artifact_spans"]
        assert spans["service"]["from_byte"] == start and spans["service"]["source"].endswith("service.log")
        assert spans["service"]["written_while_collecting"] == len("counted\n"), spans


def test_a_runs_log_is_the_span_its_log_metrics_count_and_its_page_says_so(toy, cli, monkeypatch):
    """The copy began at the run's start, before the restart, while a count `--since {{ run_start }}` begins at
    the workload: the restart's lines were in the copy and in no count. It went on past the count, too."""
    before = _service_log(toy)
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=True)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    _check_each_run_holds_its_workloads_span(toy, s["runs"], cli)
    # On an 80-column terminal the artifact line (its path, size, hash and span) ran on whole, past 200 characters:
    # it wraps between words there, as every line of `wb runs show` does; piped it stays one line (above).
    piped = _span_line(cli, toy.db, s["runs"][0]["id"], "service")
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("runs", "show", str(s["runs"][0]["id"]), "--db", toy.db, env={"COLUMNS": "80"})
    assert code == 0 and len(piped) > 80, (err, piped)
    at = out.index("artifact service:")
    shown = out[at:].split("\nartifact ")[0].split("\nprovenance:")[0].splitlines()
    # a word wider than the terminal (the artifact's path under pytest's tmp folder) runs on, never broken
    assert len(shown) > 1 and all(len(line) <= 80 for line in out.splitlines() if len(line.split()) > 1), out
    assert " ".join(" ".join(shown).split()) == " ".join(piped.split()), (shown, piped)
    first_restart = (toy.state / "service.log").read_text().splitlines(keepends=True)[50]
    page = (toy.root / "reports" / "runs" / f"{s['runs'][0]['id']}.html").read_text()
    assert f"bytes {before + len(first_restart)}-" in page, page
    assert "written from the workload&#39;s start until its metrics were collected" in page, page


def test_a_log_fetched_over_ssh_is_cut_the_same_way(toy, ssh_server, cli):
    _service_log(toy)
    add_toy_ssh_profile(toy, ssh_server)
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False, target="ssh")
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    _check_each_run_holds_its_workloads_span(toy, s["runs"], cli)


ROTATIONS = {
    # logrotate's default: the log renamed away and a new one begun, here regrown past the old one's start byte
    "renamed": ('        (state / "service.log").rename(state / "service.log.1")\n'
                '        (state / "service.log").write_text("".join(f"regrown {i}\\n" for i in range(200)))\n',
                "true", "".join(f"regrown {i}\n" for i in range(200))),
    # copytruncate: the same file emptied and regrown past the old start byte before the count (only its bytes
    # before that byte tell it from the old log grown), regrown further after the count
    "truncated": ('        with open(state / "service.log", "r+") as log:\n'
                  '            log.truncate(0)\n'
                  '            log.write("".join(f"regrown {i}\\n" for i in range(200)))\n',
                  "seq 1000 | sed s/^/regrown-later-/", "".join(f"regrown {i}\n" for i in range(200))),
}


@pytest.mark.parametrize("how,target", [("renamed", "local"), ("truncated", "local"), ("renamed", "ssh")])
def test_a_log_rotated_and_regrown_is_copied_from_the_new_files_start(toy, cli, how, target, request):
    """A log rotated during the run and grown past the byte it had reached at the span's start was cut there,
    in the middle of another file: the copy is now the new file from its byte 0, and the listing says why. Over
    SSH too, where SFTP tells no inode (the host's `stat` does): the loopback server, as the test above."""
    rotate, after_count, expected = ROTATIONS[how]
    before = _service_log(toy, after_count=after_count)
    if target == "ssh":
        add_toy_ssh_profile(toy, request.getfixturevalue("ssh_server"))
    toy_py = toy.state / "toy.py"
    text = toy_py.read_text()
    work = '            f.write(f"work fix={c.get(\'fix\')}\\n")\n'
    assert work in text
    toy_py.write_text(text.replace(work, work + rotate))
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False, target=target)
    r = s["runs"][0]
    assert r["status"] == "ok" and (toy.state / "service.log").stat().st_size > before
    assert _artifact(toy.db, r["id"], "service").read_text() == expected
    line = _span_line(cli, toy.db, r["id"], "service")
    assert f"bytes 0-{len(expected)} of {toy.state / 'service.log'} (the log was rotated during the run" in line, line


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_log_truncated_in_place_and_regrown_past_the_start_is_told_as_a_rotation(tmp_path, kind, request):
    """copytruncate, then more lines than the log held at the span's start, all between two checks: the same file
    (device and inode), larger than at the start, so it passed as the old log grown and its copy was cut at the
    start's byte, in the middle of the new file. The bytes just before the start offset are fingerprinted as the
    span begins and again at each check (at the same offset): changed, the file was replaced. Over SSH too, by the
    host's own commands, with a path that needs quoting for its shell."""
    from workbench.runner.targets.local import LocalTarget

    log = tmp_path / "it's a log" / "service.log"
    log.parent.mkdir()
    log.write_text("".join(f"earlier {i}\n" for i in range(50)))
    if kind == "ssh":
        from workbench.registry.experiment import TargetSpec
        from workbench.runner.targets.ssh import SshTarget

        server = request.getfixturevalue("ssh_server")
        target, host = SshTarget(TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=server.user, port=server.port,
                                            known_hosts=str(server.known_hosts),
                                            identity_file=str(server.client_key_path))), "127.0.0.1"
    else:
        target, host = LocalTarget(), "local"

    async def checks():
        await target.open()
        try:
            start = await target.file_stat(host, str(log))
            with log.open("a") as f:
                f.write("work fix=on\n")
            grown = await target.file_stat(host, str(log), at=start.size)
            with log.open("r+") as f:  # in place: the same inode, as copytruncate leaves it
                f.truncate(0)
                f.write("".join(f"regrown {i}\n" for i in range(200)))
            regrown = await target.file_stat(host, str(log), at=start.size)
            log.write_text("short\n")
            shorter = await target.file_stat(host, str(log), at=start.size)
            return start, grown, regrown, shorter
        finally:
            await target.close()

    start, grown, regrown, shorter = asyncio.run(checks())
    assert grown.size > start.size and not grown.replaced_since(start), (start, grown)
    assert regrown.size > start.size and regrown.identity == start.identity, (start, regrown)
    assert regrown.replaced_since(start) and shorter.replaced_since(start), (start, regrown)


def test_an_ssh_hosts_fingerprint_seeks_to_its_bytes_and_does_not_read_the_log_from_its_start(tmp_path, request,
                                                                                              monkeypatch):
    """The bytes before a span's start were read over ssh by `head -c START | tail -c 256`, every byte of the log
    up to the start at each check: a log of many GB took longer than the check's timeout, and the check fell back
    to SFTP's size alone, losing the file's identity and fingerprint. Here a sparse log of 1 TiB, read from its
    start, could never be fingerprinted within the check's timeout."""
    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets import ssh_files
    from workbench.runner.targets.ssh import SshTarget

    monkeypatch.setattr(ssh_files, "STAT_TIMEOUT_S", 10.0)
    log = tmp_path / "huge.log"
    with log.open("wb") as f:
        f.truncate(1 << 40)
        f.seek((1 << 40) - 6)
        f.write(b"tail!\n")
    server = request.getfixturevalue("ssh_server")
    target = SshTarget(TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=server.user, port=server.port,
                                  known_hosts=str(server.known_hosts), identity_file=str(server.client_key_path)))

    async def check():
        await target.open()
        try:
            return await target.file_stat("127.0.0.1", str(log))
        finally:
            await target.close()

    from workbench.runner.targets.base import tail_fingerprint

    stat = asyncio.run(check())
    assert stat is not None and stat.size == 1 << 40 and stat.identity is not None, stat
    assert stat.tail == tail_fingerprint(b"\0" * 250 + b"tail!\n") and stat.tail_at == 1 << 40, stat
