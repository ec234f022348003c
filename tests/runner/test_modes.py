"""A/A, sequential, several hosts in parallel, the kernel target, and the CLI's exit codes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.store import open_store

from runner_kit import edit_profile  # noqa: E402

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]


def _run(toy, **kw):
    kw.setdefault("show_progress", False)
    kw.setdefault("build_report", False)
    return run_hypothesis("toy-fix", db=toy.db, **kw)


def test_aa_runs_control_twice_under_two_names(toy):
    s = _run(toy, aa=True, replicates=1)
    assert sorted(r["arm"] for r in s["runs"]) == ["control", "control_aa"]
    assert s["mode"] == "aa"
    assert s["arms"]["control"]["variables"] == s["arms"]["control_aa"]["variables"]
    assert s["arms"]["control"]["totals"]["leak"] == s["arms"]["control_aa"]["totals"]["leak"] == 3
    with open_store(toy.db, read_only=True) as store:
        assert store.executions()[0].mode == "aa"
    assert toy.conf.read_bytes() == toy.original


def test_sequential_stops_within_budget_and_its_progress_names_the_budget_as_a_cap(toy, capsys):
    s = _run(toy, sequential=True, replicates=3, show_progress=True)
    assert s["mode"] == "sequential"
    n_blocks = len({r["block"] for r in s["runs"]})
    assert 1 <= n_blocks <= 3
    if n_blocks < 3:  # why, in a line (it was the verdict's whole reasoning again)
        after = f"stopped early after {n_blocks} block{'s' * (n_blocks > 1)}"  # "1 block", "2 blocks"
        assert s["stopped_early"] in (f"{after}: the sequential test decided",
                                      f"{after}: no verdict is reachable within the budget (futility)"), \
            s["stopped_early"]
    assert all(r["status"] == "ok" for r in s["runs"])  # no placeholder rows left behind
    assert toy.conf.read_bytes() == toy.original
    # The plan of a sequential execution is its budget: "2 of 6 run(s) finished" read as a failure to run
    # four; the closing line says how many ran and the most that could have.
    ran = len(s["runs"])
    err = capsys.readouterr().err
    assert f"toy-fix on local: {ran} run{'s' * (ran != 1)} ok (sequential, at most 6)\n" in err, err
    # After each look (a block of one run an arm) one line says where the test stands: the look, the most left, and
    # the prediction's counts, running interval and what would decide it.
    looks = [line for line in err.splitlines() if line.startswith("look ")]
    assert len(looks) == ran // 2, err
    assert looks[0].startswith("look 1 of at most 3 (up to 2 more): corruption_rate (treatment) <= 0.02 (2%): "
                               "control "), err
    assert "running interval [" in looks[0] and looks[-1].startswith(f"look {ran // 2} of at most 3 ("), err
    _run(toy, replicates=1, show_progress=True)
    assert "toy-fix on local: 2 of 2 runs ok\n" in capsys.readouterr().err


def test_several_hosts_run_in_parallel_balanced(toy):
    edit_profile(toy.root, "target: {kind: local}", "target: {kind: local, hosts: [h1, h2]}")
    edit_profile(toy.root, 'path: "{{ state }}/serve.conf"', 'path: "{{ state }}/{{ host }}/serve.conf"')
    edit_profile(toy.root, "TOY restart {{ state }}".replace("TOY", str(toy.state / "toy.py")),
                 f"{toy.state / 'toy.py'} restart {{{{ state }}}}/{{{{ host }}}}")
    edit_profile(toy.root, "TOY work {{ state }}".replace("TOY", str(toy.state / "toy.py")),
                 f"{toy.state / 'toy.py'} work {{{{ state }}}}/{{{{ host }}}}")
    edit_profile(toy.root, 'command: "cat {{ state }}/aborts.txt"', 'command: "cat {{ state }}/{{ host }}/aborts.txt"')
    originals = {}
    for h in ("h1", "h2"):
        (toy.state / h).mkdir()
        originals[h] = f"# {h}'s own file\nfix=off\nmode=ok\n".encode()
        (toy.state / h / "serve.conf").write_bytes(originals[h])
    s = _run(toy, replicates=4, seed=9)
    assert all(r["status"] == "ok" for r in s["runs"])
    per = Counter((r["host"], r["arm"]) for r in s["runs"])
    assert per == {("h1", "control"): 2, ("h1", "treatment"): 2, ("h2", "control"): 2, ("h2", "treatment"): 2}
    for h in ("h1", "h2"):
        assert (toy.state / h / "serve.conf").read_bytes() == originals[h]


def test_kernel_target_records_geometry_metrics(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.setenv("WB_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.delenv("WB_ROOT", raising=False)
    s = run_hypothesis("token-granular-geometry", root=REPO, db=str(tmp_path / "k.duckdb"), replicates=1,
                       show_progress=False, build_report=False)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert s["arms"]["treatment"]["totals"]["mismatch_bytes"] == 0
    assert s["arms"]["control"]["totals"]["corrupted_tokens"] > 0


def test_cli_exit_codes(toy, cli):
    # In process (`cli`): the same command tree and error boundary as the console script, without its imports.
    base = ["hypothesis", "run", "toy-fix", "--db", toy.db]
    code, _, err = cli(*base, "--set", "nosuch=1")
    assert code == 2 and "Error:" in err
    code, out, err = cli(*base, "--set", "mode=unhealthy", "--replicates", "1", "--json")
    assert code == 1
    assert {r["status"] for r in json.loads(out)["runs"]} == {"failed"}
    assert "health never green" in out + err
    assert toy.conf.read_bytes() == toy.original  # (exit 0 on success: tests/runner/test_sim.py)


def test_fail_on_gates_the_verdict_and_the_summary_is_whole(toy, cli):
    """--fail-on: exit 3 when the verdict is in the set, 0 when not, 2 for a verdict wb does not have. The
    summary's order line names only the runs made (a sequential stop makes fewer than planned), and the
    printed wall time is the sum of target, runner, analysis and report."""
    import re

    base = ["hypothesis", "run", "toy-fix", "--db", toy.db]  # in process (`cli`), as in test_cli_exit_codes
    code, _, err = cli(*base, "--fail-on", "falsified,wrong")
    assert code == 2 and "Error: --fail-on 'falsified,wrong': unknown verdict wrong" in err
    assert "Traceback" not in err
    code, out, err = cli(*base, "--sequential", "--replicates", "3", "--seed", "3")
    assert code == 0, out + err
    verdict = re.search(r"^verdict: (\w+) \(claim: ", out, re.M).group(1)
    made = sum(int(n) for n in re.findall(r"runs ok \d+/(\d+)", out))
    order = re.search(r"^order: (.*)$", out, re.M).group(1)
    assert len([w for w in order.split() if "@" in w]) == made, out
    if made < 6:
        assert f"({made} of at most 6 planned)" in order  # a sequential plan is a budget
    # The stop line says what happened: decided early, decided at the budget's last block, or spent.
    blocks = made // 2
    counted = f"{blocks} block{'s' * (blocks > 1)}"  # "1 block", "2 blocks"
    stop = {"supported": None, "falsified": None, "inconclusive": f"budget spent: {counted} without a decision"}
    if verdict in ("supported", "falsified"):
        stop[verdict] = (f"stopped early after {counted}: the sequential test decided" if blocks < 3 else
                         "the sequential test decided at the last block of the budget (3)")
    if verdict == "inconclusive" and blocks < 3:
        stop[verdict] = f"stopped early after {counted}: no verdict is reachable within the budget (futility)"
    if verdict in stop:
        assert re.search(rf"^{re.escape(stop[verdict])}$", out, re.M), out
    t = re.search(r"^time: ([\d.]+) s, the wall time of the whole command = target commands and waits ([\d.]+) s "
                  r"\+ runner ([\d.]+) s \+ analysis ([\d.]+) s \+ report ([\d.]+) s$", out, re.M)
    assert t, out
    wall, *parts = (round(float(x) * 100) for x in t.groups())
    assert wall == sum(parts)  # in hundredths, as shown: the parts add up to the total
    others = ",".join(v for v in ("supported", "falsified", "inconclusive", "invalid") if v != verdict)
    code, gated, err = cli(*base, "--replicates", "1", "--json", "--fail-on", verdict)
    d = json.loads(gated)
    assert (d["wb"], d["command"]) == (1, "hypothesis run")
    assert code == (3 if d["verdict"] == verdict else 0), err
    assert "command_timing" not in d
    assert set(d["timing"]) == {"wall_s", "target_s", "runner_s", "analysis_s", "report_s"}
    code, passed, _ = cli(*base, "--replicates", "1", "--fail-on", others)
    v2 = re.search(r"^verdict: (\w+) \(claim: ", passed, re.M).group(1)
    assert code == (3 if v2 in others.split(",") else 0)
    assert toy.conf.read_bytes() == toy.original
