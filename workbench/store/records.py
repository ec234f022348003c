"""Writing to the store: snapshots, executions, runs, units, metrics, artifacts, verdicts, reviews.

Functions take keyword-only arguments and an explicit session. Units and metrics arrive in bulk
(10^5 units per experiment is normal) and go in as whole columns that DuckDB scans, never row by row.
"""

from __future__ import annotations

import hashlib
import math
import uuid as uuidlib
import zlib
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from sqlmodel import Session, select

from workbench.secrets import looks_secret, mask_entries, mask_profiles
from workbench.store import jsonx
from workbench.store.models import (Artifact, ArtifactBlob, Execution, ExperimentSnapshot, HypothesisSnapshot, Metric,
                                    ProbeCount, Review, Run, Unit, Verdict, utcnow)

if TYPE_CHECKING:
    from workbench.store.entities import ImportedRun

# Artifacts up to this size (uncompressed) are kept in the store itself, so every user of a shared
# store sees them; a larger one is recorded by name and hash only (its page says so).
MAX_BLOB_BYTES = 32 * 1024 * 1024


def new_key() -> str:
    """A globally unique key for a row that may travel to other stores (bundles)."""
    return uuidlib.uuid4().hex


def redact_secrets(mapping: dict[str, Any] | None) -> dict[str, Any] | None:
    """Drop the value of every entry whose name looks like a secret (…TOKEN, …KEY, …PASSWORD)."""
    if mapping is None:
        return None
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        if looks_secret(k):
            out[k] = "<redacted>"
        elif isinstance(v, dict):
            out[k] = redact_secrets(v)
        else:
            out[k] = v
    return out


