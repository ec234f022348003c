"""Rows in and out of a store for bundles: every column of every table, keyed globally, ids remapped.

A bundle never carries a store's row ids as identities: executions, runs, verdicts and reviews travel
by their uuid, snapshots by their content hash, artifact contents by sha256. Loading skips what the
store already has (so importing twice changes nothing) and gives every new row a fresh id, rewriting
the references (run → execution, verdict → execution, review → verdict, unit/metric → run) to it.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any, Iterable

from sqlalchemy import DateTime, LargeBinary
from sqlmodel import Session, SQLModel, delete, select

from workbench.store.models import (Artifact, ArtifactBlob, Execution, ExperimentSnapshot, HypothesisSnapshot, Metric,
                                    ProbeCount, Review, Run, Unit, Verdict)
from workbench.store.entities import iso
from workbench.store.records import masked_config, take_turns

ROW_FORMAT = 1


def _encode(model: type[SQLModel], row: SQLModel, drop: Iterable[str] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in model.__table__.columns:  # type: ignore[attr-defined]
        if col.name in drop:
            continue
        value = getattr(row, col.name)
        if isinstance(value, datetime):
            value = iso(value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            value = base64.b64encode(bytes(value)).decode("ascii")
        out[col.name] = value
    return out


def _decode(model: type[SQLModel], data: dict[str, Any], **override: Any) -> SQLModel:
    values: dict[str, Any] = {}
    for col in model.__table__.columns:  # type: ignore[attr-defined]
        if col.name not in data:
            continue
        value = data[col.name]
        if value is not None and isinstance(col.type, DateTime):
            value = datetime.fromisoformat(value)
        elif value is not None and isinstance(col.type, LargeBinary):
            value = base64.b64decode(value)
        values[col.name] = value
    values.update(override)
    return model(**values)


def _masked_fingerprint(text: Any) -> Any:
    """A run's fingerprint with each entry named like a secret masked, as `records.create_run` stores one: a bundle
    another tool or an older wb wrote may hold the value (anything but a JSON object is left for the checks)."""
    from workbench.store import jsonx
    from workbench.store.records import redact_secrets

    try:
        value = jsonx.loads(text) if isinstance(text, str) else None
    except ValueError:
        return text
    return jsonx.dumps(redact_secrets(value)) if isinstance(value, dict) else text


def _where_in(session: Session, model: Any, column: Any, keys: Iterable[Any]) -> list[Any]:
    keys = sorted(set(k for k in keys if k is not None))
    if not keys:
        return []
    return list(session.exec(select(model).where(column.in_(keys))).all())


def dump(session: Session, hypothesis_ids: list[str]) -> dict[str, Any]:
    """Everything the verdicts of `hypothesis_ids` rest on, and the reviews of them."""
    executions = _where_in(session, Execution, Execution.hypothesis_id, hypothesis_ids)
    verdicts = _where_in(session, Verdict, Verdict.hypothesis_id, hypothesis_ids)
    from workbench.store import jsonx

    evidence_runs = {r[0] for v in verdicts for r in (jsonx.loads(v.evidence_json, {}) or {}).get("runs", [])}
    runs = {r.id: r for r in _where_in(session, Run, Run.execution_id, [e.id for e in executions])}
    runs.update({r.id: r for r in _where_in(session, Run, Run.uuid, evidence_runs)})
    run_ids = sorted(runs)
    exec_by_id = {e.id: e for e in executions}
    exec_by_id.update({e.id: e for e in _where_in(session, Execution, Execution.id,
                                                  [r.execution_id for r in runs.values()])})
    artifacts = _where_in(session, Artifact, Artifact.run_id, run_ids)
    snapshots_h = _where_in(session, HypothesisSnapshot, HypothesisSnapshot.id,
                            [e.hypothesis_snapshot_id for e in exec_by_id.values()])
    snapshots_h += [s for s in _where_in(session, HypothesisSnapshot, HypothesisSnapshot.hypothesis_id, hypothesis_ids)
                    if s.id not in {x.id for x in snapshots_h}]
    snapshots_e = _where_in(session, ExperimentSnapshot, ExperimentSnapshot.id,
                            [e.experiment_snapshot_id for e in exec_by_id.values()])
    run_uuid = {r.id: r.uuid for r in runs.values()}
    exec_uuid = {e.id: e.uuid for e in exec_by_id.values()}
    snap_h = {s.id: s.sha256 for s in snapshots_h}
    snap_e = {s.id: s.sha256 for s in snapshots_e}
    verdict_uuid = {v.id: v.uuid for v in verdicts}

    def with_run(model: Any, rows: Iterable[Any]) -> list[dict[str, Any]]:
        return [{**_encode(model, r, drop=("run_id", "id")), "run": run_uuid[r.run_id]} for r in rows]

    return {
        "rows": ROW_FORMAT,
        "hypothesis_snapshots": [_encode(HypothesisSnapshot, s, drop=("id",)) for s in snapshots_h],
        "experiment_snapshots": [_encode(ExperimentSnapshot, s, drop=("id",)) for s in snapshots_e],
        "executions": [{**_encode(Execution, e, drop=("id", "hypothesis_snapshot_id", "experiment_snapshot_id")),
                        "hypothesis_snapshot": snap_h.get(e.hypothesis_snapshot_id),
                        "experiment_snapshot": snap_e.get(e.experiment_snapshot_id)}
                       for e in sorted(exec_by_id.values(), key=lambda e: e.id)],
        # A rendered config a store kept from before its secret-named entries were masked travels masked.
        "runs": [{**_encode(Run, r, drop=("id", "execution_id")), "execution": exec_uuid.get(r.execution_id),
                  "rendered_config": masked_config(r.rendered_config, r.variables_json)}
                 for r in sorted(runs.values(), key=lambda r: r.id)],
        "units": with_run(Unit, _where_in(session, Unit, Unit.run_id, run_ids)),
        "metrics": with_run(Metric, _where_in(session, Metric, Metric.run_id, run_ids)),
        "artifacts": with_run(Artifact, artifacts),
        "probe_counts": with_run(ProbeCount, _where_in(session, ProbeCount, ProbeCount.run_id, run_ids)),
        "artifact_blobs": [_encode(ArtifactBlob, b) for b in
                           _where_in(session, ArtifactBlob, ArtifactBlob.sha256, [a.sha256 for a in artifacts])],
        "verdicts": [{**_encode(Verdict, v, drop=("id", "execution_id")), "execution": exec_uuid.get(v.execution_id)}
                     for v in sorted(verdicts, key=lambda v: v.id)],
        "reviews": [{**_encode(Review, r, drop=("id", "verdict_id")), "verdict": verdict_uuid.get(r.verdict_id)}
                    for r in sorted(_where_in(session, Review, Review.hypothesis_id, hypothesis_ids),
                                    key=lambda r: r.id)],
    }


def _existing(session: Session, model: Any, column: Any, keys: Iterable[Any]) -> dict[Any, Any]:
    return {getattr(r, column.key): r for r in _where_in(session, model, column, keys)}


def _load_snapshots(session: Session, doc: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    ids_h: dict[str, int] = {}
    have = {(s.hypothesis_id, s.sha256): s for s in _where_in(
        session, HypothesisSnapshot, HypothesisSnapshot.sha256, [d["sha256"] for d in doc["hypothesis_snapshots"]])}
    for d in doc["hypothesis_snapshots"]:
        row = have.get((d["hypothesis_id"], d["sha256"])) or _add(session, _decode(HypothesisSnapshot, d))
        ids_h[d["sha256"]] = row.id
    ids_e: dict[str, int] = {}
    have_e = {(s.experiment_id, s.sha256): s for s in _where_in(
        session, ExperimentSnapshot, ExperimentSnapshot.sha256, [d["sha256"] for d in doc["experiment_snapshots"]])}
    for d in doc["experiment_snapshots"]:
        row = have_e.get((d["experiment_id"], d["sha256"])) or _add(session, _decode(ExperimentSnapshot, d))
        ids_e[d["sha256"]] = row.id
    return ids_h, ids_e


def _add(session: Session, row: SQLModel) -> Any:
    session.add(row)
    session.flush()
    return row


_KEYED = ("executions", "runs", "verdicts", "reviews")
_SECTIONS = ("hypothesis_snapshots", "experiment_snapshots", *_KEYED, "units", "metrics", "artifacts",
             "probe_counts", "artifact_blobs")


def _check_rows(doc: dict[str, Any]) -> None:
    """ValueError naming what a damaged document holds that the database would take and keep wrong: a row
    without the key it is merged by, or a reference to a row the bundle does not hold."""
    for kind in _SECTIONS:
        rows = doc.get(kind)
        if not isinstance(rows, list) or not all(isinstance(d, dict) for d in rows):
            raise ValueError(f"section {kind!r} is not a list of rows")
    for kind in _KEYED:
        for i, d in enumerate(doc[kind]):
            if not isinstance(d.get("uuid"), str) or not d["uuid"]:
                raise ValueError(f"{kind} row {i + 1} has no uuid")
    uuids = {kind: {d["uuid"] for d in doc[kind]} for kind in _KEYED}
    for kind, ref, target in (("runs", "execution", "executions"), ("verdicts", "execution", "executions"),
                              ("reviews", "verdict", "verdicts")):
        for d in doc[kind]:
            if d.get(ref) is not None and d[ref] not in uuids[target]:
                raise ValueError(f"{kind} row {d['uuid']} refers to {ref} {d[ref]!r}, which the bundle does not hold")
    for d in doc["runs"]:
        if not isinstance(d.get("status"), str) or not d["status"]:
            raise ValueError(f"run {d['uuid']} has no status")
    for kind in ("units", "metrics", "artifacts", "probe_counts"):
        for d in doc[kind]:
            if d.get("run") not in uuids["runs"]:
                raise ValueError(f"a row of {kind} refers to run {d.get('run')!r}, which the bundle does not hold")
    for d in doc["artifact_blobs"]:
        _check_blob(d)


def _check_blob(d: dict[str, Any]) -> None:
    """ValueError unless an artifact blob holds what its sha256 addresses: the store keeps one blob per hash and
    an import skips a hash it holds, so content other than its hash's would stand for the true one for good."""
    import binascii
    import hashlib
    import zlib

    sha = d.get("sha256")
    if d.get("compression") != "zlib":  # the only compression the store writes
        raise ValueError(f"artifact blob {sha}: unknown compression {d.get('compression')!r}")
    try:
        raw = zlib.decompress(base64.b64decode(d["data"], validate=True))
    except (KeyError, TypeError, binascii.Error, zlib.error) as exc:
        raise ValueError(f"artifact blob {sha}: its data is not zlib-compressed base64 ({exc})") from None
    if hashlib.sha256(raw).hexdigest() != sha:
        raise ValueError(f"artifact blob {sha}: its content does not match its sha256 (edited or damaged)")


