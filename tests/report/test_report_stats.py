"""The report's per-arm figures come from the analysis' statistics: one implementation of each."""

from __future__ import annotations

import pytest

from workbench.analysis import clustered, stats
from workbench.report import hypothesis_page
from workbench.report import stats as report_stats


def test_report_rate_uses_the_run_level_interval():
    # Four identical replicates are one run's worth of evidence, in the report as in the verdict.
    e = report_stats.proportion([(10, 80)] * 4)
    assert (e.lo, e.hi) == pytest.approx(stats.wilson(10, 80))
    assert e.label == "40/320 = 12.5%"
    # Binomial spread (phi 0.98) keeps the pooled Wilson interval.
    pairs = [(15, 80), (9, 80), (16, 80), (16, 80)]
    e = report_stats.proportion(pairs)
    assert (e.lo, e.hi) == pytest.approx(stats.wilson(56, 320)) and e.method == "Wilson 95%"
    assert clustered.effective([k for k, _ in pairs], [n for _, n in pairs]).method == "binomial"
    # A little more spread (phi 1.15, p 0.34: not significant) widens it by phi, at the normal quantile.
    wider = clustered.effective([10, 16, 12, 18], [80] * 4)
    assert wider.method == "run-level" and wider.df is None and wider.design_effect == pytest.approx(1.154, abs=1e-3)
    assert report_stats.proportion([(10, 80), (16, 80), (12, 80), (18, 80)]).lo < stats.wilson(56, 320)[0]


def test_report_judges_regions_exactly():
    from workbench.registry.common import Region

    # 0 leaks in 500: the Wilson bound is 0 exactly, so "equals 0" is not excluded by rounding.
    e = report_stats.proportion([(0, 500)])
    region = Region(equals=0)
    assert hypothesis_page._relation(e.lo, e.hi, region, "proportion") == "interval overlaps the region's boundary"
    assert hypothesis_page._relation(0.1, 0.2, Region(at_most=0.02), "proportion") == \
        "interval outside the predicted region"
    assert hypothesis_page._relation(0.0, 0.01, Region(at_most=0.02), "proportion") == \
        "interval inside the predicted region"


def test_chart_tooltips_read_as_the_arm_table_does():
    # The tooltips formatted numbers in the page with ".4~g": a median interval of [11000.5, 13579] ms read
    # "1.1e+4" to "1.358e+4" and a run of 1234567 ms "1.235e+6", beside a table reading "median 12345". Then they
    # rounded everything from 1000 up to a whole number: a range of 12345.6 to 12345.9 read low '12346', high
    # '12346' beside the table's [12345.6, 12345.9]. Tooltip and table now share one formatter, the verdict text's.
    from workbench.report import charts

    point = charts.ArmPoint("control", 12345.0, 11000.5, 13579.0, "median 12345 (4 runs)", "range of 4 runs")
    small = charts.ArmPoint("treatment", 0.5, 0.12345, 0.98765, "median 0.5 (4 runs)", "range of 4 runs")
    close = charts.ArmPoint("fix", 12345.75, 12345.6, 12345.9, "median 12345.8 (4 runs)", "range of 4 runs")
    spec = charts.metric_spec(charts.MetricChart("ttft_ms", ["control", "treatment", "fix"], [point, small, close],
                                                 [charts.RunValue("control", 7, 1234567.0)]))
    charts.validate_spec(spec)
    tips = [t for layer in spec["layer"] for t in layer["encoding"].get("tooltip", [])]
    assert not [t for t in tips if "format" in t], tips  # the page's own number formatting would round them
    shown = {(name, row["arm"], t.get("title", t["field"])): row[t["field"]]
             for name, rows in spec["datasets"].items() for row in rows for t in tips if t["field"] in row}
    for p in (point, small, close):
        table = hypothesis_page._fmt_interval(p.lo, p.hi, False)
        assert f"[{shown[('est', p.arm, 'low')]}, {shown[('est', p.arm, 'high')]}]" == table, (table, shown)
    assert (shown[("est", "fix", "low")], shown[("est", "fix", "high")]) == ("12,345.6", "12,345.9"), shown
    assert (shown[("est", "control", "low")], shown[("est", "control", "high")]) == ("11,000", "13,579"), shown
    assert shown[("runs", "control", "value")] == "1,234,567", shown

    rate = charts.ArmPoint("control", 0.175, 0.107, 0.273, "14/80 = 17.5%", "Wilson 95%")
    spec = charts.metric_spec(charts.MetricChart("leak", ["control"], [rate], [charts.RunValue("control", 3, 0.2)],
                                                 is_rate=True))
    (est,) = spec["datasets"]["est"]
    assert f"[{est['lo_text']}, {est['hi_text']}]" == hypothesis_page._fmt_interval(0.107, 0.273, True), est
    assert spec["datasets"]["runs"][0]["value_text"] == "20.0%", spec["datasets"]["runs"]


