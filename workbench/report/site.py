"""Builds the static site: board, one page per hypothesis, runs, confound report, lineage — all offline.

Pages link to each other by relative paths and load one shared chart runtime from assets/, so the
folder can be copied anywhere (an air-gapped cluster, a shared drive) and opened from disk.
"""

from __future__ import annotations

import functools
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbench.analysis import display
from workbench.analysis.results import Analysis
from workbench.errors import BadInput
from workbench.registry.folder import Registry
from workbench.report import MANIFEST, assets, hypothesis_page, isolate_page, pages, run_page
from workbench.report.context import LeftOut, Page
from workbench.report.data import StoreData
from workbench.store.engine import Store, holding

RUNS_PER_LIST_PAGE = 400
TEMPLATES = Path(__file__).resolve().parent / "templates"


@functools.lru_cache(maxsize=1)
def _env():
    """The templates' environment, one per process: it keeps each template compiled (a site's templates took
    ~50 ms of CPU to compile, at every build; a process building several sites compiles them once). Jinja
    reloads a template whose file changed."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env


def _write(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


STAGE_PREFIX = ".wb-build-"  # where a build writes its files (one folder per process) until they all move in


def _stage(out: Path) -> Path:
    """This build's staging folder in `out`, after removing those a killed build left (their process gone)."""
    import shutil

    if out.is_dir():
        for leftover in out.glob(f"{STAGE_PREFIX}*"):
            pid = leftover.name[len(STAGE_PREFIX):]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                shutil.rmtree(leftover, ignore_errors=True)
    return out / f"{STAGE_PREFIX}{os.getpid()}"


def _alive(pid: int) -> bool:
    """Whether the build of `pid` may still run (a zombie, a build killed and not waited for, is gone)."""
    from workbench.processes import pid_alive

    return pid_alive(pid, None)


def _check_out_dir(out: Path, label: str) -> set[str]:
    """Files of the previous build (to remove the stale ones); refuse a non-empty folder wb did not make, or a file
    where the folder (or one above it) would be."""
    in_the_way = next((p for p in (out, *out.parents) if p.exists()), None)
    if in_the_way is not None and not in_the_way.is_dir():
        raise BadInput(f"{label}: {in_the_way} is a file, not a folder", hint="pass --out a folder for the site")
    manifest = out / MANIFEST
    if manifest.is_file():
        try:
            files = json.loads(manifest.read_text(encoding="utf-8")).get("files")
        except (ValueError, OSError, AttributeError):  # unreadable, or not an object: no list of files to go by
            return set()
        return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()
    if out.is_dir() and any(p.name not in (".gitkeep", ".gitignore") and not p.name.startswith(STAGE_PREFIX)
                            for p in out.iterdir()):
        raise BadInput(f"{label}: {out} is not empty and holds no wb site",
                       hint="pass --out a new or empty folder (wb replaces only the sites it wrote)")
    return set()


@holding  # every hypothesis's analysis reads the store: one open file for all of them
def gather(store: Store, registry: Registry, hypothesis_ids: list[str] | None = None, *, confounds: bool = True
           ) -> tuple[StoreData, dict[str, tuple[Analysis | None, str]], list[dict[str, Any]] | None, str]:
    """(store data, {id: (analysis, note)}, confound findings or None, note).

    Each hypothesis with runs or a verdict is analysed afresh (from the stored verdict's execution, so
    the numbers shown are the ones it rests on). Analysis of broken data gives a verdict, not an
    exception; bad input (such as overrides an edited experiment no longer accepts) becomes a page note.
    """
    from workbench.analysis.confounds import scan_confounds
    from workbench.analysis.status import prediction_keys
    from workbench.analysis.stored import analyze_stored
    from workbench.report import data as data_mod

    wanted = set(hypothesis_ids) if hypothesis_ids is not None else {h.id for h in registry.hypotheses}
    data = data_mod.load(store, {h.id: h.parent for h in registry.hypotheses},
                         {h.id: h.status for h in registry.hypotheses},
                         {h.id: prediction_keys(h, registry.experiments) for h in registry.hypotheses})
    analyses: dict[str, tuple[Analysis | None, str]] = {}
    for h in registry.hypotheses:
        if h.id in wanted and (data.runs_by_hypothesis.get(h.id) or h.id in data.verdicts):
            try:
                shown = data.verdicts.get(h.id) or {}  # re-read as it was decided: a pooled one over the same runs
                analyses[h.id] = (analyze_stored(store, registry, h.id, execution_id=shown.get("execution_id"),
                                                 any_hypothesis=hypothesis_page.pooled_other_hypotheses(data, h.id)),
                                  "")
            except BadInput as exc:
                analyses[h.id] = (None, f"analysis could not run: {exc.message}")
    findings = [f.to_dict() for f in scan_confounds(store, registry)] if confounds else None
    return data, analyses, findings, ""


