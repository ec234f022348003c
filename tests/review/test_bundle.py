"""Bundles between real stores: export, import into another store, idempotence, conflicts, damaged files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from workbench import __version__
from workbench.team.bundle import export, import_, read
from workbench.errors import BadInput
from workbench.registry import load_registry
from workbench.store import open_store


def _seeded_store(workbench_dir: Path, seed_csv: Path, cli, name: str = "a.duckdb") -> str:
    db = str(workbench_dir / name)
    for args in (["import", "evidence", str(seed_csv)], ["hypothesis", "analyze", "wedge-confound"]):
        code, _, err = cli(*args, "--db", db, "--root", str(workbench_dir))
        assert code == 0, err
    store = open_store(db)
    try:
        verdict = store.latest_verdict("wedge-confound")
        store.add_review(hypothesis_id="wedge-confound", author="ada", author_source="flag", decision="approve",
                         body="reproduced", verdict_id=verdict.id)
    finally:
        store.dispose()
    return db


def _rows(db: str) -> dict:
    store = open_store(db)
    try:
        return store.export_rows(["wedge-confound"])
    finally:
        store.dispose()


def test_round_trip_between_duckdb_stores_is_idempotent(workbench_dir: Path, seed_csv: Path, cli):
    a = _seeded_store(workbench_dir, seed_csv, cli)
    reg = load_registry(workbench_dir)
    out = workbench_dir / "wedge.wbundle"
    store = open_store(a)
    try:
        summary = export(store, reg, ["wedge-confound"], out, created_by="ada", wb_version=__version__)
    finally:
        store.dispose()
    assert summary.added["verdicts"] == 1 and summary.added["reviews"] == 1 and summary.added["runs"] >= 1
    b = str(workbench_dir / "b.duckdb")
    store = open_store(b)
    try:
        first = import_(store, reg, out)
        again = import_(store, reg, out)
        state = store.reviews(hypothesis_id="wedge-confound")
        verdict = store.latest_verdict("wedge-confound")
    finally:
        store.dispose()
    assert first.added["verdicts"] == 1 and first.added["reviews"] == 1
    assert sum(again.added.values()) == 0
    assert state[0].evidence_digest == verdict.evidence_digest and state[0].author == "ada"
    assert _rows(a) == _rows(b)


def test_a_conflicting_registry_is_refused_and_nothing_is_written(workbench_dir: Path, seed_csv: Path, cli):
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "wedge.wbundle"
    store = open_store(a)
    try:
        export(store, load_registry(workbench_dir), ["wedge-confound"], out, created_by="ada", wb_version="x")
    finally:
        store.dispose()
    text = (workbench_dir / "hypotheses.yaml").read_text()
    at = text.index("id: wedge-confound")
    assert "at_most: 0.02" in text[at:]
    (workbench_dir / "hypotheses.yaml").write_text(text[:at] + text[at:].replace("at_most: 0.02", "at_most: 0.05", 1))
    b = str(workbench_dir / "b.duckdb")
    store = open_store(b)
    try:
        with pytest.raises(BadInput, match="conflicts .*hypothesis wedge-confound: predicts differ"):
            import_(store, load_registry(workbench_dir), out)
        assert store.runs() == [] and store.latest_verdict("wedge-confound") is None
    finally:
        store.dispose()


@pytest.mark.parametrize("content,fragment", [
    (b"plain text", "not a wb bundle"),
    (gzip.compress(b"{not json"), "not a wb bundle"),
    (gzip.compress(json.dumps({"x": 1}).encode()), "no wb_bundle key"),
    (gzip.compress(json.dumps({"wb_bundle": 99}).encode()), "format 99"),
    (gzip.compress(json.dumps({"wb_bundle": 1, "hypotheses": []}).encode()), "no 'registry' section"),
], ids=["plain-text", "gzip-not-json", "no-key", "format-99", "no-registry"])  # gzip bytes carry a timestamp
def test_damaged_bundles_are_bad_input(tmp_path: Path, content: bytes, fragment: str):
    p = tmp_path / "bad.wbundle"
    p.write_bytes(content)
    with pytest.raises(BadInput, match=fragment):
        read(p)
