"""The context of one run page, and the artifact files copied into the site so every link stays inside it.

Logs are untrusted text: they reach the page only as escaped text, and a large one is cut to its
head and tail with a link to the full copy.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

from workbench.analysis import display
from workbench.analysis.run_metrics import RunMetrics
from workbench.report import stats
from workbench.report.context import LEFT_OUT_NOTE, ArtifactView, Link, Page, ProbeRow, RunContext
from workbench.report.data import StoreData

PREVIEW_HEAD = 12_000
PREVIEW_TAIL = 4_000
MAX_COPY_BYTES = 64 * 1024 * 1024
TEXT_SUFFIXES = {".log", ".txt", ".jsonl", ".json", ".out", ".err", ".csv", ".yaml", ".yml", ".sh", ".md"}


def _size(n: int | None) -> str:
    if n is None:
        return ""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


def _resolve(path: str, roots: list[Path]) -> Path | None:
    """The artifact file when it lies inside one of the store's artifact roots (after following links)."""
    try:
        p = Path(path).expanduser().resolve()
    except (OSError, RuntimeError):
        return None
    if not p.is_file():
        return None
    return p if any(p.is_relative_to(r.resolve()) for r in roots) else None


def _sha256(path: Path) -> str:
    from workbench.store.records import sha256_file

    return sha256_file(path)


