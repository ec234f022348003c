"""The confound scan's flag is decided as its clauses are worded: a variable is flagged where it moves with the
outcome within executions (the runs of one execution compared, each execution a stratum); one that moved with it
only across executions (or imported runs) is told apart as a difference across executions. A hypothesis's
per-stratum clauses are Holm-adjusted over its strata. Each rule holds its level on seeded data with no
effect."""

from __future__ import annotations

import random
import re
from dataclasses import replace

from workbench.analysis import display, scan_confounds, stats
from workbench.analysis.aliasing import alias_findings
from workbench.analysis.conditioning import Counts, variable_findings
from workbench.analysis.confounds import Finding, _scan_outcome
from workbench.store.entities import RunData

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run


def _variable(findings: list[Finding], var: str) -> Finding:
    return next(f for f in findings if f.kind == "variable" and f.factor == var and f.outcome == "corruption_rate")


def test_a_variable_changed_only_between_executions_is_a_difference_not_a_flag(store, registry):
    """The README tour: wedge-confound as designed (causal_model=seed, the abort fix changes nothing) and under
    --set causal_model=wedge (the fix removes every leak). causal_model changed only between the two executions,
    yet the pooled test flagged it as a confound. The abort fix, toggled within both, is flagged on the test
    within executions."""
    for overrides, leaks in ((None, (12, 12)), ({"causal_model": "wedge"}, (12, 0))):
        ex = add_execution(store, overrides=overrides)
        for r in range(1, 4):
            for (arm, variables), k in zip((("control", CONTROL), ("treatment", TREATMENT)), leaks):
                add_run(store, execution_id=ex, arm=arm, replicate=r, variables=dict(variables, **(overrides or {})),
                        outcomes={"leak": k, "done": 80 - k})
    findings = scan_confounds(store, registry)
    model = _variable(findings, "causal_model")
    assert not model.flagged and model.across_executions, model.message
    assert "a difference across executions" in model.message and "not a controlled confound" in model.message
    fix = _variable(findings, "nixl_abort_fix")
    assert fix.flagged and not fix.across_executions, fix.message
    # Each execution a stratum: 36/240 against 36/240 units, then 36/240 against 0/240.
    assert fix.test == "exact conditional CMH within executions"
    assert fix.effect["units_p"] == stats.stratified_exact([(36, 240, 36, 240), (36, 240, 0, 240)])
    assert "within the 2 executions whose arms differed in nixl_abort_fix" in fix.message


def test_a_controlled_variable_is_not_flagged_for_what_other_executions_differ_in(store, registry):
    """wedge-confound's arms leaked alike (12/80 each), and another hypothesis's execution, holding the abort fix on
    under the same settings, leaked none: pooled, the fix looked protective and was flagged; within the one
    execution that toggled it, it changed nothing."""
    ex = add_execution(store)
    other = add_execution(store, hypothesis_id="pool-configurator-overcommit")
    for r in range(1, 4):
        for arm, variables in (("control", CONTROL), ("treatment", TREATMENT)):
            add_run(store, execution_id=ex, arm=arm, replicate=r, variables=variables,
                    outcomes={"leak": 12, "done": 68})
        add_run(store, execution_id=other, arm="control", replicate=r, variables=TREATMENT,
                outcomes={"done": 80}, hypothesis_id="pool-configurator-overcommit")
    fix = _variable(scan_confounds(store, registry), "nixl_abort_fix")
    assert not fix.flagged and fix.across_executions, fix.message
    assert fix.p is not None and fix.effect["units_p"] < 0.05  # the pooled test that says so
    assert "within the one execution whose arms differed in nixl_abort_fix" in fix.message


def _run(i: int, execution: int, variables: dict[str, str]) -> RunData:
    return RunData(id=i, label=None, arm=None, status="ok", source="run", execution_id=execution,
                   experiment_version=1, replicate=1, block=None, order_index=None, variables=variables,
                   config_hash=None, fingerprint={})


