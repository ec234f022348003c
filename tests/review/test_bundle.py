"""Bundles between real stores: export, import into another store, idempotence, conflicts, damaged files."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import yaml

from workbench import __version__
from workbench.team.bundle import export, import_, read
from workbench.errors import BadInput
from workbench.registry import load_registry
from workbench.store import open_store


_SEEDED: dict[str, bytes] = {}  # the seeded store's file, made once (it names no path of its workbench)


def _seeded_store(workbench_dir: Path, seed_csv: Path, cli, name: str = "a.duckdb") -> str:
    """The seed evidence imported, wedge-confound analyzed and its verdict approved by ada, in a new store
    `name` in `workbench_dir`. Made once through the CLI; each test gets a copy of that store's file."""
    db = str(workbench_dir / name)
    if _SEEDED:
        Path(db).write_bytes(_SEEDED["file"])
        return db
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
    assert not Path(f"{db}.wal").exists()
    _SEEDED["file"] = Path(db).read_bytes()
    return db


def _rows(db: str) -> dict:
    store = open_store(db)
    try:
        return store.export_rows(["wedge-confound"])
    finally:
        store.dispose()


def _signed_import(workbench_dir: Path, seed_csv: Path, cli, keys: dict[str, Path]) -> str:
    """Export a bundle, sign it with ada's key, import it against keys["allowed"]: the principal it names."""
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    code, said, err = cli("bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--json",
                          "--db", str(workbench_dir / "b.duckdb"), "--root", str(workbench_dir))
    assert code == 0, err
    return json.loads(said)["signed_by"]["principal"]


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


def test_the_cli_says_what_an_import_added_and_when_it_added_nothing(workbench_dir: Path, seed_csv: Path, cli):
    """A second import of one bundle printed "imported (new rows) ...: 0 executions, 0 runs, ..." as if it had
    brought something; it now says nothing was new. One of a kind is said in the singular."""
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out, b = str(workbench_dir / "w.wbundle"), str(workbench_dir / "b.duckdb")
    flags = ["--root", str(workbench_dir)]
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", out, "--db", a, *flags)
    assert code == 0, err
    assert said.startswith("exported wedge-confound: 0 executions, 3 runs, 1 verdict, 1 review, "), said
    code, first, err = cli("bundle", "import", out, "--db", b, *flags)
    assert code == 0 and first.startswith("imported wedge-confound: 0 executions, 3 runs, 1 verdict, 1 review"), first
    code, again, err = cli("bundle", "import", out, "--db", b, *flags)
    assert code == 0, err
    assert again == f"nothing new in {out}: the store holds every row of it (wedge-confound)\n", again


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
        with pytest.raises(BadInput,
                           match=r"conflicts .*hypothesis wedge-confound \(\S*hypotheses\.yaml:\d+\): predicts differ"):
            import_(store, load_registry(workbench_dir), out)
        assert store.runs() == [] and store.latest_verdict("wedge-confound") is None
    finally:
        store.dispose()


_WHOLE = gzip.compress(json.dumps({"wb_bundle": 1, "pad": "x" * 4000}).encode())
_BAD_CRC = _WHOLE[:-8] + bytes(b ^ 0xFF for b in _WHOLE[-8:-4]) + _WHOLE[-4:]
_BAD_DEFLATE = _WHOLE[:20] + bytes(b ^ 0x55 for b in _WHOLE[20:60]) + _WHOLE[60:]  # zlib.error, no OSError


@pytest.mark.parametrize("content,fragment", [
    (b"plain text", "not a wb bundle (not gzip-compressed: a bundle starts with the bytes 1f 8b)"),
    (b"", "not a wb bundle (the file is empty: cut short in a copy or a download?)"),
    (gzip.compress(b"{not json"), "not a wb bundle (its content is not JSON: line 1, column 2)"),
    (_WHOLE[:-40], "not a wb bundle (it ends early: cut short in a copy or a download?)"),
    (_BAD_CRC, "not a wb bundle (its compressed data is damaged)"),
    (_BAD_DEFLATE, "not a wb bundle (its compressed data is damaged)"),
    (gzip.compress(json.dumps({"x": 1}).encode()), "no wb_bundle key"),
    (gzip.compress(json.dumps({"wb_bundle": 99}).encode()), "format 99"),
    (gzip.compress(json.dumps({"wb_bundle": 1, "hypotheses": []}).encode()), "no 'registry' section"),
], ids=["plain-text", "empty", "gzip-not-json", "truncated", "bad-crc", "bad-deflate", "no-key", "format-99",
        "no-registry"])
def test_damaged_bundles_are_bad_input(tmp_path: Path, content: bytes, fragment: str):
    """In words, not the gzip or json module's ("Not a gzipped file (b'pl')", "Expecting property name...")."""
    p = tmp_path / "bad.wbundle"
    p.write_bytes(content)
    with pytest.raises(BadInput) as ei:
        read(p)
    assert fragment in ei.value.message, ei.value.message
    assert not any(raw in ei.value.message
                   for raw in ("gzipped", "Expecting", "end-of-stream", "CRC", "char ", "Error -3")), \
        ei.value.message


def test_a_folder_is_no_bundle(tmp_path: Path):
    with pytest.raises(BadInput, match="is a folder, not a bundle file"):
        read(tmp_path)


def _sha(path: Path) -> str | None:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


_BUNDLES: dict[str, bytes] = {}  # wedge-confound's bundle of the seeded store, by the workbench's files it read


