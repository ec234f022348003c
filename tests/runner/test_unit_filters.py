"""A count metric's unit filter (`units: {field: value}`) compares a unit's JSON value with the value the experiment
file writes. A JSON boolean was compared as Python's text ("True"), so `{ok: true}` counted no unit at all, and a
JSON 2.0 never matched `2`: the metric read 0 with no warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.registry.loader import load_experiment
from workbench.runner.extract import read_units, unit_counts

EXPERIMENT = """\
format: 1
id: filters
version: 1
variables:
  fix: {values: [on, off], default: off}
unit: {name: request, outcome_field: outcome, outcomes: [done, failed], completed: [done]}
metrics:
  every: {kind: count, units: {}}
  ok_true: {kind: count, units: {ok: true}}
  ok_yes: {kind: count, units: {ok: yes}}
  ok_quoted: {kind: count, units: {ok: "True"}}
  not_ok: {kind: count, units: {ok: false}}
  not_ok_off: {kind: count, units: {ok: off}}
  either: {kind: count, units: {ok: [true, false]}}
  two_tokens: {kind: count, units: {tokens: 2}}
  two_tokens_float: {kind: count, units: {tokens: 2.0}}
  word_true: {kind: count, units: {label: true}}
default_profile: local
profiles:
  local:
    target: {kind: local}
    workload: {command: "true"}
    units: {path: "{{ units_path }}"}
"""

UNITS = """\
{"outcome": "done", "ok": true, "tokens": 2.0, "label": "true"}
{"outcome": "done", "ok": true, "tokens": 2, "label": "yes"}
{"outcome": "failed", "ok": false, "tokens": 3, "label": "True"}
{"outcome": "done", "ok": "true", "tokens": "2", "label": null}
"""


@pytest.fixture
def counts(tmp_path: Path) -> dict[str, int]:
    path = tmp_path / "filters.yaml"
    path.write_text(EXPERIMENT)
    exp, _ = load_experiment(path)
    return unit_counts(exp.metrics, read_units(UNITS))


def test_a_json_boolean_matches_the_yaml_words_for_it(counts):
    assert counts["every"] == 4
    # The first two units hold JSON true, the fourth the text "true" (text compares as written).
    assert counts["ok_true"] == 3
    assert counts["ok_yes"] == 2 and counts["ok_quoted"] == 2
    assert counts["not_ok"] == 1 and counts["not_ok_off"] == 1
    assert counts["either"] == 4


def test_a_json_number_matches_the_same_number_written_either_way(counts):
    assert counts["two_tokens"] == 3          # 2.0, 2 and the text "2"
    assert counts["two_tokens_float"] == 2    # 2.0 and 2 (the text "2" is not the text "2.0")


def test_text_fields_still_compare_as_text(counts):
    assert counts["word_true"] == 1     # "yes" and "True" are other words, null is no value