def _run_pages(data: Any, known: set[str], roots: list[Path], out: Path, page: Any, render: Any,
               blobs: Any = None, descriptions: dict[str, dict[str, str]] | None = None,
               copied: set[str] | None = None, files_dir: Path | None = None,
               rates: dict[str, set[str]] | None = None, experiments: Any = None,
               left_out: tuple[str, ...] = ()) -> dict[Any, str]:
    """One page per run, linked to its neighbours of the same hypothesis; `descriptions`: experiment id ->
    what each of its metrics measures; `rates`: experiment id -> its proportions; `copied` gets the site path of
    each artifact file the pages link to; `files_dir` is where the artifact copies are written (default `out`);
    `experiments` (id -> Experiment) derive each run's metrics as `wb runs show` does; `left_out`: ids of entries
    of hypotheses.yaml left out for a problem of their own."""
    from workbench.analysis.run_metrics import definitions, metrics_of

    written: dict[Any, str] = {}
    by_hyp: dict[Any, list[int]] = {}
    for rid, r in data.runs.items():
        by_hyp.setdefault(r["hypothesis_id"], []).append(rid)
    for ids in by_hyp.values():
        for i, rid in enumerate(ids):
            run = data.runs[rid]
            exp, note = definitions(rid, run["experiment_id"], run["experiment_version"], experiments or {})
            ctx = run_page.build(run, data, page(f"run {rid}", "runs", "../"), files_dir or out, roots,
                                 ids[i - 1] if i > 0 else None, ids[i + 1] if i + 1 < len(ids) else None,
                                 run["hypothesis_id"] in known, blobs, (descriptions or {}).get(run["experiment_id"]),
                                 (rates or {}).get(run["experiment_id"]), metrics_of(rid, run["metrics"], exp, note),
                                 run["hypothesis_id"] in left_out)
            if copied is not None:
                copied.update(a.href.removeprefix("../") for a in ctx.artifacts if a.href)
            written[rid] = str(render("run.html.j2", ctx, out / "runs" / f"{rid}.html"))
    return written


def _prepare_out_dir(out: Path, label: str) -> tuple[set[str], Path]:
    """(files of the previous build, this build's staging folder, made). Every file is written to the staging
    folder and moved in only when all are: a build stopped part way (Ctrl-C) leaves the previous site whole, not
    new pages beside old ones that contradict them."""
    previous = _check_out_dir(out, label)
    if not out.exists() and not out.parent.is_dir():  # as the store and a bundle: a mistyped folder is an error
        import shlex

        raise BadInput(f"{label}: the folder {out.parent} does not exist",
                       hint=f"create it first: mkdir -p {shlex.quote(str(out.parent))}")
    out.mkdir(exist_ok=True)
    stage = _stage(out)
    stage.mkdir(exist_ok=True)
    return previous, stage


@holding  # every page reads the store
def build_site(store: Store, registry: Registry, out_dir: str | Path, *, generated_at: datetime | None = None,
               artifacts: Path | None = None, default: bool = False,
               left_out: tuple[LeftOut, ...] = ()) -> dict[str, Any]:
    """Write the whole site under `out_dir`; returns {"index", "hypotheses": {id: path}, "runs": {id: path},
    "lineage", "confounds", "runs_list", "assets", "pages"} with absolute paths. `artifacts` is the artifact
    root the runner wrote to (default .wb/artifacts): run pages embed only artifacts found under it. `default`:
    `out_dir` is the workbench's own reports/ folder, which no --out named (a message names it so). `left_out`: the
    entries of hypotheses.yaml `registry` lacks (a problem of their own), which the index names with their problems."""
    out = Path(out_dir).expanduser().resolve()
    label = f"the site folder {out_dir}" if default else f"--out {out_dir}"
    try:
        previous, stage = _prepare_out_dir(out, label)
    except OSError as e:  # a read-only mount, no permission, a name too long: bad input, not a bug
        raise BadInput(f"{label}: the folder cannot be made or written to ({e.strerror})",
                       hint="pass --out a folder you can write to") from None
    try:
        return _build(store, registry, out, stage, previous, generated_at, artifacts, left_out)
    finally:
        import shutil

        shutil.rmtree(stage, ignore_errors=True)


