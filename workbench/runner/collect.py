"""A run's collect stage: its metrics from the workload's output, commands, the units file and the call-count
probes; and, however the run ended, the profile's declared files fetched beside it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import TargetError, WbError
from workbench.runner import extract
from workbench.runner.outcome import RunOutcome, StageFailed
from workbench.runner.plan import PlannedRun
from workbench.runner.render import render_command, render_text
from workbench.runner.soft_metrics import missing_warning, needed_metrics

if TYPE_CHECKING:
    from workbench.runner.harness import Harness
    from workbench.runner.targets.base import FileStat


async def collect(h: "Harness", pr: PlannedRun, values: dict[str, Any], env: dict[str, str], result: Any,
                   out: RunOutcome, art: Path) -> None:
    prof = h.profile
    exp = h.experiment
    text = {"output": result.output if result else "", "stdout": result.stdout if result else "",
            "stderr": result.stderr if result else ""}
    needed = needed_metrics(h.hypothesis, exp)
    try:
        for name, ex in prof.collect.items():
            if ex.unit_field is not None:
                continue  # read from the units below
            try:
                await _extract_one(h, pr, name, ex, values, env, text, out)
            except extract.ExtractError as exc:
                if name in needed:
                    raise
                out.missing[name] = str(exc)
                h.warn(missing_warning(name, out.missing[name]))
        if h.profile.artifacts and any(ex.command is not None for ex in prof.collect.values()):
            out.log_collected = await _log_stats(h, pr, values, since=out.log_starts)
        if prof.units is not None:
            upath = render_text(prof.units.path, values, where="units.path")
            local = art / "units.jsonl"
            if not await h.target.fetch(pr.host, upath, local):
                raise extract.ExtractError(f"the workload wrote no units file at {upath}",
                                           text["output"][-800:])
            out.artifacts["units"] = local
            out.units = extract.read_units(local.read_text(encoding="utf-8"), where=f"units file {upath}")
            if not out.units:
                raise extract.ExtractError(f"the units file {upath} is empty", text["output"][-800:])
            undeclared = extract.undeclared_outcomes_warning(out.units, exp.unit, f"{pr.arm} replicate {pr.replicate}")
            if undeclared:
                h.warn(undeclared)
            for name, n in extract.unit_counts(exp.metrics, out.units).items():
                out.metrics[name] = n
                out.metric_sources[name] = "units"
            for name, ex in prof.collect.items():
                if ex.unit_field is not None:
                    out.metrics[name] = extract.unit_aggregate(name, out.units, ex.unit_field, ex.aggregate, ex.parse)
                    out.metric_sources[name] = "units"
        elif any(ex.unit_field for ex in prof.collect.values()):
            raise extract.ExtractError("collect names a unit_field but the profile declares no units file")
        _check_proportions(exp, out.metrics)
        if h.probe_targets:
            await _collect_probes(h, pr, values, out, art)
    except extract.ExtractError as exc:
        raise StageFailed("invalid", f"{exc}" + (f"\n--- {exc.label} ---\n{exc.excerpt}" if exc.excerpt else ""))


def _check_proportions(exp: Any, metrics: dict[str, Any]) -> None:
    """A proportion's numerator must lie between 0 and its denominator, as the evidence importer requires: a
    run that collected 90 of 10 sessions measured no rate, and the analysis's interval cannot take it."""
    for name, spec in exp.metrics.items():
        if spec.kind != "proportion" or spec.numerator not in metrics or spec.denominator not in metrics:
            continue
        num, den = metrics[spec.numerator], metrics[spec.denominator]
        if num > den:
            raise extract.ExtractError(f"metric {spec.numerator!r} ({num:g}) is larger than metric "
                                       f"{spec.denominator!r} ({den:g}), its denominator in proportion {name!r}")
        if num < 0:
            raise extract.ExtractError(f"metric {spec.numerator!r} ({num:g}) is below 0, the numerator of "
                                       f"proportion {name!r}")


