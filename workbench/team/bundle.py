"""Bundles: one portable file with hypotheses and all the evidence their verdicts rest on.

`export` writes the hypotheses and experiments as they were (registry snapshots) and the text of the files they
come from (`sources`: the entries and experiment files as written, the template files their profiles render), their
executions, runs, units, metrics, artifact contents, verdicts and reviews, as gzip-compressed JSON with a format
version. `import_` merges a bundle into any store: idempotently (rows travel by global key), with
fresh row ids, in one transaction (nothing half-written on error), and it refuses a bundle whose
hypotheses or experiments conflict with the workbench's own registry — the same id meaning a
different test — since the imported verdicts would then be shown under a claim they never tested.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shlex
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.team.signing import Signer, check_key, sign, signature_path
from workbench.team.sources import collect
from workbench.wrapping import keep_whole

if TYPE_CHECKING:
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store

# The format changes only where a reader of the one before would misread a bundle; a section it can ignore (such
# as `sources`, which a bundle of an older wb lacks) keeps it, so bundles go between wb versions both ways.
BUNDLE_FORMAT = 1
MAX_BUNDLE_BYTES = 2 * 1024 ** 3  # uncompressed; a larger file is refused, not read into memory
# What makes two hypotheses (or experiments) the same test; descriptions and assumptions may differ.
HYPOTHESIS_KEYS = ("kind", "experiment", "isolates", "arms", "hold", "predicts", "requires")
EXPERIMENT_KEYS = ("variables", "metrics", "unit")


@dataclass(frozen=True)
class BundleSummary:
    path: str
    hypotheses: tuple[str, ...]
    added: dict[str, int]
    signature: str | None = None  # the signature file export wrote, or the one import found beside the bundle
    signed_by: Signer | None = None  # whose key it verified as (import with --signers); None: not checked
    removed_signature: str | None = None  # an unsigned export removed this stale signature of the file it replaced
    # Executions an export carries that had not finished (running, or interrupted or failed: a --resume finishes
    # them): their runs are the ones made so far.
    unfinished_executions: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "hypotheses": list(self.hypotheses), "added": dict(self.added),
                "signature": self.signature, "signed_by": self.signed_by.to_dict() if self.signed_by else None,
                "removed_signature": self.removed_signature,
                "unfinished_executions": [dict(e) for e in self.unfinished_executions]}


def _definitions(registry: "Registry", ids: list[str]) -> dict[str, Any]:
    """The hypotheses and their experiments as the files declare them, secrets redacted (a bundle is shared)."""
    hyps = {i: _declared(registry.hypothesis(i)) for i in ids}
    exps = {}
    for i in ids:
        exp = registry.experiment_for(registry.hypothesis(i))
        exps[exp.id] = _declared(exp)
    return {"hypotheses": hyps, "experiments": exps}


def _declared(definition: Any) -> dict[str, Any]:
    """A hypothesis or an experiment as a bundle holds it: a secret variable's value (which the registry
    registered) is masked, so a bundle's definitions and the registry's are compared redacted alike."""
    from workbench.secrets import mask_profiles, redact

    return mask_profiles(redact(definition.model_dump(mode="json", exclude_none=True)))


def export(store: "Store", registry: "Registry", hypothesis_ids: list[str], out: Path, *,
           created_by: str, wb_version: str, sign_with: Path | None = None) -> BundleSummary:
    """Write the bundle of `hypothesis_ids` to `out` (atomically: a temp file renamed into place), signed by the
    SSH key `sign_with` into `out`.sig when one is given."""
    if not hypothesis_ids:
        raise BadInput("name at least one hypothesis to export", hint="wb bundle export HYPOTHESIS... -o FILE")
    for hid in hypothesis_ids:
        registry.hypothesis(hid)  # an unknown id is bad input before anything is read
    if sign_with is not None:
        check_key(Path(sign_with))
    doc = {"wb_bundle": BUNDLE_FORMAT, "wb_version": wb_version, "created_by": created_by,
           "created_at": datetime.now(timezone.utc).isoformat(), "hypotheses": list(hypothesis_ids),
           "registry": _definitions(registry, hypothesis_ids), "store": _stored_rows(store, hypothesis_ids)}
    doc["sources"] = collect(registry, list(hypothesis_ids), list(doc["registry"]["experiments"]))
    out = Path(out)
    if out.is_dir():
        raise BadInput(f"-o {out} is a folder", hint="give a file name, e.g. -o wedge.wbundle")
    if not out.parent.is_dir():  # as cp and tar do: a mistyped folder is an error, not a tree to create
        raise BadInput(f"-o {out}: the folder {out.parent} does not exist",
                       hint=f"create it first: {keep_whole(f'mkdir -p {shlex.quote(str(out.parent))}')}")
    sig = signature_path(out)
    if sig.is_dir():  # neither replaced by a signature nor removed as a stale one: refused before anything is written
        raise BadInput(f"-o {out}: {sig}, where its signature goes, is a folder", where="-o",
                       hint="give another file name, or move that folder")
    packed = gzip.compress(json.dumps(doc, sort_keys=True).encode("utf-8"), mtime=0)
    signature = sign(packed, Path(sign_with)) if sign_with is not None else None
    # A stop between the two writes leaves a signature that fails beside the file, never one that passes: signed,
    # the new signature goes first; unsigned, the old one (of the file this one replaces) goes after the new file,
    # so a failed write keeps the old file and its signature as they were
    if signature is not None:
        _write_atomically(sig, signature)
    _write_atomically(out, packed)
    stale = signature is None and sig.exists()
    if stale:
        sig.unlink(missing_ok=True)
    counts = {k: len(doc["store"][k]) for k in ("executions", "runs", "verdicts", "reviews", "artifact_blobs")}
    return BundleSummary(str(out), tuple(hypothesis_ids), counts, str(sig) if signature is not None else None,
                         removed_signature=str(sig) if stale else None,
                         unfinished_executions=_unfinished(store, doc["store"]["executions"]))


UNFINISHED = ("running", "interrupted", "failed")  # an execution's statuses whose runs are not all made yet


def _unfinished(store: "Store", executions: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The executions among a bundle's rows not finished as it was written (their runs are those made so far):
    still running, or interrupted or failed (a --resume finishes one). The id this store gives each, its uuid, its
    hypothesis, its status and when it started. An export of one is not refused: an import of a later bundle takes
    the finished execution and the rest of its runs."""
    unfinished = {e["uuid"] for e in executions if e.get("status") in UNFINISHED}
    if not unfinished:
        return ()
    return tuple({"id": e.id, "uuid": e.uuid, "hypothesis": e.hypothesis_id, "status": e.status,
                  "started_at": e.started_at} for e in store.executions() if e.uuid in unfinished)


