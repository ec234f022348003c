"""The application: one `Workbench`, opened from `Settings`, with one method per thing a user does.

The CLI builds it once and formats what its methods return; the methods open the registry and the
store, call the library, and close what they opened. Nothing here prints.
"""

from __future__ import annotations

import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator

from workbench.app_runs import ImportResult, StoredRuns  # noqa: F401 (ImportResult: part of this module's interface)
from workbench.errors import BadInput, NoEvidence, WbError
from workbench.settings import Settings

if TYPE_CHECKING:
    from workbench.analysis.confounds import Finding
    from workbench.analysis.results import Analysis
    from workbench.analysis.status import CurrentStatus
    from workbench.isolate.app import IsolateOutcome
    from workbench.registry.hypothesis import Hypothesis
    from workbench.registry.folder import Registry
    from workbench.registry.validate import Apart
    from workbench.report.context import LeftOut
    from workbench.runner.execute import RunOptions
    from workbench.runner.plan import PlannedRun
    from workbench.runner.summary import ExecutionResult
    from workbench.store.engine import Store
    from workbench.team.bundle import BundleSummary
    from workbench.team.carried import Carried
    from workbench.team.reviews import ReviewState
    from workbench.store.entities import ReviewRecord, VerdictRecord

FORMATS = ("html", "md")


def report_format(fmt: str) -> str:
    """`wb report --format`'s value in lower case, as the listings take theirs; an unknown one is bad input."""
    if fmt.lower() not in FORMATS:
        from workbench.registry.common import did_you_mean

        raise BadInput(f"--format {fmt!r} is not one of {', '.join(FORMATS)}",
                       hint=did_you_mean(fmt.lower(), FORMATS)
                       or "use --format html (the site) or --format md (Markdown to stdout)", where="--format")
    return fmt.lower()


@dataclass(frozen=True)
class HypothesisStatus:
    """A hypothesis with its current status and the verdict it rests on (analysis.status decides which)."""

    hypothesis: "Hypothesis"
    current: "CurrentStatus"

    @property
    def verdict(self) -> "VerdictRecord | None":
        return self.current.verdict

    @property
    def status(self) -> str:
        return self.current.status

    def to_dict(self) -> dict[str, Any]:
        h, v = self.hypothesis, self.verdict
        return {"id": h.id, "parent": h.parent, "kind": h.kind, "claim": h.claim, "experiment": h.experiment,
                "isolates": h.isolates, "declared_status": h.status, **self.current.to_dict(),
                "verdict": v.verdict if v else None, "verdict_at": v.created_at if v else None}


@dataclass(frozen=True)
class HypothesisDetail(HypothesisStatus):
    arms: dict[str, dict[str, str]] = field(default_factory=dict)
    children: tuple[str, ...] = ()
    # The metrics its predictions and guards name: {name: {"kind", "description"}}, as the experiment declares them.
    metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    # Variables drawn afresh for each replicate from the execution seed (left out of `arms`: no arm fixes them),
    # and the execution seed the files declare (design.seed; None: drawn for each execution, or --seed).
    per_replicate: tuple[str, ...] = ()
    seed: int | None = None
    seed_from: str | None = None  # "hypothesis" or "experiment": whose design.seed it is
    # The design its runs follow: replicates per arm, blocks, the --sequential budget, and whose file set each
    # ({"replicates", "replicates_from", "blocks", "max_replicates", "max_replicates_from"}; empty: no experiment).
    design: dict[str, Any] = field(default_factory=dict)
    # Of `metrics`, those that read in percent: a proportion and any alias of one (display.is_proportion).
    percent: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        from workbench.analysis.results import Check

        out = super().to_dict()
        out["definition"] = self.hypothesis.model_dump(mode="json", exclude_none=True)
        out["arms"] = self.arms
        out["per_replicate"] = list(self.per_replicate)
        out["seed"] = self.seed
        out["seed_from"] = self.seed_from
        out["design"] = self.design
        out["metrics"] = self.metrics
        out["children"] = list(self.children)
        out["reasoning"] = self.verdict.reasoning if self.verdict else None
        v = self.verdict  # each stored check as it was stored, with the mark its line shows
        out["checks"] = [c | {"mark": Check.from_dict(c).mark(v.verdict)} for c in v.checks] if v else []
        return out


def command_timing(wall_s: float, **parts: float) -> dict[str, float]:
    """The command's wall time and its parts to the millisecond, rounded as the text's `time:` line rounds them
    (display.adding_up): what JSON gives adds up to its wall time as the text does."""
    from workbench.analysis import display

    total, shown = display.adding_up(wall_s, list(parts.values()), places=3)
    return {"wall_s": float(total), **{k: float(v) for k, v in zip(parts, shown)}}