def masked_config(text: str | None, variables: Any) -> str | None:
    """A run's rendered config as the store keeps and shows it: each entry named like a secret masked
    (`secrets.mask_entries`), but for the values of the run's `variables` (a mapping, or its JSON text), which the
    config check must see the arms differ in."""
    if isinstance(variables, str):
        try:
            variables = jsonx.loads(variables)
        except ValueError:
            variables = None
    return mask_entries(text, keep=variables.values() if isinstance(variables, dict) else ())


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Any) -> str:
    """The sha256 of a file's bytes, read in 1 MiB chunks (artifacts can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# Merges into one PostgreSQL store (bundles, evidence imports) take turns on this transaction-level advisory
# lock (any number, wb's own).
_MERGE_LOCK = 0x77625F6D65726765  # "wb_merge"


def take_turns(session: Session) -> None:
    """Wait for any other merge into this PostgreSQL store to commit or roll back. Two merges of one bundle, or
    two imports of one evidence file, at once would each find the rows missing and each write them: imported
    evidence is keyed on its run_id, which no unique index holds (a replaced run keeps its label). DuckDB
    admits one writer."""
    from sqlalchemy import text

    if session.connection().dialect.name == "postgresql":
        session.connection().execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MERGE_LOCK})


def _get_or_add(session: Session, model: Any, where: tuple[Any, ...], make: Any) -> Any:
    """The row matching `where`, or a new one from `make()`.

    Two writers of a shared store (PostgreSQL) can both find nothing and both insert; the loser's
    insert fails on the unique index and it takes the winner's row instead. DuckDB admits one
    writing process, so there the plain insert is enough (and it has no savepoints)."""
    from sqlalchemy.exc import IntegrityError

    found = session.exec(select(model).where(*where)).first()
    if found is not None:
        return found
    if session.connection().dialect.name == "duckdb":
        row = make()
        session.add(row)
        session.flush()
        return row
    try:
        with session.begin_nested():
            row = make()
            session.add(row)
        return row
    except IntegrityError:
        return session.exec(select(model).where(*where)).one()


def snapshot_hypothesis(session: Session, *, hypothesis_id: str, body: dict[str, Any]) -> HypothesisSnapshot:
    text = jsonx.dumps(body) or "{}"
    sha = sha256_text(text)
    return _get_or_add(session, HypothesisSnapshot,
                       (HypothesisSnapshot.hypothesis_id == hypothesis_id, HypothesisSnapshot.sha256 == sha),
                       lambda: HypothesisSnapshot(hypothesis_id=hypothesis_id, sha256=sha, body_json=text,
                                                  recorded_at=utcnow()))


def snapshot_experiment(session: Session, *, experiment_id: str, version: int,
                        body: dict[str, Any]) -> ExperimentSnapshot:
    """The experiment as declared, keyed by its content; its profiles' secret-named entries are kept masked (a
    token written into a config template or a context value), as the flush hook masks the secrets declared."""
    sha = sha256_text(jsonx.dumps(body) or "{}")
    text = jsonx.dumps(mask_profiles(body)) or "{}"
    return _get_or_add(session, ExperimentSnapshot,
                       (ExperimentSnapshot.experiment_id == experiment_id, ExperimentSnapshot.sha256 == sha),
                       lambda: ExperimentSnapshot(experiment_id=experiment_id, version=version, sha256=sha,
                                                  body_json=text, recorded_at=utcnow()))


def create_execution(session: Session, *, hypothesis_id: str, experiment_id: str, experiment_version: int,
                     profile: str, target: str, mode: str = "fixed", plan: Any = None,
                     overrides: dict[str, str] | None = None, config_diff: Any = None,
                     hypothesis_snapshot_id: int | None = None, experiment_snapshot_id: int | None = None,
                     wb_version: str = "", uuid: str | None = None, who: dict[str, Any] | None = None) -> Execution:
    """`who`: user_name, user_source, host, git_revision, git_dirty (see workbench.team.identity)."""
    ex = Execution(hypothesis_id=hypothesis_id, experiment_id=experiment_id, experiment_version=experiment_version,
                   profile=profile, target=target, mode=mode, status="running", plan_json=jsonx.dumps(plan),
                   overrides_json=jsonx.dumps(overrides or {}), config_diff_json=jsonx.dumps(config_diff),
                   hypothesis_snapshot_id=hypothesis_snapshot_id, experiment_snapshot_id=experiment_snapshot_id,
                   started_at=utcnow(), wb_version=wb_version, uuid=uuid or new_key(), **(who or {}))
    session.add(ex)
    session.flush()
    return ex


def update_execution(session: Session, *, execution_id: int, **fields: Any) -> Execution:
    ex = session.get(Execution, execution_id)
    if ex is None:
        raise KeyError(execution_id)
    for key in ("plan", "config_diff", "overrides"):
        if key in fields:
            setattr(ex, f"{key}_json", jsonx.dumps(fields.pop(key)))
    for k, v in fields.items():
        setattr(ex, k, v)
    session.add(ex)
    session.flush()
    return ex


def create_run(session: Session, *, experiment_id: str | None, variables: dict[str, Any] | None,
               execution_id: int | None = None, hypothesis_id: str | None = None,
               experiment_version: int | None = None, arm: str | None = None, replicate: int | None = None,
               order_index: int | None = None, block: int | None = None, host: str | None = None,
               target: str | None = None, source: str = "run", label: str | None = None, status: str = "pending",
               started_at: datetime | None = None, ended_at: datetime | None = None,
               rendered_config: str | None = None, config_hash: str | None = None,
               fingerprint: dict[str, Any] | None = None, provenance: str | None = None,
               phase: str | None = None, uuid: str | None = None) -> Run:
    run = Run(execution_id=execution_id, hypothesis_id=hypothesis_id, experiment_id=experiment_id,
              experiment_version=experiment_version, source=source, label=label, arm=arm, replicate=replicate,
              order_index=order_index, block=block, host=host, target=target, status=status,
              started_at=started_at, ended_at=ended_at, variables_json=jsonx.dumps(variables),
              rendered_config=masked_config(rendered_config, variables),
              config_hash=config_hash or (sha256_text(rendered_config) if rendered_config is not None else None),
              fingerprint_json=jsonx.dumps(redact_secrets(fingerprint)), provenance=provenance, phase=phase,
              uuid=uuid or new_key())
    session.add(run)
    session.flush()
    return run


def update_run(session: Session, *, run_id: int, **fields: Any) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise KeyError(run_id)
    if "fingerprint" in fields:
        run.fingerprint_json = jsonx.dumps(redact_secrets(fields.pop("fingerprint")))
    if "variables" in fields:
        run.variables_json = jsonx.dumps(fields.pop("variables"))
    if "rendered_config" in fields:
        run.rendered_config = masked_config(fields.pop("rendered_config"), run.variables_json)
    for k, v in fields.items():
        setattr(run, k, v)
    session.add(run)
    session.flush()
    return run


# The columns of an imported run; the rest are NULL, as an ORM insert of one leaves them.
_IMPORTED_RUN_COLUMNS = ["id", "experiment_id", "source", "label", "status", "phase", "variables_json",
                         "fingerprint_json", "provenance", "uuid"]


def add_imported_runs(session: Session, *, experiment_id: str, rows: list["ImportedRun"]) -> list[int]:
    """Store historical runs and their metrics as `create_run` and `add_metrics` would, one row at a time, but in
    two bulk inserts: the runs' ids are drawn from their sequence at once (bulk_insert redacts every text, as
    the session's flush hook redacts what the ORM writes). Returns the new runs' ids, in the order of `rows`."""
    ids = _next_ids(session, "runs", len(rows))
    runs = [{"id": rid, "experiment_id": experiment_id, "source": "import", "label": row.label,
             "status": "historical", "phase": row.phase, "variables_json": jsonx.dumps(row.variables),
             "fingerprint_json": jsonx.dumps(redact_secrets({"workload": row.workload})),
             "provenance": jsonx.dumps(row.provenance), "uuid": new_key()} for rid, row in zip(ids, rows)]
    bulk_insert(session, "runs", runs, _IMPORTED_RUN_COLUMNS)
    metrics = [{"run_id": rid, "name": name, "value": float(value), "source": "import"}
               for rid, row in zip(ids, rows) for name, value in row.metrics.items() if value is not None]
    bulk_insert(session, "metrics", metrics, ["run_id", "name", "value", "source"])
    return ids


def _next_ids(session: Session, table: str, n: int) -> list[int]:
    """`n` new ids of `table`, drawn from its sequence in one statement (ascending, as one insert at a time
    draws them)."""
    from sqlalchemy import Sequence, select, text

    conn = session.connection()
    seq = f"{table}_id_seq"
    if n and conn.dialect.name in ("duckdb", "postgresql"):
        series = f"range({n})" if conn.dialect.name == "duckdb" else f"generate_series(1, {n})"
        return sorted(int(v) for (v,) in conn.execute(text(f"SELECT nextval('{seq}') FROM {series}")))
    return [int(conn.execute(select(Sequence(seq).next_value())).scalar_one()) for _ in range(n)]


def bulk_insert(session: Session, table: str, rows: "Any", columns: list[str]) -> int:
    """Insert rows (an iterable of dicts, or a pandas DataFrame) in one statement.

    On DuckDB the columns go in as numpy arrays of the Python values, which DuckDB scans directly (None is NULL,
    each column's type is read from its values and cast to the table's). pandas is not imported for it: its
    import is ~0.3 s of CPU in every process that stores a run. Every text is redacted, as the session's flush
    hook redacts what the ORM writes (store.redaction): a bulk insert passes no flush."""
    from workbench.secrets import redact_text

    redacted: dict[str, str] = {}  # a column's repeated texts (an outcome, a source) are redacted once

    def clean(v: Any) -> Any:
        if isinstance(v, str) and v not in redacted:
            redacted[v] = redact_text(v)
        return redacted[v] if isinstance(v, str) else v

    values = [[clean(v) for v in col] for col in _column_values(rows, columns)]
    n = len(values[0]) if values else 0
    if n == 0:
        return 0
    conn = session.connection()
    if conn.dialect.name == "duckdb":
        import numpy as np

        scanned = {}
        for c, vals in zip(columns, values):
            scanned[c] = np.empty(n, dtype=object)
            scanned[c][:] = vals
        raw = conn.connection.driver_connection
        name = f"_wb_bulk_{table}"
        raw.register(name, scanned)
        try:
            cols = ", ".join(columns)
            raw.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {name}")
        finally:
            raw.unregister(name)
    else:
        from sqlalchemy import insert

        from workbench.store.models import SQLModel

        tbl = SQLModel.metadata.tables[table]
        conn.execute(insert(tbl), [dict(zip(columns, row)) for row in zip(*values)])
    return n


def _column_values(rows: "Any", columns: list[str]) -> list[list[Any]]:
    """Each column's values in row order; None where a value is unknown (a missing key, a DataFrame's NaN)."""
    if type(rows).__module__.startswith("pandas") and hasattr(rows, "columns"):
        return [rows[c].astype(object).where(rows[c].notna(), None).tolist() for c in columns]
    rows = list(rows)
    return [[r.get(c) for r in rows] for c in columns]


def _finite(value: Any) -> bool:
    """Whether a unit's value is a number a column can hold (nan, inf or a JSON 1e999 is unknown)."""
    try:
        return isinstance(value, (int, float)) and math.isfinite(value)
    except OverflowError:  # an integer of more digits than a double holds
        return False


