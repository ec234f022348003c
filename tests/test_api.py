"""workbench.api: the seed's evidence as DataFrames, the per-arm table built without SQL."""

from __future__ import annotations

from pathlib import Path


def test_per_arm_table_of_the_seed_evidence(tmp_path: Path, workbench_dir: Path, seed_csv: Path):
    from workbench import api
    from workbench.app import Workbench
    from workbench.settings import Settings

    db = str(tmp_path / "wb.duckdb")
    wb = Workbench.open(Settings(db=db, root=workbench_dir))
    wb.import_evidence(seed_csv)
    wb.analyze("wedge-confound")

    runs = api.runs(db=db, root=str(workbench_dir))
    assert len(runs) == 6 and runs["run_id"].is_unique
    assert {"var.nixl_abort_fix", "var.index_k_dtype", "metric.leak", "metric.sessions"} <= set(runs.columns)

    ev = api.runs(arms_of="wedge-confound", db=db, root=str(workbench_dir))
    per_arm = ev.groupby("arm").agg(runs=("run_id", "size"), sessions=("metric.sessions", "sum"),
                                    leak=("metric.leak", "sum"), aborts=("metric.waiting_for_input", "sum"))
    assert set(ev.loc[ev.arm == "control", "label"]) == {"pre-bf16-hicache", "pre-ab-bf16"}
    t = per_arm.loc["treatment"]
    assert (t.runs, t.sessions, t.leak, t.aborts) == (1, 80, 14, 0)
    assert (ev.loc[ev.arm == "treatment", "var.nixl_abort_fix"] == "on").all()

    v = api.verdicts(latest=True, db=db, root=str(workbench_dir))
    assert v.set_index("hypothesis").loc["wedge-confound", "verdict"] == "falsified" and v.attrs["broken"] == ()
    assert api.units(db=db, root=str(workbench_dir)).empty  # imported runs carry metrics, not units
    assert ev.attrs["broken"] == () and runs.attrs["broken"] == ()

    # A read through the registry (arms_of) went on without an entry with a problem of its own and said nothing of
    # it, where the CLI warns of it: the frame carries each entry left out, its problems typed (file, line, field).
    from workbench.errors import ConfigError
    from workbench.registry.validate import BrokenEntry

    hyp = workbench_dir / "hypotheses.yaml"
    text = hyp.read_text()
    hyp.write_text(text.replace("    falsified_if: Corruption is the same", "    falsifed: Corruption is the same"))
    line = next(i for i, ln in enumerate(hyp.read_text().splitlines(), 1) if ln.startswith("    falsifed:"))
    for frame in (api.runs(arms_of="wedge-confound", db=db, root=str(workbench_dir)),
                  api.units(arms_of="wedge-confound", db=db, root=str(workbench_dir))):
        broken = frame.attrs["broken"]
        assert isinstance(broken, tuple) and [type(b) for b in broken] == [BrokenEntry], broken
        assert broken[0].id == "hicache-bf16-race" and len(broken[0].problems) == 1, broken
        problem = broken[0].problems[0]
        assert isinstance(problem, ConfigError), problem
        assert (problem.file, problem.line, problem.field) == (
            str(hyp), line, "hypothesis hicache-bf16-race, field falsifed"), (problem.file, problem.line, problem.field)
    assert len(api.runs(arms_of="wedge-confound", db=db, root=str(workbench_dir))) == 3  # the others read as before


def test_api_exports_what_it_documents():
    from workbench import api

    assert api.__all__ == ["runs", "units", "verdicts"]
    assert all(callable(getattr(api, n)) and getattr(api, n).__doc__ for n in api.__all__)


def test_a_bad_keyword_is_named_as_the_caller_gave_it(tmp_path: Path, monkeypatch):
    """An API caller gave `db=` or `root=`, never a flag: the error names the keyword (it said --db). A value the
    environment gave is still named by its variable, as on the command line."""
    import pytest

    from workbench import api
    from workbench.errors import WbError

    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.delenv("WB_ROOT", raising=False)
    (tmp_path / "notes.txt").write_text("not a store\n")
    bad = {"db": [str(tmp_path / "missing.duckdb"), str(tmp_path / "notes.txt"), str(tmp_path), "",
                  "sqlite:///x.db", "postgresql://ada:s3cret@127.0.0.1:1/wb", str(tmp_path / "no" / "x.duckdb")],
           "root": ["", str(tmp_path / "nowhere")]}
    for key, values in bad.items():
        for value in values:
            with pytest.raises(WbError) as caught:
                api.runs(arms_of="wedge-confound", **{key: value})
            e = caught.value
            said = f"{e.message} | {e.hint}"
            assert f"{key}=" in said and "--db" not in said and "--root" not in said, (key, value, said)
            assert "s3cret" not in said
            assert e.where == f"{key}=", (key, value, e.where)
    monkeypatch.setenv("WB_DB", str(tmp_path / "notes.txt"))
    with pytest.raises(WbError) as caught:
        api.runs()
    assert caught.value.where == "$WB_DB" and "db=" not in caught.value.message


def test_a_password_in_the_urls_query_is_never_said(monkeypatch):
    """libpq takes a password in the URL's query (`?password=`, `?sslpassword=`) as well as before the host; the
    store's name in an error hid only the latter, and the API's caller (no command line registered the value as a
    secret) read it in clear."""
    import pytest

    from workbench import api
    from workbench.errors import WbError

    monkeypatch.delenv("WB_DB", raising=False)
    for url in ("mysql://ada@127.0.0.1:1/wb?password=s3cretpw", "postgresql://ada@127.0.0.1:1/wb?sslpassword=s3cretpw",
                "postgresql://ada@127.0.0.1:1/wb?Password=s3cretpw"):
        with pytest.raises(WbError) as caught:
            api.runs(db=url)
        said = f"{caught.value.message} | {caught.value.hint}"
        assert "s3cretpw" not in said and "127.0.0.1" in said, said