def _null_history(rng: random.Random, loads: int) -> tuple[list[RunData], dict[int, bool], dict, dict[int, str]]:
    """One history with no confound: `loads` executions of one hypothesis, each under its own `load` (as --set gives)
    and toggling `fix` over 2 runs an arm. Each execution has its own leak rate (executions differ, as they do in
    time and host), each run 80 sessions of it; neither variable changes it."""
    runs, counts = [], {}
    for e in range(loads):
        rate = rng.uniform(0.05, 0.3)
        for fix in ("off", "on", "off", "on"):
            run = _run(len(runs) + 1, e + 1, {"fix": fix, "load": str(e)})
            runs.append(run)
            counts[run.id] = (float(sum(rng.random() < rate for _ in range(80))), 80.0)
    return runs, {i: k > 0 for i, (k, _) in counts.items()}, counts, {r.id: "h" for r in runs}


def _null_findings(registry, seed: int, histories: int, loads: int) -> list[dict[str, Finding]]:
    rng, exp = random.Random(seed), registry.experiments["agent-repro"]
    out = []
    for _ in range(histories):
        runs, occurred, counts, tested_by = _null_history(rng, loads)
        found = variable_findings(Finding, exp, runs, occurred, counts, "corruption_rate", "leak", tested_by)
        out.append({f.factor: f for f in found})
    return out


def _most_by_chance(histories: int) -> float:
    """The most flags of `histories` null histories a test of level ALPHA gives, bar a 1-in-1000 chance."""
    from scipy.stats import binom

    return float(binom.ppf(0.999, histories, stats.ALPHA))


def test_no_confound_is_flagged_no_more_than_alpha_of_the_time(registry):
    """Seeded histories with no confound: `fix` (toggled within each execution) and `load` (changed only between
    them) have no effect, but executions differ. Pooled over units across executions, `load` was flagged in most."""
    found = _null_findings(registry, 20261206, 100, 2)
    for var in ("fix", "load"):
        flags = sum(f[var].flagged for f in found)
        assert flags <= _most_by_chance(len(found)), (var, flags, next(f[var].message for f in found
                                                                       if f[var].flagged))


def test_a_hypothesis_clauses_are_holm_adjusted_over_its_strata(registry):
    """One hypothesis run under 6 settings of `load`, its arms alike in each: each stratum's clause was judged at
    alpha, so with 6 strata one said "show an association" in about a quarter of seeded histories with no effect.
    Where one stratum does show it, its p-value is the adjusted one and the clause says over how many strata. With 2
    runs an arm in the stratum the test over runs gives no p below 1/3, so Tarone's rule leaves it out of the count:
    the p over units is no longer doubled (it was, for a choice that test could never win), and the clause says
    why."""
    found = _null_findings(registry, 7, 100, 6)
    said = [f["fix"].message for f in found if "whose runs show an association" in f["fix"].message]
    assert len(said) <= _most_by_chance(len(found)), (len(said), said[:1])
    runs, occurred, counts, tested_by = _null_history(random.Random(1), 6)
    for r in runs:
        if r.execution_id == 1 and r.variables["fix"] == "on":  # the fix removes every leak under load=0
            counts[r.id], occurred[r.id] = (0.0, 80.0), False
    off = [counts[r.id][0] for r in runs if r.execution_id == 1 and r.variables["fix"] == "off"]
    fix = variable_findings(Finding, registry.experiments["agent-repro"], runs, occurred, counts,
                            "corruption_rate", "leak", tested_by)[0]
    assert fix.factor == "fix"
    # over units alone (the test over runs not counted); the smallest of 6: Holm multiplies it by 6
    p = 6 * stats.fisher(int(sum(off)), 160, 0, 160)
    assert (f"whose runs show an association with leak where load=0 (Fisher p {display.p_is(p)} over units, "
            "the comparison over runs not counted (with 2 runs an arm it cannot reach p < 0.33), Holm-adjusted over "
            "6 strata)") in fix.message, fix.message