def _registry_key(workbench_dir: Path) -> str:
    """A digest of the workbench's own files (its registry and whatever else a test wrote there), stores and
    bundles left out: the export reads the registry, and the store is always the seeded one's copy."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in workbench_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(workbench_dir)
        if rel.parts[0] == ".wb" or path.name.endswith((".duckdb", ".wal", ".wbundle", ".sig")):
            continue
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _bundle(workbench_dir: Path, seed_csv: Path, cli) -> Path:
    """wedge-confound exported from the seeded store through the CLI. The export reads nothing else (no path of
    the workbench goes into it): made once per set of registry files, each test gets a copy of its bytes
    (28 tests each exported the same bundle)."""
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "wedge.wbundle"
    key = _registry_key(workbench_dir)
    if key in _BUNDLES:
        out.write_bytes(_BUNDLES[key])
        return out
    code, _, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--db", a, "--root", str(workbench_dir))
    assert code == 0, err
    _BUNDLES[key] = out.read_bytes()
    return out


def _refused(cli, *args: str, fragment: str) -> str:
    """Run a command that must be refused (exit 2, one Error naming `fragment`): its stderr."""
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    assert err.startswith("Error: ") and fragment in err and "Traceback" not in err, err
    return err


def test_bundle_import_outside_a_workbench_creates_no_store(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    bundle = _bundle(workbench_dir, seed_csv, cli)
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    db = empty / "wb.duckdb"
    _refused(cli, "bundle", "import", str(bundle), "--db", str(db), "--root", str(empty), fragment="hypotheses.yaml")
    assert list(empty.iterdir()) == []


def test_conflicting_bundle_leaves_no_new_store_and_an_existing_one_unchanged(workbench_dir: Path, seed_csv: Path,
                                                                              cli):
    bundle = _bundle(workbench_dir, seed_csv, cli)
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    at = text.index("id: wedge-confound")
    path.write_text(text[:at] + text[at:].replace("at_most: 0.02", "at_most: 0.05", 1))
    fresh = workbench_dir / "fresh.duckdb"
    _refused(cli, "bundle", "import", str(bundle), "--db", str(fresh), "--root", str(workbench_dir),
             fragment="conflicts")
    code, _, err = cli("bundle", "import", str(bundle), "--db", str(fresh), "--root", str(workbench_dir))
    assert re.search(r"hypothesis wedge-confound \(\S*hypotheses\.yaml:\d+\): predicts differ", err), err
    code, out, _ = cli("bundle", "import", str(bundle), "--db", str(fresh), "--root", str(workbench_dir), "--json")
    assert code == 2 and json.loads(out)["error"]["where"] == str(bundle), out  # was null
    assert not fresh.exists()
    existing = workbench_dir / "a.duckdb"
    before = _sha(existing)
    _refused(cli, "bundle", "import", str(bundle), "--db", str(existing), "--root", str(workbench_dir),
             fragment="conflicts")
    assert _sha(existing) == before


def test_bundle_with_damaged_rows_leaves_no_new_store(workbench_dir: Path, cli):
    bad = workbench_dir / "damaged.wbundle"
    bad.write_bytes(gzip.compress(json.dumps({"wb_bundle": 1, "hypotheses": [], "registry": {},
                                              "store": {"runs": [{"uuid": 7}]}}).encode()))
    db = workbench_dir / "fresh.duckdb"
    _refused(cli, "bundle", "import", str(bad), "--db", str(db), "--root", str(workbench_dir), fragment="damaged")
    assert not db.exists() and not Path(f"{db}.wal").exists()


def test_approving_without_a_verdict_writes_no_store(workbench_dir: Path, seed_csv: Path, cli):
    db = workbench_dir / "fresh.duckdb"
    _refused(cli, "review", "wedge-confound", "--approve", "-m", "ok", "--as", "ada", "--db", str(db),
             "--root", str(workbench_dir), fragment="no verdict")
    assert not db.exists()
    code, _, err = cli("import", "evidence", str(seed_csv), "--db", str(db), "--root", str(workbench_dir))
    assert code == 0, err
    before = _sha(db)
    _refused(cli, "review", "wedge-confound", "--approve", "-m", "ok", "--as", "ada", "--db", str(db),
             "--root", str(workbench_dir), fragment="no verdict")
    assert _sha(db) == before


def test_export_into_a_missing_folder_is_refused(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    a = _seeded_store(workbench_dir, seed_csv, cli)
    target = tmp_path / "no" / "such" / "dir" / "x.wbundle"
    _refused(cli, "bundle", "export", "wedge-confound", "-o", str(target), "--db", a, "--root", str(workbench_dir),
             fragment=str(target.parent))
    assert not (tmp_path / "no").exists()


def _edited(bundle: Path, edit) -> Path:
    doc = json.loads(gzip.decompress(bundle.read_bytes()))
    edit(doc)
    out = bundle.with_name("edited.wbundle")
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return out


def _first(doc: dict, kind: str) -> dict:
    return doc["store"][kind][0]


@pytest.mark.parametrize("edit,fragment", [
    (lambda d: d.update(hypotheses=None), "not a list of hypothesis ids"),
    (lambda d: d.update(registry={}), "definitions"),
    (lambda d: _first(d, "metrics").update(value="abc"), "refused a row"),
    (lambda d: _first(d, "reviews").update(author=None), "refused a row"),
    (lambda d: _first(d, "runs").update(uuid=None), "has no uuid"),
    (lambda d: _first(d, "runs").update(execution="no-such-execution"), "does not hold"),
    (lambda d: _first(d, "runs").pop("status"), "has no status"),
    (lambda d: d["sources"].update(templates=["x"]), "'sources' is not the text of its files"),
], ids=["hypotheses-null", "registry-empty", "metric-text", "review-author-null", "run-uuid-null",
        "run-unknown-execution", "run-status-missing", "sources-list"])
def test_a_damaged_bundle_is_refused_whole_and_writes_nothing(workbench_dir: Path, seed_csv: Path, cli, edit,
                                                              fragment: str):
    """Each of these imported every row and then crashed with a traceback (hypotheses: null), crashed in the
    database (a metric's text value, a review without author), or was taken and kept wrong (a run without uuid
    was added again at each import; a run of an execution the bundle lacks; an empty registry skipped the
    conflict check)."""
    bad = _edited(_bundle(workbench_dir, seed_csv, cli), edit)
    code, _, err = cli("db", "upgrade", "--db", str(workbench_dir / "b.duckdb"))
    assert code == 0, err
    existing = workbench_dir / "b.duckdb"
    before = _sha(existing)
    _refused(cli, "bundle", "import", str(bad), "--db", str(existing), "--root", str(workbench_dir), fragment=fragment)
    assert _sha(existing) == before
    fresh = workbench_dir / "fresh.duckdb"
    _refused(cli, "bundle", "import", str(bad), "--db", str(fresh), "--root", str(workbench_dir), fragment=fragment)
    assert not fresh.exists()


def test_evidence_both_stores_imported_is_not_counted_twice(workbench_dir: Path, seed_csv: Path, cli):
    """Each `wb import evidence` gives its runs new uuids: a bundle from a store that imported the same CSV
    added the same historical runs again (the treatment arm read 51/240 from 3 runs, two of them one run)."""
    bundle = _bundle(workbench_dir, seed_csv, cli)
    b = str(workbench_dir / "b.duckdb")
    code, _, err = cli("import", "evidence", str(seed_csv), "--db", b, "--root", str(workbench_dir))
    assert code == 0, err
    before = _rows(b)["runs"]
    code, out, err = cli("bundle", "import", str(bundle), "--db", b, "--root", str(workbench_dir), "--json")
    assert code == 0, err
    after = _rows(b)["runs"]
    labels = [r["label"] for r in after if r["source"] == "import"]
    assert len(labels) == len(set(labels)) == len([r for r in before if r["source"] == "import"])
    assert json.loads(out)["added"]["verdicts"] == 1


def test_a_bundle_of_a_hypothesis_this_workbench_does_not_define_is_refused(workbench_dir: Path, seed_csv: Path,
                                                                           cli):
    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), lambda d: (
        d.update(hypotheses=["wedge-x"]), d["registry"]["hypotheses"].update(
            {"wedge-x": d["registry"]["hypotheses"].pop("wedge-confound")})))
    fresh = workbench_dir / "fresh.duckdb"
    _refused(cli, "bundle", "import", str(bundle), "--db", str(fresh), "--root", str(workbench_dir),
             fragment="does not define")
    code, out, _ = cli("bundle", "import", str(bundle), "--db", str(fresh), "--root", str(workbench_dir), "--json")
    assert code == 2 and json.loads(out)["error"]["where"] == str(bundle), out
    assert not fresh.exists()


def test_a_fingerprint_entry_named_like_a_secret_is_masked_as_a_bundle_is_imported(workbench_dir: Path,
                                                                                   seed_csv: Path, cli):
    """wb masks a fingerprint entry named like a secret (HF_TOKEN) as it records a run; a bundle another tool or an
    older wb wrote may hold the value, and the import stored it as it came (wb runs show printed the token)."""
    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), lambda d: [r.update(fingerprint_json=json.dumps(
        {"HF_TOKEN": "hf_NotForTheStore", "gpu": "H200"})) for r in d["store"]["runs"]])
    b = workbench_dir / "b.duckdb"
    code, _, err = cli("bundle", "import", str(bundle), "--db", str(b), "--root", str(workbench_dir))
    assert code == 0, err
    runs = _rows(str(b))["runs"]
    assert runs and all(json.loads(r["fingerprint_json"]) == {"HF_TOKEN": "<redacted>", "gpu": "H200"} for r in runs)
    assert b"NotForTheStore" not in b.read_bytes()


def test_a_rendered_config_holding_a_token_is_masked_on_import_export_and_show(workbench_dir: Path, seed_csv: Path,
                                                                               cli):
    """A run's rendered config with a secret-named entry (`export HF_TOKEN=hf_…`), from a bundle another tool or
    an older wb wrote, or from a store an older wb kept, was imported, exported and shown as it was."""
    config = "export HF_TOKEN=hf_NotForAnyone1\nindex_k_dtype=bf16\n"
    bundle = _edited(_bundle(workbench_dir, seed_csv, cli),
                     lambda d: [r.update(rendered_config=config) for r in d["store"]["runs"]])
    b = workbench_dir / "b.duckdb"
    code, _, err = cli("bundle", "import", str(bundle), "--db", str(b), "--root", str(workbench_dir))
    assert code == 0, err
    runs = _rows(str(b))["runs"]
    assert runs and all(r["rendered_config"] == "export HF_TOKEN=<redacted>\nindex_k_dtype=bf16\n" for r in runs)
    assert b"NotForAnyone1" not in b.read_bytes()

    import duckdb

    older = _seeded_store(workbench_dir, seed_csv, cli, name="older.duckdb")
    with duckdb.connect(older) as con:  # as a wb that did not mask it kept it
        con.execute("UPDATE runs SET rendered_config = ?", [config])
    out = workbench_dir / "older.wbundle"
    code, _, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--db", older,
                       "--root", str(workbench_dir))
    assert code == 0, err
    assert b"NotForAnyone1" not in gzip.decompress(out.read_bytes())
    code, shown, err = cli("runs", "show", "1", "--json", "--db", older, "--root", str(workbench_dir))
    assert code == 0, err
    assert "HF_TOKEN=<redacted>" in shown and "NotForAnyone1" not in shown


def _pg_state(url: str) -> tuple[list, list]:
    """The database's relations (tables, sequences, indexes) and each wb table's row count."""
    from sqlalchemy import create_engine, pool, text

    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            relations = sorted(tuple(r) for r in conn.execute(text(
                "SELECT relname, relkind FROM pg_class JOIN pg_namespace n ON n.oid = relnamespace "
                "WHERE nspname = 'public'")))
            tables = [name for name, kind in relations if kind == "r"]
            counts = [(t, conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one()) for t in tables]
    finally:
        engine.dispose()
    return relations, counts


@pytest.mark.parametrize("edit,fragment", [
    (lambda d: _first(d, "metrics").update(value="abc"), "refused a row"),
    (lambda d: _first(d, "runs").update(uuid=None), "has no uuid"),
    (lambda d: _first(d, "reviews").update(author=None), "refused a row"),
], ids=["metric-text", "run-uuid-null", "review-author-null"])
def test_a_damaged_bundle_leaves_an_empty_postgresql_database_as_it_was(workbench_dir: Path, seed_csv: Path, cli,
                                                                        pg_server, edit, fragment: str):
    """Refused, but the import had created wb's schema (tables, sequences, alembic_version) in the empty
    database first, in a transaction of its own: a refusal must leave the database as it found it."""
    bad = _edited(_bundle(workbench_dir, seed_csv, cli), edit)
    truncated = workbench_dir / "cut.wbundle"
    truncated.write_bytes(bad.read_bytes()[:-40])
    empty = pg_server.create_database()
    for bundle, why in ((bad, fragment), (truncated, "ends early")):
        _refused(cli, "bundle", "import", str(bundle), "--db", empty, "--root", str(workbench_dir), fragment=why)
        assert _pg_state(empty) == ([], [])
    used = pg_server.create_database()
    code, _, err = cli("db", "upgrade", "--db", used)
    assert code == 0, err
    before = _pg_state(used)
    _refused(cli, "bundle", "import", str(bad), "--db", used, "--root", str(workbench_dir), fragment=fragment)
    assert _pg_state(used) == before
    code, _, err = cli("bundle", "import", str(_bundle(workbench_dir, seed_csv, cli)), "--db", empty,
                       "--root", str(workbench_dir))
    assert code == 0, err  # the same database takes a sound bundle, schema and all
    assert ("alembic_version", "r") in _pg_state(empty)[0]


def _with_log(doc: dict, content: bytes, sha_of: bytes) -> None:
    """A run's log in the bundle: its artifact row and its blob, which holds `content` but is addressed (and named by
    the artifact) by the sha256 of `sha_of`."""
    import base64
    import hashlib
    import zlib

    sha = hashlib.sha256(sha_of).hexdigest()
    run = _first(doc, "runs")["uuid"]
    doc["store"]["artifacts"].append({"run": run, "name": "log", "path": "log.txt", "sha256": sha,
                                      "size_bytes": len(sha_of)})
    doc["store"]["artifact_blobs"].append({"sha256": sha, "size_bytes": len(sha_of), "compression": "zlib",
                                           "data": base64.b64encode(zlib.compress(content)).decode("ascii")})


def test_an_artifact_whose_content_is_not_its_sha256_is_refused_and_the_true_one_still_imports(
        workbench_dir: Path, seed_csv: Path, cli):
    """An artifact's content is addressed by its sha256, and an import skips a blob the store holds by that hash:
    a bundle whose blob held other bytes than its hash (edited, or damaged in a way gzip's CRC does not catch) was
    imported as it came, and that wrong content then stood for every later bundle's true one."""
    bundle = _bundle(workbench_dir, seed_csv, cli)
    true = _edited(bundle, lambda d: _with_log(d, b"decode ok\n", b"decode ok\n")).rename(
        workbench_dir / "true.wbundle")
    forged = _edited(bundle, lambda d: _with_log(d, b"nothing to see\n", b"decode ok\n"))
    b = workbench_dir / "b.duckdb"
    code, _, err = cli("db", "upgrade", "--db", str(b))
    assert code == 0, err
    before = _sha(b)
    _refused(cli, "bundle", "import", str(forged), "--db", str(b), "--root", str(workbench_dir), fragment="sha256")
    assert _sha(b) == before
    code, _, err = cli("bundle", "import", str(true), "--db", str(b), "--root", str(workbench_dir))
    assert code == 0, err
    store = open_store(str(b), read_only=True)
    try:
        assert store.export_rows(["wedge-confound"])["artifact_blobs"] != []
    finally:
        store.dispose()


def _keys(tmp_path: Path, *names: str) -> dict[str, Path]:
    """A fresh ed25519 key pair per name (real ssh-keygen), and an allowed-signers file trusting the first."""
    import subprocess

    keys = {}
    for name in names:
        key = tmp_path / f"id_{name}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
        keys[name] = key
    public = keys[names[0]].with_suffix(".pub").read_text().split()[:2]
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"{names[0]}@example.com {' '.join(public)}\n")
    keys["allowed"] = allowed
    return keys


