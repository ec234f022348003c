"""A word mistyped where a field takes one of a few words is told the word meant, as a mistyped name is."""

from __future__ import annotations

from pathlib import Path

from registry_kit import H
from registry_kit import edit as _edit


def test_a_mistyped_variable_value_is_told_the_value_meant(workbench_dir: Path, cli):
    _edit(workbench_dir, ("hold: {index_k_dtype: bf16, hicache: on}", "hold: {index_k_dtype: bf61, hicache: on}"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "'bf61' is not one of fp8, bf16" in err, err
    assert "Hint: did you mean 'bf16'?" in err, err


def test_a_mistyped_word_of_a_field_is_told_the_word_meant(workbench_dir: Path, cli):
    _edit(workbench_dir, ("leak: {kind: count,", "leak: {kind: cuont,"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "must be one of 'count', 'proportion' or 'continuous', got 'cuont'" in err, err
    assert "Hint: did you mean 'count'?" in err, err


def test_a_mistyped_hypothesis_kind_is_told_the_kind_meant(workbench_dir: Path, cli):
    _edit(workbench_dir, ("    kind: reachability\n", "    kind: reachabilty\n"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "Hint: did you mean 'reachability'?" in err, err


def test_a_mistyped_value_of_a_secret_variable_is_not_told_the_value_meant(workbench_dir: Path, cli):
    # The hint would print the secret it guessed ("did you mean 'hunter2'?").
    _edit(workbench_dir, ("variables:\n", "variables:\n  token: {secret: true, values: [hunter2, opensesame], "
                                          "default: hunter2}\n"), file="experiments/agent-repro.yaml")
    _edit(workbench_dir, ("hold: {index_k_dtype: bf16, hicache: on}", "hold: {index_k_dtype: bf16, hicache: on, "
                                                                     "token: hunter3}"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "token" in err and "not shown: the variable is secret" in err, err
    assert "hunter" not in err and "Hint: did you mean" not in err, err


def test_a_rate_written_as_a_percentage_is_told_the_fraction(workbench_dir: Path, cli):
    # "at_most: 2%" was told "must be a number, got '2%' (text)" and nothing of what to write instead.
    _edit(workbench_dir, ("{metric: corruption_rate, arm: treatment, at_most: 0.02,",
                          "{metric: corruption_rate, arm: treatment, at_most: 2.5%,"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "must be a number, got '2.5%' (text)" in err, err
    assert "Hint: write 2.5% as a fraction: 0.025" in err, err


# A hypothesis id typed close to one: each was told no id meant where difflib's ratio over the whole id fell short
# (a case, the id's first word, a word of it, that word mistyped: "clam" for an id beginning "claim-").
ID_TYPOS = {
    "wegde-confound": ["wedge-confound"],  # two letters swapped
    "wedge-confund": ["wedge-confound"],  # a letter missing
    "wedge_confound": ["wedge-confound"],  # _ for -
    "WEDGE-CONFOUND": ["wedge-confound"],  # the case
    "wedge": ["wedge-confound"],  # its first word
    "Pool": ["pool-configurator-overcommit"],
    "hicahce": ["hicache-bf16-race"],  # its first word mistyped
    "geometry": ["token-granular-geometry", "token-granular-geometry-deployment"],  # a word of two ids
    # The first words of two ids: the one whose whole it is nearer to was named alone, though both begin so.
    "dead-code": ["dead-code-dsaindexerpoolhost", "dead-code-hicache-off"],
    "confound-wedge": ["wedge-confound"],  # its words swapped: no suggestion at all
    "token-granular": ["token-granular-geometry", "token-granular-geometry-deployment"],
}


def test_an_id_close_to_one_is_told_the_id_meant(workbench_dir: Path, cli):
    """Every command that takes an id looks it up in the registry (show, analyze, run, review, report
    --hypothesis, confounds --hypothesis); a parent or a tested_by is told the same hint."""
    import pytest

    from workbench.errors import BadInput
    from workbench.registry import load_registry

    reg = load_registry(workbench_dir)
    for typed, meant in ID_TYPOS.items():
        with pytest.raises(BadInput) as told:
            reg.hypothesis(typed)
        said = "did you mean " + " or ".join(repr(m) for m in meant) + "?"
        assert (told.value.hint or "").startswith(said), (typed, told.value.hint)
    for command in (("hypothesis", "run", "WEDGE"), ("review", "WEDGE", "--comment", "-m", "x")):
        code, _, err = cli(*command, "--root", str(workbench_dir))
        assert code == 2 and "Hint: did you mean 'wedge-confound'?" in err, (command, err)
    _edit(workbench_dir, ("    parent: wedge-confound\n", "    parent: wedge\n"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "Hint: did you mean 'wedge-confound'?" in err, err


def test_an_id_meant_that_is_left_out_is_said_so_in_the_same_hint(workbench_dir: Path, cli):
    """`live-hostpool-contrl`, with live-hostpool-control's entry broken, was told "did you mean
    'live-hostpool-control'?", an id left out (asked for, it is refused for its entry's problem); the list of ids after
    it said so, far off. The guess itself now says it is left out."""
    _edit(workbench_dir, ("  - id: live-hostpool-control\n", "  - id: live-hostpool-control\n    bogus_field: 1\n"))
    code, _, err = cli("hypothesis", "show", "live-hostpool-contrl", "--root", str(workbench_dir))
    assert code == 2, err
    assert ("Hint: did you mean 'live-hostpool-control' (left out: its entry has a problem of its own)? (known ids: "
            in " ".join(err.split())), err
    code, _, err = cli("hypothesis", "show", "wedge-confund", "--root", str(workbench_dir))
    assert code == 2 and "Hint: did you mean 'wedge-confound'? (known ids: " in err, err