async def _extract_one(h: "Harness", pr: PlannedRun, name: str, ex: Any, values: dict[str, Any],
                       env: dict[str, str], text: dict[str, str], out: RunOutcome) -> None:
    """One metric from the workload's output (regex) or a command's output."""
    if ex.regex is not None:
        out.metrics[name] = extract.from_regex(name, ex.regex, text[ex.source], ex.parse)
        out.metric_sources[name] = "regex"
        return
    cmd = render_command(ex.command or "", values, where=f"collect.{name}.command")
    res = await h.target.run(pr.host, cmd, env=env, timeout=ex.timeout_s)
    if not res.ok:
        raise extract.ExtractError(f"metric {name!r}: `{cmd}` exited {res.rc}", res.excerpt())
    out.metrics[name] = extract.from_command_output(name, res.stdout, ex.parse)
    out.metric_sources[name] = "command"


async def _collect_probes(h: "Harness", pr: PlannedRun, values: dict[str, Any], out: RunOutcome, art: Path) -> None:
    import time as _time

    from workbench.probes import DEFAULT_INTERVAL, read_counts

    if h.remote_work:
        # Probed processes flush their counts every interval: let the last calls land, then fetch them.
        await asyncio.sleep(2 * DEFAULT_INTERVAL)
        local_dir = art / "probe"
        await h.target.fetch_dir(pr.host, f"{values['run_dir']}/probe", local_dir)
        counts = read_counts(str(local_dir))
    else:
        t0 = _time.monotonic()
        # Waiting for the probed processes' next flush is a wait on the target, not runner work.
        counts = await asyncio.to_thread(read_counts, str(Path(values["run_dir"]) / "probe"),
                                         since=_time.time(), timeout_s=3 * DEFAULT_INTERVAL)
        h.target.clock.add(pr.host, _time.monotonic() - t0)
    out.probe_counts = counts
    for t in h.probe_targets:
        out.metrics[f"calls:{t}"] = sum(int(c.get("calls", 0)) for c in counts if c.get("target") == t)
        out.metric_sources[f"calls:{t}"] = "probe"


async def _log_stats(h: "Harness", pr: PlannedRun, values: dict[str, Any],
                     since: dict[str, "FileStat"] | None = None) -> dict[str, "FileStat"]:
    """Where each declared file stands now; one whose path cannot be rendered yet, or that is missing or cannot be
    read, is left out. A file in `since` (its span's start) is fingerprinted at that start's size, to be compared
    with it (`FileStat.replaced_since`)."""
    stats: dict[str, FileStat] = {}
    for name, path_t in h.profile.artifacts.items():
        try:
            at = since[name].size if since and name in since else None
            stat = await h.target.file_stat(pr.host, render_text(path_t, values, where=f"artifacts.{name}"), at=at)
        except (TargetError, WbError, OSError):
            continue
        if stat is not None:
            stats[name] = stat
    return stats


async def note_log_starts(h: "Harness", pr: PlannedRun, values: dict[str, Any], out: RunOutcome) -> None:
    """Each declared file as the run starts (before its restart): a deployment's log grows across runs and
    executions, and a run that ends before its workload keeps only what was written after this byte. Called before
    the render stage (with the context only) and after it (for a path that names a variable); a file noted once
    stays noted."""
    for name, stat in (await _log_stats(h, pr, values)).items():
        out.log_starts.setdefault(name, stat)


async def note_workload_starts(h: "Harness", pr: PlannedRun, values: dict[str, Any], out: RunOutcome) -> None:
    """Each declared file as the workload starts, just before `run_start` is taken for the metrics: a log metric
    counts from there (none of the restart's lines), so the run's copy of the log starts there too."""
    out.log_starts = await _log_stats(h, pr, values)
    out.log_starts_at = "workload"


async def note_log_ends(h: "Harness", pr: PlannedRun, values: dict[str, Any], out: RunOutcome) -> None:
    """Each declared file as the metrics are collected, where a count of it ends, and so where its copy ends.

    Taken before the collect commands, not after: a count reads the log at some moment while its command runs,
    which no mark taken outside it can match. Taken after them, the copy would hold what the commands themselves
    log and whatever comes during the ones after the count, lines no count saw; taken before, only what was
    written while the commands ran is in doubt, and the collect stage notes it once they have run (the span says
    how many bytes: `fetch_artifacts`). One
    shorter than at its start, another file, or one whose bytes before the start's byte changed (truncated in place
    and regrown past it) was rotated: its copy cannot be cut at the start's byte."""
    out.log_ends = await _log_stats(h, pr, values, since=out.log_starts)
    for name, stat in out.log_ends.items():
        if name in out.log_starts and stat.replaced_since(out.log_starts[name]):
            out.log_rotated.add(name)