def test_a_signed_bundle_imports_with_its_signer_named(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """A bundle named who made it but anyone could write that name: --sign signs it with an SSH key, and
    --signers imports it only when the signature verifies by a trusted key, saying whose."""
    keys = _keys(tmp_path, "ada")
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out, b, flags = workbench_dir / "w.wbundle", str(workbench_dir / "b.duckdb"), ["--root", str(workbench_dir)]
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--sign", str(keys["ada"]),
                          "--db", a, *flags)
    assert code == 0, err
    assert said.rstrip().endswith(f"signed: {out}.sig)"), said
    assert Path(f"{out}.sig").read_text().startswith("-----BEGIN SSH SIGNATURE-----")
    code, said, err = cli("bundle", "import", str(out), "--signers", str(keys["allowed"]), "--db", b, "--json",
                          *flags)
    assert code == 0, err
    doc = json.loads(said)
    assert doc["signed_by"]["principal"] == "ada@example.com" and doc["signed_by"]["key"].startswith("ED25519 key ")
    assert doc["added"]["verdicts"] == 1


def _sign(data: Path, key: Path, namespace: str = "wb-bundle") -> None:
    import subprocess

    with open(data, "rb") as f:
        sig = subprocess.run(["ssh-keygen", "-Y", "sign", "-n", namespace, "-f", str(key)], stdin=f,
                             capture_output=True, check=True).stdout
    Path(f"{data}.sig").write_bytes(sig)


@pytest.mark.parametrize("case, fragment", [
    ("edited after signing", "does not verify"),
    ("signed by an untrusted key", "not a signature by a key of"),
    ("signed for git, not for a bundle", "does not verify"),
    ("no signature", "is not signed"),
    ("a signature that is no signature", "not a signature by a key of"),
])
def test_a_bundle_whose_signature_fails_is_refused_and_nothing_is_written(workbench_dir: Path, seed_csv: Path,
                                                                            cli, tmp_path: Path, case: str,
                                                                            fragment: str):
    keys = _keys(tmp_path, "ada", "mallory")
    bundle = _bundle(workbench_dir, seed_csv, cli)
    if case == "edited after signing":
        _sign(bundle, keys["ada"])
        edited = _edited(bundle, lambda doc: _first(doc, "verdicts").update(verdict="supported"))
        bundle.write_bytes(edited.read_bytes())
    elif case == "signed by an untrusted key":
        _sign(bundle, keys["mallory"])
    elif case == "signed for git, not for a bundle":
        _sign(bundle, keys["ada"], namespace="git")
    elif case == "a signature that is no signature":
        Path(f"{bundle}.sig").write_text("-----BEGIN SSH SIGNATURE-----\nnonsense\n")
    db = workbench_dir / "b.duckdb"
    _refused(cli, "bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
             "--root", str(workbench_dir), fragment=fragment)
    assert not db.exists()


