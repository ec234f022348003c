"""The runner against the kvcache example: a restart that leaves its server in the background, the
manipulation check, timeouts from the profile, reserved template names."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kvcache_kit import run_hypothesis

from workbench.errors import ConfigError, RestoreFailed
from workbench.registry import load_registry

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)


def _start(kv) -> int:
    """Serve kv.conf as the operator would, before any experiment (restart.sh backgrounds the server)."""
    subprocess.run([str(kv.root / "restart.sh"), str(kv.root / "kv.conf"), str(kv.root / "kv.pid"), sys.executable],
                   check=True, timeout=60, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return kv.pid()


def test_backgrounded_server_does_not_block_the_run(kv, capfd):
    # restart.sh ends with `svc.py serve CONF &` and no redirection: the server holds the restart's pipes.
    # A runner waiting for EOF on them would hit the 20 s restart timeout on every run and in the restore.
    kv.edit("options: {restart_timeout_s: 30}", "options: {restart_timeout_s: 20}")
    original = (kv.root / "kv.conf").read_bytes()
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                             show_progress=True, build_report=False)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], [r.get("error") for r in summary["runs"]]
    assert (kv.root / "kv.conf").read_bytes() == original
    err = " ".join(capfd.readouterr().err.split())  # rich wraps long lines
    assert "left a background process holding its output open" in err
    assert err.count("left a background process") == 1  # said once, not per run
    assert "Event loop is closed" not in err and "Traceback" not in err


def test_restart_that_keeps_the_old_process_is_invalid(kv):
    old = _start(kv)
    # A restart script that kills the wrong pid: the new server cannot bind the port and dies, the old one serves.
    bad = kv.root / "bad-restart.sh"
    bad.write_text('#!/bin/bash\nkill 999999 2>/dev/null\n'
                   '"$3" "$(dirname "$0")/svc.py" serve "$1" &\necho $! > "$2.new"\n')
    bad.chmod(0o755)
    kv.edit("{{ workbench_dir }}/restart.sh", "{{ workbench_dir }}/bad-restart.sh")
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                             show_progress=False, build_report=False)
    statuses = {r["status"] for r in summary["runs"]}
    errors = [r["error"] for r in summary["runs"]]
    assert statuses == {"invalid"}, errors
    assert all(f"arm {r['arm']} not applied" in r["error"] and f"pid {old}" in r["error"]
               for r in summary["runs"]), errors
    assert summary["verdict"] != "falsified"


def test_verify_step_catches_old_config_when_restart_check_is_off(kv):
    _start(kv)
    bad = kv.root / "bad-restart.sh"
    bad.write_text('#!/bin/bash\ntrue\n')
    bad.chmod(0o755)
    kv.edit("{{ workbench_dir }}/restart.sh", "{{ workbench_dir }}/bad-restart.sh")
    kv.edit("options: {restart_timeout_s: 30}", "options: {restart_timeout_s: 30, check_restart: false}")
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                             show_progress=False, build_report=False)
    by_arm = {r["arm"]: r for r in summary["runs"]}
    # The old server runs compression=off: the control arm's settings are in force, the treatment's are not.
    assert by_arm["control"]["status"] == "ok"
    assert by_arm["treatment"]["status"] == "invalid"
    assert "arm treatment not applied: verify" in by_arm["treatment"]["error"]
    assert '"compression": "on"' in by_arm["treatment"]["error"]


def test_hung_restart_uses_the_profile_timeout_and_names_it(kv):
    hang = kv.root / "hang.sh"
    hang.write_text("#!/bin/bash\nexec sleep 600\n")
    hang.chmod(0o755)
    kv.edit("{{ workbench_dir }}/restart.sh", "{{ workbench_dir }}/hang.sh")
    kv.edit("options: {restart_timeout_s: 30}", "options: {restart_timeout_s: 1}")
    with pytest.raises(RestoreFailed) as exc:
        run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                       show_progress=False, build_report=False)
    msg = exc.value.message
    assert "holds the original config again" in msg and "timed out after 1 s (killed)" in msg
    assert (kv.root / "kv.conf").read_text().startswith("# kvcache settings (the production values)")


@pytest.mark.parametrize("key", ["python", "units_path", "arm", "run_start_iso", "wb", "compression"])
def test_context_key_colliding_with_a_builtin_or_variable_is_rejected(kv, key):
    kv.edit('context: {port: "', f'context: {{{key}: /usr/bin/python3, port: "')
    with pytest.raises(ConfigError) as exc:
        load_registry(kv.root)
    err = exc.value
    assert err.file.endswith("kv-load.yaml") and err.line is not None
    assert kv.experiment.read_text().splitlines()[err.line - 1].strip().startswith("context:")
    assert repr(key) in err.message


def test_bad_timeout_option_is_rejected_at_its_line(kv):
    kv.edit("options: {restart_timeout_s: 30}", "options: {restart_timeout_s: soon}")
    with pytest.raises(ConfigError) as exc:
        load_registry(kv.root)
    assert "restart_timeout_s" in exc.value.message and exc.value.line is not None


@pytest.mark.parametrize("options, key", [("{restart_timout_s: 30}", "restart_timout_s"),
                                          ("{restart_timeout_s: 30, dir: /tmp/sim}", "dir")])
def test_an_option_the_target_does_not_read_is_refused_at_its_line(kv, options, key):
    # A misspelt timeout was taken silently, and every restart then ran under the 300 s default;
    # `dir` is pdsim's folder, which a local target never reads.
    kv.edit("options: {restart_timeout_s: 30}", f"options: {options}")
    with pytest.raises(ConfigError) as exc:
        load_registry(kv.root)
    e = exc.value
    assert e.field == f"field profiles.local.options.{key}" and e.line is not None, e.message
    assert f"unknown option {key!r}" in e.message and "restart_timeout_s" in (e.hint or ""), (e.message, e.hint)


def test_metric_no_prediction_uses_fails_soft(kv, capfd):
    # p99_ms is declared and collected, but no prediction, guard or check reads it; the load prints no p99.
    kv.edit("  wall_s: {kind: continuous, description: wall time of the load}",
            "  wall_s: {kind: continuous, description: wall time of the load}\n  p99_ms: {kind: continuous}")
    kv.edit("      wall_s: {regex: 'wall=(?P<value>[0-9.]+)s'}\n    options: {restart_timeout_s: 30}",
            "      wall_s: {regex: 'wall=(?P<value>[0-9.]+)s'}\n      p99_ms: {regex: 'p99=(?P<value>[0-9.]+)ms'}\n"
            "    options: {restart_timeout_s: 30}")
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                             show_progress=True, build_report=False)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], [r.get("error") for r in summary["runs"]]
    assert summary["verdict"] == "falsified"
    err = " ".join(capfd.readouterr().err.split())
    assert "metric 'p99_ms' could not be extracted" in err and "recorded as missing" in err


def test_metric_a_prediction_uses_still_invalidates_the_run(kv):
    kv.edit("      wall_s: {regex: 'wall=(?P<value>[0-9.]+)s'}",
            "      wall_s: {regex: 'walltime=(?P<value>[0-9.]+)s'}")
    kv.edit("      - {metric: errors, equals: 0,", "      - {metric: wall_s, at_most: 1000,",
            kv.root / "hypotheses.yaml")
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                             show_progress=False, build_report=False)
    assert {r["status"] for r in summary["runs"]} == {"invalid"}


def test_reserved_names_cover_every_name_the_runner_sets(kv):
    from workbench.registry.experiment import BUILTIN_TEMPLATE_NAMES, RESERVED_TEMPLATE_NAMES
    from workbench.runner.prepare import preview_values, resolve

    reg = load_registry(kv.root)
    p = resolve(reg, "compression-stale", profile=None, replicates=None, overrides={}, sequential=False, aa=False,
                seed=None)
    values = preview_values(p, "control", dict(p.profile.context))
    set_by_runner = set(values) - set(p.experiment.variables) - set(p.profile.context)
    assert set_by_runner <= BUILTIN_TEMPLATE_NAMES, set_by_runner - BUILTIN_TEMPLATE_NAMES
    assert {"python", "wb", "units_path", "arm", "replicate", "run_start_iso"} <= RESERVED_TEMPLATE_NAMES
    assert "sim_dir" not in RESERVED_TEMPLATE_NAMES  # read from the context, never replaced


def test_restart_check_compares_the_listening_processes():
    from workbench.runner.manipulation import restart_problem

    assert "pid 41" in restart_problem({80: frozenset({41})}, {80: frozenset({41})})
    assert restart_problem({80: frozenset({41})}, {80: frozenset({42})}) is None
    assert restart_problem({80: frozenset()}, {80: frozenset({42})}) is None  # it was down before
    assert restart_problem({80: frozenset({1, 41})}, {80: frozenset({1, 42})}) is None  # socket activation
    assert restart_problem(None, {80: frozenset({41})}) is None  # could not be read: no claim


def test_units_with_an_undeclared_outcome_are_named_in_a_warning(kv, capfd):
    # The workload adds two units whose outcome the experiment does not declare: no metric counts them.
    kv.edit("--tag {{ arm }}-r{{ replicate }} --out {{ units_path }}",
            "--tag {{ arm }}-r{{ replicate }} --out {{ units_path }}"
            " && printf '%s\\n' '{\"outcome\": \"timeout\"}' '{\"outcome\": \"timeout\"}' >> {{ units_path }}")
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1,
                             show_progress=True, build_report=False)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], [r.get("error") for r in summary["runs"]]
    err = " ".join(capfd.readouterr().err.split())
    assert err.count("unit.outcomes does not declare: 'timeout' (2 units)") == 2, err
    assert "2 of 52 units have a" in err, err
    assert "declared: ok, stale, error" in err
