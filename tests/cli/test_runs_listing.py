"""`wb runs list` and `wb runs show` for scripts and spreadsheets: a column per variable and per metric, derived
metrics shown apart from measured ones, counts as whole numbers."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))


@pytest.fixture
def seeded(tmp_path: Path, workbench_dir: Path, seed_csv: Path, cli, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped workbench with the seed's evidence imported (runs 1-6, of experiment agent-repro): the store."""
    db = tmp_path / "wb.duckdb"
    monkeypatch.setenv("WB_ROOT", str(workbench_dir))
    monkeypatch.setenv("WB_DB", str(db))
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("import", "evidence", str(seed_csv))
    assert code == 0, err
    return db


VARIABLES = ["var.hicache", "var.index_k_dtype", "var.nixl_abort_fix"]
MEASURED = ["metric.done", "metric.error", "metric.leak", "metric.maxrounds", "metric.no_tool", "metric.sessions",
            "metric.timeouts", "metric.waiting_for_input", "metric.wall_s"]
DERIVED = ["derived.aborts", "derived.corruption_rate", "derived.error_rate"]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_runs_list_csv_has_one_column_per_variable_and_metric(seeded: Path, cli, fmt: str) -> None:
    """All of a run's variables were one cell and all its metrics another ("hicache=on index_k_dtype=bf16 ..."):
    a spreadsheet could not sort or sum them."""
    code, out, err = cli("runs", "list", "--format", fmt)
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out), delimiter="," if fmt == "csv" else "\t"))
    assert rows[0] == ["id", "label", "hypothesis", "arm", "status", "experiment", *VARIABLES, *MEASURED, *DERIVED], \
        rows[0]
    got = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert sorted(got) == ["1", "2", "3", "4", "5", "6"]
    six, one = got["6"], got["1"]
    assert (six["var.nixl_abort_fix"], six["metric.leak"], six["metric.sessions"], six["metric.wall_s"]) == \
        ("on", "14", "80", "346.3"), six
    assert six["derived.corruption_rate"] == "0.175" and six["derived.aborts"] == "0", six
    # a run that lacks a metric has an empty cell, never 0; wall_s is real-valued and keeps its decimals
    assert (one["metric.leak"], one["metric.sessions"], one["metric.wall_s"], one["derived.corruption_rate"]) == \
        ("0", "", "302.0", ""), one


def test_runs_list_csv_names_each_runs_experiment(seeded: Path, cli, workbench_dir: Path) -> None:
    """Runs of two experiments share one header (the union of their columns; wall_s is in both): without a column
    naming its experiment a row could not be told apart, nor which definitions gave its derived values."""
    kvcache = Path(__file__).resolve().parents[2] / "examples" / "kvcache"
    (workbench_dir / "experiments" / "kv-load.yaml").write_text((kvcache / "experiments" / "kv-load.yaml").read_text())
    code, _, err = cli("import", "evidence", str(kvcache / "history.csv"))
    assert code == 0, err
    for fmt, sep in (("csv", ","), ("tsv", "\t")):
        code, out, err = cli("runs", "list", "--format", fmt)
        assert code == 0, err
        rows = list(csv.DictReader(io.StringIO(out), delimiter=sep))
        got = {r["label"]: (r["experiment"], r["metric.wall_s"], r["derived.stale_rate"]) for r in rows}
        assert got["post-bf16-hicache-postfix"] == ("agent-repro", "346.3", ""), got
        assert got["deploy-1"] == ("kv-load", "1.9", "0.88"), got
        assert out.splitlines()[0].startswith(sep.join(["id", "label", "hypothesis", "arm", "status", "experiment"]))


def test_runs_list_csv_quotes_a_value_with_a_comma(seeded: Path, cli, workbench_dir: Path, tmp_path: Path) -> None:
    """A label or a variable with a comma stays one cell (the csv module quotes it)."""
    path = tmp_path / "more.csv"
    path.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,leak,sessions\n\"a, b\",bf16,on,off,2,40\n")
    code, _, err = cli("import", "evidence", str(path))
    assert code == 0, err
    code, out, err = cli("runs", "list", "--format", "csv")
    assert code == 0, err
    (row,) = [r for r in csv.DictReader(io.StringIO(out)) if r["label"] == "a, b"]
    assert (row["metric.leak"], row["metric.sessions"], row["derived.corruption_rate"]) == ("2", "40", "0.05")