# A row in flight where the store took it, ended where the bundle took it: the bundle's row is newer.
_UNFINISHED_RUN = ("pending", "running")


def _ended_since(held: str | None, bundled: Any) -> bool:
    """Whether an execution the store holds as `held` has since ended as the bundle holds it (`bundled`): one
    still running that has ended, or one not done (interrupted, failed: resumable) that a resume finished."""
    if not isinstance(bundled, str) or held == "done" or bundled == held:
        return False
    return bundled == "done" or (held == "running" and bundled != "running")


def _take(session: Session, row: SQLModel, model: type[SQLModel], data: dict[str, Any], **override: Any) -> None:
    """Give the stored `row` the bundle's values of every column (its id kept)."""
    newer = _decode(model, data, **override)
    for col in model.__table__.columns:  # type: ignore[attr-defined]
        if col.name != "id" and (col.name in data or col.name in override):
            setattr(row, col.name, getattr(newer, col.name))
    session.add(row)
    session.flush()


def _load_executions(session: Session, doc: dict[str, Any], ids_h: dict[str, int], ids_e: dict[str, int],
                     added: dict[str, int]) -> dict[str, Any]:
    execs = _existing(session, Execution, Execution.uuid, [d["uuid"] for d in doc["executions"]])
    for d in doc["executions"]:
        snapshots = {"hypothesis_snapshot_id": ids_h.get(d.get("hypothesis_snapshot")),
                     "experiment_snapshot_id": ids_e.get(d.get("experiment_snapshot"))}
        if d["uuid"] not in execs:
            execs[d["uuid"]] = _add(session, _decode(Execution, d, **snapshots))
            added["executions"] += 1
        elif _ended_since(execs[d["uuid"]].status, d.get("status")):
            _take(session, execs[d["uuid"]], Execution, d, **snapshots)
            added["executions_updated"] += 1
    return execs