def test_a_flag_judged_over_units_shows_the_p_over_units(store, registry):
    """A flag decided over units (every run has them) showed the p over runs beside it: `FLAG ... nixl_abort_fix 1`
    in the table, where an unflagged row showed 0.0378. The p (and p_adjusted) a finding gives is the one its flag
    is judged on, and it says what that test counts."""
    ex = add_execution(store, overrides={"causal_model": "wedge"})
    for r in range(1, 3):
        for (arm, variables), k in zip((("control", CONTROL), ("treatment", TREATMENT)), (12, 1)):
            add_run(store, execution_id=ex, arm=arm, replicate=r, variables=dict(variables, causal_model="wedge"),
                    outcomes={"leak": k, "done": 80 - k})
    fix = _variable(scan_confounds(store, registry), "nixl_abort_fix")
    assert fix.flagged, fix.message
    assert fix.effect["runs_p"] == 1.0  # every run leaked, in both arms
    assert fix.p == fix.effect["units_p"] < 0.05 and fix.p_counts == "units" and fix.p_adjusted < 0.05


def _toggled(leaks: dict[str, tuple[int, ...]], units: float = 80.0) -> tuple[list[RunData], Counts]:
    """One execution's runs toggling `fix`, off then on, each run of `units` units with its arm's next count."""
    runs, counts = [], {}
    for i in range(2 * len(leaks["off"])):
        fix = ("off", "on")[i % 2]
        runs.append(_run(i + 1, 1, {"fix": fix}))
        counts[i + 1] = (float(leaks[fix][i // 2]), units)
    return runs, counts


def _fix(registry, runs: list[RunData], counts: Counts) -> Finding:
    occurred = {i: c[0] > 0 for i, c in counts.items()}
    return variable_findings(Finding, registry.experiments["agent-repro"], runs, occurred, counts, "corruption_rate",
                             "leak", {r.id: "h" for r in runs})[0]


def test_choosing_the_smaller_of_the_p_over_runs_and_over_units_is_paid_for(registry):
    """A flag was raised on the smaller of the p over runs and the p over units, as if only one test had been run:
    two chances at alpha flag a variable with no effect more often than alpha. Here every run leaked (p over runs 1)
    and 14/320 against 4/320 units gives p 0.029 over units: flagged, though doubled for the choice it is 0.057.
    The p a finding shows is the raw one, its comparisons count both tests and p_adjusted is the one it is judged
    on. The design was 2 runs an arm of 80 units; Tarone's rule now leaves out of the count a test over runs that
    cannot reach alpha (with 2 runs an arm none can), so the design is 4 runs an arm of 80, whose test over runs
    can (2/70 = 0.029, below alpha though not below its half: counting the test over units alone, at alpha whole,
    the test over runs could then decide, so the rule's count stays 2): the choice is still paid for."""
    runs, counts = _toggled({"off": (4, 4, 3, 3), "on": (1, 1, 1, 1)})
    fix = _fix(registry, runs, counts)
    units = stats.stratified_exact([(14, 320, 4, 320)])  # Fisher's, as the scan computes it
    assert units < stats.ALPHA < 2 * units
    assert fix.effect["runs_p"] == 1.0 and fix.p == fix.effect["units_p"] == units and fix.p_counts == "units"
    assert fix.comparisons == 2 and fix.p_adjusted == 2 * units and not fix.flagged, fix.message
    assert "left_out" not in fix.effect
    assert f"Bonferroni-adjusted over 2 comparisons, runs and units: 1 over runs, " \
           f"{display.p_value(2 * units)} over units" in fix.message, fix.message
    # the hypothesis's own clause pays for the same choice
    assert f"which found no association with leak" in fix.message and "show an association" not in fix.message


def test_a_test_over_runs_that_cannot_reach_alpha_is_not_counted(registry):
    """Tarone's rule. With 2 runs an arm Fisher's test over runs gives no p below 1/3, whatever the outcomes: the
    Bonferroni charge for choosing between it and the test over units paid for a test that could never decide, and
    a variable whose units moved 12/160 against 3/160 (p 0.031) went unflagged at 0.062. The design alone says so,
    so the test over units is judged alone (studies/confound_false_alarms.py: false alarms within alpha in every
    setting), and the finding says which comparison was left out and why, in its text and its JSON."""
    runs, counts = _toggled({"off": (6, 6), "on": (2, 1)})
    fix = _fix(registry, runs, counts)
    units = stats.fisher(12, 160, 3, 160)
    assert units < stats.ALPHA < 2 * units
    assert fix.flagged and fix.comparisons == 1 and fix.p == fix.p_adjusted == units and fix.p_counts == "units"
    assert fix.effect["left_out"] == "runs" and fix.effect["left_out_design"] == "2 runs an arm"
    assert abs(fix.effect["left_out_floor"] - 1 / 3) < 1e-12
    assert fix.to_dict()["effect"]["left_out"] == "runs"
    assert (f"p = 1 over runs, {display.p_value(units)} over units (the comparison over runs was not counted: with 2 "
            "runs an arm it cannot reach p < 0.33)") in fix.message, fix.message
    assert ("whose runs show an association with leak (Fisher p = 0.031 over units, the comparison over runs not "
            "counted (with 2 runs an arm it cannot reach p < 0.33))") in fix.message, fix.message


def test_a_variable_of_three_values_leaves_out_its_tests_over_runs_at_their_share_of_alpha(registry):
    """Three values, each against the rest: 2 runs against 4 give no p below 1/15 over runs, above each contrast's
    share of alpha (0.05 / 3), so Tarone's rule counts the 3 tests over units alone (it counted 6), and the text says
    why with that share."""
    runs, counts = [], {}
    for i, (fix, k) in enumerate([("a", 12), ("b", 3), ("c", 4), ("a", 10), ("b", 2), ("c", 3)]):
        runs.append(_run(i + 1, 1, {"fix": fix}))
        counts[i + 1] = (float(k), 80.0)
    fix = _fix(registry, runs, counts)
    assert fix.comparisons == 3 and fix.flagged and fix.effect["left_out"] == "runs", fix.message
    assert fix.p_adjusted == 3 * fix.effect["units_p"]
    assert ("(Bonferroni-adjusted over 3 comparisons: 0.00034 over units; the 3 comparisons over runs were not "
            "counted: with 2 runs against 4 none can reach p < 0.066 (each one's share of 0.05 is 0.017))") \
        in fix.message, fix.message
    assert "Bonferroni over its 3 values, each over units alone" in fix.message, fix.message


def test_executions_that_together_can_reach_alpha_over_runs_are_still_charged_for_the_choice(registry):
    """Tarone's rule reads the design the test is run on: 2 runs an arm cannot reach alpha in one execution (1/3),
    nor in two (each a stratum: 2/36 = 0.056), but three can (2/216 = 0.0093): there the test over runs is counted,
    and 17/480 against 6/480 units (exact conditional CMH p 0.033) stays doubled (0.065) and unflagged."""
    leaks = [((4, 3), (1, 0)), ((4, 3), (1, 1)), ((2, 1), (2, 1))]  # per execution: (off's runs, on's runs)
    runs, counts = [], {}
    for execution, (off, on) in enumerate(leaks, start=1):
        for fix, k in [("off", off[0]), ("on", on[0]), ("off", off[1]), ("on", on[1])]:
            runs.append(_run(len(runs) + 1, execution, {"fix": fix}))
            counts[len(runs)] = (float(k), 80.0)
    fix = _fix(registry, runs, counts)
    units = stats.stratified_exact([(7, 160, 1, 160), (7, 160, 2, 160), (3, 160, 3, 160)])
    assert units < stats.ALPHA < 2 * units
    assert fix.p == units and fix.comparisons == 2 and fix.p_adjusted == 2 * units and not fix.flagged, fix.message
    assert "left_out" not in fix.effect and "not counted" not in fix.message, fix.message
    two = [r for r in runs if r.execution_id < 3]  # two executions cannot: the test over units is judged alone
    assert _fix(registry, two, {r.id: counts[r.id] for r in two}).effect["left_out_design"] == \
        "2 runs an arm in each of 2 executions"


def test_a_hypothesis_clause_over_several_executions_is_the_test_within_them(registry):
    """A variable toggled within two executions of one hypothesis: the test within executions (each a stratum) gave
    p 2.3e-05 doubled for the choice of runs or units, and the hypothesis's clause, a Fisher test pooled over the
    same runs, gave 2.4e-05: the one p read as two numbers (0.0027 and 0.0028 in the field). The clause tests the
    executions it spans each as a stratum, as the finding does: one number, given once rounded. With 1 run an arm in
    each execution the test over runs cannot reach alpha (no p below 1/2), so Tarone's rule leaves it out of the
    count and the p over units is no longer doubled: the pooled test's p (1.2e-05, 2 runs an arm) and the test's
    within executions are each given alone, and the clause gives the latter."""
    runs, counts = [], {}
    for i, (execution, fix, leak) in enumerate(((1, "off", 8), (1, "on", 0), (2, "off", 12), (2, "on", 1))):
        runs.append(_run(i + 1, execution, {"fix": fix}))
        counts[i + 1] = (float(leak), 80.0)
    occurred = {i: c[0] > 0 for i, c in counts.items()}
    fix = variable_findings(Finding, registry.experiments["agent-repro"], runs, occurred, counts, "corruption_rate",
                            "leak", {r.id: "h" for r in runs})[0]
    within = display.p_value(stats.stratified_exact([(8, 80, 0, 80), (12, 80, 1, 80)]))
    assert (f"exact conditional CMH p = 1 over runs, {within} over units (the comparison over runs was not counted: "
            "with 1 run an arm in each of 2 executions it cannot reach p < 0.5)") in fix.message, fix.message
    assert (f"tested in controlled runs of hypothesis h, whose runs show an association with leak (exact conditional "
            f"CMH p = {within} over units, the comparison over runs not counted (with 1 run an arm in each of 2 "
            "executions it cannot reach p < 0.5))") in fix.message, fix.message
    assert fix.comparisons == 1 and fix.p == stats.stratified_exact([(8, 80, 0, 80), (12, 80, 1, 80)])
    pooled = re.findall(r"p = 1 over runs, (\S+) over units \(the comparison over runs was not counted: with 2 runs "
                        r"an arm", fix.message)
    assert pooled == [display.p_value(stats.fisher(20, 160, 1, 160))], fix.message


ABORTS = "aborts (= waiting_for_input)"


def _guard(findings: list[Finding]) -> Finding:
    return next(f for f in findings if f.kind == "guard" and f.factor == ABORTS and f.outcome == "corruption_rate")


def test_a_guard_is_judged_within_executions_not_cleared_by_another(store, registry):
    """wedge-confound's execution removed the aborts and the leaks together (control 12/80 leaks with aborts,
    treatment none of either): its runs cannot tell the two apart. Another hypothesis's execution leaked without
    aborts, and pooled, that run said "aborts is not necessary for leak" and cleared the guard: a comparison
    across executions, which anything else that changed between them could explain. The guard is flagged on the
    execution that confounds them, the other execution's runs said to be across executions."""
    ex = add_execution(store)
    other = add_execution(store, hypothesis_id="pool-configurator-overcommit")
    for r in range(1, 3):
        add_run(store, execution_id=ex, arm="control", replicate=r, variables=CONTROL,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", replicate=r, variables=TREATMENT,
                outcomes={"done": 80}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=other, arm="control", replicate=r, variables=TREATMENT,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 0},
                hypothesis_id="pool-configurator-overcommit")
    aborts = _guard(scan_confounds(store, registry))
    assert aborts.flagged and not aborts.across_executions, aborts.message
    assert "In every run with leak of the execution where it occurred only with aborts" in aborts.message
    assert (f"leak occurred without {ABORTS} only in another execution (2 runs: run 3, run 6), which anything "
            "else that changed between them could explain") in aborts.message, aborts.message
    # the comparison with runs without aborts is the one within the execution: 2/2 against 0/2 runs
    assert aborts.test == "Fisher exact within one execution" and aborts.p == stats.fisher(2, 2, 0, 2)


def test_imported_runs_are_judged_together_so_one_does_not_flag_a_guard_the_others_clear(store, registry):
    """The seed's story as imported evidence: before the abort fix a run leaked and wedged; after it, runs leaked
    with no aborts. Each imported run was its own group, so the one run with both was "confounded" by itself and
    the guard flagged (proposing the abort fix the later runs had already tried), where the pooled history said
    aborts is not necessary for leak. Imported runs belong to no execution and are judged together, as before."""
    add_run(store, execution_id=None, arm=None, variables=CONTROL, outcomes={"leak": 10, "done": 70},
            extra={"waiting_for_input": 5})
    for _ in range(3):
        add_run(store, execution_id=None, arm=None, variables=TREATMENT, outcomes={"leak": 12, "done": 68},
                extra={"waiting_for_input": 0})
    aborts = _guard(scan_confounds(store, registry))
    assert not aborts.flagged, aborts.message
    assert aborts.message.startswith(f"leak occurred without {ABORTS} in 3 runs"), aborts.message


def test_a_guard_names_an_executions_runs_before_the_imported_ones_whatever_was_stored_first(registry):
    """The seed's evidence imported first, then wedge-confound run: the imported run and the execution's control both
    leaked only with aborts. The runs of each execution, then the imported runs, are the groups a guard is judged in
    (as `by_execution` gives them to variables and aliases too, and as the message words them); they came in the
    order stored, so the imported run was named first."""
    # (execution, variables, leak, aborts), in the order stored
    stored = [(None, CONTROL, 10, 5), (1, CONTROL, 12, 10), (1, TREATMENT, 0, 0)]
    runs = [replace(_run(i + 1, ex, variables), metrics={"leak": leak, "sessions": 80, "waiting_for_input": aborts})
            for i, (ex, variables, leak, aborts) in enumerate(stored)]
    aborts = _guard(_scan_outcome(registry, registry.experiments["agent-repro"], runs, "corruption_rate"))
    assert aborts.flagged, aborts.message
    assert f"{ABORTS} also occurred (run 2: leak=12, {ABORTS}=10; run 1: leak=10, {ABORTS}=5)" in aborts.message, \
        aborts.message


def test_a_guard_names_the_imported_run_where_the_outcome_occurred_without_it(store, registry):
    """"leak occurred without aborts only in other executions and an imported run (7 runs: run 1, run 4, run 5,
    run 23; and 3 more)": the imported run was among the runs counted, never named. Where the list is cut, the
    imported runs are named after it, apart from the executions' runs."""
    ex = add_execution(store)
    add_run(store, execution_id=ex, arm="control", variables=CONTROL, outcomes={"leak": 12, "done": 68},
            extra={"waiting_for_input": 10})
    add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, outcomes={"done": 80},
            extra={"waiting_for_input": 0})
    other = add_execution(store, hypothesis_id="pool-configurator-overcommit")
    executed = [add_run(store, execution_id=other, arm="control", replicate=r, variables=TREATMENT,
                        outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 0},
                        hypothesis_id="pool-configurator-overcommit") for r in range(1, 6)]
    imported = add_run(store, execution_id=None, arm=None, variables=TREATMENT, outcomes={"leak": 14, "done": 66},
                       extra={"waiting_for_input": 0})
    aborts = _guard(scan_confounds(store, registry))
    assert aborts.flagged, aborts.message
    shown = ", ".join(f"run {i}" for i in executed[:4])
    assert (f"leak occurred without {ABORTS} only in another execution and an imported run (6 runs: {shown}; and 1 "
            f"more; imported, of no execution: run {imported}), which anything else that "
            "changed between them could explain") in aborts.message, aborts.message


