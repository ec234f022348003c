"""Writers of runner-shaped runs for the analysis tests (what the runner records per run)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

KVCACHE = Path(__file__).resolve().parents[2] / "examples" / "kvcache"

OUTCOMES = ("done", "leak", "error", "maxrounds", "no_tool")


def add_run(store: Any, *, execution_id: int | None, arm: str | None, variables: dict[str, str],
            outcomes: dict[str, int] | None, replicate: int = 1, status: str = "ok",
            extra: dict[str, float] | None = None,
            version: int | None = 1, fingerprint: dict[str, Any] | None = None, config: str | None = None,
            store_counts: bool = True, hypothesis_id: str = "wedge-confound",
            reasons: dict[str, list[str]] | None = None) -> int:
    """One run as the runner records it: units, the counts derived from them, and collected metrics. The units of
    an outcome in `reasons` carry its messages in their `error` field, in turn."""
    from workbench.store import records

    with store.session() as session:
        return _add_run(session, execution_id=execution_id, arm=arm, variables=variables, outcomes=outcomes,
                        replicate=replicate, status=status, extra=extra, version=version, fingerprint=fingerprint,
                        config=config, store_counts=store_counts, hypothesis_id=hypothesis_id,
                        reasons=reasons or {})


def _add_run(session: Any, *, execution_id, arm, variables, outcomes, replicate, status, extra, version, fingerprint,
             config, store_counts, hypothesis_id, reasons) -> int:
    from workbench.store import records

    if config is None:
        config = f"# pdsim serve script, rendered by wb for arm {arm}\n" + "".join(
            f"{k}={v}\n" for k, v in sorted(variables.items()))
    run = records.create_run(session, experiment_id="agent-repro", experiment_version=version, variables=variables,
                             execution_id=execution_id, hypothesis_id=hypothesis_id, arm=arm, replicate=replicate,
                             status=status, rendered_config=config,
                             fingerprint=fingerprint if fingerprint is not None else {"wb_version": "wb 0.1.0"})
    metrics: dict[str, float] = dict(extra or {})
    if outcomes is not None:
        units = [{"outcome": o, "rounds": 4, **({"error": reasons[o][i % len(reasons[o])]} if o in reasons else {})}
                 for o, n in outcomes.items() for i in range(n)]
        records.add_units(session, run_id=run.id, units=units)
        if store_counts:
            metrics["sessions"] = len(units)
            for o in OUTCOMES:
                metrics[o] = outcomes.get(o, 0)
    records.add_metrics(session, run_id=run.id, metrics=metrics, source="run")
    return run.id


def add_replicate(store: Any, ex: int, r: int, leaks: int) -> None:
    """One replicate of wedge-confound with its own seed: control 12/80 leaks, treatment `leaks`/80."""
    add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
            outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10})
    add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
            outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})


def add_execution(store: Any, *, mode: str = "fixed", overrides: dict[str, str] | None = None,
                  hypothesis_id: str = "wedge-confound", plan: Any = None) -> int:
    from workbench.store import records

    with store.session() as session:
        ex = records.create_execution(session, hypothesis_id=hypothesis_id, experiment_id="agent-repro",
                                      experiment_version=1, profile="sim", target="sim", mode=mode,
                                      overrides=overrides, plan=plan)
        return ex.id


CONTROL = {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "off", "geometry_fix": "off",
           "indexer_host_pool_fix": "off", "causal_model": "seed", "seed": "0"}
TREATMENT = dict(CONTROL, nixl_abort_fix="on")


def abort_fix_hypothesis(hid: str, claim: str, *predicts: str) -> str:
    """hypotheses.yaml text of one more child of wedge-confound isolating the abort fix, with `predicts`
    (each a YAML flow mapping)."""
    lines = [f"  - id: {hid}", "    parent: wedge-confound", f"    claim: {claim}", "    experiment: agent-repro",
             "    isolates: nixl_abort_fix", "    arms:", '      control: {nixl_abort_fix: "off"}',
             '      treatment: {nixl_abort_fix: "on"}', '    hold: {index_k_dtype: bf16, hicache: "on"}',
             "    predicts:"] + [f"      - {p}" for p in predicts]
    return "\n" + "\n".join(lines) + "\n"


def registry_with(workbench_dir: Any, text: str) -> Any:
    """The workbench's registry with `text` appended to its hypotheses.yaml."""
    from workbench.registry import load_registry

    path = workbench_dir / "hypotheses.yaml"
    path.write_text(path.read_text() + text)
    return load_registry(workbench_dir)


def kv_workbench(tmp_path: Path, rows: list[str], values: str) -> Path:
    """The kvcache example in a folder of its own, `compression` taking `values` (e.g. "on, off, lz4"), and
    its evidence rows in s.csv."""
    root = tmp_path / "kv"
    root.mkdir()
    shutil.copy(KVCACHE / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(KVCACHE / "experiments", root / "experiments")
    exp = root / "experiments" / "kv-load.yaml"
    text = exp.read_text()
    assert "compression: {values: [on, off]," in text
    exp.write_text(text.replace("compression: {values: [on, off],", f"compression: {{values: [{values}],"))
    (root / "s.csv").write_text("\n".join(rows) + "\n")
    return root


def kv_imported(tmp_path: Path, cli: Any, monkeypatch: Any, rows: list[str], values: str) -> Path:
    """`kv_workbench`, entered (the working directory, no WB_ROOT / WB_DB) with its s.csv imported by the CLI."""
    root = kv_workbench(tmp_path, rows, values)
    monkeypatch.chdir(root)
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    code, _, err = cli("import", "evidence", "s.csv")
    assert code == 0, err
    return root


def analyzed_seed(tmp_path: Path, workbench_dir: Path, seed_csv: Path, hypothesis_id: str = "wedge-confound") -> Any:
    """The seed's evidence imported into a store of its own and `hypothesis_id` analysed over it."""
    from workbench.analysis import analyze_stored
    from workbench.app import Workbench
    from workbench.registry import load_registry
    from workbench.settings import Settings
    from workbench.store import open_store

    db = str(tmp_path / "seed.duckdb")
    Workbench.open(Settings(db=db, root=workbench_dir)).import_evidence(seed_csv)
    store = open_store(db)
    try:
        return analyze_stored(store, load_registry(workbench_dir), hypothesis_id)
    finally:
        store.dispose()


def alias_of_a_rate(workbench_dir):
    """wedge-confound's treatment prediction on leak_share, declared another name for corruption_rate."""
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    old = ("  corruption_rate: {kind: proportion, numerator: leak, denominator: sessions, "
           "description: leak / sessions}\n")
    assert old in text
    exp.write_text(text.replace(old, old + "  leak_share: {kind: continuous, same_as: corruption_rate}\n"))
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    old = "{metric: corruption_rate, arm: treatment, at_most: 0.02,"
    assert old in text
    path.write_text(text.replace(old, "{metric: leak_share, arm: treatment, at_most: 0.02,", 1))