def test_signing_with_a_missing_key_writes_nothing(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "w.wbundle"
    _refused(cli, "bundle", "export", "wedge-confound", "-o", str(out), "--sign", str(tmp_path / "nokey"), "--db", a,
             "--root", str(workbench_dir), fragment="--sign")
    assert not out.exists() and not Path(f"{out}.sig").exists()
    code, _, err = cli("bundle", "import", str(_bundle(workbench_dir, seed_csv, cli)), "--signers",
                       str(tmp_path / "none"), "--db", str(workbench_dir / "b.duckdb"), "--root", str(workbench_dir))
    assert code == 2 and "--signers" in err and not (workbench_dir / "b.duckdb").exists(), err


def test_an_unsigned_export_drops_the_stale_signature_and_an_unchecked_one_is_said(workbench_dir: Path,
                                                                                   seed_csv: Path, cli,
                                                                                   tmp_path: Path):
    """A signature beside a bundle exported again unsigned signed the file it replaced: it goes. One beside a
    bundle imported without --signers was not checked, and the import says so."""
    keys = _keys(tmp_path, "ada")
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out, flags = workbench_dir / "w.wbundle", ["--db", a, "--root", str(workbench_dir)]
    assert cli("bundle", "export", "wedge-confound", "-o", str(out), "--sign", str(keys["ada"]), *flags)[0] == 0
    code, said, err = cli("bundle", "import", str(out), "--db", str(workbench_dir / "b.duckdb"),
                          "--root", str(workbench_dir))
    assert code == 0 and f"its signature {out}.sig was not checked" in said, (said, err)
    code, said, err = cli("bundle", "import", str(out), "--db", str(workbench_dir / "b.duckdb"),
                          "--root", str(workbench_dir))
    assert code == 0 and said.startswith(f"nothing new in {out}: the store holds every row of it (wedge-confound; "
                                         f"its signature {out}.sig was not checked"), said
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", str(out), *flags)
    assert code == 0 and f"the old {out}.sig, which signed the file replaced, was removed" in said, (said, err)
    assert out.exists() and not Path(f"{out}.sig").exists()


def test_a_principal_with_a_space_verifies(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """ssh-keygen prints one principal a line, and an allowed-signers principal may hold a space (quoted):
    split on whitespace, a good signature by a trusted key was refused as 'the file changed'."""
    keys = _keys(tmp_path, "ada")
    public = keys["ada"].with_suffix(".pub").read_text().split()[:2]
    keys["allowed"].write_text(f"\"ada lovelace@example.com\" {' '.join(public)}\n")
    assert _signed_import(workbench_dir, seed_csv, cli, keys) == "ada lovelace@example.com"


@pytest.mark.parametrize("case, fragment", [
    ("a folder", "not a regular file"),
    ("a fifo", "not a regular file"),
    ("huge", "larger than"),
])
def test_a_signature_that_is_no_small_file_is_refused_before_ssh_keygen_reads_it(workbench_dir: Path,
                                                                                 seed_csv: Path, cli,
                                                                                 tmp_path: Path, case: str,
                                                                                 fragment: str):
    """ssh-keygen read a FILE.sig of any size (a 2 GB one: minutes of CPU, then a traceback at the timeout), and
    a FIFO or folder there was said to be 'no FILE.sig'. The signature is read once, bounded, by wb."""
    import os

    keys = _keys(tmp_path, "ada")
    bundle = _bundle(workbench_dir, seed_csv, cli)
    sig = Path(f"{bundle}.sig")
    if case == "a folder":
        sig.mkdir()
    elif case == "a fifo":
        os.mkfifo(sig)
    else:
        with open(sig, "wb") as f:
            f.truncate(2 * 1024**3)  # sparse: no disk used
    db = workbench_dir / "b.duckdb"
    _refused(cli, "bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
             "--root", str(workbench_dir), fragment=fragment)
    assert not db.exists()


@pytest.mark.parametrize("keygen", ["#!/bin/sh\nexec sleep 30\n", "not a program\n"], ids=["hangs", "cannot-run"])
def test_an_ssh_keygen_that_hangs_or_cannot_run_is_an_error_not_a_traceback(workbench_dir: Path, seed_csv: Path,
                                                                           cli, tmp_path: Path, monkeypatch,
                                                                           keygen: str):
    import workbench.team.signing as signing

    keys = _keys(tmp_path, "ada")
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ssh-keygen").write_text(keygen)
    (fake / "ssh-keygen").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    monkeypatch.setattr(signing, "VERIFY_TIMEOUT_S", 0.3)
    db = workbench_dir / "b.duckdb"
    _refused(cli, "bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
             "--root", str(workbench_dir), fragment="ssh-keygen")
    assert not db.exists()
    if keygen.startswith("not"):  # signing has no time limit (a passphrase may be asked): only the one that fails
        _refused(cli, "bundle", "export", "wedge-confound", "-o", str(workbench_dir / "n.wbundle"), "--sign",
                 str(keys["ada"]), "--db", _seeded_store(workbench_dir, seed_csv, cli),
                 "--root", str(workbench_dir), fragment="ssh-keygen")
        assert not (workbench_dir / "n.wbundle").exists()


def test_a_folder_where_the_signature_goes_is_an_error_and_nothing_is_exported(workbench_dir: Path,
                                                                              seed_csv: Path, cli,
                                                                              tmp_path: Path):
    keys = _keys(tmp_path, "ada")
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "w.wbundle"
    Path(f"{out}.sig").mkdir()
    for sign in (["--sign", str(keys["ada"])], []):
        _refused(cli, "bundle", "export", "wedge-confound", "-o", str(out), *sign, "--db", a,
                 "--root", str(workbench_dir), fragment=f"{out}.sig")
        assert not out.exists() and Path(f"{out}.sig").is_dir()


@pytest.mark.parametrize("case, reason", [
    ("edited after signing", "incorrect signature"),
    ("signed for git, not for a bundle", "namespace does not match"),
])
def test_a_signature_that_does_not_verify_says_ssh_keygens_reason(workbench_dir: Path, seed_csv: Path, cli,
                                                                   tmp_path: Path, case: str, reason: str):
    """ssh-keygen -Y verify says why on one line and 'Could not verify signature.' after it: the error quoted
    the last line, the same for a file edited after signing and a signature made for git."""
    keys = _keys(tmp_path, "ada")
    bundle = _bundle(workbench_dir, seed_csv, cli)
    if case == "edited after signing":
        _sign(bundle, keys["ada"])
        bundle.write_bytes(_edited(bundle, lambda doc: _first(doc, "verdicts").update(verdict="supported"))
                           .read_bytes())
    else:
        _sign(bundle, keys["ada"], namespace="git")
    code, _, err = cli("bundle", "import", str(bundle), "--signers", str(keys["allowed"]),
                       "--db", str(workbench_dir / "b.duckdb"), "--root", str(workbench_dir))
    assert code == 2 and "does not verify" in err and reason in err, err


def test_a_passphrase_key_signs_without_a_terminal_from_standard_input(workbench_dir: Path, seed_csv: Path, cli,
                                                                        tmp_path: Path):
    """ssh-keygen read the bundle's bytes, piped to its stdin, as the key's passphrase when there was no terminal:
    the signature failed with "incorrect passphrase". It signs a private copy now, and stdin stays the user's."""
    import subprocess
    import sys

    key = tmp_path / "id_ada"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret pass", "-C", "ada", "-f", str(key)],
                   check=True)
    db = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "w.wbundle"
    wb = [sys.executable, "-m", "workbench.cli.main", "bundle", "export", "wedge-confound", "-o", str(out),
          "--sign", str(key), "--db", db, "--root", str(workbench_dir)]
    done = subprocess.run(wb, input=b"s3cret pass\n", capture_output=True, timeout=120, start_new_session=True)
    assert done.returncode == 0, done.stderr
    assert Path(f"{out}.sig").read_bytes().startswith(b"-----BEGIN SSH SIGNATURE-----")


@pytest.mark.parametrize("line, said", [
    ("garbage line here", "invalid key"),
    ("ada@example.com {blob}", "missing key"),
    ("ada@example.com ssh-ed25519 {truncated}", "invalid key"),
], ids=["garbage", "no-key-type", "truncated-base64"])
def test_a_malformed_allowed_signers_line_is_named(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path,
                                                   line: str, said: str):
    """ssh-keygen skips a line it cannot read, then says "No principal matched": the import was refused as if the
    signer were untrusted, though the file that should trust it is broken."""
    keys = _keys(tmp_path, "ada")
    blob = keys["ada"].with_suffix(".pub").read_text().split()[1]
    keys["allowed"].write_text("# the team\n" + line.format(blob=blob, truncated=blob[:25]) + "\n")
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    db = workbench_dir / "b.duckdb"
    code, out, err = cli("bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
                         "--root", str(workbench_dir))
    assert code == 2 and err.startswith("Error: ") and "Traceback" not in err, (out, err)
    assert f"ssh-keygen refused {keys['allowed']}:2: {said}" in err and "No principal matched" not in err, err
    assert not db.exists()


@pytest.mark.parametrize("line, said", [
    ("garbage", "missing key"),
    ('ada@old bogusopt="x" {public}', "bad options: unknown key option"),
    ("bob@example.com ssh-ed25519 {truncated}", "invalid key"),
], ids=["garbage", "unknown-option", "truncated-key"])
def test_a_line_ssh_keygen_cannot_read_refuses_the_import_though_another_line_holds_the_key(
        workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path, line: str, said: str):
    """ssh-keygen skips a line it cannot read: the import went on with exit 0 and no word when another line held
    the key, though the file does not say what its author meant (a teammate's key, a restriction, lost)."""
    keys = _keys(tmp_path, "ada")
    public = " ".join(keys["ada"].with_suffix(".pub").read_text().split()[:2])
    bad = line.format(public=public, truncated=public.split()[1][:25])
    keys["allowed"].write_text(f"# the team\n{bad}\nada@example.com {public}\n")
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    db = workbench_dir / "b.duckdb"
    args = ["bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
            "--root", str(workbench_dir)]
    _refused(cli, *args, fragment=f"ssh-keygen cannot read {keys['allowed']}:2: {said}")
    code, out, err = cli(*args, "--json")
    assert code == 2 and f"{keys['allowed']}:2: {said}" in out + err, (out, err)
    assert not db.exists()


def test_blank_comment_and_expired_lines_beside_the_key_are_no_reason_to_refuse(workbench_dir: Path,
                                                                               seed_csv: Path, cli, tmp_path: Path):
    """ssh-keygen 9.2 says "missing key" of an empty line, and names an expired line holding the key: neither is a
    line it cannot read, and a later line allows the key."""
    keys = _keys(tmp_path, "ada")
    public = " ".join(keys["ada"].with_suffix(".pub").read_text().split()[:2])
    keys["allowed"].write_text(f"# the team\n\n   \nada@old valid-before=\"20200101\" {public}\n\n"
                               f"ada@example.com {public}\n\n")
    assert _signed_import(workbench_dir, seed_csv, cli, keys) == "ada@example.com"


def test_a_key_allowed_for_bundles_on_a_later_line_than_one_for_git_verifies(workbench_dir: Path, seed_csv: Path,
                                                                             cli, tmp_path: Path):
    """ssh-keygen's find-principals names only the first line holding the key: a git-only line above the line that
    allows it for bundles had the import refused."""
    keys = _keys(tmp_path, "ada")
    public = " ".join(keys["ada"].with_suffix(".pub").read_text().split()[:2])
    keys["allowed"].write_text(f'ada@git namespaces="git" {public}\n'
                               f'ada@example.com namespaces="wb-bundle" {public}\n')
    assert _signed_import(workbench_dir, seed_csv, cli, keys) == "ada@example.com"


def test_a_key_allowed_only_for_git_is_refused_saying_what_to_change(workbench_dir: Path, seed_csv: Path, cli,
                                                                     tmp_path: Path):
    keys = _keys(tmp_path, "ada")
    public = " ".join(keys["ada"].with_suffix(".pub").read_text().split()[:2])
    keys["allowed"].write_text(f'ada@example.com namespaces="git" {public}\n')
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    db = workbench_dir / "b.duckdb"
    err = _refused(cli, "bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
                   "--root", str(workbench_dir), fragment=f'{keys["allowed"]}:1')
    assert 'namespaces="wb-bundle"' in err and "not for wb-bundle" in err, err
    # the line is readable: ssh-keygen refused it for this namespace, and said nothing else of the file
    assert "missing key" not in err and "cannot read" not in err and "also refused" not in err, err
    assert not db.exists()


def test_bundle_files_get_the_mode_a_plain_write_gives(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """A bundle is written to be shared, by a temp file renamed into place: it and its signature kept the temp file's
    mode, 0600, whatever the umask. A new file gets 0666 less the umask; one replaced keeps its own mode."""
    import os
    import stat

    keys = _keys(tmp_path, "ada")
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "w.wbundle"
    old = os.umask(0o022)
    try:
        assert cli("bundle", "export", "wedge-confound", "-o", str(out), "--sign", str(keys["ada"]), "--db", a,
                   "--root", str(workbench_dir))[0] == 0
        assert [stat.S_IMODE(p.stat().st_mode) for p in (out, Path(f"{out}.sig"))] == [0o644, 0o644]
        out.chmod(0o640)
        code, _, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--db", a,
                           "--root", str(workbench_dir))
        assert code == 0, err
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_an_export_of_an_execution_still_running_says_so(workbench_dir: Path, seed_csv: Path, cli, monkeypatch):
    """An execution exported while it ran (no end recorded) carries only the runs made so far: the export said
    nothing. It warns on stderr, naming the execution, and --json lists it."""
    from workbench.store import records

    a = _seeded_store(workbench_dir, seed_csv, cli)
    store = open_store(a)
    try:
        with store.session() as session:
            ex = records.create_execution(session, hypothesis_id="wedge-confound", experiment_id="agent-repro",
                                          experiment_version=1, profile="sim", target="sim", mode="fixed")
            ex_id, ex_uuid = ex.id, ex.uuid
    finally:
        store.dispose()
    out, flags = workbench_dir / "w.wbundle", ["--db", a, "--root", str(workbench_dir)]
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", str(out), *flags)
    assert code == 0 and said.startswith("exported wedge-confound"), (said, err)
    assert err.startswith(f"Warning: execution {ex_id} of wedge-confound was still running"), err
    assert "incomplete" in err and err.count("\n") == 1, err
    # When it started, to the second as every time shown (it gave the microseconds).
    assert re.search(r" \(started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00)?\), no end", err), err
    # On a terminal the warning ran on whole (over 200 characters): it wraps between words, as the CLI's lines do.
    monkeypatch.setattr("workbench.cli._common.stderr_is_tty", lambda: True)
    code, _, shown = cli("bundle", "export", "wedge-confound", "-o", str(out), *flags, env={"COLUMNS": "80"})
    assert code == 0 and shown.split() == err.split() and shown.count("\n") > 1, shown
    assert max(len(line) for line in shown.splitlines()) <= 80, shown
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--json", *flags)
    assert code == 0, err
    running = json.loads(said)["unfinished_executions"]
    assert [(e["id"], e["uuid"], e["hypothesis"], e["status"]) for e in running] == [
        (ex_id, ex_uuid, "wedge-confound", "running")]


def test_an_expired_allowed_signers_line_is_named_as_expired_not_as_malformed(workbench_dir: Path, seed_csv: Path,
                                                                              cli, tmp_path: Path):
    """A line past its valid-before holds the key, and ssh-keygen reads it: the refusal called the file malformed
    and said no line it can read holds the key."""
    keys = _keys(tmp_path, "ada")
    public = " ".join(keys["ada"].with_suffix(".pub").read_text().split()[:2])
    keys["allowed"].write_text(f'ada@example.com valid-before="20200101" {public}\n')
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    db = workbench_dir / "b.duckdb"
    err = _refused(cli, "bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
                   "--root", str(workbench_dir), fragment=f'{keys["allowed"]}:1: key has expired')
    assert "malformed" not in err and "cannot read" not in err and "no line it can read" not in err, err
    assert "valid-before" in err, err
    assert not db.exists()


def test_a_key_on_many_lines_refused_for_bundles_is_looked_up_a_bounded_number_of_times(
        workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path, monkeypatch):
    """Each lookup set aside one principal's lines: a file holding the key under N git-only principals ran ssh-keygen
    2N times (hours for 100k lines), and the refusal listed every line."""
    from workbench.team import signing

    keys = _keys(tmp_path, "ada")
    public = " ".join(keys["ada"].with_suffix(".pub").read_text().split()[:2])
    keys["allowed"].write_text("".join(f'p{i}@example.com namespaces="git" {public}\n' for i in range(60)))
    bundle = _bundle(workbench_dir, seed_csv, cli)
    _sign(bundle, keys["ada"])
    runs = []
    real = signing._keygen
    monkeypatch.setattr(signing, "_keygen", lambda args, **kw: runs.append(args) or real(args, **kw))
    db = workbench_dir / "b.duckdb"
    code, out, err = cli("bundle", "import", str(bundle), "--signers", str(keys["allowed"]), "--db", str(db),
                         "--root", str(workbench_dir))
    assert code == 2 and err.startswith("Error: ") and "not for wb-bundle" in err, (out, err)
    assert len(runs) <= 2 * signing.MAX_LOOKUPS, len(runs)
    assert err.count(f"{keys['allowed']}:") <= 6 and "more" in err and len(err) < 2000, err
    assert not db.exists()


def test_a_new_bundle_file_reads_the_umask_without_setting_it(workbench_dir: Path, seed_csv: Path, cli,
                                                              monkeypatch):
    """The umask was read by setting it and setting it back: another thread creating a file meanwhile got 0o022.
    Linux tells it in /proc/self/status; the umask is set only where nothing tells it."""
    import os
    import stat

    from workbench.team import bundle

    if not Path("/proc/self/status").read_text().count("Umask:"):
        pytest.skip("no Umask: line in /proc/self/status")
    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "u.wbundle"
    old = os.umask(0o027)
    try:
        def umask(mask: int) -> int:
            raise AssertionError(f"os.umask({mask:o}) called")

        monkeypatch.setattr(bundle.os, "umask", umask)
        code, _, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--db", a,
                           "--root", str(workbench_dir))
        monkeypatch.undo()
        assert code == 0, err
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)


