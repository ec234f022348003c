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
    # As JSON text, so that 4 and 4.0 differ: a workload setting written 4 is the whole number 4.
    assert json.dumps(rows, sort_keys=True) == json.dumps(golden, sort_keys=True)


def test_a_workload_setting_keeps_the_kind_of_number_it_was_written_as(workbench_dir, tmp_path):
    """An integer stays an integer (it was stored, and shown, as rounds=4.0); a value written with a point or an
    exponent stays a float."""
    exp = load_registry(workbench_dir).experiments["agent-repro"]
    csv = tmp_path / "runs.csv"
    csv.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,rounds,ctx,max_tokens,timeout_s\n"
                   "r1,bf16,on,on,80,14,4,300.0,2.5e3,+200\n")
    (row,) = parse_evidence(csv, exp)
    assert row["workload"] == {"rounds": 4, "ctx": 300.0, "max_tokens": 2500.0, "timeout_s": 200, "sessions": 80}
    assert [type(row["workload"][k]) for k in ("rounds", "ctx", "max_tokens", "timeout_s")] == [int, float, float, int]


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
    assert "unknown column p99_ms for experiment 'kv-load'" in err
    assert "compression, batch_writes" in err and "clients, stale, errors" in err
    assert "hicache" not in err and "leak" not in err


def test_without_experiment_the_closest_one_is_named(kv, cli):
    bad = kv.root / "bad.csv"
    bad.write_text("run_id,compression,batch_writes,stale,latency_ms\nx,on,on,3,12\n")
    code, _, err = cli("import", "evidence", str(bad), "--root", str(kv.root), "--db", kv.db)
    assert code == 2 and "latency_ms" in err and "the closest experiment is 'kv-load'" in err
    # a misspelt column is named with the column it is closest to (it was named with an experiment only)
    bad.write_text("run_id,compression,batch_writes,stael\nx,on,on,3\n")
    code, _, err = cli("import", "evidence", str(bad), "--root", str(kv.root), "--db", kv.db)
    assert code == 2 and "Hint: did you mean 'stale'? (kv-load columns: variables:" in err, err
    # and the same words, column by column, for several (the format of every other name mistyped)
    bad.write_text("run_id,compresion,batch_writes,stael\nx,on,on,3\n")
    code, _, err = cli("import", "evidence", str(bad), "--root", str(kv.root), "--db", kv.db)
    assert code == 2 and "Hint: compresion: did you mean 'compression'?; stael: did you mean 'stale'?; kv-load " \
        "columns: variables:" in err, err


def test_schema_describes_the_evidence_csv(kv, cli, monkeypatch):
    monkeypatch.chdir(kv.root)
    code, out, _ = cli("schema")
    fmt = json.loads(out)
    fmt = fmt.get("data", fmt)["evidence CSV"]
    assert "run_id" in fmt["bookkeeping"]
    assert fmt["experiments"]["kv-load"]["variables"] == ["compression", "batch_writes"]
    assert "stale_rate" not in fmt["experiments"]["kv-load"]["count_metrics"]


HEADER = "run_id,compression,batch_writes,clients,stale,errors\n"


