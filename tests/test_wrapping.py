"""Prose wrapped at a terminal's width (`wrapping.wrap`): a number stays with what belongs to it."""

from __future__ import annotations

import pytest

from workbench.wrapping import wrap


@pytest.mark.parametrize("text, width, kept", [
    # A number and its unit: "analysis 0.24" / "s + report 0.02 s" at 60 columns.
    ("time: 12.3 s (runs 10.0 s, analysis 0.24 s + report 0.02 s, and the site written for", 40, "0.24 s"),
    ("the workload moved 512 KiB then 3 MiB in 40 ms, 2.5x the control arm's bytes", 44, "40 ms,"),
    ("the workload moved 512 KiB then 3 MiB in 40 ms, 2.5x the control arm's bytes", 34, "3 MiB"),
    ("the decode server's copy ran 3 x slower than the one before the patch", 30, "3 x"),
    # A count or a duration with the word it goes with: "leave --timeout out for" / "200".
    ("Error: the workload timed out; leave --timeout out for 200 s or raise it", 56, "for 200 s"),
    ("wedge-confound on sim: no run ended (at most 24 planned); it stopped after 0.7 s", 76, "after 0.7 s"),
    ("confounds: aborts goes with leaks in every run here (run 1: leak=14, aborts=3; run 2: leak=9)", 31,
     "(run 1:"),
])
def test_a_number_stays_with_its_unit_and_the_word_before_it(text, width, kept):
    lines = wrap(text, width)
    assert all(len(line) <= width for line in lines), lines
    assert any(kept in line for line in lines), lines
    assert " ".join(" ".join(lines).split()) == " ".join(text.split())


def test_a_number_without_a_unit_still_breaks_where_it_must():
    # "s" as a word of prose after a number that is no measure stays a break like any other; a number alone is a word
    lines = wrap("the run took 3 attempts and 12 more were left over from the batch", 20)
    assert lines == ["the run took 3", "  attempts and 12", "  more were left", "  over from the", "  batch"], lines


@pytest.mark.parametrize("width, rate_line", [
    (60, "    52/160 = 32.5% (Wilson 95% (t, 1 df) [25.7%, 40.1%];"),  # "2 runs)," on the next
    (80, "    arm (nixl_abort_fix=on) had 52/160 = 32.5%"),
])
def test_a_rate_is_never_left_alone_on_a_line_by_the_phrase_after_it(width, rate_line):
    """A prediction's line of two runs ('had 52/160 = 32.5% (Wilson 95% (t, 1 df) [25.7%, 40.1%]; 2 runs), ...'):
    at 60 columns the rate did not fit after 'had' and its interval's phrase, kept whole, did not fit after the
    rate, so the rate stood alone on a line. A phrase that does not fit after a unit alone on its line fills that
    line, broken between its words; after more than one, it still starts the next line whole."""
    from workbench.analysis.summary import _prediction_finding

    j = {"where": "treatment", "estimate": 52 / 160, "k": 52, "n": 160, "interval_kind": "Wilson 95% (t, 1 df)",
         "interval": [0.257, 0.401], "bounds": (0.0, 0.02), "runs": 2, "outcome": "falsified",
         "region": "<= 0.02 (2%)"}
    text = "  [falsified] predicts corruption_rate (treatment) <= 0.02 (2%)" + _prediction_finding(
        j, {"treatment": {"variables": {"nixl_abort_fix": "on"}}}, "nixl_abort_fix")
    assert "had 52/160 = 32.5% (Wilson 95% (t, 1 df) [25.7%, 40.1%]; 2 runs)," in text, text
    lines = wrap(text, width)
    assert all(len(line) <= width for line in lines) and " ".join(" ".join(lines).split()) == " ".join(text.split())
    assert not any(line.strip() == "52/160 = 32.5%" for line in lines), lines
    assert rate_line in lines, lines