def _copy(src: Path, dest: Path) -> None:
    """A private copy (never a hard link: a later change to the artifact must not change a built site); a text
    file goes through the secrets' redaction, since a log may print a config that held one."""
    from workbench.secrets import redact_text

    try:
        if dest.exists() or dest.is_symlink():
            dest.unlink()
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = src.read_bytes()
        try:
            data = redact_text(data.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            pass
        dest.write_bytes(data)
    except OSError:
        return


def _preview(path: Path, size: int) -> tuple[str | None, bool]:
    """(text, truncated); None for a binary file."""
    with open(path, "rb") as fh:
        head = fh.read(PREVIEW_HEAD)
        tail = b""
        if size > PREVIEW_HEAD + PREVIEW_TAIL:
            fh.seek(max(PREVIEW_HEAD, size - PREVIEW_TAIL))
            tail = fh.read(PREVIEW_TAIL)
        elif size > PREVIEW_HEAD:
            tail = fh.read()
    if b"\x00" in head[:4096]:
        return None, False
    truncated = size > PREVIEW_HEAD + PREVIEW_TAIL
    text = head.decode("utf-8", errors="replace")
    if truncated:
        skipped = size - len(head) - len(tail)
        text = (text.rsplit("\n", 1)[0] + f"\n\n… {skipped:,} bytes not shown …\n\n" +
                tail.decode("utf-8", errors="replace").split("\n", 1)[-1])
    else:
        text += tail.decode("utf-8", errors="replace")
    return text, truncated


def _from_store(run_id: int, a: dict[str, Any], content: bytes, out_dir: Path, used: set[str]) -> ArtifactView:
    """An artifact whose bytes the store keeps (checked against their sha256 there): written into the site."""
    suffix = Path(a["path"]).suffix.lower()
    suffix = suffix if suffix in TEXT_SUFFIXES else ".txt"
    name = _site_name(a["name"], suffix, used)
    rel = f"artifacts/{run_id}/{name}"
    dest = out_dir / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    from workbench.secrets import redact_text

    try:  # a log may print a config that held a secret: text goes through the redaction, as in _copy
        content = redact_text(content.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        pass
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_bytes(content)
    os.replace(tmp, dest)
    preview, truncated = _preview(dest, len(content))
    note = "binary file" if preview is None else (
        "shown cut to its first and last lines; open the file for all of it" if truncated else "")
    return ArtifactView(a["name"], _size(len(content)), a["sha256"][:12], f"../{rel}", preview, truncated, note)


def _site_name(name: str, suffix: str, used: set[str]) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "artifact"
    out = f"{safe}{suffix}" if not safe.lower().endswith(suffix) else safe
    while out in used:
        out = "_" + out
    used.add(out)
    return out


def artifacts(run_id: int, arts: list[dict[str, Any]], out_dir: Path, roots: list[Path],
              blobs: Callable[[list[str]], dict[str, bytes]] | None = None) -> list[ArtifactView]:
    """The run's artifacts, from the store's own copy when it keeps one (so a teammate's report in another
    folder shows them), else from a file under the workbench's roots."""
    views = []
    used: set[str] = set()
    kept = blobs([a["sha256"] for a in arts]) if blobs and arts else {}
    for a in arts:
        if a["sha256"] in kept:
            views.append(_from_store(run_id, a, kept[a["sha256"]], out_dir, used))
            continue
        # Only files under the store's own artifact root whose bytes match the recorded hash are embedded:
        # a row can name any path, and a shared store must not become a way to read someone's files.
        src = _resolve(a["path"], roots)
        why = None if src is not None else f"not found under the artifact root: {a['path']}"
        if src is not None and _sha256(src) != a["sha256"]:
            why = f"not shown: {a['path']} no longer matches its recorded sha256"
        if why is not None:
            views.append(ArtifactView(a["name"], _size(a["size_bytes"]), a["sha256"][:12], None, None, False, why))
            continue
        size = src.stat().st_size
        suffix = src.suffix.lower() if src.suffix.lower() in TEXT_SUFFIXES else ".txt"
        name = _site_name(a["name"], suffix, used)
        rel = f"artifacts/{run_id}/{name}"
        href: str | None = f"../{rel}"
        note = ""
        if size > MAX_COPY_BYTES:
            href, note = None, f"too large to copy into the site ({_size(size)}); it stays at {src}"
        else:
            _copy(src, out_dir / rel)
        preview, truncated = _preview(src, size)
        if preview is not None:
            from workbench.secrets import redact_text

            preview = redact_text(preview)
        if preview is None:
            note = note or "binary file"
        elif truncated:
            note = note or "shown cut to its first and last lines; open the file for all of it"
        views.append(ArtifactView(a["name"], _size(size), a["sha256"][:12], href, preview, truncated, note))
    return _with_spans(views, arts, kept, roots)


def _with_spans(views: list[ArtifactView], arts: list[dict[str, Any]], kept: dict[str, bytes],
                roots: list[Path]) -> list[ArtifactView]:
    """Each cut log's note says which bytes of which file it holds (the run's artifact log_spans)."""
    import dataclasses
    import json

    from workbench.runner.collect import describe_span

    rows = [a for a in arts if a["name"] == "log_spans"]
    if not rows:
        return views
    content = kept.get(rows[0]["sha256"])
    if content is None:
        src = _resolve(rows[0]["path"], roots)
        content = src.read_bytes() if src is not None and _sha256(src) == rows[0]["sha256"] else None
    try:
        spans = json.loads(content) if content is not None else {}
    except ValueError:
        return views
    if not isinstance(spans, dict):
        return views
    out = []
    for v in views:
        text = describe_span(spans.get(v.name))
        out.append(dataclasses.replace(v, note=f"{text}; {v.note}" if text and v.note else text or v.note))
    return out


def provenance(value: dict[str, Any] | None) -> list[tuple[str, str]]:
    """An imported run's provenance (file, sha256, line, quote…) as rows of a table."""
    import json

    if not value:
        return []
    return [(str(k).replace("_", " "), v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
            for k, v in value.items() if v not in (None, "", [], {})]


def build(run: dict[str, Any], data: StoreData, page: Page, out_dir: Path, roots: list[Path],
          prev_id: int | None, next_id: int | None, hypothesis_known: bool,
          blobs: Callable[[list[str]], dict[str, bytes]] | None = None,
          descriptions: dict[str, str] | None = None, rates: set[str] | None = None,
          shown: RunMetrics | None = None, hypothesis_left_out: bool = False) -> RunContext:
    """The run page; `descriptions` says what each metric of the run's experiment measures; `rates` names its
    proportions, shown in percent as every other page shows them; `shown`: the run's metrics as `wb runs show`
    gives them, whose derived ones are listed apart from the measured; `hypothesis_left_out`: the run's hypothesis
    has no page because its entry in hypotheses.yaml was left out for a problem of its own."""
    rid = run["id"]
    ex = data.executions.get(run["execution_id"]) if run["execution_id"] is not None else None
    # A hypothesis without a page (a wb isolate probe's, one taken out of hypotheses.yaml, or one whose entry was
    # left out for a problem of its own) is named, unlinked.
    hid = run["hypothesis_id"]
    why = LEFT_OUT_NOTE if hypothesis_left_out else "not in hypotheses.yaml"
    unlisted = f"{hid} ({why})" if hid and not hypothesis_known else ""
    meta = [("hypothesis", unlisted), ("status", run["status"]), ("source", run["source"]), ("arm", run["arm"] or ""),
            ("replicate", display.replicate(run["replicate"])),
            ("block / order", f"{'' if run['block'] is None else run['block']} / "
                              f"{'' if run['order_index'] is None else run['order_index']}"),
            ("execution", f"{run['execution_id']} ({ex['mode']}, {ex['status']}, profile {ex['profile']})"
             if ex else ("" if run["execution_id"] is None else str(run["execution_id"]))),
            ("experiment", f"{run['experiment_id'] or ''}"
                           + (f" v{run['experiment_version']}" if run["experiment_version"] is not None else "")),
            ("target / host", f"{run['target'] or ''} / {run['host'] or ''}"),
            ("started", run["started_at"] or ""), ("ended", run["ended_at"] or ""),
            ("stage / phase", f"{run['stage'] or ''} / {run['phase'] or ''}"),
            ("label", run["label"] or ""), ("config hash", run["config_hash"] or "")]
    meta = [(k, v) for k, v in meta if v.strip(" /v")]
    fp = run.get("fingerprint") or {}
    import json

    fingerprint = [(k, v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
                   for k, v in sorted(fp.items())]
    units = sorted(data.units.get(rid, {}).items())
    return RunContext(
        page=page, id=rid, title=f"run {rid}",
        hypothesis=Link(f"../hypotheses/{run['hypothesis_id']}.html", run["hypothesis_id"])
        if run["hypothesis_id"] and hypothesis_known else None,
        meta=meta, variables=sorted((k, str(v)) for k, v in (run["variables"] or {}).items()),
        fingerprint=fingerprint,
        metrics=[(k, stats.fmt_value(v, True) if k in (rates or set()) and v is not None else stats.fmt(v),
                  (descriptions or {}).get(k, "")) for k, v in sorted(run["metrics"].items())],
        units=units, units_total=sum(n for _, n in units),
        probe_rows=[ProbeRow(p["target"], p["process"], str(p["pid"]), p["calls"], p["resolved"])
                    for p in data.probes.get(rid, [])],
        artifacts=artifacts(rid, data.artifacts.get(rid, []), out_dir, roots, blobs),
        rendered_config=run.get("rendered_config"), error=run["error"], provenance=provenance(run["provenance"]),
        prev=Link(f"{prev_id}.html", f"run {prev_id}") if prev_id is not None else None,
        next=Link(f"{next_id}.html", f"run {next_id}") if next_id is not None else None,
        derived=[(k, stats.fmt_value(v, k in (rates or set())), (descriptions or {}).get(k, ""))
                 for k, v in sorted(shown.derived.items())] if shown else [],
        derived_by=shown.experiment if shown else None, derived_note=shown.note if shown else None,
        derived_lacking=shown.lacking() if shown else [], execution_error=ex.get("error") if ex else None)