def test_a_guard_compared_only_across_executions_says_so(store, registry):
    """Both arms of wedge-confound's execution wedged and leaked; another execution had neither. Pooled, "leak
    occurred in 0 of 2 runs without aborts (Fisher p = 0.17)" read as a comparison within the runs; no execution
    had runs without aborts to compare with: the runs stay confounded, and the comparison is said to be across
    executions."""
    ex = add_execution(store)
    other = add_execution(store, hypothesis_id="pool-configurator-overcommit")
    for r in range(1, 3):
        for arm, variables in (("control", CONTROL), ("treatment", TREATMENT)):
            add_run(store, execution_id=ex, arm=arm, replicate=r, variables=variables,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=other, arm="control", replicate=r, variables=TREATMENT,
                outcomes={"done": 80}, extra={"waiting_for_input": 0}, hypothesis_id="pool-configurator-overcommit")
    aborts = _guard(scan_confounds(store, registry))
    assert aborts.flagged, aborts.message
    assert aborts.test == "Fisher exact across executions" and aborts.p == stats.fisher(4, 4, 0, 2)
    assert (f"leak occurred in 0 of 2 runs without {ABORTS}, all in other executions (Fisher p "
            f"{display.p_is(stats.fisher(4, 4, 0, 2))} across executions, which anything else that changed "
            "between them could explain)") in aborts.message, aborts.message