def _load_runs(session: Session, doc: dict[str, Any], execs: dict[str, Any], added: dict[str, int]) -> dict[str, int]:
    """The bundle's runs the store lacks, and those it holds unfinished that the bundle holds ended (a bundle
    exported while they ran); run uuid -> row id of each, whose units, metrics and artifacts are to be loaded."""
    runs = _existing(session, Run, Run.uuid, [d["uuid"] for d in doc["runs"]])
    # Imported evidence is keyed on its run_id within an experiment, as `wb import evidence` keys it: each
    # import of one CSV gives its runs new uuids, and a bundle from a store that imported the same CSV
    # would otherwise count the same historical run twice.
    imported = {(r.experiment_id, r.label) for r in _where_in(
        session, Run, Run.label, [d.get("label") for d in doc["runs"] if d.get("source") == "import"])
        if r.source == "import"}
    loaded: dict[str, int] = {}
    for d in doc["runs"]:
        if d.get("source") == "import" and (d.get("experiment_id"), d.get("label")) in imported:
            continue
        held = runs.get(d["uuid"])
        if held is not None and not (held.status in _UNFINISHED_RUN and d["status"] not in _UNFINISHED_RUN):
            continue
        ex = execs.get(d.get("execution"))
        values = {"execution_id": ex.id if ex else None,
                  "fingerprint_json": _masked_fingerprint(d.get("fingerprint_json")),
                  "rendered_config": masked_config(d.get("rendered_config"), d.get("variables_json"))}
        if held is None:
            runs[d["uuid"]] = _add(session, _decode(Run, d, **values))
            loaded[d["uuid"]] = runs[d["uuid"]].id
            added["runs"] += 1
        else:
            for table in (Unit, Metric, Artifact, ProbeCount):  # what an unfinished run may hold gives way
                session.exec(delete(table).where(table.run_id == held.id))  # type: ignore[attr-defined]
            _take(session, held, Run, d, **values)
            loaded[d["uuid"]] = held.id
            added["runs_updated"] += 1
    return loaded


