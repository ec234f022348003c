"""A metric or unit value that is no finite number (inf, nan, 1e999) on the toy local deployment.

A metric read as one makes the run invalid naming the metric, as a value that is no number does; a unit field
holding one is stored as null (as is a count of rounds beyond the rounds column). Either way every run is recorded
and the serve file is put back."""

from __future__ import annotations

import pytest

from runner_kit import edit_profile, run_hypothesis, store_rows  # noqa: E402  (tests/runner is on sys.path)

WALL_REGEX = "wall_s: {regex: 'wall=(?P<value>[0-9.]+)s'}"


def _toy_prints(toy, old: str, new: str) -> None:
    script = toy.state / "toy.py"
    text = script.read_text()
    assert old in text, old
    script.write_text(text.replace(old, new))


def _predict_wall_s(toy) -> None:
    """wall_s becomes a predicted metric: one nothing can read makes the run invalid (a soft one is left out)."""
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text().replace(
        "    requires:\n", "      - {metric: wall_s, arm: treatment, at_most: 100}\n    requires:\n", 1))


def _units_rounds(toy, *values: str) -> None:
    """Every unit's `rounds` is written as one of `values` (the units take them in turn), as the JSON text of the
    units file."""
    _toy_prints(toy, '"rounds": 4}) + ', f'"rounds": 4}}).replace(" 4}}", " " + {list(values)!r}[i % {len(values)}] '
                f'+ "}}") + ')


# Each arm's runs read their own value: the two runs of an execution try two (every value is tried in one arm).
@pytest.mark.parametrize("source,control,treatment", [("regex", "inf", "nan"), ("regex", "-Infinity", "-Infinity"),
                                                      ("command", "1e999", "nan")])
def test_a_metric_read_as_no_finite_number_makes_the_run_invalid_naming_it(toy, source, control, treatment):
    values = {"control": control, "treatment": treatment}
    if source == "regex":
        _predict_wall_s(toy)
        edit_profile(toy.root, WALL_REGEX, "wall_s: {regex: 'wall=(?P<value>\\S+)s'}")
        _toy_prints(toy, 'print(f"wall=0.05s',
                    f'print(f"wall={{ {{\'off\': {control!r}, \'on\': {treatment!r}}}[c.get(\'fix\')] }}s')
        name = "wall_s"
    else:
        edit_profile(toy.root, "cat {{ state }}/aborts.txt",
                     f"echo {{{{ '{control}' if fix == 'off' else '{treatment}' }}}}")
        name = "waiting_for_input"
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["invalid", "invalid"], summary["runs"]
    for run in summary["runs"]:
        assert f"metric {name!r}: " in run["error"] and "not a finite number" in run["error"], run["error"]
        assert repr(values[run["arm"]]) in run["error"], (run["arm"], run["error"])
    assert store_rows(toy.db, "SELECT status, count(*) FROM runs GROUP BY status") == [("invalid", 2)]
    assert store_rows(toy.db, "SELECT count(*) FROM metrics WHERE name = :n", n=name) == [(0,)]
    assert toy.conf.read_bytes() == toy.original


def test_a_soft_metric_read_as_inf_is_left_out_and_the_run_counts(toy):
    edit_profile(toy.root, WALL_REGEX, "wall_s: {regex: 'wall=(?P<value>\\S+)s'}")
    _toy_prints(toy, 'print(f"wall=0.05s', 'print(f"wall=infs')
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], summary["runs"]
    assert store_rows(toy.db, "SELECT count(*) FROM metrics WHERE name = 'wall_s'") == [(0,)]
    assert store_rows(toy.db, "SELECT count(*) FROM metrics WHERE name = 'leak'") == [(2,)]


def test_a_unit_field_that_is_no_finite_number_is_stored_as_null(toy):
    _units_rounds(toy, "1e999", "NaN", "-Infinity")  # each in some units of each run
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], summary["runs"]
    assert summary["arms"]["control"]["totals"]["leak"] == 3
    # The rounds column knows no value, and each record is JSON the database can read (NaN is none).
    assert store_rows(toy.db, "SELECT count(*), count(rounds), count(*) FILTER (WHERE json_valid(data_json)) "
                              "FROM units") == [(20, 0, 20)]
    assert store_rows(toy.db, "SELECT DISTINCT json_extract_string(data_json, '$.rounds') FROM units") == [(None,)]
    assert toy.conf.read_bytes() == toy.original


def test_a_unit_count_of_rounds_beyond_the_rounds_column_is_kept_in_its_record(toy):
    _units_rounds(toy, "3000000000")
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], summary["runs"]
    assert store_rows(toy.db, "SELECT count(*), count(rounds) FROM units") == [(20, 0)]
    assert store_rows(toy.db, "SELECT DISTINCT json_extract_string(data_json, '$.rounds') FROM units") == [
        ("3000000000",)]


@pytest.mark.parametrize("value", ["1e999", "NaN"])
def test_a_metric_summed_over_units_of_no_finite_number_makes_the_run_invalid(toy, value):
    _predict_wall_s(toy)
    edit_profile(toy.root, WALL_REGEX, "wall_s: {unit_field: rounds, aggregate: sum}")
    _units_rounds(toy, value)
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["invalid", "invalid"], summary["runs"]
    for run in summary["runs"]:
        assert "metric 'wall_s': unit field 'rounds' is " in run["error"], run["error"]
        assert "not a finite number" in run["error"], run["error"]
    assert store_rows(toy.db, "SELECT count(*) FROM metrics WHERE name = 'wall_s'") == [(0,)]
    assert toy.conf.read_bytes() == toy.original
