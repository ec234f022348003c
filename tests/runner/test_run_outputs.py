"""`wb hypothesis run` says the same in its JSON as in its text: a count is an integer (as `wb runs list --json`
writes one), one timing object whose parts add up to the command's wall time (the text's `time:` line), and a
number in a key=value pair without a thousands separator (grep and awk read them)."""

from __future__ import annotations

import json
import re


def _many_aborts(toy) -> None:
    """The control arm's journal count (waiting_for_input, a count collected by a command) is 1425."""
    toy_py = toy.state / "toy.py"
    text = toy_py.read_text()
    assert "{2 if c.get('fix') == 'off' else 0}" in text
    toy_py.write_text(text.replace("{2 if c.get('fix') == 'off' else 0}", "{1425 if c.get('fix') == 'off' else 0}"))


def test_run_json_counts_are_integers_and_its_one_timing_adds_up(toy, cli) -> None:
    _many_aborts(toy)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--seed", "3", "--json", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 0, err
    d = json.loads(out)
    control = d["arms"]["control"]
    for name in ("waiting_for_input", "aborts", "leak", "sessions"):
        assert isinstance(control["totals"][name], int), (name, control["totals"])
    assert control["totals"]["aborts"] == 1425
    assert control["metrics"]["waiting_for_input"]["values"] == [1425]
    assert all(isinstance(v, int) for v in control["metrics"]["waiting_for_input"]["values"])
    assert isinstance(control["metrics"]["wall_s"]["values"][0], float)
    # One timing: the command's, as the text's `time:` line gives it; its parts add up to its wall time.
    assert "command_timing" not in d, d.keys()
    t = d["timing"]
    assert set(t) == {"wall_s", "target_s", "runner_s", "analysis_s", "report_s"}, t
    assert round(t["target_s"] + t["runner_s"] + t["analysis_s"] + t["report_s"], 3) == t["wall_s"], t
    code, out, err = cli("hypothesis", "analyze", "toy-fix", "--json", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 0, err
    totals = json.loads(out)["arms"]["control"]["metrics"]["waiting_for_input"]
    assert totals["total"] == 1425 and isinstance(totals["total"], int), totals


def test_key_value_pairs_have_no_thousands_separator(toy, cli) -> None:
    _many_aborts(toy)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--seed", "3", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 0, err
    control = next(ln for ln in out.splitlines() if ln.startswith("  control "))
    assert "  waiting_for_input=1425  " in control and "  aborts=1425" in control, control
    assert not re.search(r"=\d{1,3},\d", out), out