@pytest.mark.parametrize("status", ["interrupted", "failed"])
def test_an_export_of_an_execution_that_stopped_unfinished_says_so(workbench_dir: Path, seed_csv: Path, cli,
                                                                  status: str):
    """An interrupted or failed execution holds only the runs made before it stopped, and a --resume finishes it
    (a later bundle then completes it on import), as one still running: the export warned of the running one only."""
    from datetime import datetime, timezone

    from workbench.store import records

    a = _seeded_store(workbench_dir, seed_csv, cli)
    store = open_store(a)
    try:
        with store.session() as session:
            ex = records.create_execution(session, hypothesis_id="wedge-confound", experiment_id="agent-repro",
                                          experiment_version=1, profile="sim", target="sim", mode="fixed")
            ex_id, ex_uuid = ex.id, ex.uuid
        store.update_execution(ex_id, status=status, ended_at=datetime.now(timezone.utc), error=status)
    finally:
        store.dispose()
    out, flags = workbench_dir / "w.wbundle", ["--db", a, "--root", str(workbench_dir)]
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", str(out), *flags)
    assert code == 0 and said.startswith("exported wedge-confound"), (said, err)
    assert err.startswith(f"Warning: execution {ex_id} of wedge-confound {status}"), err
    assert "incomplete" in err and "--resume" in err and err.count("\n") == 1, err
    code, said, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--json", *flags)
    assert code == 0, err
    unfinished = json.loads(said)["unfinished_executions"]
    assert [(e["id"], e["uuid"], e["status"]) for e in unfinished] == [(ex_id, ex_uuid, status)]