@dataclass(frozen=True)
class RunReport:
    """`wb hypothesis run`: the execution, its analysis (None when it could not run: `analysis_error`
    says why) and the hypothesis page of the rebuilt site."""

    execution: "ExecutionResult"
    analysis: "Analysis | None"
    analysis_error: str | None = None
    report: str | None = None
    # Seconds of the whole call: wall_s = target_s + runner_s + analysis_s + report_s (runner_s is the rest:
    # planning, the store, restoring); the JSON's one `timing` (an interrupted execution has none: {}).
    timing: dict[str, float] = field(default_factory=dict)
    report_error: str | None = None  # why the site asked for was not rebuilt (the runs are recorded all the same)
    report_note: str | None = None  # the site was left (built from another store), or replaced one from another

    def to_dict(self) -> dict[str, Any]:
        from workbench.analysis.results import marked_checks

        a = self.analysis
        # One timing, the command's (the text's `time:` line), in place of the experiment loop's.
        return {**self.execution.to_dict(), "verdict": a.verdict if a else None,
                "reasoning": a.reasoning if a else None,
                "checks": marked_checks(a.checks, a.verdict) if a else [], "analysis_error": self.analysis_error,
                "report": self.report, "report_error": self.report_error, "report_note": self.report_note,
                "timing": self.timing}


@dataclass(frozen=True)
class ReportResult:
    format: str
    markdown: str | None = None
    site: dict[str, Any] = field(default_factory=dict)
    page: str | None = None  # the page to show (index, or the hypothesis asked for)


@dataclass(frozen=True)
class LineageNode:
    status: HypothesisStatus
    depth: int

    def to_dict(self) -> dict[str, Any]:
        d = self.status.to_dict()
        return {k: d[k] for k in ("id", "parent", "kind", "claim", "status", "verdict", "verdict_at")} | \
            {"depth": self.depth}


@dataclass(frozen=True)
class Revision:
    store: str
    revision: str | None
    head: str
    newer: bool = False  # a revision none of this wb's migrations makes: a newer wb wrote the store

    @property
    def is_head(self) -> bool:
        return self.revision == self.head

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "revision": self.revision, "head": self.head, "is_head": self.is_head}


def _default_store(settings: Settings) -> Path:
    """wb.duckdb in the workbench folder (--root / $WB_ROOT, else the nearest folder up holding hypotheses.yaml),
    else in the current folder: a command run from a subfolder, or with --root from elsewhere, reads and
    writes the workbench's own store, not a new one where it stands."""
    from workbench.registry.loader import find_root
    from workbench.store.engine import DEFAULT_DB

    if settings.root is not None:
        return Path(settings.root).expanduser() / DEFAULT_DB
    try:
        return find_root() / DEFAULT_DB
    except BadInput:
        return Path(DEFAULT_DB)


RESUME_HINT = "point --db (or $WB_DB) at the store the interrupted execution was recorded in"