def _write_atomically(path: Path, data: bytes) -> None:
    """`data` into `path` by a temp file renamed into place: a reader sees the old file or the whole new one. It
    gets the mode a plain write gives (a file replaced keeps its own, a new one 0666 less the umask), not the temp
    file's 0600: a bundle is written to be shared."""
    fd, tmp = tempfile.mkstemp(prefix=".wbundle-", dir=path.parent)
    try:
        os.fchmod(fd, _plain_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _plain_mode(path: Path) -> int:
    """The permission bits `open(path, "w")` would leave: those of the file there, or 0666 less the umask. Never
    set-user-ID, set-group-ID or sticky: a bundle is data, and a write by its owner (not root) clears them."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read where Linux tells it (4.7 or newer); elsewhere by setting it and setting it back,
    a moment in which a file another thread creates gets 0o022."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _stored_rows(store: "Store", hypothesis_ids: list[str]) -> dict[str, Any]:
    """The store's rows of the hypotheses, as a bundle carries them. The store masked every secret it knew as it
    wrote; a value stored in clear before its variable was declared secret (a run's variables, the plan, a config
    diff, a snapshot, a verdict's reasoning) is masked here, in every row, as every view masks it."""
    from workbench.secrets import redact, register, stored_secret_values
    from workbench.store import jsonx

    rows = store.export_rows(list(hypothesis_ids))
    values = [v for r in rows["runs"] for v in stored_secret_values(jsonx.loads(r.get("variables_json"), {}))]
    if not values:
        return rows  # no value stored before its declaration: the rows are as the store masked them
    register(values=values)
    out = {name: redact(value) if name != "artifact_blobs" else value for name, value in rows.items()}
    return _redacted_blobs(out)


def _redacted_blobs(rows: dict[str, Any]) -> dict[str, Any]:
    """`rows` with each artifact's content redacted as the site shows it (a log printed a value stored before its
    declaration), re-addressed by the sha256 of what it now holds: an artifact names its blob by that hash, and
    an import checks nothing else. Bytes that are not UTF-8 are redacted around the undecodable ones."""
    import base64
    import hashlib
    import zlib

    from workbench.secrets import redact_text

    moved: dict[str, tuple[str, int]] = {}
    blobs: dict[str, dict[str, Any]] = {}  # by sha256: two logs that differed only in a secret are one blob now
    for b in rows["artifact_blobs"]:
        if b.get("compression") != "zlib":  # the only compression the store writes
            raise ValueError(f"artifact blob {b['sha256']}: unknown compression {b.get('compression')!r}")
        raw = zlib.decompress(base64.b64decode(b["data"]))
        masked = redact_text(raw.decode("utf-8", errors="surrogateescape")).encode("utf-8", errors="surrogateescape")
        if masked == raw:
            blobs.setdefault(b["sha256"], b)
            continue
        sha = hashlib.sha256(masked).hexdigest()
        moved[b["sha256"]] = (sha, len(masked))
        blobs.setdefault(sha, {**b, "sha256": sha, "size_bytes": len(masked),
                               "data": base64.b64encode(zlib.compress(masked)).decode("ascii")})
    if not moved:
        return rows
    arts = [{**a, "sha256": moved[a["sha256"]][0], "size_bytes": moved[a["sha256"]][1]} if a["sha256"] in moved
            else a for a in rows["artifacts"]]
    return {**rows, "artifact_blobs": list(blobs.values()), "artifacts": arts}


def packed_bytes(path: Path) -> bytes:
    """The bytes of the bundle file at `path`, as signed and as imported (read once: what is verified is what is
    merged); a folder, a missing or unreadable file, or one past the size limit is bad input at `path`."""
    path = Path(path)
    if path.is_dir():
        raise BadInput(f"{path} is a folder, not a bundle file", where=str(path), hint="wb bundle export writes one")
    if not path.is_file():
        raise BadInput(f"no bundle file at {path}", where=str(path), hint="wb bundle export writes one")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BUNDLE_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}", where=str(path)) from exc
    if len(data) > MAX_BUNDLE_BYTES:
        raise BadInput(f"{path} is larger than {MAX_BUNDLE_BYTES} bytes", where=str(path),
                       hint="export fewer hypotheses")
    return data


def _unpacked(path: Path, packed: bytes) -> bytes:
    """The gzip-compressed content `packed` of `path` (at most one byte past the limit); what the gzip and zlib
    modules say about a file that is not one (each in its own words and exception class) is said once, in wb's."""
    import zlib

    def refused(why: str) -> BadInput:
        return BadInput(f"{path} is not a wb bundle ({why})", hint="wb bundle export writes one")

    if not packed:
        raise refused("the file is empty: cut short in a copy or a download?")
    if packed[:2] != b"\x1f\x8b":
        raise refused("not gzip-compressed: a bundle starts with the bytes 1f 8b")
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(packed), mode="rb") as gz:
            return gz.read(MAX_BUNDLE_BYTES + 1)
    except EOFError as exc:
        raise refused("it ends early: cut short in a copy or a download?") from exc
    except (zlib.error, OSError) as exc:  # a failed CRC check is an OSError, bad deflate data zlib's
        raise refused("its compressed data is damaged") from exc