def _stored(db: str) -> list[tuple[str, float]]:
    """(run_id, stale) of every imported run in the DuckDB file, in label order."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute("select r.label, m.value from runs r join metrics m on m.run_id = r.id "
                           "where r.source = 'import' and m.name = 'stale' order by r.label, r.id").fetchall()
    finally:
        con.close()


def _import(kv, cli, path: Path, *extra: str):
    return cli("import", "evidence", str(path), "--root", str(kv.root), "--db", kv.db, *extra)


def test_correcting_one_cell_is_refused_naming_the_row_then_replaced_on_request(kv, cli):
    h = kv.root / "h.csv"
    h.write_text(HEADER + "x1,on,on,50,40,0\nx2,off,off,50,0,0\n")
    assert _import(kv, cli, h)[0] == 0
    h.write_text(HEADER + "x1,on,on,50,41,0\nx2,off,off,50,0,0\n")

    code, out, err = _import(kv, cli, h)
    assert code == 2, (out, err)
    assert err.startswith("Error: ") and f"{h}:2" in err and "'x1'" in err and "--replace" in err, err
    assert "stale" in err and "Traceback" not in err
    assert _stored(kv.db) == [("x1", 40.0), ("x2", 0.0)], "a refused import must leave the store as it was"

    code, out, err = _import(kv, cli, h, "--replace")
    assert code == 0, err
    assert "replaced 1" in out and "skipped 1" in out, out
    assert _stored(kv.db) == [("x1", 41.0), ("x2", 0.0)]


def test_rows_already_stored_with_the_same_values_are_skipped_from_any_file(kv, cli):
    h = kv.root / "h.csv"
    h.write_text(HEADER + "x1,on,on,50,40,0\nx2,off,off,50,0,0\n")
    assert _import(kv, cli, h)[0] == 0
    more = kv.root / "more.csv"  # the same two runs, on other lines of another file, and a new one
    more.write_text(HEADER + "x3,off,on,50,1,0\nx2,off,off,50,0,0\nx1,on,on,50,40,0\n")
    code, out, err = _import(kv, cli, more)
    assert code == 0, err
    assert "imported 1 run from" in out and "skipped 2" in out, out
    assert _stored(kv.db) == [("x1", 40.0), ("x2", 0.0), ("x3", 1.0)]


def test_a_count_above_its_denominator_is_refused_at_its_cell(kv, cli):
    h = kv.root / "h.csv"
    h.write_text(HEADER + "x1,on,on,50,40,0\nx2,on,on,50,80,0\n")
    code, out, err = _import(kv, cli, h)
    assert code == 2, (out, err)
    assert f"{h}:3" in err and "column 'stale' (80)" in err and "'clients' (50)" in err, err
    assert not Path(kv.db).exists(), "a refused input must not create the store"


def test_a_row_with_fewer_cells_than_the_header_is_refused(kv, cli):
    h = kv.root / "h.csv"
    h.write_text(HEADER + "x1,on,on,50,40,0\nx2,off,off,50\n")
    code, out, err = _import(kv, cli, h)
    assert code == 2, (out, err)
    assert f"{h}:3" in err and "fewer cells (4) than columns (6)" in err, err
    assert not Path(kv.db).exists()


def _metric(db: str, label: str, name: str) -> list[float]:
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return [v for (v,) in con.execute("select m.value from runs r join metrics m on m.run_id = r.id "
                                          "where r.label = ? and m.name = ?", [label, name]).fetchall()]
    finally:
        con.close()


def test_a_continuous_metric_may_be_negative(kv, cli):
    # wall_s is continuous: a history may hold a delta (this run against its baseline), which can be negative.
    h = kv.root / "h.csv"
    h.write_text("run_id,compression,batch_writes,clients,stale,errors,wall_s\n"
                 "x1,on,on,50,40,0,-0.25\nx2,off,off,50,0,0,1.5\n")
    code, out, err = _import(kv, cli, h)
    assert code == 0, err
    assert _metric(kv.db, "x1", "wall_s") == [-0.25] and _metric(kv.db, "x2", "wall_s") == [1.5]


def test_a_negative_count_or_part_of_a_proportion_is_refused_at_its_cell(kv, cli):
    h = kv.root / "h.csv"
    for row, column in (("x1,on,on,50,-1,0", "stale"), ("x1,on,on,-50,0,0", "clients"), ("x1,on,on,50,0,-2", "errors")):
        h.write_text(HEADER + "x0,off,off,50,0,0\n" + row + "\n")
        code, out, err = _import(kv, cli, h)
        assert code == 2, (out, err)
        assert err.startswith("Error: ") and f"{h}:3" in err and f"column {column!r} is negative" in err, err
        assert "Traceback" not in err
        assert not Path(kv.db).exists(), "a refused input must not create the store"


def test_a_derived_metric_given_as_a_column_is_named_as_derived(workbench_dir, tmp_path, cli):
    """A CSV with an error_rate column said "unknown column error_rate (no experiment has it ...)", though
    agent-repro declares error_rate: it is derived (error / sessions), never imported, and the hint says what to
    give instead."""
    csv = tmp_path / "runs.csv"
    csv.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,error,error_rate\nr1,bf16,on,on,80,40,0.5\n")
    code, out, err = cli("import", "evidence", str(csv), "--root", str(workbench_dir), "--db", str(tmp_path / "w.db"))
    assert code == 2 and out == "", (code, out, err)
    first, hint = err.splitlines()[:2]
    assert "no experiment has it" not in first, first
    assert first == (f"Error: {csv}:1: column error_rate is derived by experiment 'agent-repro' "
                     "(error_rate = error / sessions), never imported"), first
    assert hint == "Hint: give error, sessions instead, or keep the figure as text in reported_error_rate", hint
    exp = load_registry(workbench_dir).experiments["agent-repro"]
    try:
        parse_evidence(csv, exp)
    except Exception as exc:  # the same words with --experiment agent-repro
        assert "derived by experiment 'agent-repro'" in str(exc), exc
    else:
        raise AssertionError("a derived metric's column was accepted")


def test_a_derived_metric_beside_an_unknown_column_is_not_called_unknown(workbench_dir, tmp_path, cli):
    """With a mistyped column beside corruption_rate, both were "unknown columns (no experiment has them)"."""
    csv = tmp_path / "runs.csv"
    csv.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,corruption_rate,lek\n"
                   "r1,bf16,on,on,80,14,0.175,3\n")
    code, _, err = cli("import", "evidence", str(csv), "--root", str(workbench_dir), "--db", str(tmp_path / "w.db"))
    first, hint = err.splitlines()[:2]
    assert code == 2 and first == (f"Error: {csv}:1: unknown column lek (no experiment has it; the closest "
                                   "experiment is 'agent-repro')"), first
    assert hint.startswith("Hint: lek: did you mean 'leak'?; corruption_rate is derived (corruption_rate = leak / "
                           "sessions), never imported: give leak, sessions instead"), hint
