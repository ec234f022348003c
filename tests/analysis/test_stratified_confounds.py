"""The confound scan judges a variable within strata of the other variables by a stratified exact test (no
Simpson's paradox), and leaves per-replicate variables (a workload seed) out of the variable and alias scans."""

from __future__ import annotations

import json
import re
import shutil
from itertools import product
from pathlib import Path

import pytest

from workbench.analysis import scan_confounds, stats

from analysis_helpers import CONTROL, add_execution, add_run, kv_workbench

KVCACHE = Path(__file__).resolve().parents[2] / "examples" / "kvcache"

# The Simpson's-paradox history: within each batch_writes stratum compression changes nothing (20% vs 20%
# stale clients with batch_writes off, 0% vs 0% with it on), but compression=on mostly sits in the clean
# stratum, so pooling the strata makes compression look protective.
SIMPSON = ["run_id,compression,batch_writes,clients,stale,errors", "a1,on,off,50,10,0"] \
    + [f"a{i},off,off,50,10,0" for i in range(2, 11)] \
    + [f"b{i},on,on,50,0,0" for i in range(1, 10)] + ["b10,off,on,50,0,0"]


def _brute_force(tables: list[tuple[int, int, int, int]]) -> float:
    """Two-sided exact conditional p by enumerating every joint table with the strata's margins."""
    from scipy.stats import hypergeom

    supports = []
    for k1, n1, k2, n2 in tables:
        m = k1 + k2
        supports.append([(x, hypergeom.pmf(x, n1 + n2, m, n1)) for x in range(max(0, m - n2), min(m, n1) + 1)])
    joint: dict[int, float] = {}
    for combo in product(*supports):
        s = sum(x for x, _ in combo)
        p = 1.0
        for _, q in combo:
            p *= q
        joint[s] = joint.get(s, 0.0) + p
    observed = joint[sum(t[0] for t in tables)]
    return min(1.0, sum(p for p in joint.values() if p <= observed * (1 + 1e-7)))


def test_stratified_exact_matches_fisher_on_one_stratum_and_enumeration_on_several():
    assert stats.stratified_exact([(7, 10, 1, 10)]) == pytest.approx(stats.fisher(7, 10, 1, 10), rel=1e-9)
    tables = [(3, 5, 1, 6), (4, 4, 2, 7), (0, 3, 0, 2), (2, 6, 5, 6)]
    assert stats.stratified_exact(tables) == pytest.approx(_brute_force(tables), rel=1e-9)
    # Strata in which the variable did not vary, or the outcome did not, carry no information.
    assert stats.stratified_exact([(1, 1, 9, 9), (0, 9, 0, 1)]) == pytest.approx(1.0)


