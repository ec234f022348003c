"""`wb isolate` input checking (exit 2, nothing run or written), the region syntax, and --write."""

from __future__ import annotations

import math
import re
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli.main import app
from workbench.errors import BadInput
from workbench.isolate.app import generated_hypotheses, prepare_spec
from workbench.isolate.model import BinomialOracle, conjunction
from workbench.isolate.records import append_to_registry
from workbench.isolate.region import parse_region
from workbench.isolate.search import isolate
from workbench.registry import load_registry

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "analysis"))

from analysis_helpers import add_execution, add_run  # noqa: E402

BASE = ["isolate", "--experiment", "agent-repro", "--good", "geometry_fix=on", "--bad", "geometry_fix=off",
        "--metric", "corruption_rate", "--region", ">= 0.05"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "wb"
    shutil.copytree(REPO / "experiments", r / "experiments")
    shutil.copy(REPO / "hypotheses.yaml", r / "hypotheses.yaml")
    return r


@pytest.mark.parametrize("text,bounds", [
    (">= 0.05", (0.05, math.inf)), ("at_least 0.05", (0.05, math.inf)), ("<=0.02", (-math.inf, 0.02)),
    ("at_most 2e-2", (-math.inf, 0.02)), ("== 0", (0.0, 0.0)), ("equals 0", (0.0, 0.0)),
    ("0.05..0.3", (0.05, 0.3)), ("between 0.05 0.3", (0.05, 0.3)),
])
def test_region_syntax(text, bounds):
    assert parse_region(text).bounds() == bounds


@pytest.mark.parametrize("text", ["> 0.05", "0.05", "between 0.3 0.05", "at_least x", ""])
def test_bad_region_is_bad_input(text):
    with pytest.raises(BadInput, match="--region"):
        parse_region(text)


@pytest.mark.parametrize("change,needle", [
    (("--good", "geometry_fix=maybe"), "--good geometry_fix=maybe"),
    (("--good", "no_such_var=on"), "--good no_such_var"),
    (("--bad", "geometry_fix"), "expected var=value"),
    (("--metric", "wall_s"), "--metric wall_s: 'wall_s' is a continuous metric"),
    (("--metric", "nope"), "--metric nope"),
    # The hint said only "pick a proportion metric"; it names the experiment's own.
    (("--metric", "aborts"), "agent-repro's proportion metrics: corruption_rate"),
    # A strict bound was refused with the generic list of forms; it now says why and what to write.
    (("--region", "> 0.05"), "write '>= 0.05' (or at_least 0.05)"),
    (("--region", "<0.3"), "write '<= 0.3' (or at_most 0.3)"),
    (("--region", "above 3"), "--region"),
    (("--region", ">= 1.5"), "a proportion lies in [0, 1]; 1.5 is outside it"),
    (("--region", "-0.1..0.2"), "-0.1 is outside it"),
    (("--experiment", "nope"), "--experiment nope"),
    (("--target", "nope"), "--target nope"),
    (("--bad", "geometry_fix=on"), "same configuration"),
    (("--budget", "nan"), "--budget nan: not a number"),
    (("--budget", "0"), "--budget 0: out of range"),
    (("--parent", "nope"), "--parent nope: no hypothesis 'nope' in "),  # it did not name the flag
    # A region holding every proportion: every config 'failed', and the search spent its first probes on pdsim
    # to say 'the good config itself fails: nothing needs isolating'.
    (("--region", ">= 0"), "--region '>= 0' holds every proportion"),
    (("--region", "<= 1"), "--region '<= 1' holds every proportion"),
    (("--region", "between 0 1"), "--region 'between 0 1' holds every proportion"),
    # A workload seed held fixed replays the same sessions in every run of a probe: its sequential test took
    # each replay for new units, so a probe could decide on one run's sessions counted many times.
    (("--good", "geometry_fix=on seed=5"), "--good seed=5: seed is a per-replicate variable"),
    (("--bad", "geometry_fix=off seed=5"), "--bad seed=5: seed is a per-replicate variable"),
])
def test_bad_input_exits_2_and_writes_nothing(root, tmp_path, change, needle):
    args = list(BASE)
    if change[0] in args:
        args[args.index(change[0]) + 1] = change[1]
    else:
        args += list(change)
    db = tmp_path / "store.duckdb"
    before = (root / "hypotheses.yaml").read_bytes()
    res = CliRunner().invoke(app, args + ["--root", str(root), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "Error:" in res.output and needle in res.output
    assert "Traceback" not in res.output
    assert not db.exists()
    assert (root / "hypotheses.yaml").read_bytes() == before


def test_differences_cover_named_variables_and_defaults(root):
    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["index_k_dtype=fp8 hicache=off", "nixl_abort_fix=on",
                                                               "geometry_fix=on"],
                        bad=["index_k_dtype=bf16", "hicache=on", "nixl_abort_fix=off", "geometry_fix=off"],
                        metric="corruption_rate", region=">= 0.05", seed=3)
    assert spec.changes == ("index_k_dtype", "hicache", "nixl_abort_fix", "geometry_fix")
    assert spec.arm(("hicache",)) == {"index_k_dtype": "fp8", "hicache": "on", "nixl_abort_fix": "on",
                                      "geometry_fix": "on"}


def test_write_appends_valid_generated_hypotheses_and_keeps_the_file(root):
    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["hicache=off", "geometry_fix=on"],
                        bad=["hicache=on", "geometry_fix=off"], metric="corruption_rate", region=">= 0.05",
                        seed=3, parent="hicache-bf16-race")
    result = isolate(list(spec.changes), BinomialOracle(conjunction(set(spec.changes)), (0.05, math.inf)))
    before = (root / "hypotheses.yaml").read_text()
    append_to_registry(root, generated_hypotheses(spec, result))
    after = (root / "hypotheses.yaml").read_text()
    assert after.startswith(before.rstrip("\n"))
    reg2 = load_registry(root)
    gen = [h for h in reg2.hypotheses if h.generated is not None]
    assert len(gen) == len(result.probes) + 1
    assert gen[0].id == spec.root_id and gen[0].parent == "hicache-bf16-race" and gen[0].status == "supported"
    assert all(h.kind == "config" and h.generated.search == spec.search_id for h in gen)
    assert {h.parent for h in gen[1:]} == {spec.root_id}
    with pytest.raises(BadInput, match="already present"):
        append_to_registry(root, generated_hypotheses(spec, result))
    assert (root / "hypotheses.yaml").read_text() == after


def test_write_appends_the_readme_search_whose_claims_run_over_one_line(root):
    # the README's pair: four changes, so a probe's claim ("... applied fails (leave-one-out probe: does bad
    # without hicache still fail?)") is longer than a line, and its text holds "probe: ", the arm's own key
    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro",
                        good=["index_k_dtype=fp8 hicache=off nixl_abort_fix=on geometry_fix=on"],
                        bad=["index_k_dtype=bf16 hicache=on nixl_abort_fix=off geometry_fix=off"],
                        metric="corruption_rate", region=">= 0.05", seed=7)
    failing = {"index_k_dtype", "hicache", "geometry_fix"}
    result = isolate(list(spec.changes), BinomialOracle(conjunction(failing), (0.05, math.inf)))
    generated = generated_hypotheses(spec, result)
    append_to_registry(root, generated)
    claims = {h.id: h.claim for h in load_registry(root).hypotheses if h.generated is not None}
    assert claims == {h.id: h.claim for h in generated} and len(claims) == len(result.probes) + 1
    assert any("leave-one-out probe: does bad without hicache still fail?" in c for c in claims.values())


