"""`wb sim status` exits by the deployment's state, so a script can tell healthy from wedged from down; `wb sim
bench` on a wedged deployment says what failed and how to recover."""

from __future__ import annotations

from pdsim_kit import start_wedged, write_serve
from workbench.sim import control


def test_status_exit_code_tells_healthy_wedged_and_down_and_bench_on_the_wedge_names_the_restart(sim_dir, cli):
    """It printed `pdsim: wedged ... (bootstrap thread is dead; /health still 200)` and exited 0, as for a
    healthy deployment and a stopped one: now 0 healthy, 1 wedged (or unhealthy, degraded), 3 down; --json too.

    After `wb sim repro` wedged pdsim, `wb sim bench` said `Error: bench request failed: ok 503 {'error': 'no KV
    for room 277 after 660s', ...}`: "ok 503" read as a contradiction and nothing said that a restart recovers.
    (One wedged deployment serves both: bench's request changes no state status reads.)"""
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert (code, out.split()[:2]) == (3, ["pdsim:", "down"]), out + err
    control.up(sim_dir, config=write_serve(sim_dir))
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert code == 0 and out.startswith("pdsim: healthy"), out + err
    control.down(sim_dir)
    assert start_wedged(sim_dir).state == "wedged"
    for args in ((), ("--json",)):
        code, out, err = cli("sim", "status", "--dir", str(sim_dir), *args)
        assert code == 1 and "wedged" in out and "Traceback" not in err, out + err
    code, out, err = cli("sim", "bench", "--dir", str(sim_dir), "-c", "1", "--tokens", "8")
    assert code == 1 and "Traceback" not in err, err
    first, hint = err.splitlines()[0], err.split("Hint:", 1)[-1]
    assert first.startswith("Error: bench request bench0 failed: the decode server answered HTTP 503: no KV for "
                            "room "), err
    assert "ok 503" not in err and "{" not in first, err
    assert "pdsim is wedged (prefill: bootstrap thread is dead" in hint, err
    assert f"wb sim restart --dir {sim_dir}" in hint, err
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert code == 1 and "wedged" in out, out + err                     # still wedged after the bench
    control.down(sim_dir)
    code, out, err = cli("sim", "status", "--dir", str(sim_dir), "--json")
    assert code == 3 and '"down"' in out, out + err


def test_status_keeps_its_exit_code_when_the_reader_goes_away(tmp_path):
    """`wb sim status | head -1` (under `set -o pipefail`) exited 0 for a stopped or wedged pdsim: the closed pipe
    is no failure, so wb ended 0, and a script read 'healthy'. The state's code now stands (3 here: down)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)}
    for args in ((), ("--json",)):
        read, write = os.pipe()
        os.close(read)  # the reader has gone before wb writes a line
        try:
            r = subprocess.run([sys.executable, "-m", "workbench.cli.main", "sim", "status", "--dir",
                                str(tmp_path / "sim"), *args], stdout=write, stderr=subprocess.PIPE, text=True,
                               env=env, timeout=60)
        finally:
            os.close(write)
        assert r.returncode == 3 and "Traceback" not in r.stderr, (args, r.returncode, r.stderr)
