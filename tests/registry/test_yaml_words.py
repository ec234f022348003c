"""A variable value is the word written in the file: YAML 1.1 reads a bare yes/no/true/false/on/off as a boolean,
and a config rendered from `default: yes` must say `yes`, not `on`. Flags still take booleans; numbers do not."""

from __future__ import annotations

from pathlib import Path

import pytest

EXPERIMENT = """\
id: words
variables:
  cache: {values: [yes, no], default: no}
  verbose: {values: [True, False]}
  switch: {values: [on, off], default: on}
  jobs: {type: int, min: 1, default: "1", per_replicate: yes}
unit: {name: session}
metrics:
  sessions: {kind: count, units: {}}
  cached: {kind: count, units: {cached: yes}, guard: yes}
  cached_rate: {kind: proportion, numerator: cached, denominator: sessions}
default_profile: local
profiles:
  local:
    target: {kind: local}
    config:
      path: /tmp/words.conf
      template: "CACHE={{ cache }}\\nVERBOSE={{ verbose }}\\nSWITCH={{ switch }}\\n"
"""

HYPOTHESES = """\
format: 1
hypotheses:
  - id: cache-words
    claim: The cache setting changes nothing.
    experiment: words
    isolates: cache
    arms:
      control: {cache: no}
      treatment: {cache: yes}
    hold: {verbose: True}
    predicts:
      - {metric: sessions, arm: treatment, at_least: 1}
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "words.yaml").write_text(EXPERIMENT)
    (tmp_path / "hypotheses.yaml").write_text(HYPOTHESES)
    return tmp_path


def test_variable_values_are_the_words_written(root: Path):
    from workbench.registry import load_registry

    reg = load_registry(root)
    exp = reg.experiments["words"]
    assert exp.variables["cache"].values == ["yes", "no"] and exp.variables["cache"].default == "no"
    assert exp.variables["verbose"].values == ["True", "False"]
    assert exp.variables["switch"].values == ["on", "off"] and exp.variables["switch"].default == "on"
    assert exp.metrics["cached"].units == {"cached": "yes"}
    h = reg.hypothesis("cache-words")
    assert h.arms == {"control": {"cache": "no"}, "treatment": {"cache": "yes"}}
    assert h.hold == {"verbose": "True"}
    assert reg.arm_assignment(h, "treatment") == {"cache": "yes", "switch": "on", "jobs": "1", "verbose": "True"}


def test_a_bare_list_of_hypotheses_keeps_the_words_too(root: Path):
    from workbench.registry import load_registry

    body = HYPOTHESES.split("hypotheses:\n", 1)[1]
    (root / "hypotheses.yaml").write_text("\n".join(line[2:] for line in body.splitlines()) + "\n")
    h = load_registry(root).hypothesis("cache-words")
    assert h.arms["treatment"] == {"cache": "yes"} and h.hold == {"verbose": "True"}


def test_flags_still_take_booleans(root: Path):
    from workbench.registry import load_registry

    exp = load_registry(root).experiments["words"]
    assert exp.variables["jobs"].per_replicate is True and exp.metrics["cached"].guard is True


def test_a_mapping_shared_by_an_anchor_keeps_the_word_only_where_a_variable_value_is_taken(root: Path):
    """One YAML mapping, two places: a metric's unit filter (variable values: the word) and the profile's
    options (flags: the boolean). Giving the word back in one must not change the other."""
    from workbench.registry import load_registry

    p = root / "experiments" / "words.yaml"
    text = p.read_text().replace("units: {cached: yes}", "units: &flags {check_restart: no}")
    p.write_text(text.replace("    target: {kind: local}\n", "    target: {kind: local}\n    options: *flags\n"))
    exp = load_registry(root).experiments["words"]
    assert exp.metrics["cached"].units == {"check_restart": "no"}
    assert exp.profiles["local"].options == {"check_restart": False}


def test_a_rendered_config_says_the_word_written(root: Path):
    from workbench.registry import load_registry
    from workbench.runner.prepare import preflight, resolve

    p = resolve(load_registry(root), "cache-words", profile=None, replicates=None, overrides={}, sequential=False,
                aa=False, seed=1)
    rendered = preflight(p, {})
    assert rendered == {"control": "CACHE=no\nVERBOSE=True\nSWITCH=on\n",
                        "treatment": "CACHE=yes\nVERBOSE=True\nSWITCH=on\n"}


@pytest.mark.parametrize("old,new,words,line", [
    # The words are compared as written: `true` is not `True` (both used to become "on").
    ("    hold: {verbose: True}", "    hold: {verbose: true}",
     "variable 'verbose': 'true' is not one of True, False", "    hold: {verbose: true}"),
    ("      treatment: {cache: yes}", "      treatment: {cache: on}",
     "variable 'cache': 'on' is not one of yes, no", "      treatment: {cache: on}"),
])
def test_a_word_not_among_the_values_written_is_refused(root: Path, cli, old: str, new: str, words: str, line: str):
    path = root / "hypotheses.yaml"
    text = path.read_text().replace(old, new)
    path.write_text(text)
    code, _, err = cli("hypothesis", "validate", "--root", str(root))
    assert code == 2 and err.startswith("Error: ") and words in err, err
    assert f"{path}:{text.splitlines().index(line) + 1}" in err, err


def test_a_number_is_still_not_a_boolean(root: Path, cli):
    path = root / "experiments" / "words.yaml"
    path.write_text(path.read_text().replace("min: 1,", "min: yes,"))
    code, _, err = cli("hypothesis", "validate", "--root", str(root))
    assert code == 2 and "(field variables.jobs.min): must be a number, got true (a boolean)" in err, err


def test_show_prints_the_words_written(root: Path, cli):
    code, out, err = cli("hypothesis", "show", "cache-words", "--root", str(root))
    assert code == 0, err
    assert "arm control: cache=no, switch=on, verbose=True" in out, out
    assert "arm treatment: cache=yes, switch=on, verbose=True" in out, out


def test_a_pair_file_keeps_the_words_written(root: Path, tmp_path: Path):
    from workbench.isolate.pair import load_pair
    from workbench.registry import load_registry

    pair = tmp_path / "pair.yaml"
    pair.write_text("experiment: words\ngood: {cache: no, verbose: True}\nbad: {cache: yes, verbose: False}\n"
                    "metric: cached_rate\nregion: '>= 0.05'\n")
    spec = load_pair(pair, load_registry(root))
    assert spec["good"] == ["cache=no", "verbose=True"] and spec["bad"] == ["cache=yes", "verbose=False"]


@pytest.mark.parametrize("old,new,word,value", [
    ("      control: {cache: no}", "      control: {yes: no}", "yes", "true"),      # an arm's variable name
    ("  switch: {values", "  off: {values", "off", "false"),                          # a variable's name
])
def test_a_key_read_as_a_boolean_is_named_by_the_word_written(root: Path, cli, old: str, new: str, word: str,
                                                               value: str):
    """A bare yes/no/on/off key is read as a boolean too: the error named it `true`, a word the file never has,
    and told the user to quote "true"."""
    path = root / ("hypotheses.yaml" if "control" in old else "experiments/words.yaml")
    text = path.read_text().replace(old, new)
    path.write_text(text)
    code, _, err = cli("hypothesis", "validate", "--root", str(root))
    assert code == 2 and err.startswith("Error: ") and "Traceback" not in err, err
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(new))
    assert f"{path}:{line} " in err, err
    assert f'the key {word} was read as a boolean ({value}), not as text; quote it: "{word}":' in err, err
