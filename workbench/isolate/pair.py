"""`wb isolate --pair FILE`: the good/bad pair, and the rest of the request, declared in YAML.

    experiment: agent-repro
    good: {index_k_dtype: fp8, hicache: off, nixl_abort_fix: on, geometry_fix: on}
    bad:  {index_k_dtype: bf16, hicache: on, nixl_abort_fix: off, geometry_fix: off}
    metric: corruption_rate
    region: ">= 0.05"
    # optional: target, budget, alpha

A pair kept in the workbench next to the hypotheses can be re-run and reviewed like them. A flag
given on the command line replaces the file's value for that key (--good and --bad replace the
whole configuration): that value is neither required nor read. Every other value is checked here
against the experiment, so a mistake is an `Error:` naming the file and line, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import BadInput
from workbench.registry.common import did_you_mean, hint_of

KEYS = ("experiment", "good", "bad", "metric", "region", "target", "budget", "alpha")
REQUIRED = ("experiment", "good", "bad", "metric", "region")


def load_pair(path: str | Path, registry: Any, flags: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request the file declares, as `prepare_spec` keywords (good/bad as `var=value` lists). `flags`: the
    values given on the command line, by the file's keys (target, not profile); a key one of them gives is
    neither required nor read from the file, as the flag replaces it (a wrong value there is no error); the
    file's good and bad are checked against --experiment's experiment when it is given."""
    from workbench.isolate.app import metric_problem
    from workbench.isolate.region import parse_region
    from workbench.registry.yamlio import load_located

    doc = load_located(path)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error("expected a mapping with experiment, good, bad, metric and region")
    for key in data:
        if key not in KEYS:
            raise doc.error(f"unknown key {key!r}", (key,), hint=did_you_mean(key, KEYS, f"keys: {', '.join(KEYS)}"))
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    data = {k: v for k, v in data.items() if k not in given}  # replaced by a flag: not read
    missing = [k for k in REQUIRED if k not in data and k not in given]
    if missing:
        raise doc.error(f"missing {', '.join(missing)}", hint="a pair needs experiment, good, bad, metric and region")
    for key in ("experiment", "metric", "region"):  # text: a null or a list read as 'None' or "['x']"
        if key in data and (data[key] is None or data[key] == ""):
            raise doc.error(f"{key} is empty", (key,))
        if isinstance(data.get(key), (dict, list)):
            raise doc.error(f"{key} must be text, not {data[key]!r}", (key,))
    exp = _experiment(doc, registry, data, given)
    out: dict[str, Any] = {"experiment": exp.id}
    for side in ("good", "bad"):
        if side in data:
            out[side] = _config(doc, exp, data[side], side)
    defaults = dict(exp.defaults())
    if "good" in out and "bad" in out and \
            {**defaults, **_pairs(out["good"])} == {**defaults, **_pairs(out["bad"])}:
        # The file's own mistake: named at its line, not as "--good and --bad".
        raise doc.error("good and bad give the same configuration (unnamed variables take the experiment's "
                        "defaults): nothing to isolate", ("bad",))
    if "metric" in data:
        out["metric"] = str(data["metric"])
        problem = metric_problem(exp, out["metric"])
        if problem:
            raise doc.error(problem[0], ("metric",), hint=problem[1])
    if "region" in data:
        try:
            parse_region(str(data["region"]), flag="region", proportion=True)
        except BadInput as exc:
            raise doc.error(exc.message, ("region",), hint=exc.hint) from None
        out["region"] = str(data["region"])
    return {**out, **_optional(doc, exp, data)}


def _experiment(doc: Any, registry: Any, data: dict[str, Any], given: dict[str, Any]) -> Any:
    """The experiment the file's values are checked against: --experiment's when given, else the file's."""
    from workbench.isolate.app import experiment_hint

    if "experiment" in given:
        exp = registry.experiments.get(str(given["experiment"]))
        if exp is None:
            raise BadInput(f"--experiment {given['experiment']}: no experiments/{given['experiment']}.yaml",
                           hint=experiment_hint(registry, str(given["experiment"])))
        return exp
    exp = registry.experiments.get(str(data["experiment"]))
    if exp is None:
        raise doc.error(f"experiment {data['experiment']!r} not found", ("experiment",),
                        hint=experiment_hint(registry, str(data["experiment"])))
    return exp


def _optional(doc: Any, exp: Any, data: dict[str, Any]) -> dict[str, Any]:
    """target, budget and alpha, checked here as the flags are checked, so that a mistake names the file's line
    (it named a flag that was never given: '--budget 0', '--target nope')."""
    out: dict[str, Any] = {}
    if "target" in data:
        target = data["target"]
        if not isinstance(target, str):
            raise doc.error(f"target must be a profile name, not {target!r}", ("target",),
                            hint=f"profiles: {', '.join(exp.profiles)}")
        if target not in exp.profiles:
            raise doc.error(f"experiment {exp.id!r} has no profile {target!r}", ("target",),
                            hint=did_you_mean(target, exp.profiles, f"profiles: {', '.join(exp.profiles)}"))
        out["profile"] = target
    for key in ("budget", "alpha"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise doc.error(f"{key} must be a number, not {value!r}", (key,))
            out[key] = float(value)
    if "budget" in out and not out["budget"] > 0:  # nan too
        raise doc.error(f"budget {out['budget']:g} must be positive (units)", ("budget",))
    if "alpha" in out and not (0 < out["alpha"] < 1):
        raise doc.error(f"alpha {out['alpha']:g} must lie in (0, 1)", ("alpha",))
    return out


def _pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def _config(doc: Any, exp: Any, value: Any, side: str) -> list[str]:
    """A `{var: value}` mapping checked against the experiment's variables, as `var=value` items."""
    from workbench.isolate.assignments import parse_assignments
    from workbench.registry.common import var_value

    if not isinstance(value, dict) or not value:
        raise doc.error(f"{side} must be a mapping of variable: value", (side,))
    items = []
    for name, raw in value.items():
        where = (side, name)
        if name not in exp.variables:
            raise doc.error(f"experiment {exp.id!r} has no variable {name!r}", where,
                            hint=did_you_mean(name, exp.variables, f"variables: {', '.join(exp.variables)}"))
        if exp.variables[name].per_replicate:
            from workbench.isolate.app import PER_REPLICATE

            raise doc.error(PER_REPLICATE.format(name=name), where)
        try:
            text = exp.variables[name].check(var_value(doc.booleans.get(where, raw)))  # a bare yes: its word
        except ValueError as exc:
            raise doc.error(str(exc), where, hint=hint_of(exc)) from None
        item = f"{name}={text}"
        try:  # what --good and --bad can say, so that the resume command can say it too
            carried = text and parse_assignments([item], side) == {name: text}
        except BadInput:
            carried = False
        if not carried:
            raise doc.error(f"{text!r} cannot be given as {side} {name}=VALUE: a value may hold spaces, but not "
                            "at its ends nor before a name=", where)
        items.append(item)
    return items
