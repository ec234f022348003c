"""What an analysis returns: frozen result types that the CLI, the Markdown and the HTML each format.

`to_dict()` is the JSON stored with a verdict (and printed by `--json`); `from_dict()` reads that
JSON back, so a stored verdict and a fresh analysis reach the report as the same type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Iterable

from workbench.store import jsonx

VERDICTS = ("supported", "falsified", "inconclusive", "invalid")


# Bumped whenever a change to the statistics could change a verdict on the same runs: a review of a
# verdict made by an older analysis goes stale.
ANALYSIS_VERSION = "2"

# The effects of a check that did not pass which change the verdict (a check's effect "none" leaves it).
CHANGES_VERDICT = ("invalid", "inconclusive")


def json_safe(x: Any) -> Any:
    """JSON-safe copy: no inf/nan, no tuples, no sets, no numpy scalars."""
    if isinstance(x, float):
        return None if (math.isnan(x) or math.isinf(x)) else x
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [json_safe(v) for v in x]
    if hasattr(x, "to_dict"):
        return json_safe(x.to_dict())
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return json_safe(x.item())
    return x


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _pair(v: Any) -> tuple[Any, Any] | None:
    return None if v is None else (v[0], v[1])


@dataclass(frozen=True)
class Check:
    """One validity check: passed True, False, or None (could not be checked); `effect` is what a
    check that did not pass does to the verdict: "invalid", "inconclusive" or "none"."""

    name: str
    passed: bool | None
    detail: str
    effect: str = "none"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Check":
        return cls(str(d.get("name", "")), d.get("passed"), str(d.get("detail", "")), str(d.get("effect", "none")))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail, "effect": self.effect}

    def mark(self, verdict: str) -> str:
        """pass; FAIL where the check changed `verdict`; FLAG where it was weighed and `verdict` stands; n/a.
        FLAG is in capitals beside FAIL so that a problem is seen either way: the CLI, the HTML and the JSON show it.

        wb's verdict rules turn a check that matters into inconclusive or invalid, so under a standing
        verdict (supported, falsified) a failed check is one found not to change it."""
        if self.passed is None:
            return "n/a"
        if self.passed:
            return "pass"
        if self.effect in CHANGES_VERDICT:
            return "FAIL"
        return "FLAG" if self.effect == "none" or verdict in ("supported", "falsified") else "FAIL"

    def line(self, verdict: str) -> str:
        """The check's line under `verdict`: "[mark] name: detail", and what a check that changed it did."""
        did = f" (this makes the result {self.effect})" if self.mark(verdict) == "FAIL" and \
            self.effect in CHANGES_VERDICT else ""
        return f"[{self.mark(verdict)}] {self.name}: {self.detail}{did}"


def marked_checks(checks: Iterable[Check], verdict: str) -> list[dict[str, Any]]:
    """Checks as the JSON views give them: each with the mark its line shows under `verdict` (the stored
    check has no mark: it follows from the verdict it is stored with)."""
    return [c.to_dict() | {"mark": c.mark(verdict)} for c in checks]


# Figures a judgement carries only for some kinds of metric or test; absent ones are left out of its JSON.
_OPTIONAL = ("k", "n", "runs", "unknown_runs", "interval_kind", "e_against", "e_for", "looks", "wilson", "fisher_p",
             "boschloo_p", "mann_whitney_p", "medians", "confidence", "more_runs_needed", "p_against_holm",
             "completed", "target", "by_process", "method", "method_reason", "n_effective", "design_effect",
             "dispersion", "exact", "drift_robust", "reachable", "exact_held",
             "empty_interval", "few_runs_held", "runs_narrow_only", "more_units_by_arm",
             "floor_lifts")


# What a judgement over completed units only carries beside the one over all units.
COMPLETED_KEYS = ("k", "n", "estimate", "interval", "interval_kind", "outcome", "note")


def difference_arms(where: str | None) -> list[str]:
    """The two arms of a difference's `where` ("control - treatment", as predictions.judge writes it), or [] where
    it names one arm."""
    return where.split(" - ") if where and " - " in where else []


# A Hodges-Lehmann shift whose arms have too few runs for an interval of it (predictions._judge_shift), as the
# verdict's text and the hypothesis page name it.
SHIFT_WITHOUT_INTERVAL = "Hodges-Lehmann estimate, no interval"


def more_units_words(where: str | None, needed: int, by_arm: tuple[int, int] | list[int] | None, word: str,
                     each: str) -> str:
    """The units a prediction asks for: a difference's in each of its arms (`by_arm`, in `where`'s order), named
    where they differ (runs of unequal sizes grow their arms unequally), else the one count with `each` after it for
    a difference. The verdict's text, the hypothesis page and a sequential look all read it."""
    arms = difference_arms(where)
    if arms and by_arm and by_arm[0] != by_arm[1]:
        return f"{by_arm[0]:,} {word} in {arms[0]} and {by_arm[1]:,} in {arms[1]}"
    return f"{needed:,} {word}" + (each if arms else "")


