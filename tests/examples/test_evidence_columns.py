"""Evidence import for any experiment: the columns are the experiment's own; the seed's CSV is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.registry.evidence import parse_evidence
from workbench.registry import load_registry

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "evidence"
GOLDEN = REPO / "tests" / "data"


def test_seed_csv_parses_exactly_as_before(workbench_dir):
    exp = load_registry(workbench_dir).experiments["agent-repro"]
    rows = parse_evidence(DATA / "seed-runs.csv", exp)
    golden = json.loads((GOLDEN / "seed-runs.parsed.json").read_text())
    assert json.loads(json.dumps(rows)) == golden


def test_own_experiment_history_imports_with_its_columns(kv, cli):
    code, out, err = cli("import", "evidence", str(kv.root / "history.csv"), "--root", str(kv.root), "--db", kv.db,
                         "--json")
    assert code == 0, err
    result = json.loads(out)["data"] if "data" in json.loads(out) else json.loads(out)
    assert result["experiment"] == "kv-load" and len(result["imported"]) == 6
    first = result["imported"][0]
    assert first["variables"] == {"compression": "on", "batch_writes": "on"}
    assert first["metrics"] == {"clients": 50, "stale": 44, "errors": 0, "wall_s": 1.9}


def test_unknown_column_names_the_experiments_real_columns(kv, cli):
    bad = kv.root / "bad.csv"
    bad.write_text("run_id,compression,batch_writes,clients,stale,p99_ms\nx,on,on,50,3,12\n")
    code, _, err = cli("import", "evidence", str(bad), "--root", str(kv.root), "--db", kv.db,
                       "--experiment", "kv-load")
    assert code == 2
    assert "unknown column(s) p99_ms for experiment 'kv-load'" in err
    assert "compression, batch_writes" in err and "clients, stale, errors" in err
    assert "hicache" not in err and "leak" not in err


def test_without_experiment_the_closest_one_is_named(kv, cli):
    bad = kv.root / "bad.csv"
    bad.write_text("run_id,compression,batch_writes,stale,latency_ms\nx,on,on,3,12\n")
    code, _, err = cli("import", "evidence", str(bad), "--root", str(kv.root), "--db", kv.db)
    assert code == 2 and "latency_ms" in err and "closest: 'kv-load'" in err


def test_schema_describes_the_evidence_csv(kv, cli, monkeypatch):
    monkeypatch.chdir(kv.root)
    code, out, _ = cli("schema")
    fmt = json.loads(out)
    fmt = fmt.get("data", fmt)["evidence CSV"]
    assert "run_id" in fmt["bookkeeping"]
    assert fmt["experiments"]["kv-load"]["variables"] == ["compression", "batch_writes"]
    assert "stale_rate" not in fmt["experiments"]["kv-load"]["count_metrics"]