def _aliases(registry, runs: list[RunData], leaks: dict[int, int]) -> list[Finding]:
    counts = {r.id: (float(leaks[r.id]), 80.0) for r in runs}
    return alias_findings(Finding, registry, registry.experiments["agent-repro"], runs,
                          {i: k > 0 for i, (k, _) in counts.items()}, counts, "corruption_rate", "leak")


def test_variables_that_changed_together_only_between_executions_are_a_difference_not_a_flag(registry):
    """Two executions toggling the abort fix, the second under --set causal_model=wedge --set hicache=off: pooled,
    causal_model and hicache were flagged as aliased, though no execution's runs moved them together. Which of them
    (or what else changed between the executions) goes with the leaks is a difference across executions."""
    runs = [_run(i + 1, 1 + i // 4, {"causal_model": model, "hicache": cache, "nixl_abort_fix": fix})
            for i, (model, cache, fix) in enumerate([("seed", "on", "off"), ("seed", "on", "on")] * 2
                                                    + [("wedge", "off", "off"), ("wedge", "off", "on")] * 2)]
    (alias,) = _aliases(registry, runs, {r.id: 12 if r.variables["hicache"] == "on" else 0 for r in runs})
    assert alias.factor == "causal_model ~ hicache" and alias.effect["perfect"]
    assert not alias.flagged and alias.across_executions, alias.message
    assert alias.message.endswith("; no execution's runs moved them together, so this is a difference across "
                                  "executions, which anything else that changed between them could explain, not a "
                                  "controlled confound."), alias.message
    assert alias.proposal["toggle"] is not None  # the separating experiment is still proposed


def test_variables_aliased_within_an_execution_are_flagged_though_the_history_separates_them(registry):
    """One execution's runs switched hicache and index_k_dtype together; other executions varied them apart, so
    pooled they were not aliased (Cramér's V 0) and nothing was said, though that execution's own comparison cannot
    tell which of the two it measured."""
    pairs = [("on", "bf16"), ("off", "fp8")] * 2 + [("on", "fp8"), ("off", "bf16")] * 2
    runs = [_run(i + 1, 1 if i < 4 else i, {"hicache": cache, "index_k_dtype": dtype})
            for i, (cache, dtype) in enumerate(pairs)]
    (alias,) = _aliases(registry, runs, {r.id: 12 if r.id in (1, 3) else 0 for r in runs})
    assert alias.factor == "hicache ~ index_k_dtype" and alias.flagged and not alias.across_executions
    assert alias.message.startswith("hicache and index_k_dtype are perfectly aliased within execution 1: its 4 runs "
                                    "never varied them independently"), alias.message
    assert alias.table["runs"] == ["run 1", "run 2", "run 3", "run 4"]