def add_units(session: Session, *, run_id: int, units: Iterable[dict[str, Any]], outcome_field: str = "outcome") -> int:
    """Store per-unit records; `outcome`, `rounds` and a duration go to columns, the whole record to data_json.
    A value its column cannot hold (nan, inf, rounds beyond a 32-bit integer) is null there; nan and inf are null
    in the record too (jsonx)."""
    rows = []
    for i, u in enumerate(units):
        dur = u.get("duration_s", u.get("wall_s", u.get("elapsed_s")))
        rounds = u.get("rounds")
        rows.append({"run_id": run_id, "idx": i,
                     "outcome": None if u.get(outcome_field) is None else str(u.get(outcome_field)),
                     "rounds": int(rounds) if _finite(rounds) and abs(rounds) < 2**31 else None,
                     "duration_s": float(dur) if _finite(dur) else None,
                     "data_json": jsonx.dumps(u)})
    return bulk_insert(session, "units", rows, ["run_id", "idx", "outcome", "rounds", "duration_s", "data_json"])


def add_metrics(session: Session, *, run_id: int, metrics: dict[str, float | int | None], source: str) -> int:
    """Store known metric values; None (unknown) is skipped, never stored as a number."""
    rows = [{"run_id": run_id, "name": k, "value": float(v), "source": source}
            for k, v in metrics.items() if v is not None]
    return bulk_insert(session, "metrics", rows, ["run_id", "name", "value", "source"])


