"""The arm lines `wb hypothesis run` prints read as the report gives the same numbers: a value as an interval's ends
are written (thousands separated from 1000 on), a rate in percent with the decimals that keep a non-zero rate from
reading 0.0%."""

from __future__ import annotations


def test_an_arms_total_in_the_run_summary_reads_as_the_report_does() -> None:
    # The arm lines of `wb hypothesis run` wrote a total of 1234567 as 1.23457e+06 and a rate of 0.00012 as 0.0%.
    from workbench.cli.run_cmd import _total

    assert _total(1234567.0, False) == "1,234,567" and _total(3, False) == "3" and _total(12.3456, False) == "12.3"
    assert _total(0.00012, True) == "0.01%" and _total(0.175, True) == "17.5%" and _total(0.0, True) == "0.0%"