def test_a_replaced_bundle_file_keeps_its_permission_bits_but_not_setuid(workbench_dir: Path, seed_csv: Path, cli):
    """A file replaced kept every mode bit, set-user-ID and set-group-ID too, which a plain write by its owner clears
    (not by root): a bundle written over a setuid file stayed setuid."""
    import stat

    a = _seeded_store(workbench_dir, seed_csv, cli)
    out = workbench_dir / "s.wbundle"
    out.write_bytes(b"old")
    out.chmod(0o6750)
    if stat.S_IMODE(out.stat().st_mode) != 0o6750:
        pytest.skip("this file system does not keep set-user-ID bits")
    code, _, err = cli("bundle", "export", "wedge-confound", "-o", str(out), "--db", a, "--root", str(workbench_dir))
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o750


def _empty_workbench(tmp_path: Path) -> Path:
    """A teammate's new workbench: no hypotheses, no experiments."""
    root = tmp_path / "teammate"
    (root / "experiments").mkdir(parents=True)
    (root / "hypotheses.yaml").write_text("format: 1\nhypotheses: []\n")
    return root


def test_bundle_show_says_what_a_bundle_carries_and_what_this_workbench_lacks(workbench_dir: Path, seed_csv: Path,
                                                                              cli, tmp_path: Path, monkeypatch):
    bundle = _bundle(workbench_dir, seed_csv, cli)
    root = _empty_workbench(tmp_path)
    code, out, err = cli("bundle", "show", str(bundle), "--root", str(root))
    assert code == 0, err
    assert "hypothesis wedge-confound: not defined in this workbench" in out, out
    assert "experiment agent-repro version 1: not defined in this workbench" in out, out
    assert "runs: 3" in out, out
    # On an 80-column terminal its lines ran on whole (a hypothesis with its claim, over 120 characters): they
    # wrap between words there, as the CLI's other lines do; piped, one line an item (above).
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, shown, err = cli("bundle", "show", str(bundle), "--root", str(root), env={"COLUMNS": "80"})
    assert code == 0 and shown.split() == out.split(), shown
    assert max(len(line) for line in out.splitlines()) > 80, out
    assert all(len(line) <= 80 for line in shown.splitlines() if len(line.split()) > 1), shown  # a path runs on
    monkeypatch.undo()
    code, out, err = cli("bundle", "show", str(bundle), "--root", str(workbench_dir), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["hypotheses"] == [{"id": "wedge-confound", "experiment": "agent-repro", "here": "same",
                                  "claim": doc["hypotheses"][0]["claim"]}], doc["hypotheses"]


def test_bundle_show_extract_seeds_an_empty_workbench(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """A bundle carries the hypotheses and experiments as they were, but an empty workbench refused it and no
    command wrote them out: --extract DIR writes them into a new folder the bundle then imports into."""
    bundle = _bundle(workbench_dir, seed_csv, cli)
    root = _empty_workbench(tmp_path)
    code, out, err = cli("bundle", "import", str(bundle), "--root", str(root), "--db", str(root / "wb.duckdb"))
    assert code == 2 and "does not define" in err, (out, err)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(root))
    assert code == 0, err
    assert (seeded / "hypotheses.yaml").is_file() and (seeded / "experiments" / "agent-repro.yaml").is_file()
    code, out, err = cli("bundle", "import", str(bundle), "--root", str(seeded), "--db", str(seeded / "wb.duckdb"))
    assert code == 0, err
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--root", str(seeded), "--db",
                         str(seeded / "wb.duckdb"))
    assert code == 0 and "falsified" in out, (out, err)


def test_bundle_shows_next_command_quotes_its_paths(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """`next: wb bundle import FILE --root DIR` is a command to paste: a folder with a space in its name made it
    two words of the shell's (`--root /tmp/my` and a stray `seeded`)."""
    import shlex

    bundle = _bundle(workbench_dir, seed_csv, cli)
    seeded = tmp_path / "my seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded))
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("next: "))
    assert shlex.split(line.removeprefix("next: ").split(" (or copy")[0]) == [
        "wb", "bundle", "import", str(bundle), "--root", str(seeded)], line


