"""How `wb confounds` and the confound page word a variable's finding: a p-value that underflows, the p that
flagged it, its rate differences in points and its strata in words."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from analysis_helpers import kv_imported

HEADER = "run_id,compression,batch_writes,clients,stale,errors"
# Every run read stale values (over runs: 2/2 against 2/2, p = 1), but 12,100 of 24,000 clients with compression
# on against 22 of 24,000 with it off: over units Fisher's p underflows a float.
BIG = [HEADER, "a1,on,off,12000,6000,0", "a2,on,off,12000,6100,0", "c1,off,off,12000,10,0", "c2,off,off,12000,12,0"]
# 48/240 against 51/240 clients: a units rate difference of 1.25 points.
SMALL = [HEADER, "a1,on,off,120,24,0", "a2,on,off,120,24,0", "c1,off,off,120,25,0", "c2,off,off,120,26,0"]


def _imported(tmp_path: Path, cli, monkeypatch, rows: list[str]) -> Path:
    return kv_imported(tmp_path, cli, monkeypatch, rows, "on, off")


@pytest.fixture
def big(tmp_path: Path, cli, monkeypatch) -> Path:
    return _imported(tmp_path, cli, monkeypatch, BIG)


def _compression(cli) -> dict:
    code, out, err = cli("confounds", "--json")
    assert code == 0, err
    return {(f["kind"], f["factor"]): f for f in json.loads(out)["items"]}[("variable", "compression")]


def _article(cli, tmp_path: Path) -> str:
    code, _, err = cli("report", "--out", str(tmp_path / "site"))
    assert code == 0, err
    page = (tmp_path / "site" / "confounds.html").read_text()
    return html.unescape(next(a for a in page.split("<article") if "compression and stale_rate" in a))


def _row(article: str, name: str) -> str:
    found = re.search(rf"<td>{re.escape(name)}</td><td><code class=\"wrap\">(.*?)</code>", article)
    assert found, f"no row {name!r} in {article}"
    return found.group(1)


def test_an_underflowed_p_over_units_never_reads_0_and_the_headline_names_the_p_that_flagged_it(big, cli):
    comp = _compression(cli)
    # Flagged over units alone (its p over units underflowed a float: JSON gives the bound, see the last test).
    assert comp["across_executions"] and comp["effect"]["runs_p"] == 1.0 and comp["effect"]["units_p"] == 1e-300
    # its p is the one over units, which decided it (the table showed "1", the p over runs, beside the mark)
    assert comp["p"] == 1e-300 and comp["p_counts"] == "units"
    code, out, _ = cli("confounds")
    assert code == 0
    lines = out.splitlines()
    i = next(i for i, ln in enumerate(lines) if "vs variable compression" in ln)
    head, message = lines[i], lines[i + 1]
    # The headline read "(Fisher exact p = 1)": the p over runs, while the finding was flagged over units. With 2
    # runs an arm the test over runs cannot reach alpha, so Tarone's rule leaves it out of the count (it was
    # "Bonferroni-adjusted over 2 comparisons, runs and units: 1 over runs, < 1e-300 over units"), and says so.
    assert head.startswith("DIFF ") and head.endswith(
        "(Fisher exact p = 1 over runs, < 1e-300 over units; the comparison over runs was not counted: with 2 runs "
        "an arm it cannot reach p < 0.33)"), head
    assert "p = 1 over runs, < 1e-300 over units (the comparison over runs was not counted" in message, message
    assert re.search(r"\b0 over units", out) is None, out
    code, out, _ = cli("confounds", "--format", "tsv")
    head, *rows = out.splitlines()
    row = next(r.split("\t") for r in rows if "\tvariable\tcompression\t" in r)
    assert row[5] == "1e-300"


def test_the_confound_page_gives_an_underflowed_p_and_its_differences_as_the_text_does(big, cli, tmp_path):
    article = _article(cli, tmp_path)
    assert _row(article, "units p") == "< 1e-300" and _row(article, "units p adjusted") == "< 1e-300"
    assert _row(article, "Fisher exact p (units)") == "< 1e-300" and _row(article, "runs p") == "1"
    assert re.fullmatch(r"[+-]50\.3 points", _row(article, "units rate difference"))
    assert _row(article, "risk difference") == "0.0 points"
    # One stratum, named in words (it read the JSON list ["all runs"]).
    assert _row(article, "strata") == "all runs"
    # Imported runs belong to no execution: a difference across executions, badged as such (not "flagged", and no
    # row of its own).
    assert '<span class="badge inconclusive">across executions</span>' in article and "flagged</span>" not in article
    assert "across_executions" not in article


def test_a_small_units_rate_difference_reads_in_points(tmp_path, cli, monkeypatch):
    _imported(tmp_path, cli, monkeypatch, SMALL)
    comp = _compression(cli)
    diff = comp["effect"]["units_rate_difference"]
    assert abs(diff) == pytest.approx(0.0125)
    # It read -0.0 (0.0125 with too few digits), where every other difference of rates reads in points.
    assert _row(_article(cli, tmp_path), "units rate difference") == ("-" if diff < 0 else "+") + "1.2 points"


def test_an_underflowed_p_over_runs_in_a_table_or_csv_never_reads_0(tmp_path, cli, monkeypatch):
    """`--format table|csv|tsv` wrote the p over runs with `:.3g`: one that underflowed a float read "0". The table
    reads "< 1e-300" as the text does; csv and tsv keep a number a script can parse, the bound 1e-300."""
    # 600 runs with compression on, every one reading stale values, against 600 with it off, none: Fisher's p over
    # runs, 1 / C(1200, 600), underflows a float.
    rows = [HEADER] + [f"a{i},on,off,10,5,0" for i in range(600)] + [f"c{i},off,off,10,0,0" for i in range(600)]
    _imported(tmp_path, cli, monkeypatch, rows)
    finding = _compression(cli)  # --json: the same bound, a number (it wrote 0.0)
    assert (finding["p"], finding["p_adjusted"]) == (1e-300, 1e-300), finding
    code, out, err = cli("confounds", "--format", "table")
    assert code == 0, err
    head = out.splitlines()[0]
    row = next(ln for ln in out.splitlines() if " compression " in ln)
    columns = {name: row[head.index(f" {name} ") + 1:head.index(f" {after}")].strip()
               for name, after in (("p", "comparisons"), ("p_adjusted", "message"))}
    assert columns == {"p": "< 1e-300", "p_adjusted": "< 1e-300"}, out
    for fmt, sep in (("csv", ","), ("tsv", "\t")):
        code, out, err = cli("confounds", "--format", fmt)
        assert code == 0, err
        head, *lines = out.splitlines()
        names = head.split(sep)
        row = next(dict(zip(names, ln.split(sep))) for ln in lines if f"{sep}compression{sep}" in ln)
        assert row["p"] == "1e-300" and row["p_adjusted"] == "1e-300", (fmt, row)


def test_an_underflowed_p_in_json_is_the_bound_never_0(big, cli):
    """`--json` wrote a p-value that underflowed a float as 0.0, a p no test gives: it is the bound 1e-300, as in
    csv and tsv (README), over units here; a p that did not underflow is written as it is."""
    finding = _compression(cli)
    assert finding["effect"]["units_p"] == 1e-300 and finding["effect"]["units_p_adjusted"] == 1e-300, finding
    assert finding["p"] == 1e-300 and finding["p_adjusted"] == 1e-300, finding  # over units, as it is judged
    assert finding["effect"]["runs_p"] == 1.0, finding