def read(path: Path, packed: bytes | None = None) -> dict[str, Any]:
    """A bundle's document (of the file's bytes `packed` when already read); anything that is not a readable
    bundle of a known format is bad input, at `path`."""
    try:
        return _document(Path(path), packed_bytes(path) if packed is None else packed)
    except BadInput as exc:
        exc.where = exc.where or str(path)
        raise


def _document(path: Path, packed: bytes) -> dict[str, Any]:
    data = _unpacked(path, packed)
    if len(data) > MAX_BUNDLE_BYTES:
        raise BadInput(f"{path} unpacks to more than {MAX_BUNDLE_BYTES} bytes", hint="export fewer hypotheses")
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path} is not a wb bundle (its content is not JSON: line {exc.lineno}, column {exc.colno})",
                       hint="wb bundle export writes one") from exc
    except ValueError as exc:  # bytes that are no UTF-8 text
        raise BadInput(f"{path} is not a wb bundle (its content is not JSON text)",
                       hint="wb bundle export writes one") from exc
    if not isinstance(doc, dict) or "wb_bundle" not in doc:
        raise BadInput(f"{path} is not a wb bundle (no wb_bundle key)", hint="wb bundle export writes one")
    if doc["wb_bundle"] != BUNDLE_FORMAT:
        raise BadInput(f"{path} is a bundle of format {doc['wb_bundle']!r}; this wb reads format {BUNDLE_FORMAT}",
                       hint="import it with the wb version that wrote it, or upgrade wb")
    for key in ("hypotheses", "registry", "store"):
        if key not in doc:
            raise BadInput(f"{path}: the bundle has no {key!r} section", hint="it is damaged; export it again")
    _check_shape(doc, path)
    return doc


