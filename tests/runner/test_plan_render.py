"""Plans (ABBA blocks, seeds, hosts), the renderer's quoting, and the shipped profiles rendering cleanly."""

from __future__ import annotations

import shlex
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from workbench.errors import BadInput
from workbench.registry import load_registry
from workbench.runner.plan import Plan, make_plan
from workbench.runner.prepare import preflight, preview_values, resolve
from workbench.runner.render import Raw, render_command, render_text

REPO = Path(__file__).resolve().parents[2]


def test_abba_blocks_alternate_and_seed_reproduces():
    p = make_plan(["control", "treatment"], 4, blocks="abba", seed=11)
    orders = [[r.arm for r in p.block_runs(b)] for b in range(4)]
    assert orders[0] == orders[2] and orders[1] == orders[3] == list(reversed(orders[0]))
    assert make_plan(["control", "treatment"], 4, seed=11).to_dict() == p.to_dict()
    assert Plan.from_dict(p.to_dict()).runs == p.runs
    firsts = {make_plan(["a", "b"], 2, seed=s).runs[0].arm for s in range(40)}
    assert firsts == {"a", "b"}  # the seed decides which arm starts


def test_hosts_are_balanced_across_arms_and_positions():
    p = make_plan(["a", "b"], 8, blocks="abba", seed=5, hosts=["h1", "h2"])
    per = Counter((r.host, r.arm) for r in p.runs)
    assert set(per.values()) == {4}
    first = Counter((r.host, p.block_runs(r.block)[0].arm) for r in p.runs if r.order_index % 2 == 0)
    assert set(first.values()) == {2}  # on each host, each arm goes first in half the blocks


def test_random_blocks_hold_every_arm_once():
    p = make_plan(["a", "b", "c"], 5, blocks="random", seed=2)
    for b in range(5):
        assert sorted(r.arm for r in p.block_runs(b)) == ["a", "b", "c"]


def test_command_values_are_shell_quoted():
    evil = "x; rm -rf / #"
    cmd = render_command("echo {{ v }} {{ w }}", {"v": evil, "w": Raw("a b")})
    assert shlex.split(cmd) == ["echo", evil, "a", "b"]
    out = subprocess.run(["bash", "-c", render_command("printf %s {{ v }}", {"v": "$(id) `id` 'q'"})],
                         capture_output=True, text=True)
    assert out.stdout == "$(id) `id` 'q'"
    assert render_text("a={{ v }}", {"v": "x y"}) == "a=x y"  # config files are not commands
    with pytest.raises(BadInput):
        render_text("{{ nope }}", {})


def test_shipped_profiles_render_and_pass_their_check():
    reg = load_registry(REPO)
    for hid in ("wedge-confound", "hicache-bf16-race", "token-granular-geometry-deployment"):
        for profile in ("sim", "sglang-pd", "sim-ssh"):
            p = resolve(reg, hid, profile=profile, replicates=None, overrides={}, sequential=False, aa=False,
                        seed=1)
            rendered = preflight(p, dict(p.profile.context))
            assert len(set(rendered.values())) == 2, (hid, profile)
    p = resolve(reg, "wedge-confound", profile="sglang-pd", replicates=None, overrides={}, sequential=False,
                aa=False, seed=1)
    preflight(p, dict(p.profile.context))
    assert "--enable-hierarchical-cache" in p.rendered["control"]
    assert "SGLANG_NIXL_ABORT_FIX=0" in p.rendered["control"] and "SGLANG_NIXL_ABORT_FIX=1" in p.rendered["treatment"]
    values = preview_values(p, "control", dict(p.profile.context))
    journal = render_command(p.profile.collect["waiting_for_input"].command, values)
    assert "journalctl -u sglang-dsv4-decode --since '2000-01-01 00:00:00 UTC'" in journal


def test_wedge_world_override_and_aa_arms():
    reg = load_registry(REPO)
    p = resolve(reg, "wedge-confound", profile=None, replicates=None, overrides={"causal_model": "wedge"},
                sequential=False, aa=False, seed=None)
    assert all(a["causal_model"] == "wedge" for a in p.assignments.values())
    assert p.assignments["control"]["nixl_abort_fix"] == "off" and p.assignments["treatment"]["nixl_abort_fix"] == "on"
    assert p.profile_name == "sim" and p.replicates == 3   # the hypothesis' design, over the experiment's 2
    aa = resolve(reg, "wedge-confound", profile=None, replicates=4, overrides={}, sequential=False, aa=True, seed=None)
    assert aa.arms == ["control", "control_aa"] and aa.assignments["control"] == aa.assignments["control_aa"]
    assert aa.mode == "aa" and aa.replicates == 4
    seq = resolve(reg, "wedge-confound", profile=None, replicates=None, overrides={}, sequential=True, aa=False,
                  seed=None)
    assert seq.mode == "sequential" and seq.max_replicates == 12