class Workbench(StoredRuns):
    """One workbench folder and its store, as `settings` name them (its methods on stored runs and evidence:
    app_runs.StoredRuns)."""

    def __init__(self, settings: Settings) -> None:
        if settings.root is not None:  # a file is no workbench, even for a command that reads only a named store
            from workbench.registry.loader import check_root_not_file

            check_root_not_file(Path(settings.root).expanduser(), settings.root_from)
        # No --db, $WB_DB or db=: the workbench's own wb.duckdb, which errors about it do not pin on a flag.
        self.default_db = settings.db is None
        self.settings = settings if settings.db is not None else replace(settings, db=str(_default_store(settings)))
        self._registry: "Registry | None" = None
        self._apart_read: "Apart | None" = None

    @classmethod
    def open(cls, settings: Settings | None = None) -> "Workbench":
        return cls(settings or Settings.from_env())

    @property
    def registry(self) -> "Registry":
        if self._registry is None:
            from workbench.registry import load_registry

            self._registry = load_registry(self.settings.root, self.settings.root_from)
        return self._registry

    @contextmanager
    def store(self, *, read_only: bool = False, held: bool = True,
              deferred_schema: bool = False) -> Iterator["Store"]:
        """The store, held open for the block (`Store.held`) unless `held=False`: a command that runs a workload
        must not keep other processes out of it meanwhile. `deferred_schema`: an empty store's schema is made
        with the first write, and not at all when that write is refused (see `open_store`)."""
        from workbench.store import open_store

        if read_only:
            self._url_to_read()
        if read_only and self._own_store() and not self._store_exists():
            # The workbench's own wb.duckdb before anything was recorded (a fresh checkout): a read sees no runs, as
            # in an empty store, and creates none. A missing store a flag or $WB_DB names is a mistyped path, which
            # `open_store` refuses. A --root (or $WB_ROOT) that is no workbench is a mistyped folder, not an empty one,
            # and so is a current folder with no workbench in or above it (wb run from the wrong place).
            from workbench.registry.loader import check_root, find_root
            from workbench.store.engine import empty_store, missing_store, resolve_url

            path = resolve_url(self.settings.db, self.settings.db_from)[1]
            if self.settings.root is not None:
                check_root(Path(self.settings.root).expanduser(), self.settings.root_from)
            else:
                try:
                    find_root(root_from=self.settings.root_from)
                except BadInput:
                    if self.default_db:
                        raise
                    # --db spelling out ./wb.duckdb where no workbench is: a path that is not there
                    raise missing_store(path, self.settings.db_from) from None
            with empty_store(str(path), held=held, source=self.settings.db_from) as store:
                yield store
            return
        with open_store(self.settings.db, read_only=read_only, lock_wait_s=self.settings.lock_wait_s,
                        held=held, deferred_schema=deferred_schema, source=self.settings.db_from,
                        default=self.default_db) as store:
            yield store

    def _url_to_read(self) -> tuple[str, Path | None]:
        """The store's URL and path, for a read: a file that is no store is refused with a read's hint (a read
        creates no store, so "a new file name" is no way out)."""
        from workbench.store import resolve_url
        from workbench.store.engine import NotAStore

        try:
            return resolve_url(self.settings.db, self.settings.db_from)
        except NotAStore as exc:
            raise exc.for_read() from None

    def _store_exists(self, *, hint: str | None = None) -> bool:
        """Whether the store is there, for a read. A missing store that --db or $WB_DB names is a mistyped path,
        refused here as every read refuses it ("no store at PATH"; `hint` replaces the usual one); only the
        workbench's own wb.duckdb may be missing (a fresh checkout), which the caller reads as a store with nothing
        in it. A write that may create the store asks `_store_present`."""
        if self._store_present():
            return True
        if not self._own_store():
            from workbench.store import resolve_url
            from workbench.store.engine import missing_store

            path = resolve_url(self.settings.db, self.settings.db_from)[1]
            raise missing_store(path, self.settings.db_from, hint=hint)
        return False

    def _store_present(self) -> bool:
        from workbench.store import resolve_url

        _, path = resolve_url(self.settings.db, self.settings.db_from)
        return path is None or path.exists()

    def _own_store(self) -> bool:
        """Whether the store is the workbench's own wb.duckdb: no --db, $WB_DB or db= named one, or the one named is
        that file (its path spelled out, as scripts do), which is no mistyped path when it is not there yet."""
        if self.default_db:
            return True
        from workbench.store import resolve_url

        _, path = resolve_url(self.settings.db, self.settings.db_from)
        own = _default_store(replace(self.settings, db=None))
        return path is not None and path.expanduser().resolve() == own.expanduser().resolve()

    @contextmanager
    def _no_new_store_on_bad_input(self) -> Iterator[None]:
        """Bad input writes nothing: a store file this command created is removed again when the input turns
        out bad after the store was opened (a bundle whose rows are damaged is only found while merging)."""
        from workbench.store import resolve_url

        _, path = resolve_url(self.settings.db, self.settings.db_from)
        created = path is not None and not path.exists()
        try:
            yield
        except BadInput:
            if created and path is not None:
                for leftover in (path, path.with_name(path.name + ".wal")):
                    leftover.unlink(missing_ok=True)
            raise

    def _statuses(self) -> dict[str, "CurrentStatus"]:
        """Each hypothesis's current status (analysis.status: the one rule every view uses)."""
        from workbench.analysis.status import current_statuses, prediction_keys, stored_statuses

        declared = {h.id: h.status for h in self.registry.hypotheses}
        if not self._store_exists():
            return current_statuses(declared, [], {})
        with self.store(read_only=True) as store:
            return stored_statuses(store, declared, {h.id: prediction_keys(h, self.registry.experiments)
                                                     for h in self.registry.hypotheses})

    def _secrets_if_readable(self) -> None:
        """Register the secrets the workbench's files declare now (the registry does as it loads), so that a text
        stored before one was declared (a run's config, its variables) is shown masked; none where no workbench
        folder is read (a bare store)."""
        try:
            self.registry
        except BadInput:
            pass

    def _statuses_if_readable(self) -> dict[str, "CurrentStatus"]:
        """`_statuses`, or none where no workbench folder is read (runs can be deleted from a bare store)."""
        try:
            self.registry
        except BadInput:
            return {}
        return self._statuses()

    # ------------------------------------------------------------------ hypotheses
    def hypotheses(self) -> list[HypothesisStatus]:
        statuses = self._statuses()
        return [HypothesisStatus(h, statuses[h.id]) for h in self.registry.hypotheses]

    def hypotheses_apart(self) -> list[HypothesisStatus]:
        """`hypotheses`, less the entries with a problem of their own (`left_out` says which): one mistyped entry
        does not hide the others."""
        self._intact()
        return self.hypotheses()

    def _apart(self) -> "Apart":
        """The registry with its broken hypothesis entries set apart (registry.validate.load_apart), kept as the
        registry every later use of this object reads."""
        if self._apart_read is None:
            from workbench.registry.validate import load_apart

            self._apart_read = load_apart(self.settings.root, self.settings.root_from)
            self._registry = self._apart_read.registry
        return self._apart_read

    def _intact(self, hypothesis_id: str | None = None) -> "Registry":
        """The registry without its broken entries, for a read that goes on without them (show, analyze, lineage,
        confounds, report, review list; `left_out` says which were left out); `hypothesis_id`, asked for by id,
        is bad input when its own entry is one of them."""
        apart = self._apart()
        if hypothesis_id is not None:
            apart.check_own(hypothesis_id)
        return apart.registry

    def left_out(self) -> "Apart | None":
        """The registry as a read that left out broken entries found it (None when it read the registry whole, or
        no entry was left out)."""
        return self._apart_read if self._apart_read is not None and self._apart_read.broken else None

    def run_advice(self, hypothesis_id: str) -> str:
        """What a hint says of running the hypothesis: the command, or, where it or an ancestor is an entry set apart
        for a problem of its own (the run would be refused), that it is not run until that entry is fixed."""
        why = self._apart().not_run_until(hypothesis_id)
        if why is None:
            return f"to run it: wb hypothesis run {hypothesis_id}"
        return f"{why} (`wb hypothesis validate` lists its problems)"

    def hypothesis(self, hypothesis_id: str) -> HypothesisDetail:
        from workbench.analysis import display
        from workbench.registry.experiment import per_replicate_names

        reg = self._intact(hypothesis_id)
        h = reg.hypothesis(hypothesis_id)
        exp = reg.experiments.get(h.experiment)
        named = [p.metric for p in h.predicts if not p.target] + [g.metric for g in h.requires]
        metrics = {m: {"kind": exp.metrics[m].kind, "description": exp.metrics[m].description}
                   for m in dict.fromkeys(named) if exp is not None and m in exp.metrics}
        percent = tuple(m for m in metrics if display.is_proportion(exp, m))
        drawn = tuple(per_replicate_names(exp, h, {})) if exp is not None else ()
        arms = {a: {k: v for k, v in reg.arm_assignment(h, a).items() if k not in drawn} for a in h.arm_names}
        seed, seed_from = _declared_seed(h, exp)
        return HypothesisDetail(h, self._statuses()[h.id], arms, tuple(c.id for c in reg.children(h.id)), metrics,
                                drawn, seed, seed_from, _design(h, exp), percent)

    def analyze(self, hypothesis_id: str, *, record: bool = True, any_hypothesis: bool = False) -> "Analysis":
        """Decide from the runs already stored (the hypothesis's own, imported evidence included; with
        `any_hypothesis` other hypotheses' runs of the same configurations too); store the verdict when `record`."""
        from workbench.analysis.stored import analyze_stored, record_verdict
        from workbench.analysis.verdict import unread_arms

        h = self._intact(hypothesis_id).hypothesis(hypothesis_id)  # bad id -> exit 2 before the store is touched
        if not self._store_exists():  # no store holds no runs: none is created to record nothing
            raise _no_evidence(h, self.registry, any_hypothesis, run=self.run_advice(h.id))
        with self.store(read_only=not record) as store:
            result = analyze_stored(store, self.registry, hypothesis_id, any_hypothesis=any_hypothesis)
            if not result.run_ids:  # no evidence is no verdict: an "inconclusive" from nothing would be the status
                raise _no_evidence(h, self.registry, any_hypothesis, run=self.run_advice(h.id))
            empty = unread_arms(h, result)
            if empty and record:  # runs of one arm alone, which no prediction reads: the same
                raise _no_evidence(h, self.registry, any_hypothesis, empty, run=self.run_advice(h.id))
            if record:
                record_verdict(store, result)
        return result

    def run(self, hypothesis_id: str, options: "RunOptions", *, report: bool | None = None,
            fault: "Callable[[str, PlannedRun], Awaitable[None]] | None" = None) -> RunReport:
        """Run the experiment, then decide from its runs and record the verdict.

        The site is rebuilt when `report` is True, or (None) when the workbench has one to keep current as the
        runs end (one `wb report` built while they ran too): a user who never built a site does not pay for one
        after every run.
        """
        t0 = time.monotonic()
        from workbench.analysis.stored import analyze_stored, record_verdict
        from workbench.runner.execute import execute, prepare
        from workbench.runner.stopping import signals_held, stopped_before_start

        launch, resume = None, None
        # An entry with a problem of its own stops only the hypotheses of its lineage: any other runs, and every
        # later read of the registry in this run (the plan, the verdict) sees the entries without problems.
        self._apart().check_lineage(hypothesis_id)
        if options.resume:
            from workbench.runner.takeover import resume_command_at
            from workbench.store import resolve_url

            exists = self._store_exists(hint=RESUME_HINT)
            url, path = resolve_url(self.settings.db, self.settings.db_from)
            if not exists:  # nothing to resume: do not create one
                raise BadInput(f"no interrupted execution of {hypothesis_id!r} to resume (no store at {path})",
                               hint=f"start one with: wb hypothesis run {hypothesis_id}")
            resume = resume_command_at(url, path, self.registry.root, hypothesis_id)
        with ExitStack() as opened:
            with stopped_before_start(resume):  # a Ctrl-C until `execute` handles it: what is as it was, how to go on
                if not options.resume:  # bad input stops here, before the store is created or the target touched
                    launch = prepare(self.registry, hypothesis_id, options, sim_dir=self.settings.sim_dir)
                store = opened.enter_context(self.store(held=False))
                launch = launch or prepare(self.registry, hypothesis_id, options, store=store,
                                           sim_dir=self.settings.sim_dir)
            done = execute(launch, store, show_progress=options.show_progress, artifacts=self.settings.artifacts,
                           fault=fault)
            t_run = time.monotonic()
            analysis, error = None, None
            with signals_held():  # a Ctrl-C now waits the second it takes to record the verdict of the runs
                try:
                    analysis = analyze_stored(store, self.registry, hypothesis_id, execution_id=done.execution_id)
                    record_verdict(store, analysis, execution_id=done.execution_id)
                except WbError as exc:  # the runs are recorded; say why there is no verdict
                    error = exc.message
            t_analysis = time.monotonic()
            page, report_error, report_note = self._run_site(store, hypothesis_id, report)
        t_end = time.monotonic()
        target_s = min(float(done.timing.get("target_s", 0.0)), t_run - t0)
        return RunReport(done, analysis, error, page, command_timing(
            t_end - t0, target_s=target_s, runner_s=t_run - t0 - target_s, analysis_s=t_analysis - t_run,
            report_s=t_end - t_analysis), report_error, report_note)

    def _run_site(self, store: "Store", hypothesis_id: str,
                  report: bool | None) -> tuple[str | None, str | None, str | None]:
        """The site after a run: (hypothesis page, why it was not rebuilt, a note). `report` None: rebuild reports/
        when it holds a site, decided now (a site built meanwhile is kept current too), but never replace one
        built from another store (a team's, say): a side effect of a run must not swap what the site shows."""
        from workbench.report import MANIFEST
        from workbench.report.site import built_from, names_no_store

        folder = Path(self.registry.root) / "reports"
        broken = self._apart().broken
        if report is not False and broken and (report or (folder / MANIFEST).is_file()):
            # A site from the entries without problems would drop the others' pages from it.
            ids = ", ".join(repr(b.id) for b in broken if b.id) or "an entry"
            return None, None, (f"not rebuilt: {self.registry.hypotheses_file} has a problem in {ids}; every "
                                "problem: wb hypothesis validate; once fixed, to rebuild the site: wb report")
        if report is None:
            report = (folder / MANIFEST).is_file()
            other = built_from(folder)
            if report and other is not None and other != store.name:
                return None, None, (f"not rebuilt: {folder} was built from the store {other}, not this run's store "
                                    f"{store.name}; to rebuild it from the store --db names: wb report")
            if report and names_no_store(folder):
                return None, None, (f"not rebuilt: {folder} names no store it was built from (an older wb built "
                                    f"it, or its manifest is damaged), maybe another than this run's store "
                                    f"{store.name}; to rebuild it from the store --db names, give --report or "
                                    "run: wb report")
        if not report:
            return None, None, None
        try:
            site = self._site(store)
        except WbError as exc:  # the runs and the verdict are recorded: say so beside why the site is not
            return None, exc.message, None
        replaced = site.get("replaced_store")
        note = (f"replaced a site built from the store {replaced}" if replaced else
                "replaced a site that named no store it was built from" if site.get("replaced_unnamed") else None)
        return site["hypotheses"].get(hypothesis_id), None, note

    def isolate(self, *, experiment: str, good: list[str], bad: list[str], metric: str, region: str,
                profile: str | None = None, budget: float | None = None, alpha: float = 0.05,
                seed: int | None = None, parent: str | None = None, write: bool = False,
                show_progress: bool = True, resume: bool = False) -> "IsolateOutcome":
        """Search the changes from `good` to `bad` for a minimal subset that reproduces the failure.

        Every flag is checked before the store is opened or the target touched; each probe is a
        recorded execution (target restored after it), and the search is stored even when stopped.
        `write` also appends the generated hypotheses to hypotheses.yaml. `resume` continues the
        stopped earlier attempt of the same search, reusing the probes it decided.
        """
        from workbench.isolate.app import attach_prior, check_target, prepare_spec, run_isolate

        spec = prepare_spec(self.registry, experiment=experiment, good=good, bad=bad, metric=metric, region=region,
                            profile=profile, budget=budget, alpha=alpha, seed=seed, parent=parent)
        check_target(spec, self.registry, self.settings)
        if resume and not self._store_exists(hint=RESUME_HINT):
            raise BadInput(f"--resume: no stopped search of {experiment!r} to resume: the store does not exist yet",
                           hint="drop --resume to start the search (or give the --db it ran against)")
        with self.store(held=False) as store:
            prior = None
            if resume:
                spec, prior = attach_prior(spec, self.registry, store, seed_given=seed is not None,
                                           parent_given=parent is not None, settings=self.settings)
            return run_isolate(spec, self.registry, store, settings=self.settings, write=write,
                               show_progress=show_progress, prior=prior)

    # ------------------------------------------------------------------ confounds (runs and evidence: app_runs)
    def confounds(self, hypothesis_id: str | None = None, *, write: bool = False) -> list["Finding"]:
        """Scan the stored runs for confounds. With `write`, each proposed separating experiment is appended
        to hypotheses.yaml as a draft; its proposal then says whether it was written (False: already there)."""
        from workbench.analysis.confounds import scan_confounds

        if not write:
            self._intact(hypothesis_id)
        else:
            self._whole_for_drafts()
        if hypothesis_id is not None:
            self.registry.hypothesis(hypothesis_id)  # an unknown id is bad input before the store is touched
        with self.store(read_only=True) as store:
            findings = scan_confounds(store, self.registry, hypothesis_id)
        return self._write_drafts(findings) if write else findings

    def _whole_for_drafts(self) -> None:
        """--write appends to hypotheses.yaml: only to a file whose every entry passed (a draft written beside an
        entry set apart could give an id it gives, and an entry read apart may be read otherwise once fixed). Where
        entries were set apart, each one's problems, and why a scan that reads the others refuses."""
        from workbench.errors import ConfigErrors
        from workbench.registry.validate import load_apart

        apart = load_apart(self.settings.root, self.settings.root_from)
        if not apart.broken:
            self._registry = apart.registry
            return
        one = len(apart.broken) == 1
        ids = ", ".join(repr(b.id) if b.id else "an entry without an id" for b in apart.broken)
        raise ConfigErrors([p for b in apart.broken for p in b.problems],
                           refused=f"--write appends its drafts to hypotheses.yaml, so it needs every entry whole "
                                   f"({ids} {'is' if one else 'are'} not): fix {'it' if one else 'them'} first; "
                                   "without --write, `wb confounds` scans the runs and reads the other entries")

    def _write_drafts(self, findings: list["Finding"]) -> list["Finding"]:
        from dataclasses import replace

        from workbench.registry.drafts import append_drafts

        proposing = [f for f in findings if f.proposal and f.proposal.get("entry")]
        done = set(append_drafts(Path(self.registry.root),
                                 [(f.proposal["entry"], f.message.split(":")[0] + ".") for f in proposing]))
        self._registry = None  # hypotheses.yaml changed: the next use reloads it
        return [replace(f, proposal={**f.proposal, "written": f.proposal["entry"]["id"] in done})
                if any(f is p for p in proposing) else f for f in findings]

    # ------------------------------------------------------------------ reports
    def _site(self, store: "Store", out: str | Path | None = None) -> dict[str, Any]:
        from workbench.report import build_site

        return build_site(store, self.registry, Path(out) if out is not None else Path(self.registry.root) / "reports",
                          artifacts=self.settings.artifacts, default=out is None, left_out=self._left_out_pages())

    def _left_out_pages(self) -> "tuple[LeftOut, ...]":
        """The entries a read of the registry left out, as the site and the Markdown name them."""
        from workbench.report.context import LeftOut

        apart = self._apart_read
        if apart is None:
            return ()
        return tuple(LeftOut(b.id, tuple(p.message for p in b.problems), apart.twin_line(b), apart.kept(b))
                     for b in apart.broken)

    def report(self, *, out: str | Path | None = None, fmt: str = "html",
               hypothesis_id: str | None = None) -> ReportResult:
        """Build the site under `out` (default: reports/ in the workbench folder), or Markdown with fmt="md"."""
        fmt = report_format(fmt)
        self._intact(hypothesis_id)
        if hypothesis_id is not None:
            self.registry.hypothesis(hypothesis_id)  # a clear error for an unknown id before any work
        with self.store(read_only=True) as store:
            if fmt == "md":
                from workbench.report.markdown import board_markdown, hypothesis_markdown

                text = (hypothesis_markdown(store, self.registry, hypothesis_id) if hypothesis_id
                        else board_markdown(store, self.registry, self._left_out_pages()))
                return ReportResult("md", markdown=text)
            site = self._site(store, out)
        return ReportResult("html", site=site,
                            page=site["hypotheses"][hypothesis_id] if hypothesis_id else site["index"])

    def lineage(self) -> list[LineageNode]:
        """The hypotheses in registry order, each with its status and depth below its root (an entry with a problem
        of its own left out: `left_out`)."""
        self._intact()
        statuses = self.hypotheses()
        parent = {s.hypothesis.id: s.hypothesis.parent for s in statuses}
        nodes = []
        for s in statuses:
            cur, depth = s.hypothesis.parent, 0
            while cur in parent and depth < len(statuses):  # bounded: a cycle cannot loop forever
                depth += 1
                cur = parent[cur]
            nodes.append(LineageNode(s, depth))
        return nodes

    def lineage_edges(self) -> list[dict[str, Any]]:
        """Parent edges and an assumption's `tested_by` edges, as `wb lineage --json` prints them."""
        from workbench.report.lineage import registry_edges

        return registry_edges(self._intact().hypotheses)

    # ------------------------------------------------------------------ team review
    def review(self, hypothesis_id: str, *, decision: str, body: str, as_name: str | None = None,
               evidence: str | None = None) -> "ReviewRecord":
        """Record a review of the hypothesis's current verdict, bound to the evidence that verdict rests on;
        with `evidence` (the digest the reviewer read, or its start), only when that is the current one."""
        from workbench.team.identity import current_person
        from workbench.team.reviews import check_evidence, check_review_input

        # A review records only of its own hypothesis (its verdict, the evidence it rests on): an entry set apart
        # for a problem of its own, even its parent's, does not stop it; its own does.
        self._intact(hypothesis_id).hypothesis(hypothesis_id)
        check_review_input(decision, body)
        person = current_person(Path(self.registry.root), as_name=as_name)
        verdict = self._status_verdict(hypothesis_id)
        verdict_id = verdict.id if verdict is not None else None
        if decision != "comment" and verdict_id is None:
            raise BadInput(f"{hypothesis_id} has no verdict to {decision.replace('-', ' ')} yet",
                           hint=f"leave a --comment, or run it first: wb hypothesis run {hypothesis_id}")
        if evidence is not None:
            check_evidence(hypothesis_id, evidence, verdict, self._evidence_digests(hypothesis_id))
        with self.store() as store:
            review_id = store.add_review(hypothesis_id=hypothesis_id, author=person.name,
                                         author_source=person.source, decision=decision, body=body,
                                         verdict_id=verdict_id)
            return next(r for r in store.reviews(hypothesis_id=hypothesis_id) if r.id == review_id)

    def _evidence_digests(self, hypothesis_id: str) -> list[str | None]:
        """The evidence digests the hypothesis's verdicts rested on (none without a store), read only."""
        if not self._store_present():
            return []
        with self.store(read_only=True) as store:
            return [v.evidence_digest for v in store.verdicts(hypothesis_id=hypothesis_id)]

    def _status_verdict(self, hypothesis_id: str) -> "VerdictRecord | None":
        """The verdict the hypothesis's status rests on (the one list, show and the board present for review),
        read only, so a refused review writes nothing; None without a store or a verdict (a comment may create the
        store --db names)."""
        if not self._store_present():
            return None
        from workbench.analysis.status import stored_statuses

        with self.store(read_only=True) as store:
            return stored_statuses(store, {hypothesis_id: ""})[hypothesis_id].verdict

    def review_states(self, hypothesis_id: str | None = None) -> list["ReviewState"]:
        """Each hypothesis's review state (awaiting review, approved, changes requested, stale) and history."""
        from workbench.team.reviews import review_states

        from workbench.analysis.status import current_statuses, overrides_by_execution, prediction_keys

        reg = self._intact(hypothesis_id)
        hyps = [reg.hypothesis(hypothesis_id)] if hypothesis_id else list(reg.hypotheses)
        verdicts, reviews, executions = [], [], []
        if self._store_exists():
            with self.store(read_only=True) as store:
                verdicts, reviews, executions = store.verdicts(), store.reviews(), store.executions()
        overrides = overrides_by_execution(executions)
        # The status and its note by the one rule `hypotheses()` uses, from the rows read once here.
        statuses = current_statuses({h.id: h.status for h in hyps}, verdicts, overrides,
                                    {h.id: prediction_keys(h, self.registry.experiments) for h in hyps})
        return list(review_states({h.id: h.parent for h in hyps}, verdicts, reviews, overrides_of=overrides,
                                  statuses=statuses, executions=executions).values())

    def bundle_export(self, hypothesis_ids: list[str], out: str | Path, *,
                      sign_with: str | Path | None = None) -> "BundleSummary":
        from workbench import __version__
        from workbench.team.bundle import export
        from workbench.team.identity import current_person

        # A bundle carries the definitions of the hypotheses named, each read whole with its lineage, as a run reads
        # it: an entry set apart elsewhere in the file does not stop it; one in the lineage does.
        apart = self._apart()
        for hid in hypothesis_ids:
            apart.check_lineage(hid, "exported")
        person = current_person(Path(self.registry.root))
        with self.store(read_only=True) as store:
            return export(store, self.registry, list(hypothesis_ids), Path(out), created_by=person.name,
                          wb_version=__version__, sign_with=Path(sign_with) if sign_with is not None else None)

    def bundle_import(self, path: str | Path, *, signers: str | Path | None = None) -> "BundleSummary":
        """Merge the bundle at `path`; with `signers` (an allowed-signers file) only when its `.sig` verifies, and
        the bytes verified are the bytes merged."""
        from dataclasses import replace

        from workbench.team.bundle import check_importable, import_, packed_bytes, read
        from workbench.team.signing import signature_path, verify

        packed = packed_bytes(Path(path))
        signer = verify(packed, Path(path), Path(signers)) if signers is not None else None
        doc = read(Path(path), packed)  # a damaged file: bad input before the store opens
        # A bundle this workbench cannot take is refused before the store is opened. Damaged rows are found
        # only while merging: an empty store's schema is made in the merge's transaction, so a refusal leaves
        # an empty PostgreSQL database empty, and a DuckDB file this refusal would have created is removed.
        check_importable(self.registry, doc, Path(path))
        with self._no_new_store_on_bad_input(), self.store(deferred_schema=True) as store:
            summary = import_(store, self.registry, Path(path), doc=doc)
        sig = signature_path(Path(path))
        return replace(summary, signature=str(sig) if sig.is_file() else None, signed_by=signer)

    def bundle_show(self, path: str | Path, *, extract: str | Path | None = None) -> "Carried":
        """What the bundle at `path` carries and how its definitions compare with this workbench's; with
        `extract`, its hypotheses and experiments written into that new folder. Opens no store."""
        from workbench.team.bundle import read
        from workbench.team.carried import carried
        from workbench.team.carried import extract as write_out

        doc = read(Path(path))
        shown = carried(self._registry_if_any(), doc, Path(path))
        return write_out(doc, Path(extract), shown) if extract is not None else shown

    def _registry_if_any(self) -> "Registry | None":
        """This workbench's registry; None where wb runs outside any workbench and no --root names one (a bundle is
        read, and extracted, by a teammate who has none yet)."""
        if self.settings.root is None:
            from workbench.registry.loader import find_root

            try:
                find_root(root_from=self.settings.root_from)
            except BadInput:
                return None
        return self.registry

    # ------------------------------------------------------------------ the store's schema
    def db_upgrade(self) -> tuple[str, str | None, str]:
        from workbench.store import upgrade

        return upgrade(self.settings.db, self.settings.db_from, lock_wait_s=self.settings.lock_wait_s)

    def db_current(self) -> Revision:
        from workbench.store.engine import Store, head_revision, newer_revision, no_store

        url, path = self._url_to_read()
        if path is not None and not path.exists():
            raise no_store(path, self.settings.db_from, hint=f"create it with: wb db upgrade --db {path}",
                           default=self.default_db)
        with Store(url, path, read_only=True, lock_wait_s=self.settings.lock_wait_s,
                   source=self.settings.db_from, given=self.settings.db) as store:
            rev = store.revision()
            return Revision(store.name, rev, head_revision(), newer_revision(rev))

    # ------------------------------------------------------------------ the transfer kernel
    @staticmethod
    def kernel_check(*, impl: str = "auto", seed: int = 0, quick: bool = False,
                     progress: Callable[[str], None] | None = None) -> Any:
        """Every transfer case byte for byte against an independent copy (a `CheckReport`)."""
        from wb_kernels.check import run_check

        return run_check(impl=impl, seed=seed, quick=quick, progress=progress)

    @staticmethod
    def kernel_bench(*, quick: bool = False, variants: list[int] | None = None, layers: int = 4,
                     progress: Callable[[str], None] | None = None) -> Any:
        """The CUDA kernel timed against the copy ceilings and the torch baseline (a `BenchReport`)."""
        from wb_kernels.bench import run_bench

        return run_bench(quick=quick, variants=variants, layers=layers, progress=progress)

    def schemas(self) -> dict[str, Any]:
        """JSON Schemas of the YAML files, and the evidence CSV's columns (each experiment's own inside a workbench)."""
        from workbench.registry.evidence_columns import csv_format
        from workbench.registry.experiment import Experiment
        from workbench.registry.hypothesis import HypothesesFile

        try:
            reg = self.registry
        except BadInput:  # outside a workbench: the generic format alone
            reg = None
        return {"hypotheses.yaml": HypothesesFile.model_json_schema(),
                "experiments/*.yaml": Experiment.model_json_schema(),
                "evidence CSV": csv_format(reg)}


