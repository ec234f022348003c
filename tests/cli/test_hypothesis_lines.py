"""`wb hypothesis show` and `wb hypothesis analyze` on a terminal wrap each line between words at its width, as the
run summary does (workbench/wrapping.py); piped, each item stays one line, for grep."""

from __future__ import annotations

from pathlib import Path


def test_show_and_analyze_wrap_on_a_terminal_and_not_when_piped(workbench_dir: Path, seed_csv: Path, cli,
                                                                tmp_path: Path, monkeypatch) -> None:
    # At 80 columns analyze printed a check of 459 characters and show an arm of 156, which the terminal broke
    # inside words ("27.3" / "%]"), while the summary of `wb hypothesis run` wrapped between them.
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    for args in (["analyze", "wedge-confound"], ["show", "wedge-confound"]):
        monkeypatch.setattr("workbench.cli._common.is_tty", lambda: False)
        code, piped, err = cli("hypothesis", *args, *flags)
        assert code == 0, err
        assert max(len(line) for line in piped.splitlines()) > 150, piped  # one line an item
        monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
        code, shown, err = cli("hypothesis", *args, *flags, env={"COLUMNS": "80", "NO_COLOR": "1"})
        assert code == 0, err
        lines = shown.splitlines()
        assert max(len(line) for line in lines) <= 80, (args, shown)
        assert shown.split() == piped.split(), (args, shown)  # the same words, none broken
        assert len(lines) > len(piped.splitlines()), args