def test_runs_show_gives_derived_metrics_marked_as_derived(seeded: Path, cli) -> None:
    """corruption_rate (leak / sessions) and aborts (same as waiting_for_input) appeared nowhere: not in the text,
    not in --json. They are shown apart from the measured metrics, never among them."""
    code, out, err = cli("runs", "show", "6")
    assert code == 0, err
    lines = out.splitlines()
    measured = next(line for line in lines if line.startswith("metrics: "))
    assert "corruption_rate" not in measured and "aborts" not in measured, measured
    (derived,) = [line for line in lines if line.startswith("derived metrics")]
    assert derived == "derived metrics (by agent-repro's definitions, not measured): aborts=0 " \
                      "corruption_rate=0.175 error_rate=0.5", derived
    code, out, err = cli("runs", "show", "6", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert "corruption_rate" not in doc["metrics"] and doc["derived_metrics"] == {"aborts": 0, "corruption_rate": 0.175,
                                                                                     "error_rate": 0.5}
    assert doc["derived_metrics_note"] is None
    code, out, err = cli("runs", "list", "--json")
    assert code == 0, err
    items = {i["id"]: i for i in json.loads(out)["items"]}
    assert items[6]["derived_metrics"] == {"aborts": 0, "corruption_rate": 0.175, "error_rate": 0.5}
    assert items[1]["derived_metrics"] == {} and "corruption_rate" not in items[6]["metrics"]


def test_runs_show_on_a_terminal_wraps_and_reads_as_runs_list(seeded: Path, cli,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """On an 80-column terminal `wb runs show` printed its fingerprint, derived and provenance lines whole (up to 233
    characters, broken by the terminal inside words), and a rate as 0.175 where `wb runs list` shows 17.5%. On a
    terminal it now wraps between words, as the other commands do, and gives values as the listing does; piped, one
    line an item with every digit (above)."""
    code, piped, err = cli("runs", "show", "6")
    assert code == 0, err
    assert max(len(line) for line in piped.splitlines()) > 150, piped
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, shown, err = cli("runs", "show", "6", env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert code == 0, err
    assert max(len(line) for line in shown.splitlines()) <= 80, shown
    assert len(shown.splitlines()) > len(piped.splitlines()), shown
    assert "derived metrics (by agent-repro's definitions, not measured): aborts=0 corruption_rate=17.5% " \
           "error_rate=50.0%" in " ".join(shown.split()), shown
    code, listed, err = cli("runs", "list", env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert "derived: aborts=0 corruption_rate=17.5% error_rate=50.0%" in listed, listed  # the same value alike


def test_derived_metrics_without_the_experiment_say_so(seeded: Path, cli, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """A store read with no workbench (--db alone) has no metric definitions: wb says the derived metrics are
    unknown and why, rather than print none as if there were none."""
    monkeypatch.delenv("WB_ROOT")
    monkeypatch.delenv("WB_DB")
    code, out, err = cli("runs", "show", "6", "--db", str(seeded))
    assert code == 0, err
    (derived,) = [line for line in out.splitlines() if line.startswith("derived metrics")]
    assert derived.startswith("derived metrics: unknown (") and "agent-repro" in derived, derived
    code, out, err = cli("runs", "show", "6", "--json", "--db", str(seeded))
    doc = json.loads(out)
    assert doc["derived_metrics"] == {} and "agent-repro" in doc["derived_metrics_note"], doc
    code, out, err = cli("runs", "list", "--format", "csv", "--db", str(seeded))
    assert code == 0 and out.splitlines()[0].endswith("metric.wall_s"), out  # no derived column: nothing derived


def test_json_gives_counts_as_whole_numbers(seeded: Path, cli) -> None:
    """--json wrote "leak": 14.0 and "sessions": 80.0; a count is an integer, a real-valued metric stays a float."""
    for args in (["runs", "show", "6", "--json"], ["runs", "list", "--json"]):
        code, out, err = cli(*args)
        assert code == 0, err
        assert '"leak": 14,' in out and '"sessions": 80,' in out and '"wall_s": 346.3' in out, out
        assert '"wall_s": 302.0' in out or args[1] == "show", out  # continuous: 302 is a float
        assert ".0," not in out.replace('"wall_s": 302.0,', ""), out


def test_provenance_is_an_object_in_the_json(seeded: Path, cli) -> None:
    """An imported run's provenance was a JSON string inside the JSON: scripts decoded it twice."""
    code, out, err = cli("runs", "list", "--json")
    assert code == 0, err
    first = json.loads(out)["items"][0]
    assert first["provenance"]["file"] == "seed-runs.csv" and first["provenance"]["line"] == 2, first
    code, out, err = cli("runs", "show", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["provenance"]["line"] == 2
    code, out, err = cli("runs", "show", "1")
    assert code == 0, err
    assert "provenance: file=seed-runs.csv line=2 " in out, out


def test_runs_show_says_what_was_not_recorded(seeded: Path, cli) -> None:
    """Run 4 has no metric and no fingerprint value: it printed an empty `metrics:` and `fingerprint:` line. Run 1 has
    leak but no sessions: the derived line said only "none from these values"."""
    code, out, err = cli("runs", "show", "4")
    assert code == 0, err
    assert "metrics: none recorded\n" in out and "fingerprint: none recorded\n" in out, out
    assert "units: none recorded\n" in out, out  # an imported run records no units: not "units: 0"
    code, out, err = cli("runs", "show", "1")
    assert code == 0, err
    assert not [ln for ln in out.splitlines() if ln.rstrip().endswith(":")], out
    derived = next(ln for ln in out.splitlines() if ln.startswith("derived metrics"))
    assert "corruption_rate needs sessions" in derived and "not recorded" in derived, derived
    code, out, err = cli("runs", "show", "1", "--json")
    assert json.loads(out)["derived_metrics_missing"]["corruption_rate"] == ["sessions"], out


def test_a_table_leaves_out_columns_empty_in_every_row(seeded: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The imported evidence has no hypothesis and no arm: `wb runs list` kept both columns, empty in every row, and
    on an 80-column terminal left out the variables and metrics it had room for instead. CSV keeps every column."""
    code, out, err = cli("runs", "list")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["id", "label", "status", "variables", "metrics", "derived"], out
    code, out, err = cli("hypothesis", "list")
    assert code == 0, err
    assert "note" not in out.splitlines()[0].split() and "status" in out.splitlines()[0].split(), out
    code, out, err = cli("runs", "list", "--format", "csv")
    assert code == 0 and out.splitlines()[0].startswith("id,label,hypothesis,arm,status,"), out
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("runs", "list", env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert code == 0, err
    header = next(line for line in out.splitlines() if " id " in line)
    assert header.split("┃")[1].split() == ["id", "label", "status"], out


def _cells(out: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """A piped table's lines above its header, and each row's cells by column (cut at the header's names)."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("id "))
    header = lines[at]
    names = header.split()
    starts = [header.index(f" {n} ") + 1 if i else 0 for i, n in enumerate(names[:-1])] + [header.rindex(names[-1])]
    rows = {}
    for line in lines[at + 1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])]
        rows[cells[0]] = dict(zip(names, cells))
    return lines[:at], rows


def _terminal_rows(out: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """A terminal table's lines above its box, and each row's cells by column (a table wide enough for one line a
    row)."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    names = [c.strip() for c in lines[at + 1].strip("┃").split("┃")]
    rows = {}
    for line in lines[at + 3:]:
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = dict(zip(names, cells))
    return lines[:at], rows


def test_runs_list_table_gives_variables_common_to_every_row_once(seeded: Path, cli,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each row's variables cell repeated every variable, though in a typical store most are the same in every run
    listed: a terminal's table gives those once, above it, and each row the ones that tell it apart. CSV, TSV, JSON
    and the piped table keep every variable in every row."""
    code, out, err = cli("runs", "list", "--limit", "2", "--format", "tsv")
    assert code == 0, err
    assert [r["var.hicache"] for r in csv.DictReader(io.StringIO(out), delimiter="\t")] == ["on", "on"], out
    code, out, err = cli("runs", "list", "--limit", "2", "--json")
    assert [i["variables"]["index_k_dtype"] for i in json.loads(out)["items"]] == ["bf16", "bf16"], out
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("runs", "list", "--limit", "2", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert code == 0, err
    above, rows = _terminal_rows(out)
    assert above == ["all rows: hicache=on, index_k_dtype=bf16"], out
    assert (rows["5"]["variables"], rows["6"]["variables"]) == ("nixl_abort_fix=off", "nixl_abort_fix=on"), out
    # A narrower terminal: the line wraps between its items (it ran on, 147 characters with five variables).
    code, out, err = cli("runs", "list", "--limit", "2", env={"COLUMNS": "32", "NO_COLOR": "1"})
    above = out.split("┏")[0].splitlines()
    assert code == 0 and above == ["all rows: hicache=on,", "  index_k_dtype=bf16"], out
    code, out, err = cli("runs", "list", env={"COLUMNS": "200", "NO_COLOR": "1"})  # every variable varies over six
    assert code == 0, err
    above, rows = _terminal_rows(out)
    assert above == [] and rows["6"]["variables"] == "hicache=on index_k_dtype=bf16 nixl_abort_fix=on", out


def test_piped_runs_list_is_one_header_line_then_whole_rows(seeded: Path, cli) -> None:
    """Piped, the table printed the variables common to every row on a line of its own above the header (`all rows:
    hicache=on, ...`), so `wb runs list | tail -n +2` kept the header and `awk 'NR>1'` read it as a run; and each row
    left those variables out. Piped output is plain columns, one header line, every variable in every row."""
    code, out, err = cli("runs", "list", "--limit", "2")
    assert code == 0, err
    above, rows = _cells(out)
    assert above == [] and out.splitlines()[0].split()[0] == "id", out
    assert (rows["5"]["variables"], rows["6"]["variables"]) == ("hicache=on index_k_dtype=bf16 nixl_abort_fix=off",
                                                                "hicache=on index_k_dtype=bf16 nixl_abort_fix=on"), out
    assert "all rows" not in out + err, (out, err)


def test_runs_list_table_gives_derived_metrics_marked_as_derived(seeded: Path, cli) -> None:
    """The table showed the stored metrics only: run 6's corruption_rate (leak / sessions), which `wb runs show`,
    the CSV's derived.* columns and the JSON give, was missing. It has a column of its own, `derived`, apart from
    the measured metrics."""
    code, out, err = cli("runs", "list")
    assert code == 0, err
    _, rows = _cells(out)
    assert rows["6"]["derived"] == "aborts=0 corruption_rate=0.175 error_rate=0.5", out
    assert "corruption_rate" not in rows["6"]["metrics"] and rows["1"]["derived"] == "", out


def _under_each_row(out: str) -> dict[str, list[str]]:
    """A terminal table drawn with text under its rows: each row's first cell -> the items under the row (a line
    `NAME: ...` starts an item, a line without it goes on the one before)."""
    rows: dict[str, list[str]] = {}
    block: list[str] = []
    for line in out[out.index("┡"):].splitlines()[1:]:
        if line.startswith("│"):
            block.append(line.strip("│ ").rstrip())
        elif block:  # a rule between rows, or the table's end
            first, *under = block
            items = rows.setdefault(first.split()[0], [])
            for u in under:
                if ":" in u.split()[0]:
                    items.append(u)
                else:
                    items[-1] += " " + u
            block = []
    return rows


def test_runs_list_on_an_80_column_terminal_gives_each_rows_metrics_under_it(seeded: Path, cli,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns the table left out the metrics and the derived metrics ("not shown at this width: metrics,
    derived"), the values a user lists runs for. They now read under each row, across the table's width, the
    derived ones marked so; a wide terminal keeps them in columns, and TSV is unchanged."""
    code, out, err = cli("runs", "list", "--format", "tsv")
    assert code == 0, err
    tsv = {r["id"]: r for r in csv.DictReader(io.StringIO(out), delimiter="\t")}
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("runs", "list", env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert not [line for line in out.splitlines() if line.startswith("not shown") and "metrics" in line], out
    under = _under_each_row(out)
    six = [name for name in MEASURED if tsv["6"][name]]
    assert under["6"][-2:] == [
        "metrics: " + " ".join(f"{n.split('.', 1)[1]}={float(tsv['6'][n]):.15g}" for n in six),
        "derived: aborts=0 corruption_rate=17.5% error_rate=50.0%"], out
    assert under["1"][-1] == "metrics: leak=0 wall_s=302", out
    assert under["4"] == ["variables: hicache=on index_k_dtype=fp8 nixl_abort_fix=off"], out  # no metric recorded
    code, out, err = cli("runs", "list", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert code == 0, err
    header = next(line for line in out.splitlines() if " id " in line)
    assert [c.strip() for c in header.strip("┃│ ").split("┃")][-2:] == ["metrics", "derived"], out


def test_a_terminal_table_gives_numbers_for_reading(seeded: Path, cli, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal's table gave every digit a float holds (`corruption_rate=0.966666666666667`, where the run's
    summary says 96.7%) and a rate of 0 as `0`. It now gives numbers by one rule: a rate in percent as the summaries
    give it, any other value to at most 4 significant digits. TSV and JSON keep every digit."""
    path = tmp_path / "more.csv"
    path.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,leak,sessions,wall_s\n"
                    "salad,bf16,on,off,29,30,12.3456789\nclean,bf16,on,off,0,30,10.0\n")
    code, _, err = cli("import", "evidence", str(path))
    assert code == 0, err
    code, out, err = cli("runs", "list", "--format", "tsv")
    assert code == 0, err
    tsv = {r["label"]: r for r in csv.DictReader(io.StringIO(out), delimiter="\t")}
    assert (tsv["salad"]["derived.corruption_rate"], tsv["salad"]["metric.wall_s"]) == \
        ("0.9666666666666667", "12.3456789"), out
    assert (tsv["clean"]["derived.corruption_rate"], tsv["clean"]["metric.wall_s"]) == ("0.0", "10.0"), out
    code, out, err = cli("runs", "list", "--json")
    assert [i["derived_metrics"]["corruption_rate"] for i in json.loads(out)["items"][-2:]] == [29 / 30, 0.0], out
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("runs", "list", env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert code == 0, err
    _, rows = _terminal_rows(out)
    assert (rows["7"]["metrics"], rows["7"]["derived"]) == \
        ("leak=29 sessions=30 wall_s=12.35", "corruption_rate=96.7%"), out
    assert (rows["8"]["metrics"], rows["8"]["derived"]) == ("leak=0 sessions=30 wall_s=10", "corruption_rate=0.0%"), out
    assert rows["6"]["derived"] == "aborts=0 corruption_rate=17.5% error_rate=50.0%", out


@pytest.fixture
def mixed(seeded: Path) -> Path:
    """The seeded store with 22 runs of wedge-confound as wb records them (a hypothesis and an arm, no label) after
    the 6 imported ones (a label, no hypothesis nor arm)."""
    from analysis_helpers import add_execution, add_replicate

    from workbench.store import open_store

    store = open_store(str(seeded), held=True)
    try:
        ex = add_execution(store)
        for r in range(1, 12):
            add_replicate(store, ex, r, 0)
    finally:
        store.dispose()
    return seeded


@pytest.mark.parametrize("width", [60, 80])
def test_a_narrow_table_tells_imported_runs_apart(mixed: Path, cli, monkeypatch: pytest.MonkeyPatch,
                                                  width: int) -> None:
    """At 60 columns the label was left out ("not shown at this width: label"), so the imported runs read `1` to `6`
    with a blank hypothesis and arm beside `historical`, not to be told apart; at 80 the label column, empty in 22 of
    the 28 rows, took its width in every row. A label most rows lack goes under its row, as the variables do."""
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("runs", "list", env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= width, out
    header = next(line for line in out.splitlines() if " id " in line)
    assert header.strip("┃ ").split()[:4] == ["id", "hypothesis", "arm", "status"], out
    under = _under_each_row(out)
    assert under["1"][0] == "label: pre-fp8-hicache" and under["6"][0] == "label: post-bf16-hicache-postfix", out
    assert not [u for u in under["7"] if u.startswith("label")], out
    assert "not shown" not in out, out


def test_the_note_under_a_narrow_table_wraps_between_words(seeded: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The line naming the columns left out wrapped at the table's width, padded with spaces to it (`(--format tsv
    shows    ` / `every column)`): it wraps at the terminal's width, between words, with no padding."""
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, out, err = cli("hypothesis", "list", env={"COLUMNS": "45", "NO_COLOR": "1"})
    assert code == 0, err
    lines = out.splitlines()
    note = lines[next(i for i, line in enumerate(lines) if line.startswith("└")) + 1:]
    assert " ".join(note) == "not shown at this width: parent, kind, isolates (--format tsv shows every column)", out
    assert all(line == line.strip() and len(line) <= 45 for line in note), note