def _declared_seed(h: Any, exp: Any) -> tuple[int | None, str | None]:
    """The execution seed the files fix (the hypothesis's design.seed, else the experiment's) and whose it is."""
    if h.design is not None and h.design.seed is not None:
        return h.design.seed, "hypothesis"
    if exp is not None and exp.design.seed is not None:
        return exp.design.seed, "experiment"
    return None, None


def _design(h: Any, exp: Any) -> dict[str, Any]:
    """The design a run of `h` follows: the hypothesis's design fields over the experiment's, and whose each is."""
    if exp is None:
        return {}
    out: dict[str, Any] = {}
    for name in ("replicates", "max_replicates"):
        own = getattr(h.design, name) if h.design is not None else None
        out[name] = own if own is not None else getattr(exp.design, name)
        out[f"{name}_from"] = "hypothesis" if own is not None else "experiment"
    return {"replicates": out["replicates"], "replicates_from": out["replicates_from"], "blocks": exp.design.blocks,
            "max_replicates": out["max_replicates"], "max_replicates_from": out["max_replicates_from"]}


def _no_evidence(h: Any, registry: Any, any_hypothesis: bool, empty: Sequence[str] = (), *,
                 run: str) -> NoEvidence:
    """Nothing to analyze (or, `empty`, nothing for what it predicts), saying which runs were looked at;
    --any-hypothesis is offered only where not given. `run`: what to say of running it (`Workbench.run_advice`)."""
    exp = registry.experiments.get(h.experiment)
    looked = "stored run" if any_hypothesis else "run of its own and no imported run"
    which = f" (no {looked} of experiment {exp.id} matches its arms)" if exp is not None else ""
    if empty:
        return NoEvidence(f"no {looked} of {h.id} matches arm {', '.join(empty)}, which every prediction reads: "
                          "nothing to decide, nothing was recorded",
                          hint=f"--no-record shows the analysis of the runs found; {run}")
    wider = "" if any_hypothesis else \
        "; --any-hypothesis also pools other hypotheses' runs of its arms' configurations"
    return NoEvidence(f"no runs of {h.id} to analyze{which}; nothing was recorded",
                      hint=f"{run}; to import evidence: wb import evidence FILE.csv{wider}")