def test_bundle_show_and_extract_work_outside_any_workbench(workbench_dir: Path, seed_csv: Path, cli,
                                                            tmp_path: Path, monkeypatch):
    """A teammate with no workbench yet reads a bundle and starts from it: neither needs a hypotheses.yaml (they
    said "no hypotheses.yaml in ... or any folder above it"); a definition is compared with none."""
    bundle = _bundle(workbench_dir, seed_csv, cli)
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    monkeypatch.chdir(nowhere)
    code, out, err = cli("bundle", "show", str(bundle))
    assert code == 0, err
    assert "hypothesis wedge-confound: no workbench here to compare with" in out, out
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(nowhere / "seeded"))
    assert code == 0, err
    assert (nowhere / "seeded" / "hypotheses.yaml").is_file(), out
    assert list(nowhere.iterdir()) == [nowhere / "seeded"]  # no store made


def test_extract_says_only_the_parent_link_was_left_out(workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """The hypothesis is written (with parent: null); only its link to a parent the bundle lacks is dropped, where
    the listing said the hypothesis was left out."""
    bundle = _bundle(workbench_dir, seed_csv, cli)
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(tmp_path / "seeded"), "--root",
                         str(workbench_dir))
    assert code == 0, err
    assert "left out hypothesis wedge-confound:" not in out, out
    assert ("left out the link of hypothesis wedge-confound to its parent hicache-bf16-race, which is not in the "
            "bundle (written with parent: null)") in out, out


def test_bundle_show_extract_never_writes_into_a_folder_that_holds_files(workbench_dir: Path, seed_csv: Path, cli,
                                                                          tmp_path: Path):
    bundle = _bundle(workbench_dir, seed_csv, cli)
    root = _empty_workbench(tmp_path)
    before = (root / "hypotheses.yaml").read_text()
    _refused(cli, "bundle", "show", str(bundle), "--extract", str(root), "--root", str(root),
             fragment=f"--extract {root}")
    assert (root / "hypotheses.yaml").read_text() == before and list((root / "experiments").iterdir()) == []


def test_bundle_show_extract_writes_the_template_files_and_the_text_as_written(workbench_dir: Path, seed_csv: Path,
                                                                              cli, tmp_path: Path):
    """--extract left out every profile rendered from a template file (the bundle did not carry it) and wrote the
    definitions from parsed data, every comment lost. The bundle now carries the files' text, secrets masked."""
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("  sim-ssh:\n", "  sim-ssh:\n    # HF_TOKEN: hf_NotInTheBundle1\n", 1))
    bundle = _bundle(workbench_dir, seed_csv, cli)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    template = seeded / "experiments" / "templates" / "serve_dsv4_prefill.sh.j2"
    assert template.read_text() == (workbench_dir / "experiments" / "templates" / template.name).read_text()
    written = (seeded / "experiments" / "agent-repro.yaml").read_text()
    assert written == exp.read_text().replace("hf_NotInTheBundle1", "<redacted>"), written
    assert "sglang-pd" not in out and "parsed data" not in out, out
    hypotheses = (seeded / "hypotheses.yaml").read_text()
    assert "# Three replicates per arm, not the experiment's two" in hypotheses, hypotheses  # a comment inside it
    assert "parent: null  # hicache-bf16-race: not in the bundle" in hypotheses, hypotheses
    code, out, err = cli("hypothesis", "validate", "--root", str(seeded))
    assert code == 0, (out, err)
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--root", str(seeded))
    assert code == 0 and "wedge-confound" in out, (out, err)
    code, out, err = cli("bundle", "import", str(bundle), "--root", str(seeded), "--db", str(seeded / "wb.duckdb"))
    assert code == 0, err  # the text written out is the test the bundle's verdicts are of


def test_bundle_show_extract_of_an_older_bundle_says_what_it_wrote_from_parsed_data(workbench_dir: Path,
                                                                                   seed_csv: Path, cli,
                                                                                   tmp_path: Path):
    """A bundle of an older wb carries no text (nor template files): still read (the format is the same), its
    definitions written from parsed data, and the listing says so rather than drop the comments silently."""
    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), lambda d: d.pop("sources", None))
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    assert "written from parsed data, its comments lost: hypothesis wedge-confound: the bundle carries no text" \
        in out, out
    assert "written from parsed data, its comments lost: experiment agent-repro" in out, out
    assert "left out experiment agent-repro profile sglang-pd" in out, out
    code, out, err = cli("hypothesis", "validate", "--root", str(seeded))
    assert code == 0, (out, err)


def test_bundle_show_extract_writes_no_template_file_outside_the_folder(workbench_dir: Path, seed_csv: Path, cli,
                                                                        tmp_path: Path):
    """A bundle is anyone's file: a template_file named `../../x` would be written outside the folder --extract
    names. It is not written, and its profile is left out, said so."""
    def escape(doc: dict) -> None:
        prof = doc["registry"]["experiments"]["agent-repro"]["profiles"]["sglang-pd"]
        prof["config"]["template_file"] = "../../outside.j2"
        doc["sources"]["templates"] = {"../../outside.j2": "x"}

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), escape)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    assert not (tmp_path / "outside.j2").exists() and "template file ../../outside.j2: it lies outside" in out, out
    assert "left out experiment agent-repro profile sglang-pd" in out, out


def test_each_hypothesis_entry_is_carried_as_written_or_not_at_all():
    """The text of each entry: the comments above it and inside it, up to its last value; an entry that reads as
    something else alone (an alias of another entry's anchor) is not carried as text (its parsed data is)."""
    from workbench.team.sources import entries

    text = ("format: 1\nhypotheses:\n  # about a\n  - id: a\n    hold: &held {hicache: on}\n    notes: |\n"
            "      # a line of the notes\n\n  - {id: b, claim: x}\n  - id: c\n    hold: *held\n# the end\n")
    assert entries(text) == {"a": "# about a\n- id: a\n  hold: &held {hicache: on}\n  notes: |\n"
                                  "    # a line of the notes\n",
                             "b": "- {id: b, claim: x}\n"}


@pytest.mark.parametrize("eid", ["../../outside", "templates/x", ".hidden", "Upper"])
def test_a_bundle_whose_experiment_id_is_no_id_is_refused_and_extract_writes_nothing(workbench_dir: Path,
                                                                                     seed_csv: Path, cli,
                                                                                     tmp_path: Path, eid: str):
    """A bundle is anyone's file: an experiment id `../../outside` was written by --extract as
    `experiments/../../outside.yaml`, outside the folder it names. An id the registry would refuse is damage."""
    def rename(doc: dict) -> None:
        doc["registry"]["experiments"][eid] = doc["registry"]["experiments"]["agent-repro"]

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), rename)
    seeded = tmp_path / "a" / "b" / "seeded"
    seeded.parent.mkdir(parents=True)
    _refused(cli, "bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir),
             fragment="not an id")
    assert not seeded.exists() and list((tmp_path / "a").rglob("*.yaml")) == []


def test_a_bundle_whose_experiment_is_no_mapping_is_refused(workbench_dir: Path, seed_csv: Path, cli):
    bundle = _edited(_bundle(workbench_dir, seed_csv, cli),
                     lambda d: d["registry"]["experiments"].update({"other": "text"}))
    _refused(cli, "bundle", "show", str(bundle), "--root", str(workbench_dir), fragment="other")


@pytest.mark.parametrize("names", [["agent-repro.yaml"], ["."], [""], ["a\x00b"], ["t", "t/x.j2"],
                                   ["templates/../agent-repro.yaml"], ["x" * 300]],
                         ids=["an-experiment-file", "the-folder", "empty", "nul", "a-template-s-folder",
                              "an-experiment-file-by-dots", "too-long"])
