"""The search on simulated oracles: exact answers with interactions, alpha and units bookkeeping,
inconclusive probes."""

from __future__ import annotations

import math

import pytest

from workbench.isolate.decision import decide
from workbench.isolate.model import BinomialOracle, conjunction
from workbench.isolate.search import ProbeRequest, ProbeResult, factorial, isolate

FAIL = (0.05, math.inf)  # fails when the rate is at least 0.05
SEED = ["index_k_dtype", "hicache", "nixl_abort_fix", "geometry_fix"]


def det(*groups: set[str]) -> BinomialOracle:
    """Deterministic: a failing config fails every unit, a passing one none."""
    return BinomialOracle(conjunction(*groups), FAIL, batch=80, seed=0)


class Scripted:
    """Answers by config from a table (default: passes), to pin the search's handling of each outcome."""

    def __init__(self, table: dict[frozenset[str], str], default: str = "passes", units: float = 80) -> None:
        self.table, self.default, self.units, self.asked = table, default, units, []

    def probe(self, req: ProbeRequest) -> ProbeResult:
        self.asked.append(req)
        out = self.table.get(frozenset(req.applied), self.default)
        return ProbeResult(out, 0, self.units, self.units, 1, "scripted")


@pytest.mark.parametrize("cause", [
    {"geometry_fix"},                                   # one change
    {"index_k_dtype", "hicache"},                       # a 2-way interaction
    {"index_k_dtype", "hicache", "geometry_fix"},      # the seed's 3-way interaction
    set(SEED),                                          # every change needed
])
def test_exact_answer_on_deterministic_oracles(cause):
    r = isolate(SEED, det(cause), alpha=0.05)
    assert r.status == "decided"
    assert set(r.minimal) == cause
    assert len(r.probes) <= len(SEED) + 1  # leave-one-out and one confirm; a cached config is not run again


def test_three_way_interaction_among_six_changes():
    changes = ["a", "b", "c", "d", "e", "f"]
    r = isolate(changes, det({"b", "d", "f"}), alpha=0.05)
    assert (r.status, r.minimal) == ("decided", ("b", "d", "f"))


def test_two_independent_causes_end_one_minimal():
    # a alone fails, and so do b and c together: no single removal cures the bad config, yet removing
    # from the smallest config known to fail reaches one of the two causes, 1-minimal, in k probes.
    oracle = det({"a"}, {"b", "c"})
    r = isolate(["a", "b", "c", "d"], oracle, alpha=0.05)
    assert r.status == "decided"
    assert set(r.minimal) == {"b", "c"}
    assert [p.request.phase for p in r.probes] == ["leave-one-out"] * 4 + ["cure"]
    rate = conjunction({"a"}, {"b", "c"})
    assert rate(frozenset(r.minimal)) == 1.0
    assert all(rate(frozenset(r.minimal) - {x}) == 0.0 for x in r.minimal)  # 1-minimal


def test_leave_one_out_removes_from_the_smallest_config_known_to_fail():
    # The seed world on pdsim: bad - hicache keeps the abort fix off and wedges (inconclusive); once
    # bad - nixl_abort_fix fails, geometry_fix is probed from good + {index_k_dtype, hicache} (abort fix
    # on, sessions complete) rather than from bad - geometry_fix, which would wedge too.
    full = frozenset(SEED)
    table = {full - {"index_k_dtype"}: "passes", full - {"hicache"}: "inconclusive",
             full - {"nixl_abort_fix"}: "fails", full - {"geometry_fix"}: "inconclusive"}
    oracle = Scripted(table)
    r = isolate(SEED, oracle, alpha=0.05)
    assert (r.status, r.minimal) == ("decided", ("index_k_dtype", "hicache", "geometry_fix"))
    asked = [set(q.applied) for q in oracle.asked]
    assert asked == [set(full - {"index_k_dtype"}), set(full - {"hicache"}), set(full - {"nixl_abort_fix"}),
                     {"index_k_dtype", "hicache"}, {"index_k_dtype", "geometry_fix"}]
    failing = oracle.asked[2].index
    assert [q.parent for q in oracle.asked] == [None, None, None, failing, failing]


def test_bad_config_that_does_not_fail_is_reported_as_no_failure():
    r = isolate(["a", "b"], det({"z"}), alpha=0.05)
    assert r.status == "no-failure" and r.minimal is None


def test_good_config_that_already_fails_needs_nothing():
    r = isolate(["a", "b"], det(set()), alpha=0.05)
    assert (r.status, r.minimal) == ("decided", ())


def test_alpha_is_spent_by_the_stated_rule_and_never_exceeds_the_total():
    r = isolate(SEED, det({"hicache", "geometry_fix"}), alpha=0.05)
    assert all(p.request.alpha == pytest.approx(0.05 / (2 * len(SEED) + 1)) for p in r.probes)
    # the most probes the rule allows: k removals, the confirm, k good-side checks
    r2 = isolate(SEED, Scripted({frozenset(SEED): "fails"}, default="inconclusive"), alpha=0.05)
    assert len(r2.probes) == 2 * len(SEED) + 1 and r2.status == "inconclusive"
    for res in (r, r2):
        assert res.alpha_spent == pytest.approx(sum(p.request.alpha for p in res.probes))
        assert res.alpha_spent <= 0.05


