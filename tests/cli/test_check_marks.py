"""A check line's mark says what the check did to the verdict: FAIL only where it changed the verdict, FLAG for a
problem weighed and found not to change it (a verdict that "stands" under a FAIL read as a contradiction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.analysis.results import Check


@pytest.fixture
def seeded_root(workbench_dir: Path, seed_csv: Path, cli) -> tuple[Path, str]:
    db = str(workbench_dir / "s.duckdb")
    code, _, err = cli("import", "evidence", str(seed_csv), "--db", db, "--root", str(workbench_dir))
    assert code == 0, err
    return workbench_dir, db


MARKS = ("  [pass] ", "  [FAIL] ", "  [FLAG] ", "  [n/a] ")  # a prediction's line gives its outcome instead


def _check_lines(out: str) -> dict[str, str]:
    lines = [line.strip() for line in out.splitlines() if line.startswith(MARKS)]
    return {line.split("] ", 1)[1].split(":", 1)[0]: line.split("]", 1)[0] + "]" for line in lines}


def test_a_flagged_check_under_a_standing_verdict_is_not_printed_as_fail(seeded_root, cli):
    root, db = seeded_root
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--db", db, "--root", str(root))
    assert code == 0, err
    assert out.splitlines()[0] == "wedge-confound: falsified"
    marks = _check_lines(out)
    assert marks["attrition"] == "[FLAG]" and marks["data"] == "[pass]" and marks["drift"] == "[n/a]"
    assert "[FAIL]" not in out
    code, shown, err = cli("hypothesis", "show", "wedge-confound", "--db", db, "--root", str(root))
    assert code == 0, err
    assert _check_lines(shown)["attrition"] == "[FLAG]" and "[FAIL]" not in shown
    code, md, err = cli("report", "--format", "md", "--hypothesis", "wedge-confound", "--db", db, "--root", str(root))
    assert code == 0, err
    attrition = next(line for line in md.splitlines() if "attrition" in line and line.startswith("- ["))
    assert "flagged; does not change the verdict: falsified stands" in attrition and "failed" not in attrition
    # The HTML marks it as the CLI and the README do: FLAG, in capitals beside FAIL (it was 'flag').
    code, _, err = cli("report", "--out", str(root / "site"), "--db", db, "--root", str(root))
    assert code == 0, err
    page = (root / "site" / "hypotheses" / "wedge-confound.html").read_text(encoding="utf-8")
    assert '<td class="mark">FLAG</td><td>attrition</td>' in page and '<td class="mark">flag</td>' not in page


@pytest.mark.parametrize("check, verdict, mark", [
    (Check("attrition", False, "lost half", "inconclusive"), "inconclusive", "FAIL"),
    (Check("isolation", False, "arms differ in two variables", "invalid"), "invalid", "FAIL"),
    (Check("drift", False, "replicates differ", "none"), "inconclusive", "FLAG"),
    (Check("looks", False, "peeked 3 times", "none"), "supported", "FLAG"),
    (Check("guard", True, "held", "none"), "supported", "pass"),
    (Check("config", None, "not recorded", "none"), "falsified", "n/a"),
])
def test_mark_by_effect(check, verdict, mark):
    assert check.mark(verdict) == mark


def test_json_carries_the_mark_each_check_line_shows(seeded_root, cli):
    """`show --json` and `analyze --json` give each check the mark the text prints (FLAG under a verdict that
    stands): passed and effect alone do not say it, and a script had to redo wb's rule to tell FLAG from FAIL."""
    import json

    root, db = seeded_root
    where = ("--db", db, "--root", str(root))
    for command in ("analyze", "show"):
        code, text, err = cli("hypothesis", command, "wedge-confound", *where)
        assert code == 0, err
        code, out, err = cli("hypothesis", command, "wedge-confound", "--json", *where)
        assert code == 0, err
        checks = json.loads(out)["checks"]
        printed = [line.strip() for line in text.splitlines() if line.startswith(MARKS)]
        assert [f"[{c['mark']}] {c['name']}: {c['detail']}" for c in checks] == printed, command
        assert {c["name"]: c["mark"] for c in checks}["attrition"] == "FLAG"


def test_the_reasoning_names_a_check_that_changed_the_verdict_as_failed(seeded_root, cli):
    """The reasoning's sentence on a check says what its line's mark says: a guard that made the verdict invalid
    ([FAIL]) read "Flagged — guard: ... This makes the result invalid.", the word FLAG keeps for a verdict that
    stands. The text prints the reasoning a line per check: the guard's line is marked FAIL and says what it did to
    the verdict; the stored reasoning (--json) keeps the sentences."""
    import json

    root, db = seeded_root
    path = root / "hypotheses.yaml"
    guard = "      - {metric: aborts, arm: treatment, equals: 0,"
    assert guard in path.read_text()
    path.write_text(path.read_text().replace(guard, "      - {metric: aborts, arm: treatment, at_least: 1,", 1))
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--db", db, "--root", str(root))
    assert code == 0, err
    assert out.splitlines()[0] == "wedge-confound: invalid" and _check_lines(out)["guard"] == "[FAIL]", out
    assert _check_lines(out)["attrition"] == "[FLAG]", out
    guard = next(line for line in out.splitlines() if line.startswith("  [FAIL] guard: aborts (treatment) >= 1: "))
    assert "violated" in guard and guard.endswith(" (this makes the result invalid)"), guard
    code, doc, err = cli("hypothesis", "analyze", "wedge-confound", "--json", "--no-record", "--db", db,
                         "--root", str(root))
    assert code == 0, err
    reasoning = json.loads(doc)["reasoning"]
    assert "Failed — guard: aborts (treatment) >= 1: violated" in reasoning and "Flagged — guard" not in reasoning
    assert "Flagged — attrition" in reasoning, reasoning