def test_simpsons_paradox_history_gives_no_flag_and_names_the_test_and_strata(tmp_path, cli, monkeypatch):
    root = tmp_path / "kv"
    root.mkdir()
    shutil.copy(KVCACHE / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(KVCACHE / "experiments", root / "experiments")
    (root / "s.csv").write_text("\n".join(SIMPSON) + "\n")
    monkeypatch.chdir(root)
    code, _, err = cli("import", "evidence", "s.csv")
    assert code == 0, err
    code, out, err = cli("confounds", "--json")
    assert code == 0, err
    found = {(f["kind"], f["factor"]): f for f in json.loads(out)["items"]}
    comp = found[("variable", "compression")]
    assert not comp["flagged"], comp["message"]
    assert comp["p"] == pytest.approx(1.0)
    assert comp["test"].startswith("exact conditional")
    assert "stratified by batch_writes" in comp["message"]
    assert "batch_writes=off: compression=off 9/9 runs" in comp["message"]
    assert "batch_writes=on: compression=off 0/1 runs" in comp["message"]
    assert comp["effect"]["risk_difference"] == pytest.approx(0.0)
    assert comp["effect"]["units_rate_difference"] == pytest.approx(0.0)
    # batch_writes does separate the outcome within the compression=off stratum (9/9 vs 0/1 is too few runs)
    # and within compression=on (1/1 vs 0/9): the stratified test still sees it, across imported runs (no
    # execution compared them), so it is a difference across executions, not a flag.
    batch = found[("variable", "batch_writes")]
    assert batch["across_executions"] and not batch["flagged"] and batch["p"] < 0.05
    code, text, _ = cli("confounds")
    assert "stale_rate vs variable compression (exact conditional" in text


def test_per_replicate_seed_is_left_out_of_the_variable_and_alias_scans(store, registry):
    # The README tour's shape: the main run, then --set causal_model=wedge; each replicate drew a fresh seed,
    # so causal_model and seed move together one-to-one.
    ex = add_execution(store)
    for r, (model, seed) in enumerate([("seed", "11"), ("seed", "12"), ("wedge", "13"), ("wedge", "14")]):
        for arm, fix in (("control", "off"), ("treatment", "on")):
            add_run(store, execution_id=ex, arm=arm, variables=dict(CONTROL, nixl_abort_fix=fix, causal_model=model,
                                                                    seed=seed),
                    replicate=r + 1, outcomes={"leak": 6 if fix == "off" else 0, "done": 34 if fix == "off" else 40})
    findings = scan_confounds(store, registry)
    assert findings, "the scan found nothing at all"
    for f in findings:
        assert "seed" not in f.factor.split(" ~ "), f.message
        assert "seed=" not in f.message and "seed:" not in json.dumps(f.to_dict().get("proposal") or {})


# A variable of three values: every lz4 run read stale values, no run of the two others did. The scan once
# tested two-valued variables only and said nothing at all (no p-value, no flag) about this one.
THREE = ["run_id,compression,batch_writes,clients,stale,errors"] \
    + [f"a{i},lz4,off,50,20,0" for i in range(1, 7)] + [f"b{i},off,off,50,0,0" for i in range(1, 7)] \
    + [f"c{i},on,off,50,0,0" for i in range(1, 7)]


def test_a_variable_of_three_values_is_tested_each_value_against_the_rest(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(kv_workbench(tmp_path, THREE, "on, off, lz4"))
    assert cli("import", "evidence", "s.csv")[0] == 0
    code, out, err = cli("confounds", "--json")
    assert code == 0, err
    comp = {(f["kind"], f["factor"]): f for f in json.loads(out)["items"]}[("variable", "compression")]
    assert comp["across_executions"], comp["message"]  # imported runs: a difference across executions
    # lz4 against the rest: 6/6 vs 0/12 runs, Fisher p = 1/C(18, 6) = 5.4e-5, times 3 values each tested over runs
    # and over units (Bonferroni).
    assert comp["effect"]["runs_p"] == pytest.approx(stats.fisher(6, 6, 0, 12), rel=1e-6) and comp["comparisons"] == 6
    assert comp["p_adjusted"] == comp["effect"]["units_p_adjusted"]  # the smaller, over units: the one it is judged on
    assert "compression=lz4 against the other values" in comp["message"]
    assert "Bonferroni over its 3 values, each over runs and over units" in comp["message"]
    assert comp["effect"]["risk_difference"] == pytest.approx(1.0)


def test_a_variable_of_three_values_without_an_effect_is_not_flagged(tmp_path, cli, monkeypatch):
    rows = [THREE[0]] + [f"{r.split(',')[0]},{r.split(',')[1]},off,50,{5 if i % 2 else 0},0"
                         for i, r in enumerate(THREE[1:])]
    monkeypatch.chdir(kv_workbench(tmp_path, rows, "on, off, lz4"))
    assert cli("import", "evidence", "s.csv")[0] == 0
    code, out, err = cli("confounds", "--json")
    comp = {(f["kind"], f["factor"]): f for f in json.loads(out)["items"]}[("variable", "compression")]
    assert not comp["flagged"] and comp["p_adjusted"] is not None and comp["p_adjusted"] > 0.05, comp["message"]


def test_a_hypothesis_tested_under_two_settings_is_not_said_to_have_found_no_association(workbench_dir: Path,
                                                                                         seed_csv: Path, cli,
                                                                                         tmp_path: Path):
    """The README tour: wedge-confound run as designed (causal_model=seed: the abort fix changes nothing), the seed's
    evidence imported, and a run under --set causal_model=wedge (the fix removes every leak). The finding said
    "tested in controlled runs of hypothesis wedge-confound, which found no association with leak" beside the
    causal_model=wedge stratum, 2/2 runs against 0/2 (24/160 units against 0/160). Its runs are now described
    stratum by stratum, each under its own settings."""
    from workbench.store import open_store

    from analysis_helpers import TREATMENT

    db = str(tmp_path / "wb.duckdb")
    store = open_store(db)
    try:
        for overrides, reps, leaks in ((None, 3, (3, 3)), ({"causal_model": "wedge"}, 2, (12, 0))):
            ex = add_execution(store, overrides=overrides)
            for r in range(1, reps + 1):
                for (arm, vars_), k in zip((("control", CONTROL), ("treatment", TREATMENT)), leaks):
                    add_run(store, execution_id=ex, arm=arm, variables=dict(vars_, seed=str(r), **(overrides or {})),
                            replicate=r, outcomes={"leak": k, "done": 80 - k})
    finally:
        store.dispose()
    flags = ["--db", db, "--root", str(workbench_dir)]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, out, err = cli("confounds", "--json", *flags)
    assert code == 0, err
    f = next(f for f in json.loads(out)["items"]
             if f["kind"] == "variable" and f["factor"] == "nixl_abort_fix" and f["outcome"] == "corruption_rate")
    message = f["message"]
    assert "found no association" not in message, message
    assert re.search(r"hypothesis wedge-confound, whose runs show an association with leak where [^;]*"
                     r"causal_model=wedge", message), message
    assert re.search(r", and none where [^;]*causal_model=seed", message), message


def test_a_hypothesis_clause_names_a_stratum_by_the_variables_that_separate_it(workbench_dir: Path,
                                                                               seed_csv: Path, cli,
                                                                               tmp_path: Path):
    """The README tour's strata differ in every variable imported evidence does not record: the clause named each
    stratum of the hypothesis's runs by all of them ("where version 1, causal_model=wedge, geometry_fix=off, ..."),
    twice as long as what tells the strata apart. It names the variables that separate the strata it names."""
    from workbench.store import open_store

    from analysis_helpers import TREATMENT

    db = str(tmp_path / "wb.duckdb")
    store = open_store(db)
    try:
        for overrides, reps, leaks in ((None, 3, (3, 3)), ({"causal_model": "wedge"}, 2, (12, 0))):
            ex = add_execution(store, overrides=overrides)
            for r in range(1, reps + 1):
                for (arm, vars_), k in zip((("control", CONTROL), ("treatment", TREATMENT)), leaks):
                    add_run(store, execution_id=ex, arm=arm, variables=dict(vars_, seed=str(r), **(overrides or {})),
                            replicate=r, outcomes={"leak": k, "done": 80 - k})
    finally:
        store.dispose()
    flags = ["--db", db, "--root", str(workbench_dir)]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, out, err = cli("confounds", "--json", *flags)
    assert code == 0, err
    f = next(f for f in json.loads(out)["items"]
             if f["kind"] == "variable" and f["factor"] == "nixl_abort_fix" and f["outcome"] == "corruption_rate")
    tested = f["message"].partition("; tested in controlled runs of ")[2]
    assert re.fullmatch(r"hypothesis wedge-confound, whose runs show an association with leak where "
                        r"causal_model=wedge \(Fisher p = \S+ over units, the comparison over runs not counted \(with "
                        r"2 runs an arm it cannot reach p < 0\.33\), Holm-adjusted over 2 strata\), and none where "
                        r"causal_model=seed\.",
                        tested), f["message"]


def test_a_hypothesis_whose_runs_hold_the_variable_at_one_value_is_not_said_to_have_tested_it(workbench_dir: Path,
                                                                                             cli, tmp_path: Path):
    """Another hypothesis's runs, all with nixl_abort_fix=on, lie in the stratum the finding tests: its runs cannot
    tell the two values apart, yet the finding said it "found no association with leak"."""
    from workbench.store import open_store

    from analysis_helpers import TREATMENT

    db = str(tmp_path / "wb.duckdb")
    store = open_store(db)
    try:
        ex = add_execution(store)
        for r in range(1, 4):
            for (arm, vars_), k in zip((("control", CONTROL), ("treatment", TREATMENT)), (12, 0)):
                add_run(store, execution_id=ex, arm=arm, variables=dict(vars_, seed=str(r)), replicate=r,
                        outcomes={"leak": k, "done": 80 - k})
        other = add_execution(store, hypothesis_id="pool-configurator-overcommit")
        for r in range(1, 3):
            add_run(store, execution_id=other, arm="control", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                    outcomes={"leak": 0, "done": 80}, hypothesis_id="pool-configurator-overcommit")
    finally:
        store.dispose()
    code, out, err = cli("confounds", "--json", "--db", db, "--root", str(workbench_dir))
    assert code == 0, err
    f = next(f for f in json.loads(out)["items"]
             if f["kind"] == "variable" and f["factor"] == "nixl_abort_fix" and f["outcome"] == "corruption_rate")
    assert "wedge-confound" in f["message"] and "pool-configurator-overcommit" not in f["message"], f["message"]


POOL_RECHECK = """
  - id: pool-recheck
    parent: pool-configurator-overcommit
    claim: The pool's fix again.
    experiment: agent-repro
    isolates: pool_configurator_fix
    arms:
      control: {pool_configurator_fix: "off"}
      treatment: {pool_configurator_fix: "on"}
    hold: {index_k_dtype: bf16, hicache: "on", nixl_abort_fix: "on", geometry_fix: "off"}
    predicts:
      - {metric: error_rate, arm: treatment, at_most: 0.02}
"""


def _tour_with_a_recheck(db: str) -> None:
    """The README tour's runs as pdsim gives them (every variable recorded): wedge-confound as designed (the abort
    fix changes no leak; the over-commit fails sessions once the wedge is gone), its --set causal_model=wedge run
    (the fix removes every leak), pool-configurator-overcommit (its fix removes the failures), and a second
    hypothesis on the pool's fix whose runs had no failure in either arm."""
    from workbench.store import open_store

    from analysis_helpers import TREATMENT

    c, t = dict(CONTROL, pool_configurator_fix="off"), dict(TREATMENT, pool_configurator_fix="off")
    store = open_store(db)
    try:
        for hid, overrides, reps, arms in (
                ("wedge-confound", None, 3, (("control", c, (12, 20)), ("treatment", t, (12, 40)))),
                ("wedge-confound", {"causal_model": "wedge"}, 2, (("control", c, (12, 20)), ("treatment", t, (0, 40)))),
                ("pool-configurator-overcommit", None, 2,
                 (("control", t, (12, 40)), ("treatment", dict(t, pool_configurator_fix="on"), (12, 0)))),
                ("pool-recheck", None, 2,
                 (("control", t, (12, 0)), ("treatment", dict(t, pool_configurator_fix="on"), (12, 0))))):
            ex = add_execution(store, overrides=overrides, hypothesis_id=hid)
            for r in range(1, reps + 1):
                for arm, variables, (leak, error) in arms:
                    add_run(store, execution_id=ex, arm=arm, replicate=r, hypothesis_id=hid,
                            variables=dict(variables, seed=str(r), **(overrides or {})),
                            outcomes={"leak": leak, "error": error, "done": 80 - leak - error})
    finally:
        store.dispose()


def test_a_variable_changed_only_between_executions_is_not_called_controlled(workbench_dir: Path, seed_csv: Path,
                                                                              cli, tmp_path: Path):
    """The README tour's `--set causal_model=wedge` run: causal_model changed only between executions (the arms of
    each held it at one value), yet the finding said "tested in controlled runs of hypothesis wedge-confound, whose
    runs show an association ...". It now says the comparison is across executions. Every hypothesis clause says
    something ("...; of hypothesis H." said nothing of H's runs beside a flag) and every association clause gives
    its p-value (with one stratum the p was left out: "whose runs show an association with error.")."""
    from analysis_helpers import registry_with

    registry_with(workbench_dir, POOL_RECHECK)
    db = str(tmp_path / "wb.duckdb")
    _tour_with_a_recheck(db)
    flags = ["--db", db, "--root", str(workbench_dir)]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    code, out, err = cli("confounds", "--json", *flags)
    assert code == 0, err
    found = {(f["factor"], f["outcome"]): f["message"] for f in json.loads(out)["items"] if f["kind"] == "variable"}
    causal = found[("causal_model", "corruption_rate")]
    assert "controlled runs of hypothesis wedge-confound" not in causal, causal
    assert re.search(r"; compared only across executions of hypothesis wedge-confound \(no execution's arms differed "
                     r"in causal_model\), whose runs show an association with leak where nixl_abort_fix=on "
                     r"\(Fisher p = \S+ over units, the comparison over runs not counted \(with 3 runs against 2 it "
                     r"cannot reach p < 0\.1\), Holm-adjusted over 2 strata\), and none where nixl_abort_fix=off\.$",
                     causal), causal
    assert re.search(r"; tested in controlled runs of hypothesis pool-configurator-overcommit, whose runs show an "
                     r"association with error \(Fisher p = \S+ over units, the comparison over runs not counted "
                     r"\(with 2 runs an arm it cannot reach p < 0\.33\)\); of hypothesis pool-recheck, whose runs on "
                     r"their own show no association with error \(Fisher p = 1 over \w+\)\.$",
                     found[("pool_configurator_fix", "error_rate")]), found[("pool_configurator_fix", "error_rate")]
    for message in found.values():
        assert not re.search(r"hypothesis [\w-]+[.;]", message), message  # a hypothesis named with nothing said
        for clause in re.findall(r"show an association with \w+[^;]*", message):
            assert "Fisher p" in clause, (clause, message)