def test_report_page_shows_the_search_tree_answer_and_units(root, tmp_path):
    from workbench.isolate.app import search_record
    from workbench.isolate.records import load_searches, record_search
    from workbench.report.site import build_site
    from workbench.store import open_store

    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["index_k_dtype=fp8", "hicache=off", "geometry_fix=on"],
                        bad=["index_k_dtype=bf16", "hicache=on", "geometry_fix=off"], metric="corruption_rate",
                        region=">= 0.05", seed=5)
    result = isolate(list(spec.changes), BinomialOracle(conjunction({"hicache", "geometry_fix"}), (0.05, math.inf)))
    store = open_store(str(tmp_path / "s.duckdb"))
    try:
        record_search(store, spec, search_record(spec, result))
        [stored] = load_searches(store)
        assert stored.search_id == spec.search_id and stored.status == "decided"
        out = build_site(store, reg, tmp_path / "site")
    finally:
        store.dispose()
    page = Path(out["isolate"]).read_text()
    assert spec.root_id in page and "minimal set {hicache=on, geometry_fix=off}" in page
    assert page.count("<tr class=") == len(result.probes)
    assert f"{result.units:g}" in page and "leave-one-out" in page
    assert "corruption_rate fails when &gt;= 0.05" in page  # the region as written, not a dict
    from workbench.cli.isolate import search_lines

    assert "corruption_rate failure region >= 0.05," in search_lines(search_record(spec, result))[0]


def _second_probe_stops(monkeypatch) -> None:
    """The oracle's first probe finishes (scripted: no target), the second is stopped as Ctrl-C stops a run."""
    from workbench.errors import RunFailure
    from workbench.isolate import app as iso_app
    from workbench.isolate.search import ProbeResult

    def probe(self, req):
        if self.results:
            raise RunFailure("interrupted; the target was restored")
        res = ProbeResult("passes", 0, 160, 160, 2, "scripted")
        self.results.append((req, res))
        return res

    monkeypatch.setattr(iso_app.RunnerOracle, "probe", probe)


def test_a_search_stopped_mid_way_is_recorded_with_its_probes(root, tmp_path, monkeypatch):
    from workbench.app import Workbench
    from workbench.errors import RunFailure
    from workbench.isolate.records import load_searches
    from workbench.settings import Settings
    from workbench.store import open_store

    _second_probe_stops(monkeypatch)
    db = str(tmp_path / "s.duckdb")
    wb = Workbench(Settings(db=db, root=root))
    with pytest.raises(RunFailure):
        wb.isolate(experiment="agent-repro", good=["hicache=off", "geometry_fix=on"],
                   bad=["hicache=on", "geometry_fix=off"], metric="corruption_rate", region=">= 0.05", seed=1,
                   show_progress=False)
    with open_store(db) as store:
        [st] = load_searches(store)
    assert st.status == "interrupted" and st.record["result"]["minimal"] is None
    assert [p["outcome"] for p in st.record["result"]["probes"]] == ["passes"]