def _finding(ks: tuple[int, ...], replayed: bool | None) -> str:
    """A prediction's line as `wb hypothesis analyze` prints it for an arm of these runs (of 80 units each), its
    interval named and its runs' reading given as the analysis writes them (clustered.effective)."""
    from workbench.analysis.clustered import effective, interval_label
    from workbench.analysis.summary import _prediction_finding

    e = effective(ks, [80] * len(ks), replayed)
    j = {"where": "treatment", "estimate": sum(ks) / (80 * len(ks)), "k": sum(ks), "n": 80 * len(ks),
         "interval_kind": interval_label(e), "interval": [0.257, 0.401], "bounds": (0.0, 0.02), "runs": len(ks),
         "outcome": "falsified", "region": "<= 0.02 (2%)", "method_reason": e.reason}
    return "  [falsified] predicts corruption_rate (treatment) <= 0.02 (2%)" + _prediction_finding(
        j, {"treatment": {"variables": {"nixl_abort_fix": "on"}}}, "nixl_abort_fix")


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("ks, replayed, kept", [
    ((26, 26), None, ["design effect 2.58 [", "; 2 runs),", "2 runs agree", "but 2 runs cannot"]),  # the floor
    ((25, 27), False, ["design effect 2.58 [", "; 2 runs),", "2 runs agree", "but 2 runs cannot"]),
    ((20, 26, 30), None, ["design effect 2.58 [", "; 3 runs),", "3 runs spread", "but 3 runs cannot"]),
])
def test_a_count_stays_with_what_it_counts_and_a_name_with_its_value(ks, replayed, kept, width):
    """At 60 columns a line ended in "widened by the design effect" and the next began "2.58 [25.7%, ...", and
    at 60 and 80 one ended in "Runs as the unit: the 2" and the next began "runs agree": a whole number stays with
    the word it counts ("2 runs"), as with its unit, and a name with its value ("design effect 2.58")."""
    text = _finding(ks, replayed)
    assert all(k in text for k in kept), text
    lines = wrap(text, width)
    assert all(len(line) <= width for line in lines) and " ".join(" ".join(lines).split()) == " ".join(text.split())
    assert [k for k in kept if not any(k in line for line in lines)] == [], lines


@pytest.mark.parametrize("width, kept", [
    (60, "    (exact binomial P(X >= 14 | n = 80,"),
    (80, "    (exact binomial P(X >= 14 | n = 80, p = 0.02) = 7.2e-10). Runs as the unit:"),
])
def test_the_exact_binomial_test_stays_with_its_probability(width, kept):
    """The seed's wedge-confound analysis ('... outside the predicted region <= 0.02 (2%) (exact binomial P(X >= 14 |
    n = 80, p = 0.02) = 7.2e-10).'): at 60 columns the phrase did not fit on a line, and "(exact binomial" stood
    alone on its line, the probability it names on the next. The test's name stays with the probability's start."""
    from workbench.analysis.summary import _prediction_finding

    j = {"where": "treatment", "estimate": 14 / 80, "k": 14, "n": 80, "interval_kind": "Wilson 95%",
         "interval": [0.107, 0.273], "bounds": (0.0, 0.02), "runs": 1, "outcome": "falsified",
         "region": "<= 0.02 (2%)", "exact": "exact binomial P(X >= 14 | n = 80, p = 0.02) = 7.2e-10"}
    text = "  [falsified] predicts corruption_rate (treatment) <= 0.02 (2%)" + _prediction_finding(
        j, {"treatment": {"variables": {"nixl_abort_fix": "on"}}}, "nixl_abort_fix") + " Runs as the unit: one run."
    assert "(2%) (exact binomial P(X >= 14 | n = 80, p = 0.02) = 7.2e-10). Runs" in text, text
    lines = wrap(text, width)
    assert all(len(line) <= width for line in lines) and " ".join(" ".join(lines).split()) == " ".join(text.split())
    assert not any(line.strip() in ("(exact binomial", "(exact") for line in lines), lines
    assert kept in lines, lines
