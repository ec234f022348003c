"""The probe in real Python processes started with the probe environment: counts, exits, signals, forks, chaining."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probe_kit import by_target, finish, other_pythons, read_line
from workbench.errors import BadInput
from workbench.probes import PROBE_DIR, probe_environment, probe_files, read_counts, systemd_dropin

M = "probepkg.mod"
ALL = [f"{M}:add", f"{M}:Pool", f"{M}:Pool.grow", f"{M}:Pool.kind", f"{M}:Pool.make", f"{M}:Plain",
       f"{M}:never", f"{M}:Missing", "probepkg.nosuchmod:thing", "probepkg.latemod:late"]

EXERCISE = """
    import probepkg.mod as m
    print(m.add(2, 3), [m.add(i, i) for i in range(2)])
    p = m.Pool(2)
    print(p.grow(3), p.grow(1), m.Pool.kind(), m.Pool.make().size, m.SubPool(7).size)
    m.Plain(); m.Plain()
    try:
        m.Plain(1)
    except TypeError as exc:
        print("TypeError", exc)
"""


def _assert_exercise_counts(rows: list[dict], mechanism: str | None = None) -> None:
    t = by_target(rows)
    expected = {"add": 3, "Pool": 3, "Pool.grow": 2, "Pool.kind": 1, "Pool.make": 1, "Plain": 3, "never": 0}
    for name, calls in expected.items():
        row = t[f"{M}:{name}"]
        assert (row["calls"], row["resolved"], row["state"]) == (calls, True, "instrumented"), row
        if mechanism and name not in ("Plain",):  # a class without its own __init__ is always wrapped
            assert row["mechanism"] == mechanism, row
    missing = t[f"{M}:Missing"]
    assert (missing["resolved"], missing["state"], missing["calls"]) == (False, "no_attribute", 0)
    assert "no attribute 'Missing'" in missing["detail"]
    nomod = t["probepkg.nosuchmod:thing"]
    assert (nomod["resolved"], nomod["state"]) == (False, "not_imported")
    assert "no module named 'probepkg.nosuchmod'" in nomod["detail"]
    late = t["probepkg.latemod:late"]  # exists on disk, never imported: resolved, 0 calls
    assert (late["resolved"], late["state"], late["calls"]) == (True, "not_imported", 0)


def test_counts_functions_methods_and_constructors_without_changing_behaviour(probed):
    p, out = probed(EXERCISE, ALL, interval=60)
    stdout, stderr = finish(p)
    # Behaviour is the program's own: return values and the TypeError of object.__init__.
    assert stdout.splitlines() == ["5 [0, 2]", "5 6 pool 1 7", "TypeError Plain() takes no arguments"]
    assert "wb-probe" not in stderr
    rows = read_counts(out)
    assert {r["pid"] for r in rows} == {p.pid}
    assert all(r["final"] for r in rows), "the exit write must be the last one"
    assert all("-c" in r["process"] for r in rows)
    _assert_exercise_counts(rows, "wrapper" if sys.version_info < (3, 12) else "sys.monitoring")


@pytest.mark.parametrize("python", other_pythons() or [pytest.param(None, marks=pytest.mark.skip("no 3.12+ here"))])
def test_newer_python_counts_with_sys_monitoring(probed, python):
    p, out = probed(EXERCISE, ALL, python=python, interval=60)
    finish(p)
    _assert_exercise_counts(read_counts(out), "sys.monitoring")


def test_wrapper_mechanism_can_be_forced(probed):
    p, out = probed(EXERCISE, ALL, interval=60, extra_env={"WB_PROBE_MECHANISM": "wrapper"})
    finish(p)
    _assert_exercise_counts(read_counts(out), "wrapper")


def test_module_imported_late_is_counted_and_flushed_periodically(probed):
    code = """
        import sys, time
        time.sleep(0.4)                    # the probe has written 'not imported' by now
        from probepkg.latemod import late
        for _ in range(4):
            late()
        print("ready", flush=True)
        sys.stdin.readline()               # stay alive until the test has read the periodic flush
        late()
    """
    p, out = probed(code, ["probepkg.latemod:late"], interval=0.2)
    assert read_line(p) == "ready"
    rows = read_counts(out, since=time.time(), timeout_s=5)
    assert len(rows) == 1
    row = rows[0]
    assert (row["calls"], row["state"], row["final"], row["stale"]) == (4, "instrumented", False, False)
    p.kill()  # SIGKILL: nothing more is written, the last periodic count stays
    p.wait(timeout=30)
    assert read_counts(out)[0]["calls"] == 4


def test_a_flush_taken_before_calls_is_not_read_as_after_them(probed):
    """A periodic flush that read the counts before the import and the calls, but was slow to finish (a loaded
    machine), was stamped with the time it ended: `read_counts(since=...)` took it for one that included the
    calls and gave 0. A flush is stamped with the time it starts reading."""
    code = """
        import sys, threading, _wb_probe
        probe = _wb_probe.current()
        [target] = probe.targets
        reading, go_on = threading.Event(), threading.Event()
        real = _wb_probe._look_on_disk
        def slow(module, qual):          # the flush thread, mid-snapshot, waits for the test
            reading.set()
            go_on.wait(60)
            return real(module, qual)
        _wb_probe._look_on_disk = slow
        for _ in range(1200):            # until a flush looks on disk again (one in flight may set it back)
            target.resolved = None
            if reading.wait(0.05):
                break
        from probepkg.latemod import late
        for _ in range(4):
            late()
        print("ready", flush=True)
        sys.stdin.readline()             # the test has taken its `since`
        go_on.set()
        sys.stdin.readline()
    """
    p, out = probed(code, ["probepkg.latemod:late"], interval=0.2)
    assert read_line(p) == "ready"
    since = time.time()
    p.stdin.write("\n")
    p.stdin.flush()
    [row] = read_counts(out, since=since, timeout_s=30)
    assert (row["calls"], row["state"], row["stale"]) == (4, "instrumented", False), row


def _start_waiting(probed, handler_code: str = ""):
    code = handler_code + """
        import time
        import probepkg.mod as m
        for i in range(7):
            m.add(i, 1)
        print("ready", flush=True)
        time.sleep(60)
    """
    p, out = probed(code, [f"{M}:add"], interval=60)  # no periodic write can happen during the test
    assert read_line(p) == "ready"
    return p, out


def test_sigterm_with_default_action_writes_final_counts_and_still_kills(probed):
    p, out = _start_waiting(probed)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == -signal.SIGTERM
    (row,) = read_counts(out)
    assert (row["calls"], row["final"]) == (7, True)


def test_sigterm_handler_installed_by_the_application_still_flushes_first(probed):
    handler = """
        import os, signal
        def on_term(signum, frame):
            print("graceful", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)   # dies without atexit: only the probe's flush saved the counts
        signal.signal(signal.SIGTERM, on_term)
        print("getsignal is the app's handler:", signal.getsignal(signal.SIGTERM) is on_term, flush=True)
    """
    code = handler + """
        import time
        import probepkg.mod as m
        for i in range(7):
            m.add(i, 1)
        print("ready", flush=True)
        time.sleep(60)
    """
    p, out = probed(code, [f"{M}:add"], interval=60)
    assert read_line(p) == "getsignal is the app's handler: True"
    assert read_line(p) == "ready"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == -signal.SIGKILL
    assert read_line(p) == "graceful"
    (row,) = read_counts(out)
    assert (row["calls"], row["final"]) == (7, False)


def test_os_exit_and_forked_children_write_their_own_counts(probed):
    code = """
        import os
        import probepkg.mod as m
        m.add(1, 1)
        child = os.fork()
        if child == 0:
            for _ in range(5):
                m.add(0, 0)
            os._exit(0)                    # skips atexit, as multiprocessing workers do
        os.waitpid(child, 0)
        m.add(2, 2)
        print(child)
        os._exit(3)
    """
    p, out = probed(code, [f"{M}:add"], interval=60)
    stdout, _ = p.communicate(timeout=60)
    assert p.returncode == 3
    child = int(stdout.strip())
    rows = {r["pid"]: r for r in read_counts(out)}
    assert set(rows) == {p.pid, child}
    assert (rows[p.pid]["calls"], rows[p.pid]["final"]) == (2, True)
    assert (rows[child]["calls"], rows[child]["final"]) == (5, True)


def test_every_python_process_the_deployment_spawns_is_probed(probed):
    code = """
        import subprocess, sys
        import probepkg.mod as m
        m.Pool(1)
        out = subprocess.run([sys.executable, "-c", "import probepkg.mod as m; m.Pool(1); m.Pool(2); print('child')"],
                             capture_output=True, text=True, check=True).stdout
        print(out.strip())
    """
    p, out = probed(code, [f"{M}:Pool"], interval=60)
    stdout, _ = finish(p)
    assert stdout.strip() == "child"
    rows = read_counts(out)
    assert len(rows) == 2
    calls = sorted(r["calls"] for r in rows)
    assert calls == [1, 2]
    child_row = next(r for r in rows if r["pid"] != p.pid)
    assert "print('child')" in child_row["process"]


def test_existing_sitecustomize_is_chained(probed, tmp_path: Path):
    site = tmp_path / "deploy_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nDEPLOYMENT_SITE = os.environ.get('MARK', 'ran')\n")
    code = """
        import sys
        import probepkg.mod as m
        m.add(1, 2)
        print(sys.modules["_wb_chained_sitecustomize"].DEPLOYMENT_SITE)
    """
    p, out = probed(code, [f"{M}:add"], extra_path=[str(site)], extra_env={"MARK": "chained"})
    stdout, _ = finish(p)
    assert stdout.strip() == "chained"
    assert read_counts(out)[0]["calls"] == 1


def test_without_targets_the_probe_does_nothing_but_still_chains(tmp_path: Path):
    site = tmp_path / "deploy_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("CHAINED = True\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WB_PROBE")}
    env["PYTHONPATH"] = os.pathsep.join([str(PROBE_DIR), str(site)])
    r = subprocess.run([sys.executable, "-c", "import sys; print('_wb_probe' in sys.modules, "
                        "sys.modules['_wb_chained_sitecustomize'].CHAINED)"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False True", r.stderr


def test_bad_targets_are_refused_before_anything_runs(tmp_path: Path):
    for bad in ["nocolon", "pkg.mod:", ":Thing", "pkg mod:Thing", "pkg.mod:Thing.", "pkg.mod:Th-ing"]:
        with pytest.raises(BadInput, match="package.module:Qualified.name"):
            probe_environment([bad], str(tmp_path))
    with pytest.raises(BadInput):
        probe_environment([], str(tmp_path))
    assert read_counts(tmp_path / "absent") == []
    (tmp_path / "probe-1-ab.json").write_text("{not json")
    with pytest.raises(BadInput, match="unreadable"):
        read_counts(tmp_path)


def test_environment_and_upload_files(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/existing/lib")
    env = probe_environment(["a.b:C"], str(tmp_path), interval_s=0.5)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(PROBE_DIR), "/existing/lib"]
    assert env["WB_PROBE_TARGETS"] == "a.b:C" and env["WB_PROBE_OUT"] == str(tmp_path)
    assert env["WB_PROBE_INTERVAL"] == "0.5"
    remote = probe_environment(["a.b:C", "a.b:f"], "/var/tmp/wb/run7", probe_dir="/opt/wb-probe")
    assert remote["PYTHONPATH"] == "/opt/wb-probe" and remote["WB_PROBE_TARGETS"] == "a.b:C,a.b:f"
    files = probe_files()
    assert set(files) == {"sitecustomize.py", "_wb_probe.py", "wb-probe-systemd.sh"}
    assert b"import wb" not in files["_wb_probe.py"] and b"workbench" not in files["_wb_probe.py"]
    dropin = systemd_dropin({"WB_PROBE_TARGETS": "a.b:C", "WB_PROBE_OUT": "/var/tmp/wb 50%", "X": 'say "hi"'})
    assert dropin.splitlines() == ["[Service]", 'Environment="WB_PROBE_TARGETS=a.b:C"',
                                   'Environment="WB_PROBE_OUT=/var/tmp/wb 50%%"', 'Environment="X=say \\"hi\\""']


def test_uploaded_copy_works_from_another_directory(target_pkg: Path, tmp_path: Path):
    remote = tmp_path / "remote_probe"
    remote.mkdir()
    for rel, content in probe_files().items():
        (remote / rel).write_bytes(content)
    out = tmp_path / "remote_out"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(probe_environment([f"{M}:add"], str(out), probe_dir=str(remote)))
    env["PYTHONPATH"] = os.pathsep.join([str(remote), str(tmp_path / "src")])  # src: the target_pkg fixture
    r = subprocess.run([sys.executable, "-c", "import probepkg.mod as m; m.add(1, 1); import _wb_probe; "
                        "print(_wb_probe.__file__)"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(remote / "_wb_probe.py")
    assert read_counts(out)[0]["calls"] == 1


def test_count_file_is_versioned_json(probed):
    p, out = probed("import probepkg.mod as m; m.add(1, 1)", [f"{M}:add"])
    finish(p)
    (path,) = list(out.glob("probe-*.json"))
    doc = json.loads(path.read_text())
    assert doc["format"] == 1 and doc["pid"] == p.pid and doc["final"] is True
    assert doc["targets"][f"{M}:add"]["calls"] == 1
    assert not list(out.glob("*.tmp")), "atomic writes leave no temporary files"


def test_systemd_script_writes_and_removes_the_units_drop_in(tmp_path: Path):
    script = tmp_path / "wb-probe-systemd.sh"
    script.write_bytes(probe_files()["wb-probe-systemd.sh"])
    calls = tmp_path / "systemctl.log"
    fake = tmp_path / "systemctl"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    fake.chmod(0o755)
    units = tmp_path / "units"
    env = {"PATH": os.environ["PATH"], "WB_PROBE_SYSTEMD_DIR": str(units), "WB_PROBE_SYSTEMCTL": str(fake)}
    probe = probe_environment(["sglang.srt.mem_cache:HostPool"], str(tmp_path / "out 100%"),
                              probe_dir="/var/lib/wb/probe-lib", base_pythonpath="/opt/sglang/python")
    subprocess.run(["sh", str(script), "sglang-dsv4-prefill", "sglang-dsv4-decode.service"], env=env | probe,
                   check=True, timeout=60)
    for unit in ("sglang-dsv4-prefill.service", "sglang-dsv4-decode.service"):
        text = (units / f"{unit}.d" / "wb-probe.conf").read_text()
        assert text.splitlines()[1:] == systemd_dropin(probe).splitlines(), text
    assert (tmp_path / "out 100%").is_dir()
    subprocess.run(["sh", str(script), "sglang-dsv4-prefill"], env=env, check=True, timeout=60)
    assert not (units / "sglang-dsv4-prefill.service.d" / "wb-probe.conf").exists()
    assert calls.read_text().splitlines() == ["daemon-reload", "daemon-reload"]


def test_locate_target_checks_without_importing(target_pkg: Path, monkeypatch):
    import importlib

    from workbench.probes import locate_target

    monkeypatch.syspath_prepend(str(target_pkg))
    importlib.invalidate_caches()
    assert locate_target(f"{M}:Pool.grow")[0] is True
    assert "probepkg.mod" not in sys.modules, "locating must not import the module"
    ok, why = locate_target(f"{M}:Pool.shrink")
    assert not ok and "defines no 'Pool.shrink'" in why
    ok, why = locate_target("probepkg.nosuchmod:thing")
    assert not ok and "no module named 'probepkg.nosuchmod'" in why
    assert locate_target("workbench.sim.hicache:DSAIndexerPoolHost")[0] is True
    assert locate_target("workbench.errors:WbError")[0] is True  # already imported: looked up directly
    assert locate_target("workbench.errors:NoSuchError")[0] is False


def test_a_look_on_disk_never_overwrites_an_import_that_finished_meanwhile(tmp_path, monkeypatch):
    # The flusher looked on disk for a target whose module was not imported yet; the main thread's
    # import finished during the look and recorded "no attribute"; the look then overwrote that detail
    # ("module never imported here"), so the report named the wrong cause (seen as a flaky test).
    import types

    from workbench.probes.inject import _wb_probe as wp

    probe = wp._Probe([("t", "late_mod_xyz", "Missing")], str(tmp_path), 60, None)
    module = types.ModuleType("late_mod_xyz")

    def look_while_the_import_lands(mod: str, qual: str) -> tuple[bool, str]:
        probe.module_loaded("late_mod_xyz", module)
        return True, "found on disk; module never imported here"

    monkeypatch.setattr(wp, "_look_on_disk", look_while_the_import_lands)
    row = probe.snapshot(final=False)["targets"]["t"]
    assert (row["state"], row["detail"]) == (wp.NO_ATTRIBUTE, "module late_mod_xyz has no attribute 'Missing'")
    assert row["resolved"] is False