def _build(store: Store, registry: Registry, out: Path, stage: Path, previous: set[str],
           generated_at: datetime | None, artifacts: Path | None, left_out: tuple[LeftOut, ...]) -> dict[str, Any]:
    now = (generated_at or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    data, analyses, findings, confound_note = gather(store, registry)

    def put(path: Path, text: str) -> None:  # a file of the site (a path under `out`), written to the stage
        _write(stage / path.relative_to(out), text)

    env = _env()
    written: list[Path] = []

    from workbench.runner.execute import artifacts_root
    from workbench.secrets import redact_text

    def render(template: str, ctx: Any, path: Path) -> Path:
        # After escaping: a secret's value (or a URL's password) never reaches a page; the mask is HTML-safe.
        put(path, redact_text(env.get_template(template).render(ctx=ctx), mask="&lt;redacted&gt;"))
        written.append(path)
        return path

    def page(title: str, section: str, root: str = "", charts: bool = False) -> Page:
        return Page(title=title, root=root, section=section, generated_at=now, has_charts=charts, store=store.name)

    statuses = pages.status_of(registry, data)
    known = {h.id for h in registry.hypotheses}
    result: dict[str, Any] = {"hypotheses": {}, "runs": {}}
    result["index"] = str(render("index.html.j2", pages.index(registry, data, statuses, page("Hypotheses", "board"),
                                                              analyses, left_out),
                                 out / "index.html"))
    for h in registry.hypotheses:
        analysis, note = analyses.get(h.id, (None, ""))
        ctx = hypothesis_page.build(h, registry, data, analysis, note, page(h.id, "hypothesis", "../"), statuses)
        result["hypotheses"][h.id] = str(render("hypothesis.html.j2", ctx, out / "hypotheses" / f"{h.id}.html"))

    roots = [artifacts_root(Path(registry.root), artifacts)]
    descriptions = {eid: hypothesis_page.metric_descriptions(e) for eid, e in registry.experiments.items()}
    rates = {eid: {m for m in e.metrics if display.is_proportion(e, m)} for eid, e in registry.experiments.items()}
    copied: set[str] = set()
    result["runs"] = _run_pages(data, known, roots, out, page, render, store.artifact_contents, descriptions,
                                copied, stage, rates, registry.experiments, registry.left_out)

    run_ids = sorted(data.runs, reverse=True)
    chunks = [run_ids[i:i + RUNS_PER_LIST_PAGE] for i in range(0, len(run_ids), RUNS_PER_LIST_PAGE)] or [[]]
    names = ["runs.html"] + [f"runs-{i + 1}.html" for i in range(1, len(chunks))]
    for i, chunk in enumerate(chunks):
        ctx = pages.runs_list(data, known, chunk, page("Runs" + (f" ({i + 1}/{len(chunks)})" if len(chunks) > 1
                                                                  else ""), "runs"), descriptions, rates,
                                 registry.experiments, registry.left_out)
        ctx_pages = [(n, n == names[i]) for n in names] if len(chunks) > 1 else []
        put(out / names[i], redact_text(env.get_template("runs.html.j2").render(ctx=ctx, pager=ctx_pages),
                                        mask="&lt;redacted&gt;"))
        written.append(out / names[i])
    result["runs_list"] = str(out / "runs.html")
    result["confounds"] = str(render("confounds.html.j2",
                                     pages.confounds(findings, confound_note, known, set(data.runs),
                                                     page("Confounds", "confounds")),
                                     out / "confounds.html"))
    result["lineage"] = str(render("lineage.html.j2",
                                   pages.lineage_context(registry, data, statuses, page("Lineage", "lineage")),
                                   out / "lineage.html"))
    result["isolate"] = str(render("isolate.html.j2", isolate_page.build(store, data, page("Isolate", "isolate")),
                                   out / "isolate.html"))
    result["pages"] = [str(p) for p in written]
    asset_paths = assets.write_assets(out / "assets", put)  # the runtime is written only when out's is outdated
    result["assets"] = [str(p) for p in asset_paths]

    # The artifact copies this build's run pages link to: a deleted run's copies go with its page.
    files = {str(p.relative_to(out)) for p in written + asset_paths} | {f for f in copied if (stage / f).is_file()}
    before, unnamed = built_from(out), names_no_store(out)
    _publish(out, stage, files, previous, now, store.name)
    result["store"] = store.name
    result["replaced_store"] = before if before is not None and before != store.name else None
    result["replaced_unnamed"] = unnamed  # a site that named no store: which one it showed is not known
    return result


def built_from(out: Path) -> str | None:
    """The store the site in `out` was built from, as its manifest names it; None when there is no site there or
    it does not say (a site built before wb named it)."""
    try:
        store = json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("store")
    except (ValueError, OSError, AttributeError):
        return None
    return store if isinstance(store, str) else None


def names_no_store(out: Path) -> bool:
    """Whether `out` holds a site whose manifest names no store (an older wb built it, or the manifest is damaged):
    it may show another store than the one a rebuild reads, so it is replaced only when asked, and said so."""
    return (out / MANIFEST).is_file() and built_from(out) is None


def _publish(out: Path, stage: Path, files: set[str], previous: set[str], now: str, store: str) -> None:
    """Move the staged build into `out`, remove what the previous build wrote and this one did not (a deleted
    run's page and artifact copies), then write the manifest that names this build's files."""
    for staged in sorted(p for p in stage.rglob("*") if p.is_file()):
        dest = out / staged.relative_to(stage)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, dest)
    for stale in previous - files:
        target = (out / stale).resolve()
        if target.is_relative_to(out) and target.is_file():
            target.unlink()
    artifacts_dir = out / "artifacts"
    if artifacts_dir.is_dir():
        for folder in artifacts_dir.iterdir():
            if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                folder.rmdir()
    _write(out / MANIFEST, json.dumps({"format": 1, "generated_at": now, "store": store, "files": sorted(files)},
                                      indent=0))