async def fetch_artifacts(h: "Harness", pr: PlannedRun, values: dict[str, Any], out: RunOutcome, art: Path) -> None:
    """Copy the profile's declared files (logs) next to stdout/stderr, each the span its run's metrics counted
    (`note_workload_starts` to `note_log_ends`); a missing one is skipped, not fatal. What each copy covers goes
    into the artifact log_spans."""
    spans: dict[str, dict[str, Any]] = {}
    for name, path_t in h.profile.artifacts.items():
        try:
            path = render_text(path_t, values, where=f"artifacts.{name}")
            local = art / f"{name}{Path(path).suffix or '.txt'}"
            start = out.log_starts.get(name)
            if start is None:  # not there as the span began: all of it is the run's
                if await h.target.fetch(pr.host, path, local):
                    out.artifacts[name] = local
                continue
            now = await h.target.file_stat(pr.host, path, at=start.size)
            if now is None:
                continue
            rotated = name in out.log_rotated or now.replaced_since(start)
            end = out.log_ends.get(name)
            cut = 0 if rotated else start.size
            stop = end.size if end is not None and not now.replaced_since(end) else now.size
            if not await h.target.fetch(pr.host, path, local, offset=cut):
                continue
            if local.stat().st_size > stop - cut:  # what the log gained after the count is no part of its span
                os.truncate(local, max(0, stop - cut))
            out.artifacts[name] = local
            after = out.log_collected.get(name)
            # Written while the collect commands ran: a count that read the log then may include it.
            during = after.size - stop if after is not None and end is not None and not after.replaced_since(end) \
                and stop == end.size else 0
            if cut or rotated:
                at = "collected" if end is not None else out.log_starts_at
                spans[name] = _span(path, cut, local.stat().st_size, start, at, rotated, max(during, 0))
        except (TargetError, WbError, OSError):
            continue
    if spans:
        (art / "log_spans.json").write_text(json.dumps(spans, indent=1, sort_keys=True), encoding="utf-8")
        out.artifacts["log_spans"] = art / "log_spans.json"


SPAN_NOTES = {  # where a copy's span began and ended, as `fetch_artifacts` tells it
    "collected": "written from the workload's start until its metrics were collected, the span a log metric "
                 "counts (the restart's lines are not in it)",
    "workload": "written since the workload started (the run ended before its metrics were collected)",
    "run": "written since the run started (before its restart): the run ended before its workload",
}


def _span(path: str, cut: int, size: int, start: "FileStat", at: str, rotated: bool,
          during: int = 0) -> dict[str, Any]:
    """What one fetched file covers: bytes [from_byte, to_byte) of `source`, and why those; `during`: the bytes
    written to it while the collect commands ran, after the span's end."""
    note = SPAN_NOTES[at]
    if rotated:
        note = (f"the log was rotated during the run (found shorter than the {start.size} B it held as its span "
                "began, replaced by another file, or other bytes before that point: truncated in place and "
                "regrown): the new file from its start; the old file's part is not kept")
    span = {"source": path, "from_byte": cut, "to_byte": cut + size, "whole": False, "rotated": rotated}
    if during:
        note += (f"; {during} B were written to it while the collect commands ran, after this span's end: a count "
                 "that read the log then may include them")
        span["written_while_collecting"] = during
    return {**span, "note": note}


def describe_span(span: Any) -> str:
    """What a fetched file covers, for a listing: "bytes A-B of SOURCE (why)", or why it is whole (a span an older
    wb recorded); "" for none."""
    if not isinstance(span, dict) or "source" not in span:
        return ""
    if span.get("whole"):
        return str(span.get("note") or "whole file")
    return f"bytes {span.get('from_byte')}-{span.get('to_byte')} of {span['source']} ({span.get('note', '')})"