@pytest.mark.parametrize("edit,parent,words", [
    (("\n\n  - id: half-added\n", ""), None, "missing required field 'claim'"),  # a hypothesis half added
    # The --parent renamed: the appended hypotheses no longer validate, and the error named the temporary file
    # the candidate was checked in (.hypotheses.yaml.tmpPID:153), gone by the time it was read, at a line past
    # the end of hypotheses.yaml.
    (("  - id: live-hostpool-control\n", "  - id: live-hostpool-ctl\n"), "live-hostpool-control",
     "the generated hypotheses would not validate: parent 'live-hostpool-control'"),
])
def test_a_write_refused_after_the_search_keeps_its_result_and_is_a_failure_while_running(root, tmp_path,
                                                                                         monkeypatch, edit, parent,
                                                                                         words):
    """hypotheses.yaml edited while the search ran refused --write's append as bad input: exit 2, "nothing was
    run", after every probe had run, and the answer found was never printed. The search is printed and stays
    recorded; the refusal is the Error of a failure while running (exit 1), naming hypotheses.yaml, and the
    YAML that was not appended is printed, to paste once the file is fixed."""
    from workbench.isolate import app as iso_app
    from workbench.isolate.records import load_searches
    from workbench.isolate.search import ProbeResult
    from workbench.store import open_store

    registry = root / "hypotheses.yaml"
    before = registry.read_text()
    edited = before + edit[0] if not edit[1] else before.replace(edit[0], edit[1], 1)

    def probe(self, req):  # scripted: no target; the config fails exactly when geometry_fix=off is applied
        if not self.results:
            registry.write_text(edited)  # someone else's edit, while the search runs
        fails = "geometry_fix" in req.applied
        res = ProbeResult("fails" if fails else "passes", 80 if fails else 0, 160, 160, 2, "scripted")
        self.results.append((req, res))
        return res

    monkeypatch.setattr(iso_app.RunnerOracle, "probe", probe)
    db = tmp_path / "s.duckdb"
    res = CliRunner().invoke(app, ["isolate", "--experiment", "agent-repro", "--good", "hicache=off geometry_fix=on",
                                   "--bad", "hicache=on geometry_fix=off", "--metric", "corruption_rate",
                                   "--region", ">= 0.05", "--seed", "3", "--write", "--root", str(root),
                                   "--db", str(db)] + (["--parent", parent] if parent else []))
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert "minimal set: {geometry_fix=off} (decided)" in res.stdout, res.output
    [error] = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert "--write" in error and f"{registry}" in error and words in error and "not appended" in error, error
    assert ".tmp" not in error, error
    assert registry.read_text() == edited and [p.name for p in root.iterdir() if ".tmp" in p.name] == []
    with open_store(str(db)) as store:
        [st] = load_searches(store)
    assert st.status == "decided"
    # The YAML printed is the block --write would have appended: the file fixed, it pastes in and validates.
    block = res.stdout.split("hypotheses.yaml once it is fixed:\n", 1)[1]
    assert f"id: {st.root_id}" in block
    registry.write_text(before.rstrip("\n") + "\n\n" + block)
    gen = [h for h in load_registry(root).hypotheses if h.generated is not None]
    assert len(gen) == len(st.record["result"]["probes"]) + 1


PAIR = """\
experiment: agent-repro
good: {index_k_dtype: fp8, hicache: off, nixl_abort_fix: on, geometry_fix: on}
bad:
  index_k_dtype: bf16
  hicache: on
  nixl_abort_fix: off
  geometry_fix: off
metric: corruption_rate
region: ">= 0.05"
budget: 800
"""


def test_a_pair_declared_in_yaml_gives_the_same_request_as_the_flags(root, tmp_path):
    from workbench.cli.isolate import request

    (tmp_path / "pair.yaml").write_text(PAIR)
    reg = load_registry(root)
    req = request(dict.fromkeys(("experiment", "good", "bad", "metric", "region", "profile", "budget", "alpha")),
                  str(tmp_path / "pair.yaml"), reg)
    from_file = prepare_spec(reg, seed=1, **req)
    from_flags = prepare_spec(reg, experiment="agent-repro", metric="corruption_rate", region=">= 0.05", seed=1,
                              good=["index_k_dtype=fp8 hicache=off nixl_abort_fix=on geometry_fix=on"],
                              bad=["index_k_dtype=bf16 hicache=on nixl_abort_fix=off geometry_fix=off"], budget=800)
    assert (from_file.good, from_file.bad, from_file.changes, from_file.budget, from_file.region) == (
        from_flags.good, from_flags.bad, from_flags.changes, from_flags.budget, from_flags.region)
    assert set(from_file.changes) == {"index_k_dtype", "hicache", "nixl_abort_fix", "geometry_fix"}
    # a flag replaces the file's value
    req = request({"experiment": None, "good": None, "bad": ["geometry_fix=off"], "metric": None, "region": None,
                   "profile": None, "budget": None, "alpha": None}, str(tmp_path / "pair.yaml"), reg)
    assert req["bad"] == ["geometry_fix=off"] and req["budget"] == 800


