"""The user guide's examples are what wb accepts: every YAML block loads and validates, the CSV imports."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from workbench.registry.evidence import parse_evidence
from workbench.registry import load_registry
from workbench.registry.folder import Registry
from workbench.registry.hypothesis_checks import check_hypotheses
from workbench.registry.loader import load_experiment, load_hypotheses

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "own-service.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), flags=re.S | re.M)


def _experiments(tmp_path: Path) -> dict:
    exps = {}
    for text in _blocks("yaml"):
        if "\nprofiles:" in text:
            eid = re.search(r"^id: (\S+)", text, re.M).group(1)
            p = tmp_path / "experiments" / f"{eid}.yaml"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            exps[eid] = load_experiment(p)[0]
    return exps


def test_guide_has_the_promised_examples():
    yaml_blocks = _blocks("yaml")
    assert len(yaml_blocks) >= 3
    assert any("kind: local" in b for b in yaml_blocks) and any("kind: ssh" in b for b in yaml_blocks)


def test_every_yaml_block_is_a_valid_file(tmp_path):
    exps = _experiments(tmp_path)
    assert {"kv-load", "kv-load-remote"} <= set(exps)
    hyp_blocks = [b for b in _blocks("yaml") if "\nprofiles:" not in b]
    assert hyp_blocks
    for i, text in enumerate(hyp_blocks):
        p = tmp_path / f"hypotheses-{i}.yaml"
        p.write_text(text)
        hyps, doc = load_hypotheses(p)
        check_hypotheses(Registry(tmp_path, hyps, exps, doc))


def test_guide_local_profile_matches_the_shipped_example(tmp_path):
    shipped = load_registry(REPO / "examples" / "kvcache").experiments["kv-load"]
    guide = _experiments(tmp_path)["kv-load"]
    assert guide.variables == shipped.variables and guide.metrics.keys() == shipped.metrics.keys()
    assert guide.profiles["local"].restart == shipped.profiles["local"].restart
    assert guide.profiles["local"].verify == shipped.profiles["local"].verify


def test_guide_csv_imports_into_its_experiment(tmp_path):
    (csv_text,) = _blocks("csv")
    p = tmp_path / "history.csv"
    p.write_text(csv_text)
    rows = parse_evidence(p, _experiments(tmp_path)["kv-load"])
    assert [r["label"] for r in rows] == ["deploy-1", "rollback-1"]


def test_guide_lists_every_builtin_name_and_option():
    from workbench.registry.experiment import BUILTIN_TEMPLATE_NAMES, Profile, TargetSpec
    from workbench.registry.timeouts import TIMEOUT_DEFAULTS

    text = GUIDE.read_text(encoding="utf-8")
    for name in BUILTIN_TEMPLATE_NAMES:
        assert f"`{name}`" in text, name
    for key in TIMEOUT_DEFAULTS:
        assert f"`options.{key}`" in text, key
    for field in TargetSpec.model_fields:
        assert f"target.{field}" in text, field
    for field in Profile.model_fields:
        assert re.search(rf"`{field}[`.]", text), field


@pytest.mark.parametrize("path", ["examples/kvcache"])
def test_shipped_example_validates(path, tmp_path):
    root = tmp_path / "ex"
    shutil.copytree(REPO / path, root)
    reg = load_registry(root)
    assert {h.id for h in reg.hypotheses} == {"compression-stale"}


def test_the_two_seeds_are_documented_as_the_code_makes_them():
    """The guide's section on the execution seed and a workload seed states ranges and a derivation; each is
    checked against the code and the shipped experiment, so the text cannot drift from what runs."""
    import hashlib

    from workbench.registry.common import SEED_MAX, SEED_MIN
    from workbench.runner.plan import make_plan, replicate_value

    text = " ".join(GUIDE.read_text(encoding="utf-8").split("### Two seeds")[1].split("\n## ")[0].split())
    assert f"An integer from {SEED_MIN} to {SEED_MAX}" in text
    exp = load_experiment(REPO / "experiments" / "agent-repro.yaml")[0]
    seed = exp.variables["seed"]
    assert seed.per_replicate and f"min: {int(seed.min)}, max: {int(seed.max)}" in text
    assert ('the first four bytes of the SHA-256 of `"EXECUTION_SEED:REPLICATE:NAME"`, big-endian, top bit '
            'cleared (0 to 2147483647)') in text
    for execution_seed, rep in ((0, 0), (SEED_MAX, 5), (1234, 2)):
        digest = hashlib.sha256(f"{execution_seed}:{rep}:seed".encode()).digest()
        assert replicate_value(execution_seed, rep, "seed") == str(int.from_bytes(digest[:4], "big") & 0x7FFFFFFF)
    plan = make_plan(["control", "treatment"], 2, seed=7, per_replicate=["seed"])
    assert {r.values["seed"] for r in plan.runs if r.replicate == 1} == {replicate_value(7, 1, "seed")}


# What a verdict's text prints that a reader cannot work out from the number alone: each is printed by the
# analysis (checked below, so a term that is renamed there is renamed here) and defined in the guide's section 7.
VERDICT_TERMS = ("confidence sequence", "e-value", "not corrected for the looks", "effective counts",
                 "design effect", "phi", "pooled binomial", "noise floor", "Runs as the unit")


def test_the_terms_a_verdict_prints_are_defined_in_the_guide():
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## 7. "):text.index("## 8. ")]
    printed = "".join(p.read_text(encoding="utf-8") for p in (REPO / "workbench" / "analysis").glob("*.py"))
    for term in VERDICT_TERMS:
        assert term in printed, f"the analysis no longer prints {term!r}"
        assert re.search(rf"\*\*{re.escape(term)}\*\*", section, re.I), f"section 7 does not define {term!r}"


def test_the_readme_names_every_hook_a_new_target_must_define():
    """The README said every Target hook has a default; six are abstract, and a subclass missing one cannot be
    made (TypeError at make_target)."""
    from workbench.runner.targets.base import Target

    bullet = re.search(r"^- \*\*A new target\*\*:(.*?)^- ", (REPO / "README.md").read_text(encoding="utf-8"),
                       flags=re.S | re.M).group(1)
    assert "every hook has a default" not in bullet
    assert sorted(Target.__abstractmethods__) and all(f"`{name}`" in bullet for name in Target.__abstractmethods__)
