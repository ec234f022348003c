"""The arm lines `wb hypothesis run` prints read as the report gives the same numbers: a value as an interval's ends
are written (without the thousands separator a key=value pair cannot hold), a rate in percent with the decimals that
keep a non-zero rate from reading 0.0%."""

from __future__ import annotations


def test_an_arms_total_in_the_run_summary_reads_as_the_report_does() -> None:
    # The arm lines of `wb hypothesis run` wrote a total of 1234567 as 1.23457e+06 and a rate of 0.00012 as 0.0%.
    from workbench.cli.run_cmd import _total

    # A name=value pair's value has no thousands separator (grep and awk split on it); the report's tables keep it.
    assert _total(1234567.0, False) == "1234567" and _total(3, False) == "3" and _total(12.3456, False) == "12.3"
    assert _total(0.00012, True) == "0.01%" and _total(0.175, True) == "17.5%" and _total(0.0, True) == "0.0%"


def test_run_listings_write_a_recorded_value_whole(cli, workbench_dir, tmp_path) -> None:
    # `wb runs list` and `wb runs show` wrote metrics with :g, six significant digits: a count of 1234567 read
    # 1.23457e+06 in the table, the CSV a script reads and the run's own page of text; 302.25 s read 302.25 but
    # 1234.5678 read 1234.57.
    csv = tmp_path / "big.csv"
    csv.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,waiting_for_input,wall_s\n"
                   "big,bf16,on,on,1234567,3,0,1234.5678\n")
    db = str(tmp_path / "big.duckdb")
    assert cli("import", "evidence", str(csv), "--db", db, "--root", str(workbench_dir))[0] == 0
    code, out, err = cli("runs", "list", "--format", "table", "--db", db)
    assert code == 0, err
    assert "sessions=1234567" in out and "wall_s=1234.5678" in out and "e+06" not in out, out
    for fmt, sep in (("csv", ","), ("tsv", "\t")):  # a column per metric
        code, out, err = cli("runs", "list", "--format", fmt, "--db", db)
        assert code == 0, err
        header, row = (line.split(sep) for line in out.splitlines())
        got = dict(zip(header, row))
        assert (got["metric.sessions"], got["metric.wall_s"]) == ("1234567", "1234.5678"), (fmt, out)
    code, out, err = cli("runs", "show", "1", "--db", db)
    assert code == 0, err
    assert "sessions=1234567" in out and "wall_s=1234.5678" in out and "e+06" not in out, out
