"""The probe on real pdsim servers started by `wb sim up` with the probe environment, and the verdicts it gives."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.probes import probe_environment, read_counts
from workbench.analysis.reachability import judge_reachability
from workbench.registry import load_registry
from workbench.sim.control import free_port
from workbench.store import open_store, records

HERE = Path(__file__).resolve().parent
HC = "workbench.sim.hicache"
DEAD, LIVE, MATCH, TYPO = f"{HC}:DSAIndexerPoolHost", f"{HC}:DeepSeekV4PagedHostPool", f"{HC}:HiCache.match", \
    f"{HC}:DSAIndexerPoolHostt"
TARGETS = [DEAD, LIVE, MATCH, TYPO]
WB = [sys.executable, "-m", "workbench.cli.main"]


def wb(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    r = subprocess.run(WB + list(args), env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"wb {shlex.join(args)} exited {r.returncode}:\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}"
    return r.stdout


def probed_repro(tmp_path: Path, hicache: str) -> list[dict]:
    """Start pdsim with the probe, run a small repro, stop it (SIGTERM flushes), return the counts."""
    sim_dir, out = tmp_path / f"sim-{hicache}", tmp_path / f"probe-{hicache}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WB_PROBE")}
    env.update(probe_environment(TARGETS, str(out), interval_s=0.5))
    plain = {k: v for k, v in os.environ.items() if not k.startswith("WB_PROBE")}
    prefill = free_port()
    wb("sim", "up", "--dir", str(sim_dir), "--set", f"prefill_port={prefill}", "--set",
       f"decode_port={free_port(avoid=(prefill,))}", "--set", f"hicache={hicache}", env=env)
    try:
        wb("sim", "repro", "--dir", str(sim_dir), "--sessions", "8", "--rounds", "2", "--ctx", "300",
           "--max-tokens", "2500", "--timeout", "200", "--tag", f"probe-{hicache}", env=plain)
    finally:
        wb("sim", "down", "--dir", str(sim_dir), env=plain)
    return read_counts(out)


def store_run(tmp_path: Path, counts: list[dict]):
    with open_store(str(tmp_path / "wb.duckdb")) as store:
        with store.session() as s:
            run = records.create_run(s, experiment_id="agent-repro", variables={}, status="ok", arm="probe")
            records.add_probe_counts(s, run_id=run.id, counts=counts)
            rid = run.id
        return store.run(rid)


def servers(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """{process label: {target: row}} for the processes that imported the hicache module."""
    out: dict[str, dict[str, dict]] = {}
    for r in rows:
        out.setdefault(r["process"], {})[r["target"]] = r
    return {p: t for p, t in out.items() if any(x["state"] == "instrumented" for x in t.values())}


def test_hicache_on_dead_class_never_built_live_pool_built_typo_unresolved(tmp_path: Path):
    rows = probed_repro(tmp_path, "on")
    procs = servers(rows)
    assert procs, f"no pdsim process imported {HC}: {sorted({r['process'] for r in rows})}"
    total = {t: sum(r["calls"] for r in rows if r["target"] == t) for t in TARGETS}
    assert total[DEAD] == 0 and total[LIVE] >= 1 and total[MATCH] >= 8, total
    assert all(r["final"] for r in rows if r["state"] == "instrumented"), \
        "servers stopped by SIGTERM wrote final counts"
    typo = [r for r in rows if r["target"] == TYPO]
    assert typo and not any(r["resolved"] for r in typo)
    assert any(r["state"] == "no_attribute" for r in typo)
    dead = [r for r in rows if r["target"] == DEAD and r["state"] == "instrumented"]
    assert dead and all(r["resolved"] and r["calls"] == 0 for r in dead)

    reg = load_registry(HERE / "wbroot")
    run = store_run(tmp_path, rows)
    r = judge_reachability(reg.hypothesis("dead-code-dsaindexerpoolhost"), [run])
    assert r.verdict == "falsified", r.reasoning
    assert r.counts[DEAD]["total"] == 0 and r.counts[LIVE]["total"] >= 1
    assert judge_reachability(reg.hypothesis("live-hostpool-control"), [run]).verdict == "supported"
    bad = judge_reachability(reg.hypothesis("bad-target"), [run])
    assert bad.verdict == "invalid" and TYPO in bad.reasoning


def test_hicache_off_control_never_hit_is_inconclusive(tmp_path: Path):
    rows = probed_repro(tmp_path, "off")
    assert rows, "the probed pdsim processes wrote no counts"
    total = {t: sum(r["calls"] for r in rows if r["target"] == t) for t in TARGETS}
    assert total[LIVE] == 0 and total[DEAD] == 0 and total[MATCH] == 0, total
    reg = load_registry(HERE / "wbroot")
    r = judge_reachability(reg.hypothesis("dead-code-hicache-off"), [store_run(tmp_path, rows)])
    assert r.verdict == "inconclusive", r.reasoning
    assert "did not exercise the surrounding path" in r.reasoning
