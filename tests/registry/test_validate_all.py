"""`wb hypothesis validate` lists every problem of the registry files at once, as a linter does; a command that
uses the registry still stops at the first."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from registry_kit import H
from registry_kit import edit as _edit


def _line(path: Path, fragment: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if fragment in t)


def _digests(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_validate_names_three_independent_mistakes_in_three_entries(workbench_dir: Path, cli):
    # A held variable mistyped (a check against the experiment), an unknown field (the schema), a parent mistyped
    # (a check across entries): each in its own entry, none hiding another.
    path = _edit(workbench_dir,
                 ("hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}",
                  "hold: {index_k_dtyp: bf16, nixl_abort_fix: on, geometry_fix: off}"),
                 ("    falsified_if: Corruption persists in the treatment arm with zero aborts.\n",
                  "    falsified_iff: Corruption persists in the treatment arm with zero aborts.\n"),
                 ("  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhost",
                  "  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhots"))
    before = _digests(workbench_dir)
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "Traceback" not in err, (code, err)
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    lines = [_line(path, "index_k_dtyp:"), _line(path, "falsified_iff:"), _line(path, "dsaindexerpoolhots")]
    assert [re.match(rf"Error: {re.escape(str(path))}:(\d+)", e).group(1) for e in errors] == list(map(str, lines)), err
    assert "unknown variable 'index_k_dtyp'" in errors[0] and "unknown field 'falsified_iff'" in errors[1], err
    assert "parent 'dead-code-dsaindexerpoolhots'" in errors[2], err
    assert err.rstrip("\n").splitlines()[-1].startswith("3 problems"), err
    assert "run again" not in err, err
    assert out == "" and _digests(workbench_dir) == before


def test_validate_stops_at_an_entry_that_is_not_a_mapping_and_says_so(workbench_dir: Path, cli):
    path = _edit(workbench_dir,
                 ("hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}",
                  "hold: {index_k_dtyp: bf16, nixl_abort_fix: on, geometry_fix: off}"),
                 ("  - id: dead-code-dsaindexerpoolhost\n",
                  "  - just a sentence\n  - id: dead-code-dsaindexerpoolhost\n"),
                 ("  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhost",
                  "  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhots"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "Traceback" not in err, (code, err)
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 2, err
    assert f"{path}:{_line(path, 'index_k_dtyp:')}" in errors[0], err
    assert f"{path}:{_line(path, 'just a sentence')}" in errors[1] and "mapping" in errors[1], err
    assert "stops the checking of its file there" in err.rstrip("\n").splitlines()[-1], err


def test_a_run_still_stops_at_the_first_problem(workbench_dir: Path, cli):
    _edit(workbench_dir,
          ("hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}",
           "hold: {index_k_dtyp: bf16, nixl_abort_fix: on, geometry_fix: off}"),
          ("    falsified_if: Corruption persists in the treatment arm with zero aborts.\n",
           "    falsified_iff: Corruption persists in the treatment arm with zero aborts.\n"))
    code, _, err = cli("hypothesis", "show", "wedge-confound", "--root", str(workbench_dir))
    assert code == 2 and len([ln for ln in err.splitlines() if ln.startswith("Error: ")]) == 1, err


def test_a_broken_experiment_file_is_told_once_not_in_every_hypothesis_on_it(workbench_dir: Path, cli):
    exp = _edit(workbench_dir, ("leak: {kind: count,", "leak: {kind: cuont,"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 1 and f"{exp}:{_line(exp, 'cuont')}" in errors[0], err
    assert err.rstrip("\n").splitlines()[-1].startswith("1 problem found; more may show once it is fixed"), err
    # --json says it too: a script can tell a clean pass of the rest from checks still waiting on this problem.
    code, out, _ = cli("hypothesis", "validate", "--root", str(workbench_dir), "--json")
    error = json.loads(out)["error"]
    assert code == 2 and (error["stopped"], error["waiting"]) == (False, True), error
    assert error["summary"] == err.rstrip("\n").splitlines()[-1], error


def test_mistakes_in_separate_parts_of_one_entry_are_each_told(workbench_dir: Path, cli):
    # A held variable, a prediction's arm and a guard's metric: three parts of one entry, checked apart.
    path = _edit(workbench_dir, ("hold: {index_k_dtype: bf16, hicache: on}", "hold: {index_k_dtyp: bf16, hicache: on}"),
                 ("arm: treatment, at_most: 0.02,", "arm: treatmnet, at_most: 0.02,"),
                 ("{metric: aborts, arm: treatment, equals: 0,", "{metric: abort, arm: treatment, equals: 0,"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    lines = [_line(path, "index_k_dtyp:"), _line(path, "treatmnet"), _line(path, "metric: abort,")]
    assert code == 2 and len(errors) == 3, err
    assert all(f"{path}:{n}" in e for n, e in zip(lines, errors)), err


def test_an_experiment_file_without_profiles_is_checked_as_an_experiment(workbench_dir: Path, cli):
    # `profils:` for `profiles:`: the file is still an experiment (it sits in experiments/), told once, not read as a
    # hypotheses file with every experiment field "unknown".
    exp = _edit(workbench_dir, ("\nprofiles:", "\nprofils:"), file="experiments/kernel-geometry.yaml")
    for args in (("--root", str(workbench_dir)), (str(exp),)):
        code, _, err = cli("hypothesis", "validate", *args)
        errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
        assert code == 2 and len(errors) == 1, err
        assert f"{exp}:{_line(exp, 'profils:')}" in errors[0] and "unknown field 'profils'" in errors[0], err
        assert "Hint: did you mean 'profiles'?" in err, err


def test_an_empty_experiment_file_is_told_once(workbench_dir: Path, cli):
    (workbench_dir / "experiments" / "empty.yaml").write_text("", encoding="utf-8")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and errors == [f"Error: {workbench_dir / 'experiments' / 'empty.yaml'}:1: the file is empty"], err


def test_a_file_named_twice_is_checked_once(workbench_dir: Path, cli):
    path = _edit(workbench_dir, ("hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}",
                                 "hold: {index_k_dtyp: bf16, nixl_abort_fix: on, geometry_fix: off}"))
    code, _, err = cli("hypothesis", "validate", str(path), str(workbench_dir / ".." / "wbroot" / H))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 1 and err.rstrip("\n").endswith("1 problem found"), err


def test_yaml_that_does_not_parse_stops_its_own_file_not_the_files_after_it(workbench_dir: Path, cli):
    # kernel-geometry.yaml does not parse: agent-repro's hypotheses are still checked against agent-repro, and the
    # one on kernel-geometry waits for its file.
    exp = _edit(workbench_dir, ("variables:\n", "variables: [\n"), file="experiments/kernel-geometry.yaml")
    path = _edit(workbench_dir, ("hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}",
                                 "hold: {index_k_dtyp: bf16, nixl_abort_fix: on, geometry_fix: off}"))
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 2, err
    assert errors[0].startswith(f"Error: {exp}:") and "invalid YAML" in errors[0], err
    assert errors[1].startswith(f"Error: {path}:{_line(path, 'index_k_dtyp:')}"), err
    assert err.rstrip("\n").splitlines()[-1].startswith("2 problems found; a file that cannot be read or parsed"), err
    # Named files likewise: one that is not there stops nothing but itself.
    code, _, err = cli("hypothesis", "validate", str(workbench_dir / "nope.yaml"), str(path))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 3 and "nope.yaml: file not found" in errors[0], err


def test_an_experiment_file_a_named_hypotheses_file_uses_is_told_by_a_path_beside_the_one_named(
        workbench_dir: Path, cli, monkeypatch):
    # `wb hypothesis validate hypotheses.yaml` told its experiment file's problem at an absolute path
    # (/home/.../experiments/agent-repro.yaml) where the whole workbench's validate says experiments/agent-repro.yaml.
    exp = _edit(workbench_dir, ("leak: {kind: count,", "leak: {kind: cuont,"), file="experiments/agent-repro.yaml")
    monkeypatch.chdir(workbench_dir)
    code, _, err = cli("hypothesis", "validate", H)
    assert code == 2 and f"Error: experiments/agent-repro.yaml:{_line(exp, 'cuont')} " in err, err


def test_the_more_problems_a_command_announces_are_those_validate_lists(workbench_dir: Path, cli, seed_csv: Path):
    # `claims:` for `claim:`: the missing `claim` is told as the unknown field's hint, not as a problem of its own;
    # `hypothesis show` announced "1 more problem after this one" that validate then did not list. (`show` and a
    # review now read the entries without problems; an import of evidence, which records, still stops on the file.)
    _edit(workbench_dir, ("    claim: ", "    claims: "))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and err.rstrip("\n").splitlines()[-1].startswith("1 problem found"), err
    stops = ("import", "evidence", str(seed_csv), "--root", str(workbench_dir))
    code, _, err = cli(*stops)
    assert code == 2 and "unknown field 'claims'" in err and "more problem" not in err, err
    _edit(workbench_dir, ("    falsified_if: Corruption persists in the treatment arm with zero aborts.\n",
                          "    falsified_iff: Corruption persists in the treatment arm with zero aborts.\n"))
    code, _, err = cli(*stops)
    assert code == 2 and "(1 more problem after this one; `wb hypothesis validate` lists them all)" in err, err


def test_an_experiment_file_named_after_the_hypotheses_that_use_it_is_told_once(workbench_dir: Path, cli):
    exp = _edit(workbench_dir, ("leak: {kind: count,", "leak: {kind: cuont,"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", str(workbench_dir / H), str(exp))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 1 and "got 'cuont'" in errors[0], err
    broken = workbench_dir / "experiments" / "broken.yaml"
    broken.write_text("id: [\n", encoding="utf-8")
    code, _, err = cli("hypothesis", "validate", str(workbench_dir / H), str(broken))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len([e for e in errors if "broken.yaml" in e]) == 1, err


def test_each_arm_and_held_variable_of_one_entry_is_told(workbench_dir: Path, cli):
    # `hold: {index_k_dtype: bf61}` hid the arms' mistakes, and the control arm's hid the treatment arm's: the
    # first problem of an entry's variables ended their check.
    path = _edit(workbench_dir,
                 ("hold: {index_k_dtype: bf16, hicache: on}", "hold: {index_k_dtype: bf61, hicache: on}"),
                 ("      control: {nixl_abort_fix: off}\n      treatment: {nixl_abort_fix: on}",
                  "      control: {nixl_abort_fix: of}\n      treatment: {nixl_abort_fix: onn}"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    lines = [_line(path, "nixl_abort_fix: of}"), _line(path, "nixl_abort_fix: onn}"), _line(path, "bf61")]
    assert code == 2 and "Traceback" not in err and len(errors) == 3, err
    assert [f"{path}:{n} " in e for n, e in zip(lines, errors)] == [True] * 3, err  # in file order
    assert "'of'" in errors[0] and "'onn'" in errors[1] and "'bf61'" in errors[2], err


def test_each_cross_field_problem_of_an_experiment_file_is_told(workbench_dir: Path, cli):
    # A proportion over an unknown metric hid a default_profile naming no profile: only the first of an experiment
    # file's checks across its fields was told.
    exp = _edit(workbench_dir, ("numerator: error, denominator: sessions", "numerator: eror, denominator: sessions"),
                ("default_profile: sim", "default_profile: simm"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 2, err
    assert f"{exp}:{_line(exp, 'eror')} " in errors[0] and "unknown metric 'eror'" in errors[0], err
    assert f"{exp}:{_line(exp, 'simm')} " in errors[1] and "default_profile 'simm'" in errors[1], err


def test_each_unknown_name_of_one_template_is_told_at_its_own_line(workbench_dir: Path, cli):
    # Two mistyped names in the sim profile's serve-script template were told as one problem at the first's line:
    # the second's line was never named.
    exp = _edit(workbench_dir, ("hicache={{ hicache }}", "hicache={{ hicach }}"), ("seed={{ seed }}", "seed={{ sed }}"),
                file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 2, err
    assert f"{exp}:{_line(exp, 'hicache={{ hicach }}')} " in errors[0] and "unknown name hicach" in errors[0], err
    assert f"{exp}:{_line(exp, 'seed={{ sed }}')} " in errors[1] and "unknown name sed" in errors[1], err
    assert err.rstrip("\n").splitlines()[-1].startswith("2 problems found"), err


def test_each_bad_field_of_one_profile_is_told(workbench_dir: Path, cli):
    # A context key wb sets itself hid a second one, and an unknown option hid another and a bad timeout: only the
    # first problem of a profile's own fields was told.
    exp = _edit(workbench_dir, ('    context: {prefill_port: "30000", decode_port: "30002"}\n',
                                '    context:\n      run_id: x\n      prefill_port: "30000"\n      arm: y\n'
                                '      decode_port: "30002"\n    options:\n      restart_timeot_s: 5\n'
                                '      check_timeout_s: -1\n      lock_pth: /tmp/x\n'),
                file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    lines = [_line(exp, "run_id: x"), _line(exp, "arm: y"), _line(exp, "restart_timeot_s"),
             _line(exp, "check_timeout_s: -1"), _line(exp, "lock_pth")]
    assert code == 2 and "Traceback" not in err and len(errors) == 5, err
    assert [f"{exp}:{n} " in e for n, e in zip(lines, errors)] == [True] * 5, err
    assert "'run_id'" in errors[0] and "'arm'" in errors[1] and "'restart_timeot_s'" in errors[2], err
    assert "check_timeout_s" in errors[3] and "'lock_pth'" in errors[4], err


def test_each_lineage_cycle_is_told_once(workbench_dir: Path, cli):
    # Two separate parent loops: only the first was told.
    path = _edit(workbench_dir, ("    parent: hicache-bf16-race", "    parent: pool-configurator-overcommit"),
                 ("  - id: dead-code-dsaindexerpoolhost\n    parent: hicache-bf16-race",
                  "  - id: dead-code-dsaindexerpoolhost\n    parent: live-hostpool-control"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 2, err
    assert all("lineage cycle" in e for e in errors), err
    assert "wedge-confound -> pool-configurator-overcommit -> wedge-confound" in errors[0], err
    assert "dead-code-dsaindexerpoolhost -> live-hostpool-control -> dead-code-dsaindexerpoolhost" in errors[1], err
    assert err.rstrip("\n").splitlines()[-1].startswith("2 problems found"), err


def test_an_unknown_name_in_a_template_file_is_told_at_its_line_in_that_file(workbench_dir: Path, cli):
    # The name's line in the .j2 file was added to the line of the experiment's `template_file:` key: the error
    # pointed at an unrelated line of the experiment file.
    j2 = _edit(workbench_dir, ("{{ prefill_port }}", "{{ prefill_portx }}"),
               file="experiments/templates/serve_dsv4_prefill.sh.j2")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1, err
    assert errors[0].startswith(f"Error: {j2}:{_line(j2, 'prefill_portx')} "), err
    assert "(field profiles.sglang-pd.config.template_file)" in errors[0], err
    assert "unknown name prefill_portx" in errors[0], err


def test_each_same_as_loop_is_told_once(workbench_dir: Path, cli):
    # Two separate loops of aliases among an experiment's metrics: only the first was told.
    exp = _edit(workbench_dir, ("  sim_s: {kind: continuous,",
                                "  a1: {kind: count, same_as: a2}\n  a2: {kind: count, same_as: a1}\n"
                                "  b1: {kind: count, same_as: b2}\n  b2: {kind: count, same_as: b1}\n"
                                "  sim_s: {kind: continuous,"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 2, err
    assert f"{exp}:{_line(exp, 'a1: {')} " in errors[0] and "same_as loop: a1 -> a2 -> a1" in errors[0], err
    assert f"{exp}:{_line(exp, 'b1: {')} " in errors[1] and "same_as loop: b1 -> b2 -> b1" in errors[1], err


def test_a_parent_mistyped_does_not_hide_its_entry_s_other_problems(workbench_dir: Path, cli):
    # The parent's check and the entry's checks against its experiment stood in one check: a mistyped parent
    # ended it, and the held variable mistyped in the same entry was never told.
    path = _edit(workbench_dir, ("  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhost",
                                 "  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhots"),
                 ("    hold: {index_k_dtype: bf16, hicache: on}\n    probe:",
                  "    hold: {index_k_dtyp: bf16, hicache: on}\n    probe:"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 2, err
    assert f"{path}:{_line(path, 'poolhots')} " in errors[0] and "parent 'dead-code-dsaindexerpoolhots'" in errors[0]
    assert f"{path}:{_line(path, 'index_k_dtyp:')} " in errors[1] and "unknown variable 'index_k_dtyp'" in errors[1]


def test_an_unknown_name_in_a_kernel_option_is_told_at_its_line(workbench_dir: Path, cli):
    # A kernel profile's options are templates filled when a run starts; `{{ geometry_fixx }}` passed validate and
    # failed only in the run.
    path = workbench_dir / "experiments" / "kernel-geometry.yaml"
    text = path.read_text()
    assert 'geometry_fix: "{{ geometry_fix }}"' in text
    path.write_text(text.replace('geometry_fix: "{{ geometry_fix }}"', 'geometry_fix: "{{ geometry_fixx }}"'))
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "Traceback" not in err, (code, err)
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1 and f"{path}:{_line(path, 'geometry_fixx')}" in errors[0], err
    assert "unknown name geometry_fixx" in errors[0] and "filled with the experiment's variables" in err, err
    assert "Hint: did you mean 'geometry_fix'?" in err, err  # the closest name it may use
    # a built-in name is no kernel argument: the call is filled with the run's variables alone
    path.write_text(text.replace('geometry_fix: "{{ geometry_fix }}"', 'geometry_fix: "{{ run_dir }}"'))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "unknown name run_dir" in err, err


def test_a_hypothesis_that_is_its_own_parent_is_told_once(workbench_dir: Path, cli):
    # "a hypothesis cannot be its own parent" was followed, at the same line, by "lineage cycle: X -> X": one
    # mistake counted and told as two.
    path = _edit(workbench_dir, ("  - id: live-hostpool-control\n    parent: dead-code-dsaindexerpoolhost",
                                 "  - id: live-hostpool-control\n    parent: live-hostpool-control"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1, err
    assert f"{path}:{_line(path, 'parent: live-hostpool-control')} " in errors[0], err
    assert "cannot be its own parent" in errors[0], err
    assert err.rstrip("\n").splitlines()[-1].startswith("1 problem found"), err


def test_an_unknown_name_is_told_where_the_template_uses_it_not_where_its_word_first_appears(workbench_dir: Path,
                                                                                            cli):
    # The line was the first of the template holding the name as a word: "pdsim" in the script's comment line
    # ("# pdsim serve script, rendered by wb") was named instead of the line that uses {{ pdsim }}.
    exp = _edit(workbench_dir, ("seed={{ seed }}", "seed={{ pdsim }}"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1, err
    assert errors[0].startswith(f"Error: {exp}:{_line(exp, 'seed={{ pdsim }}')} "), err
    assert "unknown name pdsim" in errors[0], err


def test_a_template_file_two_profiles_share_is_told_once_naming_both(workbench_dir: Path, cli):
    # Each profile checks the file it renders: a name mistyped in a template_file two profiles use was told twice
    # at the same FILE:LINE, once per profile, and counted as 2 problems.
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    start, end = text.index("  sglang-pd:\n"), text.index("  sim-ssh:\n")
    exp.write_text(text[:end] + text[start:end].replace("  sglang-pd:\n", "  sglang-pd2:\n", 1) + text[end:])
    j2 = _edit(workbench_dir, ("{{ prefill_port }}", "{{ prefill_portx }}"),
               file="experiments/templates/serve_dsv4_prefill.sh.j2")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1, err
    assert errors[0] == (f"Error: {j2}:{_line(j2, 'prefill_portx')} (field profiles.sglang-pd.config.template_file, "
                         "profiles.sglang-pd2.config.template_file): template uses unknown name prefill_portx"), err
    assert err.rstrip("\n").splitlines()[-1].startswith("1 problem found"), err


def test_a_shared_files_places_are_joined_as_each_reads_alone():
    # Merging put "field " before every place, whatever it began with: "field hypothesis a, field x, ...".
    from workbench.registry.problems import SharedFileError, _merged

    def told(*fields: str) -> str | None:
        merged = _merged([SharedFileError("bad", file="t.j2", line=3, field=f) for f in fields])
        assert len(merged) == 1, merged
        return merged[0].field

    assert told("field a.template_file", "field b.template_file") == "field a.template_file, b.template_file"
    assert told("field a.restart item 1", "field b.restart item 2") == "field a.restart item 1, b.restart item 2"
    assert told("hypothesis h, field x", "field b.y") == "hypothesis h, field x; field b.y"


def test_an_unknown_name_in_a_folded_command_is_told_at_its_own_line(workbench_dir: Path, cli):
    # A folded block (`command: >-`) reads as one line of text: a name mistyped on its second line was told at the
    # `command:` key's line, and two on different lines at the same one.
    exp = _edit(workbench_dir, ("{{ wb }} sim repro --dir {{ sim_dir }}", "{{ wb }} sim repro --dir {{ sim_dri }}"),
                ("--jsonl {{ units_path }}", "--jsonl {{ units_pth }}"), file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 2, err
    assert errors[0].startswith(f"Error: {exp}:{_line(exp, 'sim_dri')} "), err
    assert errors[1].startswith(f"Error: {exp}:{_line(exp, 'units_pth')} ") and "units_pth" in errors[1], err


def test_an_item_of_a_list_the_registry_has_no_word_for_is_named_as_a_field(workbench_dir: Path, cli):
    # A place names a key path after the word "field" ("field arms.control.hicache"): an item of `restart` read
    # "(profiles.sim.restart item 1)", a key path without it, and a shared file's places joined under one "field".
    exp = _edit(workbench_dir, ('restart: ["{{ wb }} sim restart --dir {{ sim_dir }}"]',
                                'restart: ["{{ wb }} sim restart --dir {{ sim_dri }}"]'),
                file="experiments/agent-repro.yaml")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1, err
    assert errors[0] == (f"Error: {exp}:{_line(exp, 'sim_dri')} (field profiles.sim.restart item 1): template uses "
                         "unknown name sim_dri"), err


def test_the_count_of_problems_reads_as_the_count_of_hypotheses_does(workbench_dir: Path, cli):
    # "N problems found" kept a plural rule of its own beside plurals.count, which `N hypotheses ok` uses: 1,000
    # hypotheses read with their separator, 1200 problems without.
    path = workbench_dir / H
    path.write_text(path.read_text() + "".join(f"  - id: extra-{i}\n    claimm: x\n" for i in range(400)))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert re.match(r"\d,\d{3} problems found", err.rstrip("\n").splitlines()[-1]), err[-500:]


def test_two_entries_on_one_line_lacking_one_field_are_two_problems(workbench_dir: Path, cli):
    # Only a shared file's problem (a template_file) is told once for every field that finds it: two entries of a
    # flow list, each missing its claim, are two problems at one line, not one.
    (workbench_dir / H).write_text("hypotheses: [{id: a, experiment: agent-repro}, {id: b, experiment: agent-repro}]\n")
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ") and "'claim'" in ln]
    assert code == 2 and "Traceback" not in err, err
    assert [re.search(r"\(([^)]*)\)", e).group(1) for e in errors] == ["hypothesis a", "hypothesis b"], err


def test_validate_json_gives_each_file_checked_with_its_count_as_a_number(workbench_dir: Path, cli):
    # `files` held only the text's sentences ("hypotheses.yaml: 1,008 hypotheses ok"): a script had to parse a
    # number with a thousands separator out of prose.
    path = workbench_dir / H
    path.write_text(path.read_text() + "".join(
        f"  - id: extra-{i}\n    claim: x\n    experiment: agent-repro\n    isolates: hicache\n"
        "    arms: {control: {hicache: off}, treatment: {hicache: on}}\n"
        "    predicts: [{metric: corruption_rate, arm: treatment, at_least: 0.05}]\n" for i in range(1000)))
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir), "--json")
    assert code == 0, err
    d = json.loads(out)
    exp_dir = workbench_dir / "experiments"
    assert d["checked"] == [{"file": str(exp_dir / "agent-repro.yaml"), "kind": "experiment", "hypotheses": None},
                            {"file": str(exp_dir / "kernel-geometry.yaml"), "kind": "experiment", "hypotheses": None},
                            {"file": str(path), "kind": "hypotheses", "hypotheses": 1008}], d
    assert d["files"][-1] == f"{path}: 1,008 hypotheses ok", d  # the text's lines, as first shipped
    code, out, _ = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert out.splitlines() == d["files"], out


def test_a_template_error_does_not_hide_a_hypothesis_naming_an_undeclared_variable(workbench_dir: Path, cli):
    # A template of agent-repro broken, and a hypothesis on it isolating `nixl_abort_fx`: validate told the template
    # alone ("more may show once it is fixed"). The variables an experiment declares stand apart from its templates:
    # the hypotheses are checked against them in the same pass.
    exp = _edit(workbench_dir, ("hicache={{ hicache }}", "hicache={{ hicache }"), file="experiments/agent-repro.yaml")
    hyp = _edit(workbench_dir, ("    isolates: nixl_abort_fix\n", "    isolates: nixl_abort_fx\n"))
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and "Traceback" not in err, err
    assert any(f"{exp}:" in e for e in errors), err
    assert any(f"{hyp}:{_line(hyp, 'nixl_abort_fx')}" in e and "nixl_abort_fx" in e for e in errors), err


def test_a_template_file_named_to_validate_is_told_as_one(workbench_dir: Path, cli):
    # `wb hypothesis validate experiments/templates/x.sh.j2` read the bash template as YAML: "invalid YAML: did not
    # find expected <document start>". It is a template file: validate checks it through the experiment naming it.
    template = workbench_dir / "experiments" / "templates" / "serve_dsv4_prefill.sh.j2"
    code, _, err = cli("hypothesis", "validate", str(template), "--root", str(workbench_dir))
    (first, *rest) = err.splitlines()
    assert code == 2 and "Traceback" not in err and "invalid YAML" not in err, err
    assert first.startswith(f"Error: {template}: a template file, not a hypotheses or experiment file"), first
    assert "experiments/agent-repro.yaml (profile sglang-pd)" in first, first
    assert "Hint: wb hypothesis validate " in err and str(workbench_dir / "experiments" / "agent-repro.yaml") in err


def test_validate_json_has_the_same_keys_on_failure_and_its_summary_agrees_with_the_warnings(
        workbench_dir: Path, cli):
    """`hypothesis validate --json` gave `files` and `checked` when every file passed, and neither when one failed:
    a script reading them broke on the failure it was run to find. They now name the files that passed, beside the
    error. The warnings of the commands that read the other entries said "`wb hypothesis validate` lists every
    problem", and validate then said "more may show once it is fixed": they now say what validate does."""
    _edit(workbench_dir, ("  - id: live-hostpool-control\n", "  - id: live-hostpool-control\n    bogus_field: 1\n"))
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir), "--json")
    d = json.loads(out)
    exp_dir = workbench_dir / "experiments"
    assert code == 2 and d["ok"] is False and "bogus_field" in d["error"]["message"], d
    passed = [exp_dir / "agent-repro.yaml", exp_dir / "kernel-geometry.yaml"]
    assert d["checked"] == [{"file": str(f), "kind": "experiment", "hypotheses": None} for f in passed], d
    assert d["files"] == [f"{exp_dir / 'agent-repro.yaml'}: ok", f"{exp_dir / 'kernel-geometry.yaml'}: ok"], d
    assert "more may show once it is fixed" in d["error"]["summary"], d["error"]
    code, _, err = cli("hypothesis", "list", "--root", str(workbench_dir))
    assert code == 0 and "`wb hypothesis validate` checks every file and lists what it finds" in err, err
    assert "lists every problem" not in err, err
