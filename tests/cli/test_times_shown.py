"""The text outputs give a stored time to the second, every one alike; the JSON keeps it exact."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TO_THE_SECOND = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


@pytest.fixture
def db(tmp_path: Path, workbench_dir: Path, monkeypatch) -> Path:
    """The shipped workbench (WB_ROOT) and an empty store (WB_DB)."""
    monkeypatch.setenv("WB_ROOT", str(workbench_dir))
    monkeypatch.setenv("WB_DB", str(tmp_path / "wb.duckdb"))
    return tmp_path / "wb.duckdb"


def test_runs_show_gives_start_and_end_to_the_second(cli, db: Path) -> None:
    # started_at read "...03:43:41+00:00" and ended_at "...03:43:50.164360+00:00" on the next line.
    from workbench.store import open_store, records

    store = open_store(str(db))
    try:
        with store.session() as session:
            run = records.create_run(session, experiment_id="agent-repro", variables={"hicache": "on"}, status="ok",
                                     started_at=datetime(2026, 12, 6, 3, 43, 41, tzinfo=timezone.utc),
                                     ended_at=datetime(2026, 12, 6, 3, 43, 50, 164360, tzinfo=timezone.utc))
            run_id = run.id
    finally:
        store.dispose()
    code, out, err = cli("runs", "show", str(run_id))
    assert code == 0, err
    assert re.search(r"^started_at: 2026-12-06T03:43:41\+00:00$", out, re.M), out
    assert re.search(r"^ended_at: 2026-12-06T03:43:50\+00:00$", out, re.M), out
    code, out, err = cli("runs", "show", str(run_id), "--json")
    assert code == 0, err
    assert "03:43:50.164360" in json.dumps(json.loads(out))  # the JSON keeps the stored time exact


def test_hypothesis_show_gives_the_verdicts_time_to_the_second(cli, db: Path) -> None:
    # "verdict: falsified (2026-12-06T03:44:29.276112+00:00)"
    for args in (("import", "evidence", str(REPO / "evidence" / "seed-runs.csv")),
                 ("hypothesis", "analyze", "wedge-confound")):
        code, _, err = cli(*args)
        assert code == 0, err
    code, out, err = cli("hypothesis", "show", "wedge-confound")
    assert code == 0, err
    assert re.search(rf"^verdict: falsified \({TO_THE_SECOND}\)$", out, re.M), out