def _check_shape(doc: dict[str, Any], path: Path) -> None:
    """The sections a bundle's import relies on, as export writes them: a list of hypothesis ids, each with
    its definition in the registry section (which the conflict check compares), and the store's rows."""
    from workbench.registry.common import ID_RE  # the registry's rule: an id names files (experiments/ID.yaml)

    def damaged(why: str) -> BadInput:
        return BadInput(f"{path}: the bundle is damaged ({why}); nothing was imported", hint="export it again")

    ids, reg = doc["hypotheses"], doc["registry"]
    if not isinstance(ids, list) or not ids or not all(isinstance(h, str) and h for h in ids):
        raise damaged("'hypotheses' is not a list of hypothesis ids")
    if not isinstance(reg, dict) or not all(isinstance(reg.get(k), dict) for k in ("hypotheses", "experiments")):
        raise damaged("'registry' does not hold the hypotheses' and experiments' definitions")
    missing = [h for h in ids if not isinstance(reg["hypotheses"].get(h), dict)]
    if missing:
        raise damaged(f"no definition of {', '.join(missing)} in its registry section")
    for kind, one in (("hypotheses", "hypothesis"), ("experiments", "experiment")):
        bad = next((i for i in reg[kind] if not ID_RE.match(i)), None)
        if bad is not None:
            raise damaged(f"its registry section names the {one} {bad!r}, which is not an id")
        shapeless = next((i for i, body in reg[kind].items() if not isinstance(body, dict)), None)
        if shapeless is not None:
            raise damaged(f"the definition of {shapeless} in its registry section is not a mapping")
    if not isinstance(doc["store"], dict):
        raise damaged("'store' is not a set of rows")
    sources = doc.get("sources", {})  # absent from a bundle of an older wb
    if not isinstance(sources, dict) or not all(
            isinstance(texts, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in texts.items())
            for texts in sources.values()):
        raise damaged("'sources' is not the text of its files by name")


