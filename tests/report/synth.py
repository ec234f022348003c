"""Stores filled with runs the way the runner records them (executions, runs, units, metrics, artifacts,
probe counts, verdicts, reviews), for the report tests and benchmarks/report_bench.py."""

from __future__ import annotations

import hashlib
import random
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from workbench.store import records

# Screenshots the browser tests save for people to look at (git-ignored).
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

REPO = Path(__file__).resolve().parents[2]
XSS_LINE = "<script>alert(1)</script>"
# A DeepSeek tool call as the decode log quotes it: "｜" is U+FF5C (FULLWIDTH VERTICAL LINE).
DSML_CALL = '<｜DSML｜invoke name="search">'


def copy_workbench(dest: Path) -> Path:
    """A workbench folder with the shipped hypotheses.yaml and experiments/."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "hypotheses.yaml", dest / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", dest / "experiments", dirs_exist_ok=True)
    return dest


VARS = ["index_k_dtype", "hicache", "nixl_abort_fix", "geometry_fix", "indexer_host_pool_fix", "causal_model"]
VALUES = {"index_k_dtype": ("fp8", "bf16"), "hicache": ("off", "on"), "nixl_abort_fix": ("off", "on"),
          "geometry_fix": ("off", "on"), "indexer_host_pool_fix": ("off", "on"), "causal_model": ("seed", "wedge")}


def write_many_hypotheses(dest: Path, n: int, seed: int = 1) -> Path:
    """A workbench folder with `n` A/B hypotheses on agent-repro forming a tree (for scale tests)."""
    import yaml

    rng = random.Random(seed)
    copy_workbench(dest)
    hyps = []
    for i in range(n):
        var = VARS[i % len(VARS)]
        hold = {v: VALUES[v][1] for v in VARS if v != var and rng.random() < 0.5}
        parent = None if i == 0 else f"h{rng.randrange(max(1, i - 8), i):03d}" if i > 1 else "h000"
        h: dict[str, Any] = {"id": f"h{i:03d}", "claim": f"Hypothesis {i}: {var} changes corruption under load.",
                             "experiment": "agent-repro", "isolates": var,
                             "arms": {"control": {var: VALUES[var][0]}, "treatment": {var: VALUES[var][1]}},
                             "hold": hold,
                             "predicts": [{"metric": "corruption_rate", "arm": "treatment", "at_most": 0.02}],
                             "requires": [{"metric": "aborts", "arm": "treatment", "equals": 0}],
                             "assumptions": ["The repro parameters are the seed's."]}
        if parent:
            h["parent"] = parent
        hyps.append(h)
    (dest / "hypotheses.yaml").write_text(yaml.safe_dump({"format": 1, "hypotheses": hyps}, sort_keys=False))
    return dest


def _config(assign: dict[str, str], arm: str) -> str:
    lines = [f"# pdsim serve script, rendered by wb for arm {arm}"]
    lines += [f"{k}={v}" for k, v in sorted(assign.items())]
    return "\n".join(lines) + "\n"


def add_ab_execution(session: Any, registry: Any, hid: str, *, art_dir: Path, replicates: int = 2,
                     sessions: int = 80, leak_rate: dict[str, float] | None = None,
                     aborts: dict[str, int] | None = None, errors: dict[str, int] | None = None,
                     verdict: str | None = None, reasoning: str = "", log_lines: list[str] | None = None,
                     big_log_bytes: int = 0, seed: int = 0, when: datetime | None = None,
                     mode: str = "fixed") -> dict[str, Any]:
    """One execution of an A/B hypothesis: ABBA-ordered runs with per-session units and metrics; `mode` "aa"
    runs the control twice (arms control and control_aa), as `--aa` does."""
    rng = random.Random(seed)
    h = registry.hypothesis(hid)
    when = when or datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    arms = ["control", "control_aa"] if mode == "aa" else list(h.arms)
    plan = [arms[(i // 1) % 2] if (i // 2) % 2 == 0 else arms[1 - i % 2] for i in range(replicates * len(arms))]
    ex = records.create_execution(session, hypothesis_id=hid, experiment_id=h.experiment, experiment_version=1,
                                  profile="sim", target="sim", plan={"order": plan}, wb_version="0.1.0", mode=mode)
    leak_rate = leak_rate or {a: 0.15 for a in arms}
    run_ids = []
    for order, arm in enumerate(plan):
        assign = registry.arm_assignment(h, "control" if arm == "control_aa" else arm)
        start = when + timedelta(minutes=order)
        cfg = _config(assign, arm)
        run = records.create_run(session, experiment_id=h.experiment, variables=assign, execution_id=ex.id,
                                 hypothesis_id=hid, experiment_version=1, arm=arm, replicate=order // len(arms),
                                 order_index=order, block=order // 2, host="127.0.0.1", target="sim", status="ok",
                                 started_at=start, ended_at=start + timedelta(seconds=30), rendered_config=cfg,
                                 fingerprint={"wb_version": "0.1.0", "python": "3.11.9", "git_commit": "abc1234",
                                              "API_TOKEN": "s3cret"})
        units = []
        n_err = (errors or {}).get(arm, 0)
        for i in range(sessions):
            if i < n_err:
                outcome = "error"
            else:
                outcome = "leak" if rng.random() < leak_rate.get(arm, 0.0) else "done"
            units.append({"outcome": outcome, "rounds": 4, "duration_s": 1.0 + rng.random()})
        records.add_units(session, run_id=run.id, units=units)
        leak = sum(u["outcome"] == "leak" for u in units)
        ab = (aborts or {}).get(arm, 0)
        records.add_metrics(session, run_id=run.id, source="units",
                            metrics={"sessions": sessions, "leak": leak, "error": n_err,
                                     "done": sum(u["outcome"] == "done" for u in units),
                                     "corruption_rate": leak / sessions, "aborts": ab, "waiting_for_input": ab,
                                     "timeouts": ab, "wall_s": 20 + rng.random() * 5})
        d = art_dir / f"run{run.id}"
        d.mkdir(parents=True, exist_ok=True)
        log = d / "decode.log"
        body = "\n".join([f"[decode] run {run.id} arm {arm} start"] + list(log_lines or []) +
                         [f"[decode] served {sessions} sessions"]) + "\n"
        if big_log_bytes:
            filler = "[decode] WaitingForInput room=%d still waiting\n"
            i = 0
            parts = [body]
            size = len(body)
            while size < big_log_bytes:
                line = filler % i
                parts.append(line)
                size += len(line)
                i += 1
            parts.append("[decode] LAST LINE OF THE LOG\n")
            body = "".join(parts)
        log.write_text(body, encoding="utf-8")
        records.add_artifact(session, run_id=run.id, name="decode_log", path=str(log),
                             sha256=hashlib.sha256(body.encode()).hexdigest(), size_bytes=len(body.encode()))
        run_ids.append(run.id)
    records.update_execution(session, execution_id=ex.id, status="done", ended_at=when + timedelta(hours=1))
    v = None
    if verdict:
        v = records.add_verdict(session, hypothesis_id=hid, verdict=verdict, reasoning=reasoning,
                                execution_id=ex.id, hypothesis_sha256="f" * 64,
                                checks=[{"name": "guard aborts == 0 (treatment)", "passed": True,
                                         "detail": "0 aborts in 2 runs"},
                                        {"name": "one-variable diff", "passed": True,
                                         "detail": "arms differ only in " + str(h.isolates)},
                                        {"name": "attrition", "passed": False,
                                         "detail": "control lost 40/160 units to errors"},
                                        {"name": "drift", "passed": True, "detail": "replicates agree"}])
    return {"execution_id": ex.id, "run_ids": run_ids, "verdict_id": v.id if v else None}


def add_reachability_execution(session: Any, registry: Any, hid: str, *, runs: int = 2) -> list[int]:
    h = registry.hypothesis(hid)
    ex = records.create_execution(session, hypothesis_id=hid, experiment_id=h.experiment, experiment_version=1,
                                  profile="sim", target="sim")
    ids = []
    for i in range(runs):
        run = records.create_run(session, experiment_id=h.experiment, variables=dict(h.hold), execution_id=ex.id,
                                 hypothesis_id=hid, arm="probe", replicate=i, status="ok", target="sim",
                                 rendered_config=_config(dict(h.hold), "probe"))
        records.add_probe_counts(session, run_id=run.id, counts=[
            {"process": "prefill", "pid": 1000 + i, "target": "workbench.sim.hicache:DSAIndexerPoolHost", "calls": 0},
            {"process": "decode", "pid": 2000 + i, "target": "workbench.sim.hicache:DSAIndexerPoolHost", "calls": 0},
            {"process": "decode", "pid": 2000 + i, "target": "workbench.sim.hicache:DeepSeekV4PagedHostPool",
             "calls": 3}])
        ids.append(run.id)
    records.update_execution(session, execution_id=ex.id, status="done")
    records.add_verdict(session, hypothesis_id=hid, verdict="falsified", execution_id=ex.id,
                        reasoning="DSAIndexerPoolHost was constructed 0 times while the positive control "
                                  "DeepSeekV4PagedHostPool was constructed 6 times.",
                        checks=[{"name": "positive control reached", "passed": True, "detail": "6 calls"}])
    return ids


def seed_store(session: Any, registry: Any, art_dir: Path) -> dict[str, Any]:
    """The seed lineage as a pdsim run would leave it: wedge-confound falsified, dead code falsified."""
    out: dict[str, Any] = {}
    out["wedge"] = add_ab_execution(
        session, registry, "wedge-confound", art_dir=art_dir, leak_rate={"control": 0.15, "treatment": 0.18},
        aborts={"control": 70, "treatment": 0}, errors={"control": 40}, verdict="falsified",
        reasoning="Treatment corruption 14/80 = 17.5% [10.7%, 27.3%] lies entirely above the predicted "
                  "region <= 0.02 with zero aborts; the wedge does not explain the corruption.",
        log_lines=[f"[decode] tool call payload: {XSS_LINE}", "[decode] WaitingForInput room=17"],
        big_log_bytes=0, seed=3)
    out["big"] = add_ab_execution(session, registry, "hicache-bf16-race", art_dir=art_dir,
                                  leak_rate={"control": 0.0, "treatment": 0.15}, big_log_bytes=200_000, seed=5)
    out["probe"] = add_reachability_execution(session, registry, "dead-code-dsaindexerpoolhost")
    records.add_review(session, hypothesis_id="wedge-confound", author="kim", decision="approve",
                       body=f"Agree: the wedge is not it. {XSS_LINE}", verdict_id=out["wedge"]["verdict_id"])
    return out
