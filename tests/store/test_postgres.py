"""The store on a real PostgreSQL server: the same flow as on DuckDB, by URL alone."""

from __future__ import annotations

import json
from pathlib import Path


def test_whole_flow_on_postgresql(pg_url: str, workbench_dir: Path, seed_csv: Path, cli, monkeypatch):
    monkeypatch.chdir(workbench_dir)
    for args in (["db", "upgrade"], ["import", "evidence", str(seed_csv)]):
        code, out, err = cli(*args, "--db", pg_url)
        assert code == 0, err
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--db", pg_url, "--json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "falsified"
    code, out, err = cli("report", "--db", pg_url)
    assert code == 0, err
    page = (workbench_dir / "reports" / "hypotheses" / "wedge-confound.html")
    assert "falsified" in page.read_text()


def test_plain_postgresql_url_uses_the_installed_driver(pg_url: str, cli):
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
    code, out, err = cli("db", "upgrade", "--db", plain)
    assert code == 0, err
    code, out, err = cli("db", "current", "--db", plain, "--json")
    assert code == 0, err
    assert json.loads(out)["is_head"] is True


def test_a_url_whose_driver_is_missing_is_bad_input_naming_it(cli, tmp_path: Path):
    from typer.testing import CliRunner

    from workbench.cli.main import app

    result = CliRunner().invoke(app, ["db", "upgrade", "--db", "postgresql+pg8000://u@127.0.0.1:1/x"])
    assert result.exit_code == 2
    assert "Error:" in result.stderr and "pg8000" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
