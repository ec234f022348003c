"""The reports/ site names the store it was built from, and a run's automatic rebuild does not silently replace a
site built from another store (a team's PostgreSQL store, here another DuckDB file)."""

from __future__ import annotations

import json

from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)


def test_a_runs_automatic_report_leaves_a_site_built_from_another_store(toy, cli, monkeypatch):
    team = str(toy.root / "team.duckdb")
    run_hypothesis("toy-fix", db=team, replicates=1, build_report=False)
    env = {"WB_ROOT": str(toy.root)}
    code, out, err = cli("report", "--db", team, env=env)
    assert code == 0 and not err, (out, err)
    site = toy.root / "reports"
    pages = [site / "index.html", site / "runs.html", site / "runs" / "1.html", site / "hypotheses" / "toy-fix.html"]
    for page in pages:
        assert f"store {team}" in page.read_text(), page
    assert json.loads((site / ".wb-site.json").read_text())["store"] == team

    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db, env=env)
    assert code == 0, (out, err)
    (line,) = [ln for ln in out.splitlines() if ln.startswith("report: ")]
    assert "not rebuilt" in line and team in line and toy.db in line, line
    assert f"store {team}" in (site / "index.html").read_text()  # left as it was

    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)  # stdout a terminal of 60 columns
    code, out, err = cli("report", "--db", toy.db, env={**env, "COLUMNS": "60"})
    assert code == 0, (out, err)
    assert err.startswith("Warning: ") and f"built from the store {team}" in err and toy.db in err, err
    # The site's line wraps between words there (it ran on past 80 columns); a path wider than a line runs on.
    lines = out.splitlines()
    assert " ".join(out.split()).startswith(f"site: {site / 'index.html'} (1 hypothesis, 2 runs, "), out
    assert len(lines) > 1 and all(len(ln) <= 60 or " " not in ln.strip() for ln in lines), out
    for page in pages:
        assert f"store {toy.db}" in page.read_text() and team not in page.read_text(), page


def test_a_run_asked_for_its_report_replaces_the_other_stores_site_and_says_so(toy, cli):
    team = str(toy.root / "team.duckdb")
    run_hypothesis("toy-fix", db=team, replicates=1, build_report=False)
    env = {"WB_ROOT": str(toy.root)}
    assert cli("report", "--db", team, env=env)[0] == 0
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--report", "--db", toy.db, "--json",
                         env=env)
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["report"] and team in doc["report_note"] and "replaced" in doc["report_note"], doc["report_note"]
    assert f"store {toy.db}" in (toy.root / "reports" / "index.html").read_text()


def test_a_site_from_a_postgresql_store_names_its_url_without_the_password(toy, cli, pg_url):
    url = pg_url.replace("postgres@", "postgres:hunter2@")  # the test server trusts every local login
    run_hypothesis("toy-fix", db=url, replicates=1, build_report=False)
    env = {"WB_ROOT": str(toy.root)}
    code, out, err = cli("report", "--db", url, env=env)
    assert code == 0, (out, err)
    server = url.split("@", 1)[1]  # the password is masked (***, or <redacted> as every page masks a URL's)
    site = toy.root / "reports"
    for page in (site / "index.html", site / "runs" / "1.html", site / ".wb-site.json"):
        text = page.read_text()
        assert "from store postgresql+psycopg://postgres:" in text or page.suffix == ".json", page
        assert f"@{server}" in text and "hunter2" not in text, (page, text[text.find("generated"):][:200])
    assert "hunter2" not in out + err and f"@{server}" in out


def test_a_site_that_names_no_store_is_kept_by_a_run_and_replaced_by_wb_report_with_a_warning(toy, cli, monkeypatch):
    """A site an older wb built names no store: which store it shows is not known. A run's automatic rebuild
    replaced it without a word (as if it were this store's); now the run leaves it and says so, and `wb report`
    (or --report) replaces it, saying in one line that it named none."""
    run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=True)
    env = {"WB_ROOT": str(toy.root)}
    site = toy.root / "reports"
    manifest = json.loads((site / ".wb-site.json").read_text())
    del manifest["store"]  # as an older wb wrote it
    (site / ".wb-site.json").write_text(json.dumps(manifest))
    before = (site / "index.html").read_text()

    doc = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=None)
    assert doc["report"] is None and "names no store" in doc["report_note"], doc["report_note"]
    assert (site / "index.html").read_text() == before

    doc = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=True)
    assert doc["report"] and doc["report_note"] == "replaced a site that named no store it was built from", doc
    (site / ".wb-site.json").write_text(json.dumps(manifest))
    code, out, err = cli("report", "--db", toy.db, env=env)
    assert code == 0, (out, err)
    assert err.startswith("Warning: ") and len(err.splitlines()) == 1 and "named no store" in err, err
    assert json.loads((site / ".wb-site.json").read_text())["store"] == toy.db
    (site / ".wb-site.json").write_text("{damaged")  # no older wb's: the warning does not say only that one built it
    # ... and on a terminal it wraps between words, as every warning of the CLI does (it ran on past 200 characters)
    monkeypatch.setattr("workbench.cli._common.stderr_is_tty", lambda: True)
    code, out, err = cli("report", "--db", toy.db, env={**env, "COLUMNS": "80"})
    assert code == 0 and "or its manifest is damaged" in " ".join(err.split()), (out, err)
    assert len(err.splitlines()) > 1 and all(len(ln) <= 80 for ln in err.splitlines() if len(ln.split()) > 1), err
