"""`wb confounds` as a table on the shipped evidence (README's tour): one format for the counts in a message."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path


def test_a_variables_counts_read_as_its_strata_do(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path) -> None:
    # A variable's message gave its pooled counts as "pooled, nixl_abort_fix=off: 1/1 runs with leak,
    # nixl_abort_fix=on: 1/1 runs with leak (14/80 units) over the 2 runs ...": ", " both between the values and
    # around the clause, and "VALUE: k/n runs" where each stratum said "VALUE k/n runs" and a guard's runs were
    # joined with "; ". One format now: a group's values "VALUE k/n runs" joined with ", ", groups and clauses "; ".
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, out, err = cli("confounds", "--format", "csv", *flags)
    assert code == 0, err
    messages = {(r["kind"], r["factor"]): r["message"] for r in csv.DictReader(io.StringIO(out))}
    assert messages[("variable", "nixl_abort_fix")].startswith(
        "runs with leak, pooled over the 2 runs that can test it (pre-bf16-hicache, post-bf16-hicache-postfix): "
        "nixl_abort_fix=off 1/1 runs, nixl_abort_fix=on 1/1 runs (14/80 units); Fisher exact test in one stratum "), \
        messages[("variable", "nixl_abort_fix")]
    for (kind, _), text in messages.items():
        assert not re.search(r"\w=\w+: \d+/\d+ runs", text) and "pooled, " not in text, text


def test_a_values_counts_are_whole_numbers_with_separators(workbench_dir: Path, seed_csv: Path, cli,
                                                           tmp_path: Path) -> None:
    # The counts were written with '{:g}': 1,425,000 units read "1.425e+06" (six digits at most, then an
    # exponent), and 1,425 read "1425" where prose keeps its thousands separator.
    evidence = tmp_path / "seed-runs.csv"
    text = seed_csv.read_text()
    assert "after abort fix,bf16,on,on,80,4,300,2500,200,14," in text
    evidence.write_text(text.replace("after abort fix,bf16,on,on,80,4,300,2500,200,14,",
                                     "after abort fix,bf16,on,on,1425000,4,300,2500,200,1400001,"))
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    assert cli("import", "evidence", str(evidence), *flags)[0] == 0
    code, out, err = cli("confounds", "--format", "csv", *flags)
    assert code == 0, err
    message = {(r["kind"], r["factor"]): r["message"] for r in csv.DictReader(io.StringIO(out))}[
        ("variable", "nixl_abort_fix")]
    assert "nixl_abort_fix=on 1/1 runs (1,400,001/1,425,000 units)" in message, message
    assert "e+0" not in message, message


def test_the_table_fits_an_80_and_a_60_column_terminal(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path,
                                                       monkeypatch) -> None:
    # At COLUMNS=80 the table was drawn 135 columns wide (the terminal wrapped every line of it) with each finding's
    # message folded into a 26-character column: up to 15 lines of two or three words a finding. Each message now
    # reads under its row, across the table's width, and the table fits the terminal.
    # Below 77 columns the table ran on past the terminal even with its optional columns left out: the factor,
    # `aborts (= waiting_for_input)`, is 28 wide. Where the row has no room for it, the factor reads under the row,
    # named, before the message; no finding's factor is left out.
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, out, err = cli("confounds", "--format", "csv", *flags)
    assert code == 0, err
    findings = list(csv.DictReader(io.StringIO(out)))
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    for width in (80, 60):
        code, out, err = cli("confounds", "--format", "table", *flags, env={"COLUMNS": str(width), "NO_COLOR": "1"})
        assert code == 0, err
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= width, out
        assert not [line for line in lines if line.startswith("not shown") and "factor" in line], out
        text = [line.strip("│┃ ").rstrip() for line in lines]
        for f in findings:
            words = [w for w in (f["flag"], f["outcome"], f["kind"]) if w]
            (row,) = [i for i, line in enumerate(text)  # at 80 with the experiment, at 60 without
                      if [w for w in line.split() if w != f["experiment"]][:len(words)] == words and
                      text[i + 1].split()[:len(f["factor"].split()) + 1] == ["factor:", *f["factor"].split()]]
            below = []
            for line in text[row + 2:]:
                if not line.strip("─┼├┤└┴┘ "):
                    break
                below.append(line)
            assert " ".join(below) == f["message"], (below, f["message"])
            assert all(len(line) >= width - 30 for line in below[:-1]), below


def test_the_default_text_fits_a_terminal_and_the_readme_says_so(workbench_dir: Path, seed_csv: Path, cli,
                                                                  tmp_path: Path, monkeypatch) -> None:
    # With no flags `wb confounds` printed its findings as text lines of up to 400 characters on an 80-column
    # terminal, which broke them inside words, though the README said "On a terminal, listings are tables". The text
    # (with each proposed experiment, which the table leaves out) stays the default, the README says so, and on a
    # terminal each paragraph wraps between words at its width, indented under its finding. Piped, each is one line.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "`confounds` prints a paragraph a finding by default" in " ".join(readme.split()), "README"
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, piped, err = cli("confounds", *flags)
    assert code == 0, err
    assert max(len(line) for line in piped.splitlines()) > 200, piped  # one line an item, for grep
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("confounds", *flags, env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    # later lines indented as the first
    assert all(line.startswith(("FLAG [", "DIFF [", "     ")) for line in lines), out
    assert out.split() == piped.split(), out  # the same words, none broken


def test_a_table_on_a_terminal_says_what_its_marks_mean(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path,
                                                        monkeypatch) -> None:
    # FLAG and DIFF were explained only in --help and docs/own-service.md; the table, on a terminal, says it in a line.
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, piped, err = cli("confounds", "--format", "table", *flags)
    assert code == 0 and "DIFF:" not in piped, err
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    # A wider terminal never shows fewer columns (at 80 it left out the experiment that 70 showed: the factor took
    # the row's room there, and read under the row at 70), and the legend explains only columns shown (it explained
    # "p" where the table left p out).
    columns = {"flag", "experiment", "outcome", "kind", "factor", "p", "comparisons", "p_adjusted"}
    before: set[str] = set()
    for width in (50, 60, 70, 80, 90, 100, 120, 200):
        code, out, err = cli("confounds", "--format", "table", *flags, env={"COLUMNS": str(width), "NO_COLOR": "1"})
        assert code == 0, err
        lines = out.rstrip("\n").splitlines()
        header = lines[1].strip("┃ ").split()
        shown = set(header) | ({"factor"} if any(line.strip("│ ").startswith("factor: ") for line in lines) else set())
        assert shown <= columns and before <= shown, (width, before, out)
        note = " ".join(" ".join(lines).split("not shown at this width: ")[1:]).split(" (--format")[0]
        assert set(note.split(", ")) - {""} == columns - shown, (width, out)
        legend = " ".join(" ".join(lines[[i for i, line in enumerate(lines) if line.startswith("FLAG: ")][-1]:])
                          .split())
        assert legend.startswith("FLAG: moved with the outcome within executions") and "DIFF: only across" in legend
        explained = set(re.findall(r"(?:^|; )([a-z_]+): ", legend))
        assert explained <= shown, (width, explained, out)
        before = shown
    assert before == columns, out