def conflicts(registry: "Registry", doc: dict[str, Any]) -> list[str]:
    """Where the bundle's hypotheses or experiments mean another test than the registry's of the same id."""
    from workbench.secrets import redact

    out = []
    local_hypotheses = {h.id: h for h in registry.hypotheses}
    for hid, body in doc["registry"].get("hypotheses", {}).items():
        mine = local_hypotheses.get(hid)
        if mine is None:
            continue
        local, body = _declared(mine), redact(body)  # a bundle older than its redaction holds the values
        diff = [k for k in HYPOTHESIS_KEYS if local.get(k) != body.get(k)]
        if diff:
            out.append(f"hypothesis {hid}{_where_defined(registry, hid)}: {', '.join(diff)} differ")
    for eid, body in doc["registry"].get("experiments", {}).items():
        mine = registry.experiments.get(eid)
        if mine is None or mine.version != body.get("version"):
            continue
        local, body = _declared(mine), redact(body)
        diff = [k for k in EXPERIMENT_KEYS if local.get(k) != body.get(k)]
        if diff:
            doc = registry.experiment_docs.get(eid)
            where = f" ({doc.file})" if doc is not None else ""
            out.append(f"experiment {eid} version {mine.version}{where}: {', '.join(diff)} differ")
    return out


def _where_defined(registry: "Registry", hid: str) -> str:
    """` (FILE:LINE)` of the hypothesis's entry in this workbench, or nothing when that is not known."""
    doc = registry.hypotheses_doc
    index = next((i for i, h in enumerate(registry.hypotheses) if h.id == hid), None)
    if doc is None or index is None:
        return ""
    return f" ({doc.file}:{doc.line_of(('hypotheses', index))})"


def check_fits(registry: "Registry", doc: dict[str, Any], path: Path) -> None:
    """BadInput when the bundle's hypotheses or experiments conflict with the registry (see `conflicts`)."""
    found = conflicts(registry, doc)
    if found:
        raise BadInput(f"{path} conflicts with this workbench's registry: " + "; ".join(found), where=str(path),
                       hint="the same id names another test here; rename one of them, or import into a "
                            "workbench whose definitions agree")


def check_importable(registry: "Registry", doc: dict[str, Any], path: Path) -> None:
    """BadInput when this workbench cannot take the bundle: its hypotheses conflict with the registry's, or the
    registry does not define them. Needs no store, so a refusal is made before one is opened (or created)."""
    check_fits(registry, doc, path)
    unknown = [h for h in doc["hypotheses"] if h not in {x.id for x in registry.hypotheses}]
    if unknown:  # its runs and verdicts would be stored where no view of this workbench shows them
        raise BadInput(f"{path} holds {', '.join(unknown)}, which this workbench's hypotheses.yaml does not define; "
                       "nothing was imported", where=str(path),
                       hint="add the hypotheses (and their experiments) to this workbench first, or import into "
                            "the workbench they come from")


def import_(store: "Store", registry: "Registry", path: Path, *, doc: dict[str, Any] | None = None) -> BundleSummary:
    """Merge the bundle at `path` (its document `doc` when already read) into `store`."""
    doc = read(path) if doc is None else doc
    check_importable(registry, doc, path)
    try:
        added = store.import_rows(doc["store"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput(f"{path}: the bundle's rows are damaged ({type(exc).__name__}: {exc}); nothing was imported",
                       hint="export it again") from exc
    except Exception as exc:
        why = _refused_value(exc)
        if why is None:
            raise
        first = str(why).strip().splitlines()[0] if str(why).strip() else type(why).__name__
        raise BadInput(f"{path}: the store refused a row of the bundle ({first[:300]}); nothing was imported",
                       hint="export it again") from exc
    return BundleSummary(str(path), tuple(doc["hypotheses"]), added)


def _refused_value(exc: BaseException | None) -> BaseException | None:
    """The database's refusal of a value the bundle holds (a wrong type, a missing required value), or None
    for a failing database (a lost connection, a lock), which is not the bundle's fault."""
    import duckdb
    from sqlalchemy.exc import DataError, IntegrityError

    from workbench.errors import in_chain

    return in_chain(exc, (DataError, IntegrityError, duckdb.ConversionException, duckdb.ConstraintException,
                          duckdb.InvalidInputException))