def test_an_interval_whose_ends_round_alike_gets_the_digits_that_tell_them_apart():
    # Three significant digits wrote a median interval of 0.12345 to 0.12349 as [0.123, 0.123] in the arm table, its
    # chart tooltips and the median's label, where the verdict's text reads [0.12345, 0.12349]. They share its digits.
    from workbench.analysis import display
    from workbench.report import charts

    values = [0.12345, 0.12346, 0.12347, 0.12348, 0.12349]
    e = report_stats.median_interval(values)
    assert (e.lo, e.hi) == (0.12345, 0.12349) and e.label == "median 0.12347 (range, n=5)", e
    assert hypothesis_page._fmt_interval(e.lo, e.hi, False) == "[0.12345, 0.12349]" == display.interval((e.lo, e.hi))
    spec = charts.metric_spec(charts.MetricChart("ttft_s", ["control"], [charts.ArmPoint(
        "control", e.estimate, e.lo, e.hi, e.label, e.method)], [charts.RunValue("control", 1, 0.12345)]))
    (est,) = spec["datasets"]["est"]
    assert (est["lo_text"], est["hi_text"]) == ("0.12345", "0.12349"), est


def test_a_small_rates_interval_reads_apart_in_the_arm_table_and_its_tooltips():
    # A rate's interval of [0.00012, 0.00034] read "0.0%" to "0.0%" in the arm table and in the chart's tooltips,
    # and its label gave a non-zero rate as 0.0%.
    from workbench.report import charts

    assert report_stats.proportion([(1, 8000)]).label == "1/8000 = 0.01%"
    table = hypothesis_page._fmt_interval(0.00012, 0.00034, True)
    assert table == "[0.01%, 0.03%]"
    point = charts.ArmPoint("control", 0.0002, 0.00012, 0.00034, "2/10000 = 0.02%", "Wilson 95%")
    spec = charts.metric_spec(charts.MetricChart("leak", ["control"], [point], [charts.RunValue("control", 3, 0.0001)],
                                                 is_rate=True))
    (est,) = spec["datasets"]["est"]
    assert f"[{est['lo_text']}, {est['hi_text']}]" == table, est
    assert spec["datasets"]["runs"][0]["value_text"] == "0.01%", spec["datasets"]["runs"]


def test_a_recorded_value_keeps_its_digits_and_an_estimate_reads_as_an_intervals_ends_do():
    # A value in a table cell, a run's tooltip or a card had no thousands separators (230000, 1234.6) where the
    # intervals beside it read [229,000, 231,000]. Then every single value took display.number's three significant
    # digits: a run's wall_s of 346.3 read 346 (as one of 346.4 did) and 1234.56 read 1,235. A recorded value keeps
    # its digits, thousands separated; an estimate without an interval keeps three significant digits.
    from workbench.analysis import display
    from workbench.report import charts

    for x, text in ((230000.0, "230,000"), (230000, "230,000"), (1234.56, "1,234.56"), (0.12345, "0.12345"),
                    (5, "5"), (-12345.0, "-12,345"), (999.7, "999.7"), (346.3, "346.3"), (1234567.0, "1,234,567")):
        assert report_stats.fmt(x) == text == display.recorded(x), (x, report_stats.fmt(x))
    assert report_stats.fmt_value(230000.0, False) == "230,000" and report_stats.fmt(None) == "–"
    assert report_stats.fmt_value(346.3, False) != report_stats.fmt_value(346.4, False)
    spec = charts.metric_spec(charts.MetricChart("wall_s", ["control"], [], [charts.RunValue("control", 6, 1234.56)]))
    assert spec["datasets"]["runs"][0]["value_text"] == "1,234.56", spec["datasets"]["runs"]
    assert display.number(1234.56) == "1,235" and display.number(0.12345) == "0.123"


def test_report_fallback_counts_replayed_copies_as_the_analysis_does(workbench_dir):
    # Where no analysis exists the report's arm figure is its own: it called clustered.effective without knowing
    # the runs replayed one workload (one recorded seed), so three copies of the same sessions took the few-runs
    # floor (or the binomial reading) instead of the design effect of 3 the analysis gives them.
    from workbench.registry import load_registry

    exp = load_registry(workbench_dir).experiments["agent-repro"]
    counts = [(10, 80), (16, 80), (12, 80)]

    def runs(*seeds):
        return [{"id": i, "execution_id": 1, "replicate": i, "variables": {"seed": s}, "arm": "treatment",
                 "metrics": {"leak": k, "sessions": n}} for i, ((k, n), s) in enumerate(zip(counts, seeds), start=1)]

    ks, ns = [k for k, _ in counts], [n for _, n in counts]
    copies = clustered.effective(ks, ns, replayed=True)
    assert copies.design_effect == 3
    e = hypothesis_page.arm_estimate(exp, "corruption_rate", runs("7", "7", "7"))
    assert (e.lo, e.hi) == pytest.approx(clustered.rate_interval(copies))
    assert (e.lo, e.hi) != pytest.approx(clustered.rate_interval(clustered.effective(ks, ns)))
    # Runs with their own seeds are read as the analysis reads them too.
    own = hypothesis_page.arm_estimate(exp, "corruption_rate", runs("1", "2", "3"))
    assert (own.lo, own.hi) == pytest.approx(clustered.rate_interval(clustered.effective(ks, ns, replayed=False)))