@pytest.mark.parametrize("edit,needle", [
    (("hicache: on", "hicache: maybe"), "pair.yaml:5 (field bad.hicache): 'maybe'"),
    (("geometry_fix: off\n", "geometry_fix: off\n  no_such: 1\n"), "pair.yaml:8 (field bad.no_such)"),
    (("region: \">= 0.05\"", "region: above"), "pair.yaml:9 (field region)"),
    (("budget: 800", "colour: red"), "unknown key 'colour'"),
    (("metric: corruption_rate\n", ""), "missing metric"),
    (("experiment: agent-repro", "experiment: nope"), "pair.yaml:1 (field experiment)"),
    (("budget: 800", "budget: lots"), "budget must be a number"),
    (("metric: corruption_rate", "metric: wall_s"), "pair.yaml:8 (field metric): 'wall_s' is a continuous metric"),
    (("metric: corruption_rate", "metric: corruption_rat"), "pair.yaml:8 (field metric): experiment 'agent-repro' "
                                                             "has no metric 'corruption_rat'"),
    (("region: \">= 0.05\"", "region: \">= 1.5\""), "pair.yaml:9 (field region): region '>= 1.5': a proportion"),
    # These named a flag not given (--budget 0, --alpha 2.0, --target nope) and not the file's line.
    (("budget: 800", "budget: 0"), "pair.yaml:10 (field budget): budget 0 must be positive (units)"),
    (("budget: 800", "budget: .nan"), "pair.yaml:10 (field budget): budget nan must be positive (units)"),
    (("budget: 800", "alpha: 2"), "pair.yaml:10 (field alpha): alpha 2 must lie in (0, 1)"),
    (("budget: 800", "target: nope"), "pair.yaml:10 (field target): experiment 'agent-repro' has no profile 'nope'"),
    (("budget: 800", "target: [sim]"), "pair.yaml:10 (field target): target must be a profile name"),
    (("geometry_fix: off\n", "geometry_fix: off\n  seed: 5\n"),
     "pair.yaml:8 (field bad.seed): seed is a per-replicate"),
    # These said "experiment 'agent-repro' has no metric 'None'" and "region 'None' is not a region".
    (("metric: corruption_rate", "metric:"), "pair.yaml:8 (field metric): metric is empty"),
    (("region: \">= 0.05\"", "region: ~"), "pair.yaml:9 (field region): region is empty"),
    (("experiment: agent-repro", "experiment: [agent-repro]"), "pair.yaml:1 (field experiment): experiment must be "
                                                               "text, not ['agent-repro']"),
    # It named two flags that were never given ("--good and --bad give the same configuration").
    (("bad:\n  index_k_dtype: bf16\n  hicache: on\n  nixl_abort_fix: off\n  geometry_fix: off\n",
      "bad: {index_k_dtype: fp8, hicache: off, nixl_abort_fix: on, geometry_fix: on, causal_model: seed}\n"),
     "pair.yaml:3 (field bad): good and bad give the same configuration (unnamed variables take the experiment's "
     "defaults): nothing to isolate"),
])
def test_a_bad_pair_file_exits_2_naming_file_and_line(root, tmp_path, edit, needle):
    (tmp_path / "pair.yaml").write_text(PAIR.replace(*edit))
    db = tmp_path / "store.duckdb"
    res = CliRunner().invoke(app, ["isolate", "--pair", str(tmp_path / "pair.yaml"), "--root", str(root),
                                   "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "Error:" in res.output and needle in res.output
    assert "Traceback" not in res.output and not db.exists()


@pytest.mark.parametrize("edit,flags", [
    (("budget: 800", "budget: 0"), ["--budget", "500"]),
    (("budget: 800", "target: nope"), ["--target", "sim"]),
    (("budget: 800", "alpha: 2"), ["--alpha", "0.1"]),
    (("metric: corruption_rate", "metric: wall_s"), ["--metric", "corruption_rate"]),
    (("region: \">= 0.05\"", "region: above"), ["--region", ">= 0.05"]),
    (("metric: corruption_rate\n", ""), ["--metric", "corruption_rate"]),
    (("hicache: on", "hicache: maybe"), ["--bad", "hicache=on"]),
    (("experiment: agent-repro", "experiment: nope"), ["--experiment", "agent-repro"]),
], ids=["budget", "target", "alpha", "metric", "region", "missing-metric", "bad", "experiment"])
def test_a_flag_replaces_a_wrong_value_of_the_pair_file_without_an_error(root, tmp_path, edit, flags):
    """A flag given with --pair replaces the file's value, but the file's value was checked all the same: a wrong
    one (or one missing) that the flag replaces ended the command at the file's line. The request goes on to the
    next check, here the --parent given wrong on purpose, so that nothing runs."""
    (tmp_path / "pair.yaml").write_text(PAIR.replace(*edit))
    db = tmp_path / "store.duckdb"
    res = CliRunner().invoke(app, ["isolate", "--pair", str(tmp_path / "pair.yaml"), *flags, "--parent", "nope",
                                   "--root", str(root), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "Error: --parent nope: " in res.output and "pair.yaml" not in res.output, res.output
    assert "Traceback" not in res.output and not db.exists()


def test_without_a_pair_every_flag_is_required(root, tmp_path):
    res = CliRunner().invoke(app, ["isolate", "--experiment", "agent-repro", "--good", "geometry_fix=on",
                                   "--root", str(root), "--db", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 2 and "missing --bad, --metric, --region" in res.output


def test_a_search_without_failure_says_so_plainly(root):
    from workbench.cli.isolate import search_lines
    from workbench.isolate.app import search_record

    spec = prepare_spec(load_registry(root), experiment="agent-repro", good=["hicache=off"], bad=["hicache=on"],
                        metric="corruption_rate", region=">= 0.05", seed=3)
    result = isolate(list(spec.changes), BinomialOracle(conjunction({"nothing"}), (0.05, math.inf)))
    assert result.status == "no-failure"
    text = "\n".join(search_lines(search_record(spec, result)))
    assert "no failure to isolate: the bad config does not fail" in text and "surely needed" not in text


def test_an_undecided_probe_says_why_under_its_line(root):
    """A probe that lost most of its units printed only "INCONCLUSIVE  0/80": nothing said that its sessions
    did not complete (the probe's reasoning, recorded, was shown nowhere in the text)."""
    from workbench.cli.isolate import search_lines
    from workbench.isolate.app import search_record
    from workbench.isolate.search import ProbeResult

    why = ("0/80 with only 3 of 80 units completed: the rest did not complete (errors or timeouts) and could not "
           "show the failure, so no pass is read off them; stopped at this look")

    class Wedged:
        def probe(self, request):
            if request.applied == ("hicache",):
                return ProbeResult("inconclusive", 0, 80, 80, 1, reasoning=why)
            return BinomialOracle(conjunction({"hicache"}), (0.05, math.inf)).probe(request)

    spec = prepare_spec(load_registry(root), experiment="agent-repro", good=["hicache=off"], bad=["hicache=on"],
                        metric="corruption_rate", region=">= 0.05", seed=3)
    lines = search_lines(search_record(spec, isolate(list(spec.changes), Wedged())))
    at = next(i for i, line in enumerate(lines) if "INCONCLUSIVE  0/80" in line)
    indent = len(lines[at]) - len(lines[at].lstrip())
    assert lines[at + 1] == " " * (indent + 2) + "why: " + why, lines
    assert not any(line.strip().startswith("why: ") for line in lines if "passes" in line or "FAILS" in line)


def test_probe_seeds_stay_in_the_seed_range(root):
    """`wb isolate --seed 2147483647` gave probe 1 the execution seed 2^31, which its own design refuses."""
    from workbench.isolate.adapter import probe_hypothesis
    from workbench.isolate.search import ProbeRequest

    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["hicache=off"], bad=["hicache=on"],
                        metric="corruption_rate", region=">= 0.05", seed=2**31 - 1)
    req = ProbeRequest(index=1, applied=("hicache",), phase="confirm", question="q", parent=None, alpha=0.05,
                       max_units=800)
    h = probe_hypothesis(spec, req, spec.root_id)
    assert spec.probe_seed(0) == 2**31 - 1 and spec.probe_seed(1) == 0 == h.design.seed


def test_resume_with_no_earlier_attempt_is_bad_input_naming_the_flag(root, tmp_path):
    db = tmp_path / "store.duckdb"
    res = CliRunner().invoke(app, BASE + ["--resume", "--root", str(root), "--db", str(db)])
    assert res.exit_code == 2, res.output
    # The store --db names is not there: a mistyped path, said as every command that reads a store says it.
    assert res.output.startswith(f"Error: no store at {db} (--db)\n"), res.output
    assert "Traceback" not in res.output and not db.exists()  # nothing written, not even an empty store
    from workbench.store import open_store

    open_store(str(db)).dispose()
    res = CliRunner().invoke(app, BASE + ["--resume", "--root", str(root), "--db", str(db)])
    assert res.exit_code == 2 and "no stopped search of 'agent-repro' in this store" in res.output, res.output


def test_a_stopped_search_names_its_resume_command_and_refuses_another_search(root, tmp_path, monkeypatch):
    """The stop's hint gives every flag that determines the search (the drawn seed too) and the --write it was
    asked for (the resumed search is to write what the stopped one would have); --resume with a flag
    that differs from the stopped search's is refused, naming the flag and both values, before anything runs."""
    import shlex

    from workbench.app import Workbench
    from workbench.errors import RunFailure
    from workbench.isolate.records import load_searches
    from workbench.settings import Settings
    from workbench.store import open_store

    _second_probe_stops(monkeypatch)
    db = str(tmp_path / "s.duckdb")
    wb = Workbench(Settings(db=db, root=root))
    with pytest.raises(RunFailure) as stopped:  # no --seed: one is drawn
        wb.isolate(experiment="agent-repro", good=["hicache=off", "geometry_fix=on"],
                   bad=["hicache=on geometry_fix=off"], metric="corruption_rate", region=">= 0.05",
                   show_progress=False, write=True)
    with open_store(db) as store:
        [st] = load_searches(store)
    seed = st.record["seed"]
    command = shlex.split(stopped.value.hint.split("resumes with: ", 1)[1])
    assert command == ["wb", "isolate", "--experiment", "agent-repro", "--good", "hicache=off geometry_fix=on",
                       "--bad", "hicache=on geometry_fix=off", "--metric", "corruption_rate", "--region", ">= 0.05",
                       "--budget", "4000", "--alpha", "0.05", "--seed", str(seed), "--db", db, "--root", str(root),
                       "--write", "--resume"]
    other = (seed + 1) % 2**31
    args = ["isolate", "--experiment", "agent-repro", "--good", "hicache=off geometry_fix=on", "--bad",
            "hicache=on geometry_fix=on", "--metric", "corruption_rate", "--region", ">= 0.05", "--seed", str(other),
            "--budget", "800", "--resume", "--root", str(root), "--db", db]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert f"the last stopped search of 'agent-repro', {st.search_id}" in res.output
    for needle in ("--bad geometry_fix=on (it used off)", "--budget 800 (it used 4000)",
                   f"--seed {other} (it used {seed})", "Nothing was run"):
        assert needle in res.output, res.output
    with open_store(db) as store:
        assert len(load_searches(store)) == 1  # the refusal recorded nothing


def test_the_report_shows_a_resumed_search_once_with_its_latest_attempt(root, tmp_path):
    from dataclasses import replace

    from workbench.isolate.app import search_record
    from workbench.isolate.records import latest_searches, load_searches, record_search
    from workbench.report.site import build_site
    from workbench.store import open_store

    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["hicache=off", "geometry_fix=on"],
                        bad=["hicache=on", "geometry_fix=off"], metric="corruption_rate", region=">= 0.05", seed=5)
    result = isolate(list(spec.changes), BinomialOracle(conjunction({"geometry_fix"}), (0.05, math.inf)))
    stopped = replace(result, status="interrupted", minimal=None, probes=result.probes[:1])
    store = open_store(str(tmp_path / "s.duckdb"))
    try:
        record_search(store, spec, search_record(spec, stopped))
        record_search(store, spec, search_record(spec, result))
        assert [st.status for st in load_searches(store)] == ["interrupted", "decided"]
        assert [st.status for st in latest_searches(store)] == ["decided"]
        out = build_site(store, reg, tmp_path / "site")
    finally:
        store.dispose()
    page = Path(out["isolate"]).read_text()
    assert page.count("<tr class=") == len(result.probes)  # the stopped attempt's rows are not shown too


def test_a_search_killed_before_it_recorded_itself_is_found_from_its_probes(root, tmp_path):
    """SIGKILL (or a lost machine) leaves no search record, only the verdicts of the probes that ended: each
    carries the search's key, so the same command with --resume still finds the search, and its drawn seed."""
    from workbench.isolate.adapter import search_key
    from workbench.isolate.resume import find_attempt
    from workbench.store import open_store

    reg = load_registry(root)
    flags = dict(experiment="agent-repro", good=["hicache=off", "geometry_fix=on"], bad=["hicache=on geometry_fix=off"],
                 metric="corruption_rate", region=">= 0.05")
    killed = prepare_spec(reg, **flags)
    with open_store(str(tmp_path / "s.duckdb")) as store:
        store.add_verdict(hypothesis_id=killed.probe_id(0), verdict="falsified", execution_id=None, reasoning="",
                          checks=[], hypothesis_sha256=None,
                          details={"kind": "isolate-probe", "search": killed.search_id,
                                   "search_key": search_key(killed), "request": {"index": 0}, "outcome": "passes",
                                   "k": 0, "n": 80})
        again = prepare_spec(reg, **flags)  # a fresh id and seed, as the command draws them
        spec, prior = find_attempt(store, again, seed_given=False, parent_given=False)
        assert (spec.search_id, spec.seed, prior.status) == (killed.search_id, killed.seed, "killed")
        other = prepare_spec(reg, **flags, seed=(killed.seed + 1) % 2**31)
        with pytest.raises(BadInput, match=rf"--seed {other.seed} \(it used {killed.seed}\)"):
            find_attempt(store, other, seed_given=True, parent_given=False)


def test_a_resumed_search_says_so_in_its_text_its_record_and_the_report(root, tmp_path):
    """The Isolate page of `wb report` showed a resumed search as if it had run whole; the text said "resumed
    the attempt of T: reused p0 (execution 10)"."""
    from dataclasses import replace

    from workbench.cli.isolate import search_lines
    from workbench.isolate.app import search_record
    from workbench.isolate.attempt import PriorAttempt
    from workbench.isolate.records import load_searches, record_search
    from workbench.isolate.search import Probe
    from workbench.report.site import build_site
    from workbench.store import open_store

    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["hicache=off", "geometry_fix=on"],
                        bad=["hicache=on", "geometry_fix=off"], metric="corruption_rate", region=">= 0.05", seed=3)
    result = isolate(list(spec.changes), BinomialOracle(conjunction({"geometry_fix"}), (0.05, math.inf)))
    assert len(result.probes) == 3
    hows = ["reused", "continued", "ran"]
    probes = tuple(Probe(p.request, replace(p.result, ref={"execution_id": 10 + i, "how": how}))
                   for i, (p, how) in enumerate(zip(result.probes, hows)))
    prior = PriorAttempt(spec.search_id, "2026-01-02T03:04:05", "interrupted", {}, None)
    record = search_record(spec, replace(result, probes=probes), prior=prior)
    assert record["resume"]["reused"] == [{"probe": 0, "execution_id": 10}]
    assert record["resume"]["continued"] == [{"probe": 1, "execution_id": 11}]
    said = ("resumed after a stop (interrupted, 2026-01-02T03:04:05): 1 probe read back from stored runs "
            "(p0: execution 10), 1 probe continued where it stopped (p1: execution 11), 1 probe run "
            "(p2: execution 12)")
    lines = search_lines(record)
    assert lines[1] == said
    assert sum(line.endswith("(reused)") for line in lines) == 1
    fresh = search_record(spec, result)
    assert fresh["resume"] is None and not any("resumed" in line for line in search_lines(fresh))

    with open_store(str(tmp_path / "s.duckdb")) as store:
        record_search(store, spec, record)
        [stored] = load_searches(store)
        out = build_site(store, reg, tmp_path / "site")
    assert stored.record["resume"] == record["resume"]
    assert said in Path(out["isolate"]).read_text()


def _page_runs(page: str, search_id: str) -> dict[str, set[int]]:
    """The Isolate page's run links, by probe hypothesis id, in the section of search `search_id`."""
    section = page.split(f'id="search-{search_id}"', 1)[1].split("</section>", 1)[0]
    out: dict[str, set[int]] = {}
    for row in section.split("<tr class=")[1:]:
        [hid] = re.findall(r'<span class="muted">(iso-[0-9a-f]+-p\d+)</span>', row)
        out[hid] = {int(r) for r in re.findall(r'href="runs/(\d+)\.html"', row)}
    return out


def test_a_probe_is_credited_only_with_the_runs_of_its_own_execution(root, tmp_path):
    """The Isolate page picked a probe's runs by its hypothesis id, so another execution of that hypothesis was
    credited to the probe too: `wb hypothesis run` of a probe that --write appended, or a probe whose execution
    ended as its search was stopped, before the probe recorded its verdict, and which the resumed search ran
    again. A search started afresh after a stop shares no probe with it: each search draws its own id."""
    from dataclasses import replace

    from workbench.isolate.app import search_record
    from workbench.isolate.records import record_search
    from workbench.isolate.search import Probe
    from workbench.report.site import build_site
    from workbench.store import open_store

    reg = load_registry(root)
    flags = dict(experiment="agent-repro", good=["hicache=off", "geometry_fix=on"],
                 bad=["hicache=on", "geometry_fix=off"], metric="corruption_rate", region=">= 0.05", seed=3)
    spec = prepare_spec(reg, **flags)
    assert prepare_spec(reg, **flags).search_id != spec.search_id
    result = isolate(list(spec.changes), BinomialOracle(conjunction({"geometry_fix"}), (0.05, math.inf)))
    own: dict[str, set[int]] = {}
    probes = []
    with open_store(str(tmp_path / "s.duckdb")) as store:
        for p in result.probes:
            hid, variables = spec.probe_id(p.request.index), spec.arm(p.request.applied)
            for replicates in (1, 2):  # an execution outside the search, then the probe's own
                ex = add_execution(store, hypothesis_id=hid)
                own[hid] = {add_run(store, execution_id=ex, arm="probe", variables=variables, outcomes={"done": 80},
                                    replicate=r, hypothesis_id=hid) for r in range(replicates)}
            probes.append(Probe(p.request, replace(p.result, ref={"execution_id": ex, "hypothesis_id": hid,
                                                                  "how": "ran"})))
        record_search(store, spec, search_record(spec, replace(result, probes=tuple(probes))))
        out = build_site(store, reg, tmp_path / "site")
    assert _page_runs(Path(out["isolate"]).read_text(), spec.search_id) == own


def test_a_value_with_spaces_is_kept_whole_and_quoted_in_the_resume_command(root, tmp_path):
    """--good/--bad split a list at each `name=`, not at every space: `--bad "note=it broke"` was refused as
    "--bad 'broke': expected var=value", and a --pair file's `note: it broke` the same way."""
    import shlex

    from workbench.cli.isolate import request
    from workbench.isolate.resume import resume_command

    exp = root / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("\nunit:\n", "\n  note: {default: none}\n\nunit:\n", 1))
    reg = load_registry(root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["note=all  fine", "hicache=off"],
                        bad=["note=it broke hicache=on"], metric="corruption_rate", region=">= 0.05", seed=3)
    assert (spec.good["note"], spec.bad["note"], spec.bad["hicache"]) == ("all  fine", "it broke", "on")
    assert spec.changes == ("hicache", "note")
    # The command that resumes the search gives each value back whole.
    args = shlex.split(resume_command(spec))
    again = prepare_spec(reg, experiment="agent-repro", good=[args[args.index("--good") + 1]],
                         bad=[args[args.index("--bad") + 1]], metric="corruption_rate", region=">= 0.05", seed=3)
    assert (again.good, again.bad) == (spec.good, spec.bad)
    # Shown back, the value is quoted as one word: in the search's lines and in its hypotheses' claims.
    from workbench.cli.isolate import search_lines
    from workbench.isolate.adapter import root_hypothesis
    from workbench.isolate.app import search_record

    result = isolate(list(spec.changes), BinomialOracle(conjunction({"note"}), (0.05, math.inf)))
    text = "\n".join(search_lines(search_record(spec, result)))
    assert "changes {hicache=on, note='it broke'}" in text and "minimal set: {note='it broke'} (decided)" in text
    assert "changes {hicache=on, note='it broke'} from the good config" in root_hypothesis(spec).claim
    (tmp_path / "pair.yaml").write_text(PAIR.replace("geometry_fix: off\n", "geometry_fix: off\n  note: it broke\n"))
    req = request(dict.fromkeys(("experiment", "good", "bad", "metric", "region", "profile", "budget", "alpha")),
                  str(tmp_path / "pair.yaml"), reg)
    assert prepare_spec(reg, seed=1, **req).bad["note"] == "it broke"
    # On the command line: the value is taken whole, and the next problem is the one reported.
    res = CliRunner().invoke(app, ["isolate", "--experiment", "agent-repro", "--good", "note=all fine",
                                   "--bad", "note=it broke", "--metric", "corruption_rate", "--region", "above",
                                   "--root", str(root), "--db", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 2 and "--region" in res.output and "expected var=value" not in res.output, res.output


def test_a_profile_this_machine_cannot_use_is_refused_before_the_search_and_records_nothing(root, tmp_path,
                                                                                            monkeypatch):
    """The ssh profile with no known_hosts to check the host against: the first probe failed as it connected,
    exit 1, and an empty search was recorded as "interrupted", with a command to resume a search that had
    nothing in it. It is bad input at the profile's line, before the store is opened (tests/isolate/
    test_isolate_ssh.py: the same against a real SSH server). A search stopped before any probe was decided
    still says so, rather than that decided probes were kept."""
    from workbench.isolate.app import _resume_hint

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh: refused before any connection
    db = tmp_path / "s.duckdb"
    res = CliRunner().invoke(app, BASE + ["--target", "sglang-pd", "--seed", "3", "--root", str(root), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "known_hosts" in res.output, res.output
    lines = (root / "experiments" / "agent-repro.yaml").read_text().splitlines()
    line = lines.index("    target:", lines.index("  sglang-pd:")) + 1
    assert (f"agent-repro.yaml:{line} (field profiles.sglang-pd.target): profile 'sglang-pd': "
            in res.output), res.output
    assert "resume" not in res.output and not db.exists(), res.output
    hint = _resume_hint(None, "wb isolate ... --resume", 0)
    assert "decided so far" not in hint and hint == ("no probe was decided yet; "
                                                     "the search resumes with: wb isolate ... --resume")


def test_on_a_terminal_the_result_wraps_between_words_and_names_the_probe_shown(root, tmp_path, monkeypatch):
    """At 80 columns `wb isolate` printed lines of 114 to 324 characters, which the terminal broke inside words
    (`INCON` / `CLUSIVE`, `0/1` / `60`); its answer's "why" said the cure was "shown by a passing probe that contains
    bad without them" without naming the probe. On a terminal each line wraps between words at its width, indented
    under its start; piped, each is one line (grep); the why names the probe (p0)."""
    from workbench.isolate import app as iso_app
    from workbench.isolate.search import ProbeResult

    def probe(self, req):  # scripted: no target; the config fails when both hicache and geometry_fix are applied
        fails = {"hicache", "geometry_fix"} <= set(req.applied)
        res = ProbeResult("fails" if fails else "passes", 80 if fails else 0, 160, 160, 2, "scripted")
        self.results.append((req, res))
        return res

    monkeypatch.setattr(iso_app.RunnerOracle, "probe", probe)
    args = ["isolate", "--experiment", "agent-repro", "--good", "hicache=off", "--good", "geometry_fix=on",
            "--good", "nixl_abort_fix=on", "--bad", "hicache=on", "--bad", "geometry_fix=off", "--bad",
            "nixl_abort_fix=off", "--metric", "corruption_rate", "--region", ">= 0.05", "--seed", "3",
            "--root", str(root)]
    piped = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "a.duckdb")])
    assert piped.exit_code == 0, piped.output
    assert re.search(r"\n  p0 \[leave-one-out\] good \+ \{nixl_abort_fix, geometry_fix\}: passes ", piped.stdout), \
        piped.stdout
    why = next(line for line in piped.stdout.splitlines() if line.startswith("why: "))
    assert why.endswith("removing them from bad cures it (shown by p0, a passing probe that contains bad without "
                        "them)"), why
    assert max(len(line) for line in piped.stdout.splitlines()) > 100, piped.stdout  # one line an item
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    shown = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "b.duckdb")], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, shown.stdout
    (a, b) = (re.match(r"search (\w+) ", out).group(1) for out in (piped.stdout, shown.stdout))
    assert shown.stdout.replace(b, a).split() == piped.stdout.split(), shown.stdout  # the same words, none broken
    item = re.compile(r"(search |p\d+ \[|minimal set: |why: |units: )")
    at = 0  # the indent of the item a line goes on
    for line in lines:
        lead = len(line) - len(line.lstrip())
        if item.match(line.lstrip()):
            at = lead
        else:  # a line wrapped: indented under its item's start
            assert lead >= at + 2, lines