@dataclass(frozen=True)
class Judgement:
    """One prediction judged: the estimate, its interval, and where it lies against the predicted region."""

    metric: str
    where: str | None
    region: str
    bounds: tuple[float | None, float | None]
    describe: str
    why: str
    basis: str
    estimate: float | None
    interval: tuple[float, float] | None
    outcome: str
    p_against: float | None = None
    p_for: float | None = None
    more_units_needed: int | None = None
    note: str = ""
    k: Any = None  # units counted (a pair for a difference between arms)
    n: Any = None
    runs: Any = None
    unknown_runs: Any = None
    interval_kind: str | None = None
    e_against: float | None = None
    e_for: float | None = None
    looks: int | None = None
    wilson: tuple[float, float] | None = None
    fisher_p: float | None = None
    boschloo_p: float | None = None
    mann_whitney_p: float | None = None
    medians: tuple[float, float] | None = None
    confidence: float | None = None
    more_runs_needed: int | None = None
    p_against_holm: float | None = None
    completed: "Judgement | None" = None  # the same prediction over completed units only
    target: str | None = None
    by_process: dict[str, int] | None = None
    # How a proportion's units were counted (analysis.clustered): "binomial" or "run-level", why, the
    # units that carry its information (a pair for a difference), the design effect and the runs'
    # Pearson dispersion; `exact` is the exact binomial tail that speaks for or against the region.
    method: str | None = None
    method_reason: str | None = None
    n_effective: Any = None
    design_effect: float | None = None
    dispersion: float | None = None
    exact: str | None = None
    # A sequential outcome that the bet on run rates reaches alone (sequential.bet_lower): it holds under
    # drift, so the drift check does not hold it back.
    drift_robust: bool | None = None
    # An inconclusive sequential rate: whether any verdict can still be reached within the budget
    # (sequential.reachable); False lets the execution stop for futility.
    reachable: bool | None = None
    # A fixed design's rate whose Wilson interval lies "outside" (or "inside") the region while the exact binomial
    # test on the same counts does not agree, so it stays inconclusive (clustered.rate_outcome).
    exact_held: str | None = None
    # A sequential rate whose looks' intervals have no rate in common (sequential.empty_interval).
    empty_interval: bool | None = None
    # A median whose runs' range lies "outside" (or "inside") the region, inconclusive only because too few runs
    # give that range the interval's confidence (stats.median_ci); or a shift whose interval does, from fewer runs in
    # an arm than Mann-Whitney's test needs (stats.mann_whitney).
    few_runs_held: str | None = None
    # An inconclusive rate (or difference) judged with the runs as the unit (t on the runs' df): more units inside
    # these runs narrow nothing, so what would decide it is counted in runs (more_runs_needed) first.
    runs_narrow_only: bool | None = None
    # A difference's more units in each of its two arms (in `where`'s order): a replicate adds one run of each arm's
    # own mean size, so arms of unequal runs grow by unequal units; `more_units_needed` is the larger.
    more_units_by_arm: tuple[int, int] | None = None
    # The more units (runs) projected reach more than clustered.FEW_RUNS runs, where the few-runs floor on the design
    # effect lifts: the estimate divides by the runs' own design effect from there.
    floor_lifts: bool | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Judgement":
        d = _known(cls, d)
        base = {"metric": "", "where": None, "region": "", "bounds": (None, None), "describe": "", "why": "",
                "basis": "all", "estimate": None, "interval": None, "outcome": "inconclusive"}
        merged = {**base, **d}
        merged["bounds"] = _pair(merged["bounds"]) or (None, None)
        merged["interval"] = _pair(merged["interval"])
        merged["wilson"] = _pair(merged.get("wilson"))
        merged["medians"] = _pair(merged.get("medians"))
        merged["more_units_by_arm"] = _pair(merged.get("more_units_by_arm"))
        for key in ("k", "n", "n_effective"):
            if isinstance(merged.get(key), list):
                merged[key] = tuple(merged[key])
        if isinstance(merged.get("completed"), dict):
            merged["completed"] = cls.from_dict(merged["completed"])
        return cls(**merged)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["k"], out["n"] = jsonx.whole(self.k), jsonx.whole(self.n)  # units counted
        for key in _OPTIONAL:
            if out[key] is None:
                del out[key]
        if self.completed is not None:
            out["completed"] = {k: v for k, v in self.completed.to_dict().items()
                                if k in COMPLETED_KEYS}
        return json_safe(out)