def test_units_stay_within_the_budget_and_each_probe_gets_a_share():
    r = isolate(SEED, BinomialOracle(conjunction({"hicache"}, rate=0.15), FAIL, seed=3), alpha=0.05, budget=500)
    assert r.units == sum(p.result.units for p in r.probes)
    assert r.units <= 500 + 80  # a probe may overshoot its share by less than one run
    first = r.probes[0].request
    assert first.max_units == pytest.approx(500 / (len(SEED) + 1))


def test_a_probe_that_runs_out_of_units_is_inconclusive():
    look = decide([(1, 80)], FAIL, alpha=0.01, max_units=80)
    assert (look.outcome, look.stop) == ("inconclusive", True)
    assert "within the probe's 80 units" in look.reasoning
    assert look.reasoning.startswith("1/80 = 1.2%; "), look.reasoning  # a rate in percent, as the verdicts give it
    look = decide([(1, 80)], FAIL, alpha=0.01, max_units=400)
    assert (look.outcome, look.stop) == ("inconclusive", False)


def test_inconclusive_leave_one_out_is_settled_from_the_good_side():
    full = frozenset(SEED)
    table = {full - {"index_k_dtype"}: "passes", full - {"hicache"}: "inconclusive",
             full - {"nixl_abort_fix"}: "fails", full - {"geometry_fix"}: "passes",
             frozenset({"index_k_dtype", "hicache", "geometry_fix"}): "fails"}
    oracle = Scripted(table)
    r = isolate(SEED, oracle, alpha=0.05)
    # good + {index_k_dtype, geometry_fix} (default: passes) shows HiCache needed.
    assert (r.status, r.minimal) == ("decided", ("index_k_dtype", "hicache", "geometry_fix"))
    check = [q for q in oracle.asked if q.phase == "minimality"]
    assert [set(q.applied) for q in check] == [{"index_k_dtype", "geometry_fix"}]
    assert check[0].parent == next(q.index for q in oracle.asked if q.phase == "leave-one-out"
                                   and set(q.applied) == full - {"nixl_abort_fix"})


def test_a_good_side_failure_drops_the_change_and_keeps_the_smaller_set():
    full = frozenset(SEED)
    table = {full - {"index_k_dtype"}: "passes", full - {"hicache"}: "inconclusive",
             full - {"nixl_abort_fix"}: "fails", full - {"geometry_fix"}: "passes",
             frozenset({"index_k_dtype", "hicache", "geometry_fix"}): "fails",
             frozenset({"index_k_dtype", "geometry_fix"}): "fails"}
    r = isolate(SEED, Scripted(table), alpha=0.05)
    assert (r.status, r.minimal) == ("decided", ("index_k_dtype", "geometry_fix"))


def test_inconclusive_leave_one_out_and_good_side_never_yield_a_decided_claim():
    full = frozenset(SEED)
    table = {full - {"index_k_dtype"}: "passes", full - {"hicache"}: "inconclusive",
             full - {"nixl_abort_fix"}: "fails", full - {"geometry_fix"}: "passes",
             frozenset({"index_k_dtype", "hicache", "geometry_fix"}): "fails",
             frozenset({"index_k_dtype", "geometry_fix"}): "inconclusive"}
    r = isolate(SEED, Scripted(table), alpha=0.05)
    assert r.status == "inconclusive" and r.minimal is None
    assert set(r.lower) == {"index_k_dtype", "geometry_fix"}
    assert set(r.upper) == {"index_k_dtype", "hicache", "geometry_fix"}
    assert "hicache" in r.explanation and "open" in r.explanation


def test_inconclusive_confirm_never_yields_a_decided_claim():
    full = frozenset(SEED)
    table = {full - {"nixl_abort_fix"}: "inconclusive"}
    r = isolate(SEED, Scripted(table, default="passes"), alpha=0.05)
    # Every other removal passes, so all four look necessary; the confirm (bad itself) passes:
    # the fallback then finds that the bad config does not fail.
    assert r.status in ("inconclusive", "no-failure") and r.minimal is None


def test_budget_spent_mid_search_is_inconclusive_with_bounds():
    r = isolate(SEED, Scripted({}, default="passes", units=300), alpha=0.05, budget=600)
    assert r.status == "inconclusive" and r.minimal is None
    assert len(r.probes) == 2 and "budget" in r.explanation
    assert set(r.upper) == set(SEED)