def load(session: Session, doc: dict[str, Any]) -> dict[str, int]:
    """Merge a dumped document into the store (the caller's transaction); counts of rows added per kind, and
    of rows the store held unfinished that the bundle brought up to date."""
    from workbench.store.records import bulk_insert

    if doc.get("rows") != ROW_FORMAT:
        raise ValueError(f"row format {doc.get('rows')!r}, expected {ROW_FORMAT}")
    _check_rows(doc)
    take_turns(session)
    added = {k: 0 for k in ("executions", "runs", "verdicts", "reviews", "artifact_blobs", "executions_updated",
                            "runs_updated")}
    ids_h, ids_e = _load_snapshots(session, doc)
    execs = _load_executions(session, doc, ids_h, ids_e, added)
    new_runs = _load_runs(session, doc, execs, added)
    for kind, model in (("units", Unit), ("metrics", Metric), ("probe_counts", ProbeCount), ("artifacts", Artifact)):
        rows = [{**{k: v for k, v in d.items() if k != "run"}, "run_id": new_runs[d["run"]]}
                for d in doc[kind] if d["run"] in new_runs]
        if not rows:
            continue
        if kind in ("units", "metrics"):
            cols = [c.name for c in model.__table__.columns]  # type: ignore[attr-defined]
            bulk_insert(session, model.__tablename__, [{c: r.get(c) for c in cols} for r in rows], cols)
        else:
            for r in rows:
                session.add(_decode(model, r))
            session.flush()
    have_blobs = _existing(session, ArtifactBlob, ArtifactBlob.sha256, [d["sha256"] for d in doc["artifact_blobs"]])
    for d in doc["artifact_blobs"]:
        if d["sha256"] not in have_blobs:
            _add(session, _decode(ArtifactBlob, d))
            added["artifact_blobs"] += 1
    verdicts = _existing(session, Verdict, Verdict.uuid, [d["uuid"] for d in doc["verdicts"]])
    for d in doc["verdicts"]:
        if d["uuid"] not in verdicts:
            ex = execs.get(d.get("execution"))
            verdicts[d["uuid"]] = _add(session, _decode(Verdict, d, execution_id=ex.id if ex else None))
            added["verdicts"] += 1
    reviews = _existing(session, Review, Review.uuid, [d["uuid"] for d in doc["reviews"]])
    for d in doc["reviews"]:
        if d["uuid"] not in reviews:
            v = verdicts.get(d.get("verdict"))
            _add(session, _decode(Review, d, verdict_id=v.id if v else None))
            added["reviews"] += 1
    return added
