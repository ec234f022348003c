"""Vega-Lite specs, built in Python with altair from typed chart inputs: one chart per metric, by arm.

Each chart shows per arm the estimate with its interval (rule + point), every run's value (ticks),
and the region a prediction or guard asks for (a shaded band, or a line for `equals`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from workbench.analysis import display
from workbench.report.stats import fmt_value

ARM_COLORS = ["#1f6feb", "#d9480f", "#2f9e44", "#9c36b5", "#e67700", "#0c8599"]


@dataclass(frozen=True)
class ArmPoint:
    arm: str
    estimate: float | None
    lo: float | None
    hi: float | None
    label: str = ""
    method: str = ""


@dataclass(frozen=True)
class RunValue:
    arm: str
    run_id: int
    value: float


@dataclass(frozen=True)
class RegionBand:
    """A region for the metric in one arm (None: every arm); kind is 'predicted' or 'required'."""

    arm: str | None
    lo: float
    hi: float
    kind: str
    text: str


@dataclass
class MetricChart:
    metric: str
    arms: list[str]
    points: list[ArmPoint]
    runs: list[RunValue] = field(default_factory=list)
    regions: list[RegionBand] = field(default_factory=list)
    is_rate: bool = False


def _finite(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def _domain(chart: MetricChart) -> tuple[float, float]:
    vals = _finite([p.estimate for p in chart.points] + [p.lo for p in chart.points] +
                   [p.hi for p in chart.points] + [r.value for r in chart.runs] +
                   [b.lo for b in chart.regions] + [b.hi for b in chart.regions])
    lo = min([0.0] + vals)
    hi = max([0.0] + vals)
    if chart.is_rate:
        hi = max(hi, 0.05)
    if hi == lo:
        hi = lo + 1.0
    return lo, hi + (hi - lo) * 0.08


_DOMAIN_MARK = [-123456.5, 123456.5]
_TITLE_MARK = "__wb_metric__"
_FMT_MARK = "__wb_format__"


@lru_cache(maxsize=256)
def _skeleton(arms: tuple[str, ...], bands: bool, lines: bool, runs: bool, est: bool,
              width: int, height: int) -> str:
    """The spec's structure for one combination of layers, with markers where per-chart values go.

    altair's to_dict costs ~25 ms; a site has hundreds of charts sharing a handful of structures, so the
    structure is built once by altair and each chart fills in its title, domain, format and data.
    """
    import altair as alt

    arm_list = list(arms)
    x = alt.X("arm:N", sort=arm_list, title=None, axis=alt.Axis(labelAngle=0))
    color = alt.Color("arm:N", sort=arm_list, legend=None,
                      scale=alt.Scale(domain=arm_list, range=ARM_COLORS[:max(1, len(arm_list))]))
    yscale = alt.Scale(domain=_DOMAIN_MARK, nice=False, zero=False)

    def y(fieldname: str) -> Any:
        return alt.Y(f"{fieldname}:Q", scale=yscale, title=_TITLE_MARK, axis=alt.Axis(format=_FMT_MARK))

    kind_color = alt.Color("kind:N", scale=alt.Scale(domain=["predicted", "required"],
                                                     range=["#8ce99a", "#ffd8a8"]), legend=None)
    region_tip = [alt.Tooltip("region:N", title="region")]
    layers = []
    if bands:
        layers.append(alt.Chart(alt.Data(name="bands")).mark_rect(opacity=0.45).encode(
            x=x, y=y("lo"), y2="hi:Q", color=kind_color, tooltip=region_tip))
    if lines:
        layers.append(alt.Chart(alt.Data(name="lines")).mark_tick(thickness=3, opacity=0.8).encode(
            x=x, y=y("lo"), color=kind_color, tooltip=region_tip))
    if runs:
        layers.append(alt.Chart(alt.Data(name="runs")).mark_tick(color="#868e96", opacity=0.7, size=14).encode(
            x=x, y=y("value"), tooltip=[alt.Tooltip("run:N"), alt.Tooltip("value_text:N", title="value")]))
    if est:
        tips = [alt.Tooltip("arm:N"), alt.Tooltip("label:N", title="value"),
                alt.Tooltip("lo_text:N", title="low"), alt.Tooltip("hi_text:N", title="high"),
                alt.Tooltip("method:N", title="interval")]
        layers.append(alt.Chart(alt.Data(name="est")).mark_rule(strokeWidth=2).encode(
            x=x, y=y("lo"), y2="hi:Q", color=color, tooltip=tips))
        layers.append(alt.Chart(alt.Data(name="est")).mark_point(filled=True, size=70).encode(
            x=x, y=y("estimate"), color=color, tooltip=tips))
    if not layers:
        layers.append(alt.Chart(alt.Data(name="arms")).mark_text(text="no data").encode(x=x))
    layered = alt.layer(*layers).resolve_scale(color="independent").properties(
        width=width, height=height, title=_TITLE_MARK)
    spec = layered.to_dict(validate=False)
    spec.pop("$schema", None)  # a URL vega-embed never fetches; dropping it keeps pages free of outside references
    spec.pop("config", None)
    return json.dumps(spec)


def _fill(node: Any, title: str, domain: list[float], fmt: str) -> Any:
    if isinstance(node, dict):
        return {k: _fill(v, title, domain, fmt) for k, v in node.items()}
    if isinstance(node, list):
        return domain if node == _DOMAIN_MARK else [_fill(v, title, domain, fmt) for v in node]
    if node == _TITLE_MARK:
        return title
    if node == _FMT_MARK:
        return fmt
    return node


def metric_spec(chart: MetricChart, *, width: int = 240, height: int = 180) -> dict[str, Any]:
    """The Vega-Lite spec (a plain dict) of one metric-by-arm chart."""
    dlo, dhi = _domain(chart)
    bands, lines = [], []
    for b in chart.regions:
        lo = dlo if not math.isfinite(b.lo) else b.lo
        hi = dhi if not math.isfinite(b.hi) else b.hi
        for arm in ([b.arm] if b.arm else chart.arms):
            row = {"arm": arm, "lo": lo, "hi": hi, "region": f"{b.kind}: {b.text}", "kind": b.kind}
            (lines if lo == hi else bands).append(row)
    # A tooltip's number reads as the arm table's (report.stats.fmt_value; an interval's ends with the digits that tell
    # them apart, display.interval_ends or display.rate_ends): the page's own ".4~g" showed a median of 12345 ms as
    # 1.235e+4, a rounding of its own showed 12345.6 to 12345.9 as 12346 to 12346, and a rate's [0.00012, 0.00034]
    # read 0.0% to 0.0%.
    def tip(x: float) -> str:
        return fmt_value(x, chart.is_rate)

    runs = [{"arm": r.arm, "value": float(f"{r.value:.6g}"), "value_text": tip(r.value), "run": f"run {r.run_id}"}
            for r in chart.runs]

    def ok(x: float | None) -> bool:
        return x is not None and math.isfinite(x)

    # JSON has no NaN or Infinity: a spec carrying one would not parse in the page.
    est = []
    for p in chart.points:
        if ok(p.estimate):
            lo, hi = p.lo if ok(p.lo) else p.estimate, p.hi if ok(p.hi) else p.estimate
            lo_text, hi_text = display.rate_ends((lo, hi)) if chart.is_rate else display.interval_ends((lo, hi))
            est.append({"arm": p.arm, "estimate": p.estimate, "lo": lo, "hi": hi, "lo_text": lo_text,
                        "hi_text": hi_text, "label": p.label, "method": p.method})
    skeleton = json.loads(_skeleton(tuple(chart.arms), bool(bands), bool(lines), bool(runs), bool(est),
                                    width, height))
    spec = _fill(skeleton, chart.metric, [dlo, dhi], ".0%" if chart.is_rate else "~s")
    spec["datasets"] = {"bands": bands, "lines": lines, "runs": runs, "est": est,
                        "arms": [{"arm": a} for a in chart.arms]}
    return spec


def validate_spec(spec: dict[str, Any]) -> None:
    """Check a spec against the Vega-Lite schema (tests; too slow for every build)."""
    import altair as alt

    alt.LayerChart.from_dict(spec, validate=True)