def add_artifact(session: Session, *, run_id: int, name: str, path: str, sha256: str, size_bytes: int,
                 content: bytes | None = None) -> Artifact:
    """An artifact row; with `content` (checked against `sha256`) its bytes are kept in the store too."""
    if content is not None:
        add_blob(session, sha256=sha256, content=content)
    art = Artifact(run_id=run_id, name=name, path=path, sha256=sha256, size_bytes=size_bytes)
    session.add(art)
    session.flush()
    return art


def add_blob(session: Session, *, sha256: str, content: bytes) -> bool:
    """Keep `content` under its hash (once); False when it is too large or does not match the hash."""
    if len(content) > MAX_BLOB_BYTES or hashlib.sha256(content).hexdigest() != sha256:
        return False
    _get_or_add(session, ArtifactBlob, (ArtifactBlob.sha256 == sha256,),
                lambda: ArtifactBlob(sha256=sha256, size_bytes=len(content), compression="zlib",
                                     data=zlib.compress(content, 6)))
    return True


def add_probe_counts(session: Session, *, run_id: int, counts: Iterable[dict[str, Any]]) -> int:
    n = 0
    for c in counts:
        session.add(ProbeCount(run_id=run_id, process=str(c.get("process", "")), pid=int(c.get("pid", 0)),
                               target=str(c["target"]), calls=int(c.get("calls", 0)),
                               resolved=bool(c.get("resolved", True)), state=c.get("state") or None,
                               detail=c.get("detail") or None))
        n += 1
    session.flush()
    return n


def add_verdict(session: Session, *, hypothesis_id: str, verdict: str, reasoning: str, checks: Any = None,
                details: Any = None, execution_id: int | None = None, hypothesis_sha256: str | None = None,
                evidence: Any = None, uuid: str | None = None, created_at: datetime | None = None) -> Verdict:
    """`evidence`: a `store.entities.Evidence` (what the verdict rests on), or None for a bare verdict."""
    v = Verdict(hypothesis_id=hypothesis_id, execution_id=execution_id, hypothesis_sha256=hypothesis_sha256,
                verdict=verdict, reasoning=reasoning, checks_json=jsonx.dumps(checks),
                details_json=jsonx.dumps(details), created_at=created_at or utcnow(), uuid=uuid or new_key(),
                evidence_digest=evidence.digest() if evidence is not None else None,
                evidence_json=jsonx.dumps(evidence.to_dict()) if evidence is not None else None,
                analysis_version=evidence.analysis_version if evidence is not None else None)
    session.add(v)
    session.flush()
    return v


def add_review(session: Session, *, hypothesis_id: str, author: str, body: str, decision: str = "comment",
               verdict_id: int | None = None, author_source: str | None = None, uuid: str | None = None,
               created_at: datetime | None = None) -> Review:
    """A review bound to verdict `verdict_id` as it is now (its key, word and evidence digest are copied)."""
    seen = session.get(Verdict, verdict_id) if verdict_id is not None else None
    r = Review(hypothesis_id=hypothesis_id, verdict_id=verdict_id, author=author, decision=decision, body=body,
               created_at=created_at or utcnow(), uuid=uuid or new_key(), author_source=author_source,
               verdict_uuid=seen.uuid if seen else None, evidence_digest=seen.evidence_digest if seen else None,
               verdict_seen=seen.verdict if seen else None)
    session.add(r)
    session.flush()
    return r