@pytest.mark.slow
def test_noisy_seed_world_model_finds_the_right_set_and_beats_the_factorial():
    rate = conjunction({"index_k_dtype", "hicache", "geometry_fix"}, rate=0.15)
    right = wrong_decided = 0
    units = fact_units = 0.0
    for seed in range(20):
        r = isolate(SEED, BinomialOracle(rate, FAIL, seed=seed), alpha=0.05, budget=4000)
        if r.status == "decided":
            right += set(r.minimal) == {"index_k_dtype", "hicache", "geometry_fix"}
            wrong_decided += set(r.minimal) != {"index_k_dtype", "hicache", "geometry_fix"}
        units += r.units
        fact_units += factorial(SEED, BinomialOracle(rate, FAIL, seed=seed), alpha=0.05).units
    assert right >= 19 and wrong_decided == 0
    assert units <= 0.4 * fact_units


def test_removing_the_set_from_bad_is_shown_to_cure_it_without_an_extra_probe_when_already_known():
    # bad - index_k_dtype passed, and bad - {the set} is a subset of it: the cure is already shown.
    full = frozenset(SEED)
    table = {full - {"index_k_dtype"}: "passes", full - {"hicache"}: "inconclusive",
             full - {"nixl_abort_fix"}: "fails"}
    oracle = Scripted(table)
    r = isolate(SEED, oracle, alpha=0.05)
    assert (r.status, r.cures) == ("decided", True)
    assert len(oracle.asked) == 5 and "cures" in r.explanation


def test_the_cure_is_probed_when_no_earlier_probe_shows_it():
    # b and c together fail. The walk drops a and d; no passing probe contains bad - {b, c} = {a, d},
    # so one more probe asks whether the bad config without {b, c} still fails (it passes: a cure).
    r = isolate(["a", "b", "c", "d"], det({"b", "c"}), alpha=0.05)
    assert (r.status, r.minimal, r.cures) == ("decided", ("b", "c"), True)
    last = r.probes[-1].request
    assert (last.phase, set(last.applied)) == ("cure", {"a", "d"})
    assert len(r.probes) <= 2 * 4 + 1


def test_a_second_cause_left_in_bad_is_reported():
    # a alone fails, and so do b and c together: the walk ends at {b, c}, but bad without them still
    # fails (a is there): the answer says so rather than promising a cure.
    r = isolate(["a", "b", "c", "d"], det({"a"}, {"b", "c"}), alpha=0.05)
    assert (r.status, r.minimal, r.cures) == ("decided", ("b", "c"), False)
    assert "another cause" in r.explanation


def test_an_undecided_bad_config_leaves_every_change_possibly_needed_and_none_surely():
    """Whether the bad config fails at all stayed open (its confirming probe was inconclusive, or the budget ran
    out before it): the answer said 'surely needed {}, possibly needed {}', as if no change could be the cause,
    and with the budget spent before the confirm it called every change whose removal passed surely needed,
    though a bad config that does not fail passes every removal too."""
    full = frozenset(SEED)
    r = isolate(SEED, Scripted({full: "inconclusive"}, default="passes"), alpha=0.05)
    assert (r.status, r.minimal) == ("inconclusive", None)
    assert (r.lower, r.upper) == ((), tuple(SEED))
    r = isolate(SEED, Scripted({}, default="passes", units=300), alpha=0.05, budget=1200)
    assert r.status == "inconclusive" and "budget" in r.explanation
    assert (r.lower, r.upper) == ((), tuple(SEED))
    r = isolate(SEED, Scripted({}, default="passes", units=300), alpha=0.05, budget=600)
    assert (r.lower, r.upper) == ((), tuple(SEED))


class FirstUndecided(Scripted):
    """As Scripted, but the first probe of `config` is inconclusive (it lost its units), a later one passes."""

    def __init__(self, table: dict[frozenset[str], str], config: frozenset[str]) -> None:
        super().__init__(table)
        self.config = config

    def probe(self, req: ProbeRequest) -> ProbeResult:
        if frozenset(req.applied) == self.config and not any(frozenset(q.applied) == self.config for q in self.asked):
            self.asked.append(req)
            return ProbeResult("inconclusive", 0, 80, 80, 1, "scripted")
        return super().probe(req)


@pytest.mark.parametrize("undecided", [None, frozenset(["b"])], ids=["leave-one-out", "settled"])
def test_a_set_of_every_change_says_so_in_plain_words(undecided):
    """When every change was needed the answer said 'no other change is not needed' (wb isolate on pdsim, one
    change: 'good + {geometry_fix} fails, and without any one of them it passes; no other change is not
    needed'), a double negative that reads as if a change had been left out."""
    full = frozenset(["a", "b"])
    oracle = FirstUndecided({full: "fails"}, undecided)
    r = isolate(["a", "b"], oracle, alpha=0.05)
    assert any(q.phase == "minimality" for q in oracle.asked) == (undecided is not None)
    assert (r.status, r.minimal) == ("decided", ("a", "b"))
    assert "every change is needed" in r.explanation and "is not needed" not in r.explanation, r.explanation
    r = isolate(["a", "b"], Scripted({full: "fails", frozenset(["a"]): "fails"}, default="passes"), alpha=0.05)
    assert r.minimal == ("a",) and "{b} is not needed" in r.explanation, r.explanation