@dataclass(frozen=True)
class ArmEstimate:
    """One metric in one arm: a proportion (k/n; the pooled Wilson interval, and `interval` with the runs
    as the unit, see analysis.clustered) or a median of per-run values."""

    kind: str
    runs: int
    unknown_runs: int = 0
    k: float | None = None
    n: float | None = None
    rate: float | None = None
    wilson: tuple[float, float] | None = None
    median: float | None = None
    interval: tuple[float, float] | None = None
    interval_kind: str | None = None  # a proportion's `interval` by name (clustered.interval_label)
    confidence: float | None = None
    warning: str | None = None
    total: float | None = None
    method: str | None = None
    method_reason: str | None = None
    n_effective: float | None = None
    design_effect: float | None = None
    dispersion: float | None = None

    @property
    def estimate(self) -> float | None:
        return self.rate if self.kind == "proportion" else self.median

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The interval the verdict would use: for a proportion the run-level one when it was computed."""
        if self.kind == "proportion":
            return self.interval or self.wilson
        return self.interval

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ArmEstimate":
        d = _known(cls, d)
        for key in ("wilson", "interval"):
            d[key] = _pair(d.get(key))
        return cls(**{"kind": "count", "runs": 0, **d})

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if getattr(self, f.name) is not None or f.name in ("kind", "runs", "unknown_runs")}
        counted = ("k", "n") + (("median", "interval", "total") if self.kind == "count" else ())
        return json_safe({k: jsonx.whole(v) if k in counted else v for k, v in out.items()})


@dataclass(frozen=True)
class ArmSummary:
    variables: dict[str, str]
    runs: int
    units: float
    metrics: dict[str, ArmEstimate] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ArmSummary":
        return cls(dict(d.get("variables") or {}), int(d.get("runs") or 0), float(d.get("units") or 0),
                   {m: ArmEstimate.from_dict(v) for m, v in (d.get("metrics") or {}).items()})

    def to_dict(self) -> dict[str, Any]:
        return {"variables": self.variables, "runs": self.runs, "units": jsonx.whole(self.units),
                "metrics": {m: e.to_dict() for m, e in self.metrics.items()}}


def smoke_words(replicates: int, planned: int) -> str:
    """'1 of 3 planned replicates' where a fixed execution ran fewer replicates than planned (a smoke run), else ''
    (0 planned: nothing to fall short of). The one rule the status and the reasoning both read."""
    return f"{replicates} of {planned} planned replicates" if 0 < replicates < planned else ""


@dataclass(frozen=True)
class Analysis:
    """The verdict on one hypothesis and everything it rests on."""

    hypothesis_id: str
    verdict: str
    reasoning: str
    checks: tuple[Check, ...] = ()
    predictions: tuple[Judgement, ...] = ()
    arms: dict[str, ArmSummary] = field(default_factory=dict)
    attrition: dict[str, Any] = field(default_factory=dict)
    drift: dict[str, Any] = field(default_factory=dict)
    aa: dict[str, Any] | None = None
    execution_id: int | None = None
    mode: str = "pooled"
    sequential: bool = False
    replicates: int = 0
    runs: dict[str, list[Any]] = field(default_factory=dict)
    excluded: tuple[str, ...] = ()
    hypothesis_sha256: str | None = None
    counts: dict[str, Any] = field(default_factory=dict)  # reachability: probe calls per target
    run_ids: tuple[int, ...] = ()  # every stored run the analysis read: what its verdict rests on
    # The replicates the hypothesis's design plans for a fixed execution (0: none to compare, as for a pooled,
    # sequential or A/A analysis): a verdict on fewer is a smoke run, shown as one (analysis.status).
    planned_replicates: int = 0
    any_hypothesis: bool = False  # a pooled analysis that read other hypotheses' runs too (--any-hypothesis)

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    @property
    def smoke(self) -> str:
        """'1 of 3 planned replicates' for a smoke run (fewer replicates than planned), else ''."""
        return smoke_words(self.replicates, self.planned_replicates)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Analysis":
        return cls(hypothesis_id=str(d.get("hypothesis_id", "")), verdict=str(d.get("verdict", "inconclusive")),
                   reasoning=str(d.get("reasoning") or ""),
                   checks=tuple(Check.from_dict(c) for c in d.get("checks") or [] if isinstance(c, dict)),
                   predictions=tuple(Judgement.from_dict(p) for p in d.get("predictions") or [] if isinstance(p, dict)),
                   arms={a: ArmSummary.from_dict(s) for a, s in (d.get("arms") or {}).items()},
                   attrition=dict(d.get("attrition") or {}), drift=dict(d.get("drift") or {}), aa=d.get("aa"),
                   execution_id=d.get("execution_id"), mode=str(d.get("mode") or "pooled"),
                   sequential=bool(d.get("sequential")), replicates=int(d.get("replicates") or 0),
                   runs=dict(d.get("runs") or {}), excluded=tuple(d.get("excluded") or ()),
                   counts=dict(d.get("counts") or {}), planned_replicates=int(d.get("planned_replicates") or 0),
                   any_hypothesis=d.get("any_hypothesis") is True)

    def to_dict(self) -> dict[str, Any]:
        return json_safe({"hypothesis_id": self.hypothesis_id, "execution_id": self.execution_id, "mode": self.mode,
                          "sequential": self.sequential, "verdict": self.verdict, "reasoning": self.reasoning,
                          "checks": self.checks, "predictions": self.predictions, "arms": self.arms,
                          "attrition": self.attrition, "drift": self.drift, "aa": self.aa,
                          "replicates": self.replicates, "runs": self.runs, "excluded": self.excluded,
                          **({"counts": self.counts} if self.counts else {}),
                          **({"planned_replicates": self.planned_replicates} if self.planned_replicates else {}),
                          **({"smoke": self.smoke} if self.smoke else {}),
                          **({"any_hypothesis": True} if self.any_hypothesis else {})})
