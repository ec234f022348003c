"""What `wb hypothesis run` prints at the end: the verdict as a headline and a line per prediction and check (the
lines `hypothesis show` prints), the command's time as one sum whose parts add up, counts in plain English."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

SGR = re.compile(rb"\x1b\[[0-9;]*m")  # a style: colour, bold, dim, italic (cursor moves are not styles)


def _run(toy, cli) -> tuple[str, str]:
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--seed", "3", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 0, out + err
    return out, err


def _after(lines: list[str], start: str, stop: tuple[str, ...] = ()) -> list[str]:
    """The lines after the first that starts with `start`, up to one that starts with any of `stop`."""
    i = next(n for n, line in enumerate(lines) if line.startswith(start))
    rest = lines[i + 1:]
    return rest[:next((n for n, line in enumerate(rest) if line.startswith(stop)), len(rest))] if stop else rest


def test_the_verdict_is_a_headline_the_time_line_one_sum_and_counts_are_singular_or_plural(toy, cli) -> None:
    """It was one paragraph of about 1,900 characters; `show` gave the same checks a line each. The same run's
    output is read by `_time_line_is_one_sum_whose_parts_add_up` and `_counts_are_singular_or_plural` below (one
    run serves all three tests that were: each only reads it)."""
    out, run_err = _run(toy, cli)
    lines = out.splitlines()
    assert "verdict: inconclusive (claim: The fix removes the leaks.)" in lines, out
    body = _after(lines, "verdict: ", ("time: ", "report: "))
    # The prediction's line keeps every figure the paragraph gave: the counts, the rate, the interval and its kind,
    # where it lies, what would decide it, and which unit the interval takes and why.
    predicted = [line for line in body if line.startswith("  [inconclusive] predicts corruption_rate (treatment)")]
    assert len(predicted) == 1, out
    for fact in ("the treatment arm (fix=on) had 0/10 = 0.0%", "(Wilson 95% [0.0%, 27.8%]; 1 run)",
                 "which straddles the region <= 0.02 (2%)", "about 179 more units at this rate would decide it",
                 "Runs as the unit: one run: between-run variation cannot be measured, so its units are taken as "
                 "independent."):
        assert fact in predicted[0], predicted[0]
    assert all(len(line) < 400 for line in body) and "Checks held" not in out, out
    code, shown_json, err = cli("hypothesis", "show", "toy-fix", "--json", "--db", toy.db)
    assert code == 0, err
    checks = json.loads(shown_json)["checks"]
    # One replicate of the two the toy plans: a smoke run, said first; then the prediction, then the checks.
    assert body[0] == ("  Smoke run: 1 of 2 planned replicates; it sets the status only while no run of the planned "
                       "size has a verdict."), out
    assert body[1] == predicted[0], out
    assert [f"  [{c['mark']}] {c['name']}: {c['detail']}" for c in checks] == body[2:], out
    assert {c["name"] for c in checks} >= {"data", "isolation", "fingerprint", "config", "attrition", "drift"}
    # One renderer: `show` prints the same lines under its own headline.
    code, shown, err = cli("hypothesis", "show", "toy-fix", "--db", toy.db)
    assert code == 0, err
    assert _after(shown.splitlines(), "verdict: ") == body, shown
    _time_line_is_one_sum_whose_parts_add_up(out, run_err)
    _counts_are_singular_or_plural(toy, cli, out, run_err)


def _time_line_is_one_sum_whose_parts_add_up(out: str, err: str) -> None:
    """The time line is one sum whose parts add up, and stderr gives no second figure: stderr's "the runs took
    56.2 s of real time" stood beside stdout's "58.2 s = ... 54.7 s + runner 3.15 s": two figures for one thing,
    and parts rounded apart that did not add up to the total shown."""
    t = re.search(r"^time: ([\d.]+) s, the wall time of the whole command = target commands and waits ([\d.]+) s "
                  r"\+ runner ([\d.]+) s \+ analysis ([\d.]+) s \+ report ([\d.]+) s$", out, re.M)
    assert t, out
    total, *parts = (round(float(x) * 100) for x in t.groups())  # in hundredths: every figure has two decimals
    assert all(re.fullmatch(r"\d+\.\d\d", x) for x in t.groups()), t.group(0)
    assert sum(parts) == total, t.group(0)
    assert "of real time" not in err and " s of " not in err.splitlines()[-2], err
    assert "toy-fix on local: 2 of 2 runs ok" in err, err


def _counts_are_singular_or_plural(toy, cli, out: str, err: str) -> None:
    """Counts are singular or plural, never "(s)", and a replicate is one number wherever it appears: the progress
    line, `wb runs show` and the JSON all count from 0, as the experiment's templates get it (`{{ replicate }}`,
    which a workload puts in its own tags): shown from 1, run "r1" was the workload's "r0"."""
    assert "(s)" not in out + err, out + err
    assert "control: 1 run, treatment: 1 run" in out, out
    assert re.search(r"\] run 1 (control|treatment) r0 on local: ok \(", err) and " r1 " not in err, err
    code, out, _ = cli("runs", "show", "1", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 0 and "\nreplicate: r0\n" in out, out
    code, out, _ = cli("runs", "show", "1", "--db", toy.db, "--json", env={"WB_ROOT": str(toy.root)})
    assert code == 0 and json.loads(out)["replicate"] == 0, out


def _execution(mode: str, made: int, planned: int):
    from workbench.runner.summary import ExecutionResult, RunSummary

    runs = tuple(RunSummary(id=i + 1, arm=("control", "treatment")[i % 2], replicate=i // 2, block=i // 2,
                            order_index=i, host="local", status="ok", error=None) for i in range(made))
    return ExecutionResult(hypothesis="toy-fix", experiment="toy", experiment_version=1, profile="local",
                           target="local", execution_id=1, mode=mode, seed=3, blocks="abba", overrides={},
                           order=("control", "treatment") * (planned // 2), config_diff={}, arms={}, runs=runs,
                           stopped_early=None, timing={})


def test_the_order_line_of_a_sequential_stop_gives_its_plan_as_a_budget() -> None:
    """A sequential execution stopped after 4 of a budget of 8 read "(4 of 8 planned)", as if 4 runs were missing;
    the progress line and a stop before any run say "at most 8". A fixed plan keeps "4 of 8 planned"."""
    from workbench.cli.run_cmd import _order_line

    assert _order_line(_execution("sequential", 4, 8)) == (
        "order: control@local treatment@local control@local treatment@local  (4 of at most 8 planned)")
    assert _order_line(_execution("fixed", 4, 8)).endswith("  (4 of 8 planned)")
    assert _order_line(_execution("sequential", 8, 8)).endswith("treatment@local")  # the budget spent: no note


def test_on_a_terminal_no_color_leaves_out_every_style_and_the_restore_and_the_summary_wrap_between_phrases(
        toy) -> None:
    """NO_COLOR (https://no-color.org) dropped the colours, not bold and dim: the progress bar on a terminal still
    styled its text. Without NO_COLOR the same terminal is styled, so the check can fail.

    On a terminal the `restored:` line broke inside its parentheses (`restarted (1` / `command), healthy`; after a
    Ctrl-C, `pdsim stopped (it was down` / `before)`), and the summary's lines ran past the terminal's width for it
    to break inside words. Both wrap at its width between words, a parenthesis kept whole where it fits, the lines
    after the first indented (read on the run under NO_COLOR, whose lines hold no style to skip). The progress is
    the live bar, with no line per run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from terminal_kit import run_in_a_terminal

    hypotheses = toy.root / "hypotheses.yaml"
    claim = "The fix removes the leaks" + ", whichever session leaked and however often" * 4 + "."
    hypotheses.write_text(hypotheses.read_text().replace("claim: The fix removes the leaks.", f"claim: {claim}"))
    restored = f"restored: {toy.conf} put back byte for byte, restarted (1 command), healthy"
    width = restored.index("(1 command)") + 5  # room for `(1` but not for `command),` on the line
    env = {**os.environ, "WB_ROOT": str(toy.root), "TERM": "xterm-256color", "COLUMNS": str(width)}
    env.pop("NO_COLOR", None)
    args = ["hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db]
    code, styled = run_in_a_terminal(args, env, on="both", timeout_s=240)
    assert code == 0 and SGR.search(styled), styled[-2000:]
    code, raw = run_in_a_terminal(args, {**env, "NO_COLOR": "1"}, on="both", timeout_s=240)
    assert code == 0 and not SGR.search(raw), SGR.findall(raw)
    shown = raw.decode(errors="replace").replace("\r\n", "\n")
    # The per-run lines are for logs and pipes; a terminal has the bar, redrawn in place, then one line.
    assert "[1/2] run 1" not in shown and "[2/2] run 2" not in shown, shown
    lines = shown[shown.index("toy-fix on local: 2 of 2 runs ok\n"):].splitlines()[1:]
    assert lines[:2] == [restored[:restored.index(" (1 command)")], "  (1 command), healthy"], lines
    assert all(len(line) <= width or " " not in line.strip() for line in lines), lines
    assert all(line == line.rstrip() for line in lines), lines
    at = next(i for i, line in enumerate(lines) if line.startswith("verdict: "))  # longer than the terminal
    assert lines[at + 1].startswith("  ") and claim.split()[-1] in lines[at + 1] + lines[at + 2], lines


def test_the_stop_line_names_the_looks_the_attrition_check_held() -> None:
    """A sequential execution ran three blocks more because the attrition check held a verdict the units as a whole
    had reached (the completed ones alone had not); its verdict then stood, and its check read `[FLAG] ... the verdict
    stands`: nothing said that attrition was why it ran on. Where it still holds the verdict, the check's line says
    what would decide it."""
    from workbench.analysis.stored import BUDGET_SPENT
    from workbench.runner.summary import _why_stopped

    e = _execution("sequential", 16, 24)
    assert _why_stopped("wedge-confound is supported.", e, [5, 6, 7]) == (
        "stopped early after 8 blocks: the sequential test decided; the attrition check held the verdict at looks 5 "
        "to 7, until the completed units alone decided as all units did")
    assert _why_stopped("wedge-confound is supported.", e, []) == \
        "stopped early after 8 blocks: the sequential test decided"
    assert _why_stopped(f"{BUDGET_SPENT} 8 replicates is spent", e, [6, 8]) == (
        "budget spent: 8 blocks without a decision; the attrition check held the verdict at looks 6 and 8 (its "
        "line below says what would decide it)")
    assert "looks 5 and 6," in _why_stopped("wedge-confound is supported.", e, [5, 6])
    assert _why_stopped(f"{BUDGET_SPENT} 8 replicates is spent", e, [2, 4, 5]).endswith("at looks 2, 4 and 5")
    # A check that made the verdict invalid stopped the execution: it did not hold the verdict, and no test decided.
    assert _why_stopped("wedge-confound is invalid.", e, [5, 6], invalid_by=("attrition",)) == (
        "stopped early after 8 blocks: the attrition check made the verdict invalid (its line below says why); the "
        "attrition check held the verdict at looks 5 and 6")
    assert _why_stopped("wedge-confound is invalid.", e, [], invalid_by=("data", "attrition")) == \
        "stopped early after 8 blocks: the data and attrition checks made the verdict invalid (their lines below " \
        "say why)"