def test_bundle_show_extract_writes_no_template_file_over_another_file(workbench_dir: Path, seed_csv: Path, cli,
                                                                       tmp_path: Path, names: list[str]):
    """A template path equal to an experiment file was written, then the experiment over it (each said "wrote"); one
    naming the folder, another template's folder, or no file at all crashed with a traceback. Such a template is
    left out, its profile with it, and said so; the experiment file is the experiment's."""
    def clash(doc: dict) -> None:
        profiles = doc["registry"]["experiments"]["agent-repro"]["profiles"]
        for i, name in enumerate(names):
            prof = json.loads(json.dumps(profiles["sglang-pd"]))
            prof["config"]["template_file"] = name
            profiles[f"p{i}"] = prof
            doc["sources"]["templates"][name] = "PLANTED"

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), clash)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0 and "Traceback" not in err, (out, err)
    assert "left out experiment agent-repro profile p0" in out or "left out experiment agent-repro profile p1" in out
    assert "PLANTED" not in (seeded / "experiments" / "agent-repro.yaml").read_text()
    written = [line for line in out.splitlines() if line.startswith("wrote ")]
    assert len(written) == len(set(written)), out
    assert all(p.is_relative_to(seeded) for p in tmp_path.rglob("*") if p.name != "wbroot"
               and not p.is_relative_to(workbench_dir)), list(tmp_path.rglob("*"))
    code, out, err = cli("hypothesis", "validate", "--root", str(seeded))
    assert code == 0, (out, err)


def test_bundle_show_extract_writes_no_template_file_where_wb_reads_experiments(workbench_dir: Path, seed_csv: Path,
                                                                               cli, tmp_path: Path):
    """wb reads every experiments/*.yaml as an experiment: an edited bundle whose profile renders `planted.yaml`
    (or `templates/../.planted.yaml`) carrying an experiment's text had --extract write an experiment the bundle
    does not list, commands of its maker's choosing, loaded by every wb command there. Such a template is left
    out, its profile with it, said so."""
    planted = (workbench_dir / "experiments" / "agent-repro.yaml").read_text().replace("id: agent-repro",
                                                                                      "id: planted", 1)

    def plant(doc: dict) -> None:
        profiles = doc["registry"]["experiments"]["agent-repro"]["profiles"]
        for i, name in enumerate(["planted.yaml", "templates/../.planted.yaml"]):
            prof = json.loads(json.dumps(profiles["sglang-pd"]))
            prof["config"]["template_file"] = name
            profiles[f"p{i}"] = prof
            doc["sources"]["templates"][name] = planted

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), plant)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    assert sorted(p.name for p in (seeded / "experiments").iterdir()) == ["agent-repro.yaml", "templates"], out
    flat = " ".join(out.split())
    for name in ("planted.yaml", "templates/../.planted.yaml"):
        assert f"template file {name}: it would be read as an experiment definition" in flat, out
    assert "profile p0: its config's template_file planted.yaml is left out (said above)" in flat, out
    assert list(load_registry(seeded).experiments) == ["agent-repro"]


@pytest.mark.parametrize("entry", ["- id: injected\n  parent: hicache-bf16-race\n  claim: planted\n",
                                   "- id: wedge-confound\n  parent: hicache-bf16-race\n  claim: planted\n...\n"],
                         ids=["another-id", "reads-otherwise-in-the-file"])
def test_bundle_show_extract_writes_a_carried_text_only_where_it_is_the_definition_of_its_id(
        workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path, entry: str):
    """The text a bundle carries for wedge-confound or agent-repro was written out whatever it held: another
    hypothesis (or two), another experiment. A text that is not the entry (or file) of its id, alone or in the file
    written, is written from the bundle's parsed definition instead, said so."""
    def forge(doc: dict) -> None:
        doc["sources"]["hypotheses"]["wedge-confound"] = entry
        doc["sources"]["experiments"]["agent-repro"] = "format: 1\nid: planted\nversion: 1\n"

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), forge)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    hypotheses = yaml.safe_load((seeded / "hypotheses.yaml").read_text())["hypotheses"]
    assert [h["id"] for h in hypotheses] == ["wedge-confound"], hypotheses
    assert yaml.safe_load((seeded / "experiments" / "agent-repro.yaml").read_text())["id"] == "agent-repro"
    assert "written from parsed data, its comments lost: hypothesis wedge-confound" in out, out
    assert "written from parsed data, its comments lost: experiment agent-repro" in out, out


def test_bundle_show_extract_of_a_bundle_holding_a_secret_writes_it_masked(workbench_dir: Path, seed_csv: Path, cli,
                                                                          tmp_path: Path):
    """A bundle of a wb older than its masking holds a token as it was written (its text too, if edited so):
    --extract wrote it into the new folder, from where it is copied into a workbench and committed. Each file is
    written masked as export masks it."""
    def raw(doc: dict) -> None:
        doc["registry"]["experiments"]["agent-repro"]["profiles"]["sim"]["env"] = {"HF_TOKEN": "hf_RawOldBundle1"}
        doc["sources"]["templates"]["templates/serve_dsv4_prefill.sh.j2"] += "export HF_TOKEN=hf_RawOldBundle2\n"
        del doc["sources"]["experiments"]["agent-repro"]  # written from its parsed data

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), raw)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    texts = {p: p.read_text() for p in seeded.rglob("*") if p.is_file()}
    assert not [p for p, t in texts.items() if "hf_RawOldBundle" in t], texts.keys()


def test_a_bundle_carries_no_text_its_masking_changed_the_meaning_of(workbench_dir: Path, seed_csv: Path, cli,
                                                                     tmp_path: Path):
    """Export masked each file's text by the names of its entries, more widely than the definitions are masked: a
    variable named like a secret (kv_token_layout) had its declaration masked, `kv_token_layout: <redacted> [...`,
    and --extract wrote an experiment file no wb reads. A text whose masking changed what it says (beyond what the
    definitions mask) is not carried; --extract writes the definition."""
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace(
        "variables:\n", "variables:\n  kv_token_layout: {values: [paged, flat], default: paged, description: x}\n", 1))
    bundle = _bundle(workbench_dir, seed_csv, cli)
    assert "agent-repro" not in json.loads(gzip.decompress(bundle.read_bytes()))["sources"]["experiments"]
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    code, out, err = cli("hypothesis", "validate", "--root", str(seeded))
    assert code == 0, (out, err)


def test_bundle_show_extract_masks_a_secret_as_the_definitions_do_not_a_variable_named_like_one(
        workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path):
    """A hypothesis holding a variable named like a secret (`token_mode: fast`) is no secret: its definition keeps
    the value. Masking each written file by its entries' names wrote `token_mode: <redacted>` into a hypothesis
    written from parsed data, which no longer meant the bundle's."""
    def held(doc: dict) -> None:
        doc["registry"]["hypotheses"]["wedge-confound"]["hold"]["token_mode"] = "fast"
        del doc["sources"]["hypotheses"]["wedge-confound"]

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), held)
    seeded = tmp_path / "seeded"
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(seeded), "--root", str(workbench_dir))
    assert code == 0, err
    entry = yaml.safe_load((seeded / "hypotheses.yaml").read_text())["hypotheses"][0]
    assert entry["hold"]["token_mode"] == "fast", entry


@pytest.mark.parametrize("profiles", [["sim"], {"sim": "text"}, {"sim": {"config": "text"}}],
                         ids=["a-list", "a-profile-of-text", "a-config-of-text"])
def test_bundle_show_extract_of_shapeless_profiles_writes_them_without_a_traceback(workbench_dir: Path,
                                                                                  seed_csv: Path, cli,
                                                                                  tmp_path: Path, profiles):
    """An edited bundle's experiment with profiles that are no mapping of mappings crashed --extract with a
    traceback. What it carries is written (the registry then says what is wrong with it)."""
    def edit(doc: dict) -> None:
        doc["registry"]["experiments"]["agent-repro"]["profiles"] = profiles
        del doc["sources"]["experiments"]["agent-repro"]

    bundle = _edited(_bundle(workbench_dir, seed_csv, cli), edit)
    code, out, err = cli("bundle", "show", str(bundle), "--extract", str(tmp_path / "seeded"), "--root",
                         str(workbench_dir))
    assert code == 0 and (tmp_path / "seeded" / "experiments" / "agent-repro.yaml").is_file(), (out, err)
