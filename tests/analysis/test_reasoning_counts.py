"""The reasoning's counts agree with each other: the runs an arm pooled are the runs its variance model
counts, and a fractional count in an exact tail says it is an effective count (after the design effect)."""

from __future__ import annotations

import re

from workbench.analysis import analyze_stored

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run


def test_pooled_executions_count_every_run_and_effective_counts_are_named(store, registry):
    # Two executions with replicates 1 and 2 each: pooled, the treatment arm holds 4 clean runs of 80.
    # Replicate numbers restart in every execution: replicate 1 of one is not replicate 1 of the other.
    for e in range(2):
        ex = add_execution(store)
        for r in (1, 2):
            seed = {"seed": str(10 * e + r)}  # a fresh workload per replicate, as the runner draws them
            add_run(store, execution_id=ex, arm="control", variables=CONTROL | seed, replicate=r,
                    outcomes={"leak": 9 + r, "done": 71 - r})
            add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT | seed, replicate=r,
                    outcomes={"done": 80})
    text = analyze_stored(store, registry, "wedge-confound").reasoning
    assert "0/320" in text and "4 runs" in text, text
    no_events = re.search(r"(\d+) runs with no events", text)
    assert no_events is not None and no_events.group(1) == "4", text


def _close_agreement_reasoning(store, registry) -> str:
    """The reasoning of an execution of four replicates whose treatment runs agree more closely than binomial
    (7, 8, 8, 8 leaks of 80)."""
    ex = add_execution(store)
    for r, leak in enumerate((7, 8, 8, 8), start=1):
        seed = {"seed": str(r)}
        add_run(store, execution_id=ex, arm="control", variables=CONTROL | seed, replicate=r,
                outcomes={"leak": 9, "done": 71})
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT | seed, replicate=r,
                outcomes={"leak": leak, "done": 80 - leak})
    return analyze_stored(store, registry, "wedge-confound", execution_id=ex).reasoning


def test_a_fractional_count_in_the_exact_tail_says_it_is_an_effective_count(store, registry):
    # Four runs that agree more closely than binomial (7, 8, 8, 8 of 80): counted as correlated copies, so
    # the exact tail is taken on 31/320 divided by a design effect, a fractional count.
    text = _close_agreement_reasoning(store, registry)
    tail = re.search(r"P\(X >= ([0-9.]+) \| n = ([0-9.,]+)[^)]*\)[^;]*", text)
    assert tail is not None, text
    assert tail.group(1) != "31" and "effective counts (31/320 divided by the design effect" in tail.group(0), text


def test_a_tail_at_effective_counts_is_not_called_exact_and_copies_are_explained(store, registry):
    # Runs that agree closely (7, 8, 8, 8 of 80) are read as partly copies: the tail is then taken at fractional
    # counts, which no exact test has; the design effect is one number written one way; and the sentence says why
    # close agreement widens the interval, in words.
    text = _close_agreement_reasoning(store, registry)
    assert re.search(r"exact binomial P\(X [<>]= \d+\.\d", text) is None, text
    assert "binomial tail P(X >= 7.96 | n = 82.2" in text and "not an exact test" in text, text
    shown = set(re.findall(r"design effect (\d+(?:\.\d+)?)", text))
    assert shown == {"3.89"}, (shown, text)
    # Each run had its own seed: the sentence said "Replicates that replayed the same sessions agree like this".
    assert "each ran its own workload (its own seed), so no sessions were replayed, but 4 runs cannot tell chance " \
           "agreement from a dependence" in text and "widens the interval" in text, text
    # The control's 9/80 four times is flagged by the drift check, which said "pseudo-replication, the replicates
    # look like repeats of the same sessions" of runs whose seeds show they were not.
    assert "varies between replicates less than chance allows" in text, text
    assert "repeats of the same sessions" not in text and "pseudo-replication" not in text, text
    assert "each replicate ran its own workload (its own seed): chance agreement, or runs that depend on each " \
           "other in a way their seeds do not show" in text, text


def test_whole_counts_keep_the_exact_binomial(store, registry):
    # One run: its units are independent and its counts whole, so the tail is the exact binomial one.
    ex = add_execution(store)
    add_run(store, execution_id=ex, arm="control", variables=CONTROL, outcomes={"leak": 12, "done": 68})
    add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, outcomes={"leak": 14, "done": 66})
    text = analyze_stored(store, registry, "wedge-confound", execution_id=ex).reasoning
    assert "exact binomial P(X >= 14 | n = 80, p = 0.02)" in text, text
