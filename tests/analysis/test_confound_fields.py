"""What the confound scan hands out names itself: a variable's values sit under their own key (a value
literally named `runs` or `strata` keeps its counts), and the p-value of a variable of three or more values
is given raw, with the number of comparisons (each value against the rest, over runs and over units) and the
Bonferroni-adjusted value the flag is judged on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.analysis import stats

from analysis_helpers import kv_imported

# compression takes three values, two of them named like the scan's own keys. Every `runs` run read stale
# values, no run of the two others did: 6/6 against 0/12 runs, one stratum (batch_writes held off).
ROWS = ["run_id,compression,batch_writes,clients,stale,errors"] \
    + [f"a{i},runs,off,50,20,0" for i in range(1, 7)] + [f"b{i},strata,off,50,0,0" for i in range(1, 7)] \
    + [f"c{i},off,off,50,0,0" for i in range(1, 7)]


@pytest.fixture
def kv(tmp_path: Path, cli, monkeypatch) -> Path:
    return kv_imported(tmp_path, cli, monkeypatch, ROWS, "on, off, runs, strata")


def _compression(cli) -> dict:
    code, out, err = cli("confounds", "--json")
    assert code == 0, err
    return {(f["kind"], f["factor"]): f for f in json.loads(out)["items"]}[("variable", "compression")]


def test_values_named_runs_and_strata_keep_their_counts_in_json(kv, cli):
    comp = _compression(cli)
    values = comp["table"]["values"]
    assert values["runs"] == {"runs": 6, "runs_with_outcome": 6, "units_k": 120, "units_n": 300}
    assert values["strata"] == {"runs": 6, "runs_with_outcome": 0, "units_k": 0, "units_n": 300}
    assert values["off"]["runs"] == 6
    assert sorted(comp["table"]["runs"]) == sorted(r.split(",")[0] for r in ROWS[1:])
    assert comp["table"]["strata"] == ["all runs"]


def test_p_of_three_values_is_raw_with_its_comparisons_and_adjusted_value(kv, cli):
    comp = _compression(cli)
    raw = stats.fisher(6, 6, 0, 12)
    assert "fisher_p" not in comp
    assert comp["effect"]["runs_p"] == pytest.approx(raw, rel=1e-6)
    assert comp["comparisons"] == 6  # 3 values, each tested over runs and over units
    assert comp["effect"]["units_p_adjusted"] == pytest.approx(6 * comp["effect"]["units_p"], rel=1e-6)
    # p and p_adjusted are the test's it is judged on: over units here, the smaller
    assert comp["p_counts"] == "units" and comp["p"] == comp["effect"]["units_p"]
    assert comp["p_adjusted"] == comp["effect"]["units_p_adjusted"]
    assert comp["across_executions"] and not comp["flagged"]  # imported runs: no execution compared them
    # A guard is one comparison: its adjusted p is its p.
    guard = [f for f in json.loads(cli("confounds", "--json")[1])["items"] if f["kind"] == "guard"]
    assert all(g["comparisons"] == 1 and g["p_adjusted"] == g["p"] for g in guard)


def test_text_and_tsv_name_the_raw_and_the_adjusted_p(kv, cli):
    code, out, _ = cli("confounds")
    assert code == 0
    line = next(ln for ln in out.splitlines() if "vs variable compression" in ln)
    raw = stats.fisher(6, 6, 0, 12)
    assert f"Fisher exact p = {raw:.2g}" in line
    assert f"Bonferroni-adjusted over 6 comparisons, 3 values each over runs and units: {6 * raw:.2g}" in line
    code, out, _ = cli("confounds", "--format", "tsv")
    head, *rows = out.splitlines()
    assert head.split("\t") == ["flag", "experiment", "outcome", "kind", "factor", "p", "comparisons", "p_adjusted",
                                "message", "proposal"]
    row = next(r.split("\t") for r in rows if "\tvariable\tcompression\t" in r)
    units = _compression(cli)["effect"]["units_p_adjusted"]  # the p it is judged on
    assert row[6] == "6" and float(row[7]) == pytest.approx(units, rel=1e-2)


def test_html_shows_every_value_row_and_the_adjusted_p(kv, cli, tmp_path):
    code, _, err = cli("report", "--out", str(tmp_path / "site"))
    assert code == 0, err
    html = (tmp_path / "site" / "confounds.html").read_text()
    article = next(a for a in html.split("<article") if "compression and stale_rate" in a)

    def cells(name: str) -> re.Match | None:
        return re.search(rf"<tr><td>{name}</td>((?:<td class=\"num\">[^<]*</td>)+)</tr>", article)

    for name, row in (("runs", ["6", "6", "120", "300"]), ("strata", ["6", "0", "0", "300"]),
                      ("off", ["6", "0", "0", "300"])):
        found = cells(name)
        assert found, f"no table row for the value {name!r}"
        assert re.findall(r">([^<]*)</td>", found.group(1)) == row
    raw = stats.fisher(6, 6, 0, 12)
    assert f"<td>runs p</td><td><code class=\"wrap\">{raw:.2g}</code>" in article
    assert "<td>Fisher exact p (units)</td>" in article  # the p it is judged on
    assert "<td>comparisons</td><td><code class=\"wrap\">6</code>" in article
    assert "<td>p adjusted (Bonferroni, units)</td>" in article
