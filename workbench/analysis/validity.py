"""Validity checks: isolation (recorded variables, fingerprints, rendered configs), guards, attrition, drift, A/A.

Each check is {name, passed, detail, effect}: passed is True, False, or None (could not be checked);
effect says what it does to the verdict when it did not pass: "invalid", "inconclusive" or "none".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from workbench.analysis import clustered, display, stats
from workbench.analysis.data import RunData, completed_units, metric_value, proportion_counts
from workbench.registry.experiment import Experiment
from workbench.secrets import MASK
from workbench.store import jsonx
from workbench.store.entities import LONG_NUMBER

if TYPE_CHECKING:
    from workbench.registry.hypothesis import Hypothesis


# Attrition above this share of units, or different between arms (Fisher p below ALPHA), is flagged.
ATTRITION_FLAG = 0.10
# The fingerprint's entry for the profile env values rendered from a run's variables: they differ between arms
# when the variable they come from does, so the fingerprint check does not compare them.
ARM_ENV = "arm_env"
DRIFT_P = clustered.FLAG_P


def check(name: str, passed: bool | None, detail: str, effect: str = "none") -> dict[str, Any]:
    return {"name": name, "passed": passed, "detail": detail, "effect": effect if passed is not True else "none"}


def data(arms: Mapping[str, list[RunData]], failed: Mapping[str, list[RunData]],
         design: Sequence[str]) -> dict[str, Any]:
    """The runs per arm. An arm of the design (`design`) with no completed run means the design was not run: what
    compares the arms cannot be checked, and a verdict read from the other arms alone is not one the design can give.
    One rule with the analysis of no usable run at all: runs that ran and could not measure (failed, invalid,
    interrupted) make the result invalid, no run at all leaves it inconclusive (no data yet)."""
    counts = ", ".join(f"{a}: {display.count(len(arms[a]), 'run')}" for a in arms)
    empty = [a for a in design if not arms[a]]
    if not empty:
        return check("data", True, counts)
    said = "; ".join(_unrun(a, failed.get(a, [])) for a in empty)
    others = "the other arm" if len(design) - len(empty) == 1 else "the other arms"
    return check("data", False, f"{counts}; {said}: the design was not run as planned, so no verdict rests on "
                 f"{others} alone", "invalid" if any(failed.get(a) for a in empty) else "inconclusive")


def _unrun(arm: str, runs: list[RunData]) -> str:
    """Why `arm` has no completed run: none matched it, or its runs (`runs`) ended without one, and the first's
    failure."""
    if not runs:
        return f"no run matches arm {arm}"
    runs = sorted(runs, key=lambda r: r.id)
    statuses = sorted({r.status for r in runs})
    ended = "failed" if statuses == ["failed"] else "ended " + " or ".join(statuses)
    also = f"; also {_named([r.name for r in runs[1:]])}" if len(runs) > 1 else ""
    return (f"no run of arm {arm} completed: its {display.count(len(runs), 'run')} {ended} "
            f"({run_failure(runs[0])}{also})")


def _not_completed(runs: list[RunData]) -> str:
    """Runs that did not complete, counted by how they ended as `wb runs show` gives it: "1 failed run was",
    "2 interrupted runs were", "1 failed run and 1 interrupted run were"."""
    by_status: dict[str, int] = {}
    for r in runs:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    said = [display.count(n, f"{status} run") for status, n in by_status.items()]
    told = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    return f"{told} {'was' if len(runs) == 1 else 'were'}"


def run_failure(r: RunData) -> str:
    """How a run that did not end ok ended, from its stored error ("[stage] reason"): "run 2 failed during its
    health stage: health never green ...", the reason on one line and cut to REASON_CHARS."""
    first = " ".join((r.error or "").split())
    m = re.match(r"\[([\w-]+)\] ?(.*)", first)
    stage, reason = (m.group(1), m.group(2)) if m else (None, first)
    text = f"{r.name} {r.status}" + (f" during its {stage} stage" if stage else "")
    if not reason or reason == r.status:
        return text
    return f"{text}: " + (reason if len(reason) <= REASON_CHARS
                          else f"{reason[:REASON_CHARS - 1]}… (`wb runs show {r.id}` gives it whole)")


def _set(values: set[str]) -> str:
    return "{" + ", ".join(sorted(values)) + "}"


def _groups(runs: list[RunData], attr: str) -> list[tuple[dict[str, Any], list[RunData]]]:
    """Runs grouped by a shared JSON value (runs of one arm share the parsed dict): check each once."""
    out: dict[int, tuple[dict[str, Any], list[RunData]]] = {}
    for r in runs:
        val = getattr(r, attr)
        out.setdefault(id(val), (val, []))[1].append(r)
    return list(out.values())


def isolation(h: Hypothesis, arms: dict[str, list[RunData]], expected: dict[str, dict[str, str]],
              by_arm_name: bool, per_replicate: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Arms differ only in the isolated variable, judged on the variables every run recorded (a
    per-replicate variable varies by design)."""
    names = [a for a in arms if arms[a]]
    if len(arms) >= 2 and len(names) < 2:
        return check("isolation", None, f"only arm {', '.join(names) or 'none'} has runs: no other arm to compare "
                                        f"it with ({', '.join(a for a in arms if not arms[a])} has none)")
    groups = {a: _groups(arms[a], "variables") for a in names}
    problems: list[str] = []
    unrecorded: set[str] = set()
    if by_arm_name:  # runs grouped by the runner's arm label: each must carry its arm's assignment
        for a in names:
            for variables, runs in groups[a]:
                for var, want in expected[a].items():
                    got = variables.get(var)
                    if got is None:
                        unrecorded.add(var)
                    elif got != want:
                        problems.append(f"{runs[0].name}{f' and {len(runs) - 1} more' if len(runs) > 1 else ''} "
                                        f"(arm {a}) recorded {var}={got}, the arm sets {want}")
    for a in names:  # variables the arm's assignment sets but some run never recorded (imported evidence)
        for variables, _ in groups[a]:
            unrecorded.update(var for var in expected[a] if var not in variables)
    all_vars = sorted({v for a in names for variables, _ in groups[a] for v in variables} | set(h.hold))
    held_ok = []
    for var in all_vars:
        if var == h.isolates or var in per_replicate:
            continue
        per_arm = {a: {variables[var] for variables, _ in groups[a] if var in variables} for a in names}
        if any(var not in variables for a in names for variables, _ in groups[a]):
            unrecorded.add(var)
        seen = [s for s in per_arm.values() if s]
        if len(seen) >= 2 and any(s != seen[0] for s in seen):
            problems.append(f"{var} differs between arms: " +
                            ", ".join(f"{a} {_set(s)}" for a, s in per_arm.items() if s))
        elif seen:
            held_ok.append(f"{var}={'/'.join(sorted(seen[0]))}")
    iso_vals = {a: {variables.get(h.isolates, "?") for variables, _ in groups[a]} for a in names} if h.isolates else {}
    aa = set(arms) >= {"control", "control_aa"}
    if h.isolates and len(names) >= 2:
        problems.extend(_isolated_apart(h.isolates, iso_vals, aa))
    note = ""
    if unrecorded:
        note = (" Not recorded by every run, so taken as the arms state them (unverified): "
                f"{', '.join(sorted(unrecorded))}.")
    if problems:
        return check("isolation", False, "; ".join(problems[:6]) + "." + note, "invalid")
    iso = ""
    if h.isolates and aa:  # an A/A execution runs one assignment twice: nothing differs between its arms
        iso = f"A/A: both arms set {h.isolates}={'/'.join(sorted(set().union(*iso_vals.values())))}"
    elif h.isolates:
        iso = f"arms differ only in {h.isolates} (" + ", ".join(
            f"{a}: {'/'.join(sorted(iso_vals[a]))}" for a in names) + ")"
    held = f"; held as recorded: {', '.join(held_ok)}" if held_ok else ""
    return check("isolation", True, (iso or "one arm") + held + "." + note)


def _isolated_apart(var: str, iso_vals: dict[str, set[str]], aa: bool) -> list[str]:
    """The isolated variable as the arms recorded it: it must differ between arms, or, in an A/A execution,
    be the same in both."""
    known = {a: v - {"?", MASK} for a, v in iso_vals.items()}  # a secret's values are not seen to compare
    if not all(known.values()):
        return []
    distinct = len({frozenset(v) for v in known.values()})
    listed = ", ".join(f"{a} {_set(v)}" for a, v in known.items())
    if aa:
        return [f"the A/A arms differ in {var}: {listed}"] if distinct > 1 else []
    return [f"the arms do not differ in {var}: {listed}"] if distinct < len(known) else []


def _flatten(d: Any, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
    else:
        out[prefix[:-1]] = str(d)
    return out


def fingerprints(arms: dict[str, list[RunData]]) -> dict[str, Any]:
    """Environment fingerprints recorded per run must agree between arms (a changed build is a confound)."""
    names = [a for a in arms if arms[a]]
    flat = {a: [{k: v for k, v in _flatten(fp).items() if not k.startswith(ARM_ENV + ".")}
                for fp, _ in _groups(arms[a], "fingerprint")] for a in names}
    keys = sorted({k for a in names for f in flat[a] for k in f})
    if not keys:
        return check("fingerprint", None, "no run recorded an environment fingerprint")
    differ, partial, same = [], [], []
    for key in keys:
        per_arm = {a: {f[key] for f in flat[a] if key in f} for a in names}
        present = {a: s for a, s in per_arm.items() if s}
        if len(present) < len(names):
            partial.append(key)
            continue
        sets = list(present.values())
        if any(s != sets[0] for s in sets):
            differ.append(f"{key}: " + ", ".join(f"{a} {_set(s)}" for a, s in present.items()))
        else:
            same.append(key)
    if differ:
        return check("fingerprint", False, "environment differs between arms: " + "; ".join(differ[:4]), "invalid")
    detail = (f"{display.count(len(same), 'fingerprint value')} identical across arms ({_named(same)})" if same
              else "no fingerprint value was recorded in every arm")
    if partial:
        detail += f"; not comparable (recorded in some arms only): {_named(partial)}"
        return check("fingerprint", True if same else None, detail + ".")
    return check("fingerprint", True, detail + ".")


def configs(texts: dict[str, str], arms: dict[str, list[RunData]], aa: bool,
            per_replicate: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Rendered configs (`texts`: config hash -> text), per execution: one per arm (replicates alike, but
    for the values of per-replicate variables), and different between arms (the variable reached the
    target). Executions are compared separately: each may get its own free ports."""
    hashes = sorted({r.config_hash for rs in arms.values() for r in rs if r.config_hash})
    if not hashes:
        return check("config", None, "no run recorded a rendered config (imported evidence, or a target without one)")

    def norm(label: str | None, text: str, drawn: tuple = ()) -> tuple[str, ...]:
        # A run's own arm label is rendered into comments ("for arm control_aa"); it is not a difference.
        # Nor is the value a per-replicate variable took in this run.
        subs = [(value, f"<{name}>") for name, value in drawn if value]
        if label:
            subs.append((label, "<arm>"))
        lines = text.splitlines()
        for value, mark in subs:
            lines = [re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", mark, line) for line in lines]
        return tuple(lines)

    by_exec: dict[Any, dict[str, set[tuple[str, ...]]]] = {}
    for a, rs in arms.items():
        for h, label, ex, drawn in {(r.config_hash, r.arm, r.execution_id,
                                     tuple((n, r.variables.get(n)) for n in sorted(per_replicate)))
                                    for r in rs if r.config_hash}:
            if h in texts:
                by_exec.setdefault(ex, {}).setdefault(a, set()).add(norm(label, texts[h], drawn))
    mixed, same, diffs = [], [], []
    for ex, per_arm in by_exec.items():
        where = f"execution {ex}" if ex is not None else "runs without an execution"
        mixed += [f"{a} in {where}" for a, v in per_arm.items() if len(v) > 1]
        singles = {a: next(iter(v)) for a, v in per_arm.items() if len(v) == 1}
        if len(singles) < 2:
            continue
        first, second = list(singles)[:2]
        a_lines, b_lines = singles[first], singles[second]
        if set(a_lines) == set(b_lines):
            if not aa:
                same.append(where)
            continue
        diffs.append([f"{first}: {ln}" for ln in a_lines if ln not in b_lines][:3] +
                     [f"{second}: {ln}" for ln in b_lines if ln not in a_lines][:3])
    if mixed:
        return check("config", False, "replicates of one arm ran different rendered configs: " + ", ".join(mixed[:4]),
                     "inconclusive")
    if same:
        return check("config", False, f"the arms rendered identical configs ({', '.join(same[:3])}): the isolated "
                     "variable changed nothing the target reads", "invalid")
    if not diffs:
        return check("config", True if aa else None, "one rendered config per arm" if aa else
                     "rendered configs recorded for one arm only")
    shown = diffs[0]
    where = "the one execution" if len(by_exec) == 1 else f"each of {len(by_exec)} executions"
    return check("config", True, f"one rendered config per arm in {where}; they differ in: "
                 + " | ".join(x.strip() for x in shown))


def _named(names: list[str], shown: int = 5) -> str:
    """The first `shown` names, and how many more: every name counted is named or counted."""
    rest = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {rest} more" if rest > 0 else "")


REASONS_SHOWN = 3      # the commonest messages a check quotes
REASON_CHARS = 160


def _quoted(message: str) -> str:
    """A unit's message on one line, cut to REASON_CHARS, in double quotes (it is the target's text, not wb's)."""
    one = " ".join(message.split())
    return '"' + (one if len(one) <= REASON_CHARS else one[:REASON_CHARS - 1] + "…") + '"'


def lost_reasons(runs: list[RunData], exp: Experiment, outcome: str | None = None) -> str:
    """' (their error field: 36 "http 503: ..." (long numbers vary), 12 "timeout")': why the units of `runs` that
    did not complete (those of `outcome` only, when given) ended, as their reason field says; '' when none said.
    Messages that differ only in their long numbers (LONG_NUMBER: ids, pages, ports) are one."""
    tally: dict[str, list[Any]] = {}
    for r in runs:
        for o, message, n, vary in r.lost_reasons:
            if outcome is not None and o != outcome:
                continue
            t = tally.setdefault(re.sub(LONG_NUMBER, "#", message), [message, 0, vary])
            t[1] += n
            t[2] = t[2] or vary or t[0] != message
            t[0] = min(t[0], message)
    if not tally or exp.unit is None:
        return ""
    top = sorted(tally.values(), key=lambda t: (-t[1], t[0]))
    said = [f"{n:,} {_quoted(message)}{' (long numbers vary)' if vary else ''}"
            for message, n, vary in top[:REASONS_SHOWN]]
    rest = sum(t[1] for t in top[REASONS_SHOWN:])
    more = f" and {rest:,} more in {display.count(len(top) - REASONS_SHOWN, 'other message')}" if rest else ""
    return f" (their {exp.unit.reason_field} field: {', '.join(said)}{more})"


def _lost_said(runs: list[RunData], exp: Experiment, unknown: list[str]) -> str:
    """Where an arm's lost units come from: the messages of their reason field (`lost_reasons`), the units of runs
    that record no message (imported evidence records counts, not units), and the runs that record no unit count
    at all, whose units the count leaves out."""
    parts = [lost_reasons(runs, exp).strip().removeprefix("(").removesuffix(")")]
    if parts[0]:  # where no unit says why, nothing is said of any: the count stands alone, as before
        for r in runs:
            cu = completed_units(r, exp)
            silent = (cu[0] - cu[1] - sum(n for _, _, n, _ in r.lost_reasons)) if cu is not None else 0
            if silent > 0:
                kind = "imported run" if r.source == "import" else "run"
                said = f"which records no {exp.unit.reason_field if exp.unit else 'reason'} per unit"
                parts.append(f"{display.number(silent)} in {kind} {r.name}, {said}")
    said = "; ".join(p for p in parts + [_counted_over(runs, unknown)] if p)
    return f" ({said})" if said else ""


def _counted_over(runs: list[RunData], unknown: list[str]) -> str:
    """"over 3 of the arm's 5 runs: 2 imported runs record no unit count": the runs a unit count leaves out."""
    if not unknown:
        return ""
    imported = all(r.source == "import" for r in runs if r.name in unknown)
    return (f"over {len(runs) - len(unknown)} of the arm's {display.count(len(runs), 'run')}: {len(unknown)} "
            f"{'imported ' if imported else ''}{'run records' if len(unknown) == 1 else 'runs record'} no unit count")


def guard(g: Any, arms: dict[str, list[RunData]], exp: Experiment, arm_names: list[str]) -> dict[str, Any]:
    """A guard holds when every run of its arm(s) recorded the metric and met the condition."""
    name = f"guard: {display.guard(g, exp)}"
    spec = exp.metrics.get(exp.repeated(g.metric))
    targets = [g.arm] if g.arm else arm_names
    lo, hi = g.bounds()
    seen, bad, unknown, bad_runs = 0, [], [], []
    for a in targets:
        for r in arms.get(a, []):
            if spec is not None and spec.kind == "proportion":
                kn = proportion_counts(r, spec, exp)
                v = None if kn is None or kn[1] <= 0 else kn[0] / kn[1]
            else:
                v = metric_value(r, g.metric, exp)
            if v is None:
                unknown.append(r.name)
                continue
            seen += 1
            if not (lo <= v <= hi):
                bad.append(f"{r.name} ({a}): {display.value(exp, g.metric, v)}")
                bad_runs.append(r)
    where = g.arm or "every arm"
    if bad:
        # A guard on units of one outcome (error == 0) quotes what those units said: the cause, not just a count.
        units = spec.units if spec is not None and spec.units else {}
        outcome = units.get(exp.unit.outcome_field) if exp.unit is not None and len(units) == 1 else None
        why = lost_reasons(bad_runs, exp, str(outcome)) if isinstance(outcome, (str, int)) else ""
        return check(name, False, f"violated in {display.count(len(bad), 'run')}: {', '.join(bad[:5])}{why}"
                     + (f" — {g.why}" if g.why else ""), "invalid")
    if seen == 0:
        return check(name, None, f"no run in {where} recorded {g.metric}: the guard cannot be checked", "inconclusive")
    if unknown:
        return check(name, None, f"held in {display.count(seen, 'run')}, but {display.count(len(unknown), 'run')} did "
                     f"not record {g.metric} ({', '.join(unknown[:4])})", "inconclusive")
    if seen == 1:  # "held in all 1 run(s)" claimed more than one run can hold
        return check(name, True, f"held in the one run of {g.arm}" if g.arm else "held in the one run")
    if g.arm:
        return check(name, True, f"held in all {seen} runs of {g.arm}" if seen > 2 else f"held in both runs of {g.arm}")
    per_arm = {a: len(arms.get(a, [])) for a in targets}
    each = ", ".join(f"{n} of {a}" for a, n in per_arm.items() if n)
    return check(name, True, f"held in every run ({each})")


def attrition(arms: dict[str, list[RunData]], failed: dict[str, list[RunData]], exp: Experiment,
              basis_disagrees: list[str], compared: bool = True,
              lost_rates: Sequence[str] = (), *, holds: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Units lost (not completed) per arm, runs that failed, and whether the outcome depends on the basis.
    `compared`: whether any prediction was judged over completed units too; `lost_rates`: the predicted rates
    that count lost units (no reading over completed ones); `holds`: a prediction the units as a whole decided is
    not decided so over the completed ones (`basis_disagrees` says each), so this check is what holds the verdict."""
    per_arm: dict[str, Any] = {}
    flags: list[str] = []
    for a, runs in arms.items():
        total = done = 0.0
        by_outcome: dict[str, float] = {}
        unknown = []
        for r in runs:
            cu = completed_units(r, exp)
            if cu is None:
                unknown.append(r.name)
                continue
            total += cu[0]
            done += cu[1]
            if r.outcomes:
                for o, n in r.outcomes.items():
                    by_outcome[o] = by_outcome.get(o, 0) + n
            elif exp.unit:
                for o in exp.unit.outcomes:
                    m = next((mn for mn, s in exp.metrics.items() if s.units == {exp.unit.outcome_field: o}), None)
                    v = metric_value(r, m, exp) if m else None
                    if v is not None:
                        by_outcome[o] = by_outcome.get(o, 0) + v
        lost = total - done
        share = lost / total if total > 0 else None
        per_arm[a] = {"units": jsonx.whole(total), "completed": jsonx.whole(done), "lost": jsonx.whole(lost),
                      "lost_share": share, "by_outcome": jsonx.whole(by_outcome),
                      "runs_failed": len(failed.get(a, [])), "runs_unknown": unknown}
        if share is not None and share > ATTRITION_FLAG:
            flags.append(f"{a}: {display.number(lost)}/{display.number(total)} units ({display.rate(share)}) did not "
                         f"complete{_lost_said(runs, exp, unknown)}")
        if total > 0 and done == 0:
            flags.append(f"{a}: every unit was lost, so the arm measured nothing")
        if failed.get(a):
            flags.append(f"{a}: {_not_completed(failed[a])} left out"
                         + ("" if runs else ": the arm has no completed run, so it measured nothing"))
    known = [a for a in per_arm if per_arm[a]["units"] > 0]
    p_between = None
    if len(known) >= 2:
        a, b = known[:2]
        p_between = stats.fisher(int(per_arm[a]["lost"]), int(per_arm[a]["units"]),
                                 int(per_arm[b]["lost"]), int(per_arm[b]["units"]))
        if p_between < stats.ALPHA:
            flags.append(f"attrition differs between {a} and {b} (Fisher p {display.p_is(p_between)})")
    summary = {"arms": per_arm, "between_arms_p": p_between, "flags": flags}
    if any(failed.get(a) and not runs for a, runs in arms.items()):  # no comparison of bases over an empty arm
        return check("attrition", False, "; ".join(flags), "invalid"), summary
    if not known:
        return check("attrition", None, "no arm recorded how many units completed"), summary
    if any(per_arm[a]["units"] > 0 and per_arm[a]["completed"] == 0 for a in known):
        return check("attrition", False, "; ".join(flags), "inconclusive"), summary
    if basis_disagrees:
        return check("attrition", False, "; ".join(flags) + ". Over completed units the verdict would differ for: "
                     + ", ".join(basis_disagrees) + (_what_decides(per_arm) if holds else ""), "inconclusive"), summary
    if flags and not compared:
        why = (f" ({', '.join(lost_rates)} {'counts' if len(lost_rates) == 1 else 'count'} the lost units themselves)"
               if lost_rates else "")
        return check("attrition", False, "; ".join(flags) + f". No prediction is read over completed units only{why}, "
                     "so the verdict stands.", "none"), summary
    if flags:
        return check("attrition", False, "; ".join(flags) + ". The outcome is the same over all units and over "
                     "completed units, so the verdict stands.", "none"), summary
    kept = [f"{a}: {display.number(per_arm[a]['lost'])}/{display.number(per_arm[a]['units'])} lost"
            + (f" ({over})" if (over := _counted_over(arms[a], per_arm[a]["runs_unknown"])) else "") for a in known]
    return check("attrition", True, "; ".join(kept)), summary


def _what_decides(per_arm: dict[str, Any]) -> str:
    """What lets a verdict the attrition check holds decide: the completed units deciding as all units did, which
    more replicates or fewer lost units give. An arm's lost units are named here where no flag did (at most
    ATTRITION_FLAG of them)."""
    unflagged = [f"{a} lost {display.number(s['lost'])} of its {display.number(s['units'])} units"
                 for a, s in per_arm.items() if s["lost"] and (s["lost_share"] or 0) <= ATTRITION_FLAG]
    return (". Attrition holds the verdict inconclusive until the completed units decide as all units did"
            + (f" ({'; '.join(unflagged)})" if unflagged else "") + ": more replicates add completed units "
            "(--replicates; a sequential execution goes on to its budget), and fewer lost units make more of each run "
            "count")


def drift(arms: dict[str, list[RunData]], exp: Experiment, metrics: list[str],
          read: Mapping[str, set[str]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Replicates of one arm should spread as independent samples do: Pearson's dispersion over runs, per
    proportion, with tests in both directions (exact over two runs, simulated beyond). More spread than
    chance is a between-run effect or drift; less is pseudo-replication (replicates that repeated the same
    sessions). Either is a finding, and the interval already treats the run as the unit (analysis.clustered).
    Only possible drift holds the verdict back (clustered.drift_holds): over-dispersed rates that trend over
    replicate order, or too few runs to rule a trend out; drift is the target changing under the experiment, which no
    interval repairs. Exchangeable spread (runs that differ without order) is what the run-level
    interval is for; holding every over-dispersed arm back made a between-run ICC of 0.1 undecidable
    at any number of replicates. Possible drift holds the verdict only where a prediction reads it: `read` maps a
    metric to the arms its predictions read (None: every arm); an arm no prediction reads is reported, not held
    (its runs are not the evidence, and an arm that is keeps its own test)."""
    from workbench.analysis.predictions import replayed_workload

    out: dict[str, Any] = {}
    flagged, trends, unread = [], [], []
    tested = proportions = 0
    for m in metrics:
        spec = exp.metrics.get(exp.repeated(m))
        if spec is None or spec.kind != "proportion":
            continue
        proportions += 1
        for a, runs in arms.items():
            rows = [(r, kn[0], kn[1]) for r in sorted(runs, key=lambda r: (r.replicate or 0, r.id))
                    for kn in [proportion_counts(r, spec, exp)] if kn is not None and kn[1] > 0]
            if len(rows) < 2:
                continue
            d = clustered.dispersion([k for _, k, _ in rows], [n for _, _, n in rows])
            tested += 1
            rates = [k / n for _, k, n in rows]
            held, p_trend = clustered.drift_holds(d, rates)
            out.setdefault(a, {})[m] = {"p": d.p_over, "p_over": d.p_over, "p_under": d.p_under, "phi": d.phi,
                                        "p_trend": p_trend, "runs": len(rows), "rates": rates}
            counts = ", ".join(f"{display.fraction(k, n)}" for _, k, n in rows[:6]) + (f" and {len(rows) - 6} more"
                                                                         if len(rows) > 6 else "")
            if d.p_over < DRIFT_P:
                flagged.append(f"{m} in {a} varies between replicates more than chance allows (dispersion "
                               f"{d.phi:.2g}, {clustered.p_text(d, d.p_over)} over {len(rows)} runs: {counts})")
                if held:
                    why = (f"{m} in {a} trends over replicate order (Kendall p {display.p_is(p_trend)})"
                           if p_trend < DRIFT_P else f"{m} in {a}: {len(rows)} runs are too few to rule "
                           f"out a trend (Kendall's test needs {clustered.TREND_MIN_RUNS})")
                    (trends if read is None or a in read.get(m, set()) else unread).append((why, m, a))
            elif d.p_under < DRIFT_P:
                flagged.append(f"{m} in {a} varies between replicates less than chance allows (dispersion "
                               f"{d.phi:.2g}, {clustered.p_text(d, d.p_under)} over {len(rows)} runs: {counts}): "
                               + _too_close(replayed_workload([r for r, _, _ in rows], exp)))
    if flagged:
        # an arm that varies without trend (or too little) is said so beside one no prediction reads that drifts
        steady = f" No trend over replicate order{' in the arms a prediction reads' * bool(unread)}: the spread is " \
            "between runs, which the run-level interval carries." if len(flagged) > len(unread) else ""
        why = (" " + "; ".join(w for w, _, _ in trends) + ": possible drift, which no interval repairs,"
               + _DRIFT_WAITS) if trends else steady
        if unread:
            why += " " + "; ".join(f"{w}, but no prediction reads {m} in {a}" for w, m, a in unread) + \
                ": possible drift there holds no verdict."
        return check("drift", False, "; ".join(flagged) + ". The intervals count runs, not sessions, as the unit."
                     + why, "inconclusive" if trends else "none"), out
    if not proportions:
        return check("drift", None, "no prediction is on a proportion: drift between replicates is measured on "
                     "proportions only"), out
    if not tested:
        return check("drift", None, "fewer than two replicates per arm: drift not measurable"), out
    return check("drift", True, f"replicates spread as independent samples do ({display.count(tested, 'test')}, all "
                 f"p >= {DRIFT_P} in both directions)"), out


_DRIFT_WAITS = " so the verdict waits."


def _too_close(replayed: bool | None) -> str:
    """What runs that agree more closely than chance allows are, as far as their recorded seeds tell."""
    if replayed:
        return "pseudo-replication, the replicates replayed one workload (one seed): repeats of the same sessions"
    if replayed is False:
        return ("each replicate ran its own workload (its own seed): chance agreement, or runs that depend on each "
                "other in a way their seeds do not show")
    return "pseudo-replication, the replicates look like repeats of the same sessions"


def release_drift_hold(c: dict[str, Any], robust: list[str], verdict: str) -> None:
    """The drift check `c` held the verdict, but `robust` predictions reach it by the bet on the runs' own
    rates alone, which holds whatever the runs' order: the check stops holding it and says why."""
    c["effect"] = "none"
    c["detail"] = c["detail"].replace(_DRIFT_WAITS, " but it does not hold ") + "; ".join(robust) + \
        f": {verdict} by the bet on the runs' own rates, which holds under drift."


def aa_noise(arms: dict[str, list[RunData]], exp: Experiment, metrics: list[str],
             sequential: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """A/A: the control run twice. The difference interval is the noise floor; excluding 0 is a false alarm."""
    from workbench.analysis import sequential as seq
    from workbench.analysis.predictions import _arm_effective, _effective_path, _replicate_counts, pooled

    out: dict[str, Any] = {}
    alarms, waiting = [], []
    for m in metrics:
        spec = exp.metrics.get(exp.repeated(m))
        if spec is None or spec.kind != "proportion":
            continue
        pa, pb = pooled(arms.get("control", []), m, exp), pooled(arms.get("control_aa", []), m, exp)
        if pa["n"] <= 0 or pb["n"] <= 0:
            continue
        arm_a, arm_b = _arm_effective(pa["per_run"], pa["replayed"]), _arm_effective(pb["per_run"], pb["replayed"])
        ea, eb = clustered.joint(arm_a, arm_b)
        (path_a, ea), (path_b, eb) = _effective_path(pa["per_run"], ea), _effective_path(pb["per_run"], eb)
        if sequential:
            ci = seq.difference_sequence(path_a, path_b)
        else:
            # An alarm voids the execution: the copies' runs pooled decide the variance model at a loose
            # level (clustered.aa_joint), and the continuity-corrected interval keeps alarms under alpha.
            reps = [_replicate_counts(x["per_run"]) for x in (pa, pb)]
            pooled_d = clustered.pooled_dispersion([([k for k, _ in r], [n for _, n in r]) for r in reps])
            ea, eb = clustered.aa_joint(arm_a, arm_b, pooled_d)
            ci = stats.newcombe_cc(ea.k_eff, ea.n_eff, eb.k_eff, eb.n_eff, clustered.level_alpha(stats.ALPHA, ea.df))
        p = stats.fisher(int(pa["k"]), int(pa["n"]), int(pb["k"]), int(pb["n"]))
        # A sequential A/A check, like a sequential verdict, waits for seq.MIN_LOOKS replicates: one run
        # per arm shows no between-run variation, and an alarm then would trust the binomial blindly.
        early = sequential and min(len(path_a), len(path_b)) < seq.MIN_LOOKS
        if early:
            waiting.append(m)
        alarm = not early and not (ci[0] <= 0 <= ci[1])
        out[m] = {"control": [pa["k"], pa["n"]], "control_aa": [pb["k"], pb["n"]], "difference_interval": list(ci),
                  "noise_floor": max(abs(ci[0]), abs(ci[1])), "fisher_p": p, "false_alarm": alarm}
        if alarm:
            alarms.append(f"{m}: {display.fraction(pa['k'], pa['n'])} vs {display.fraction(pb['k'], pb['n'])}, "
                          f"difference interval {display.points_interval(ci)} excludes 0")
    if not out:
        return check("a/a", None, "no proportion recorded in both control copies", "inconclusive"), out
    if alarms:
        return check("a/a", False, "false alarm between identical arms: " + "; ".join(alarms), "invalid"), out
    if len(waiting) == len(out):
        return check("a/a", None, f"a sequential A/A check waits for replicate {seq.MIN_LOOKS}: one run per arm "
                     "cannot show how much runs differ"), out
    return check("a/a", True, "no false alarm; noise floor " + ", ".join(
        f"{m} {display.noise_floor(v['noise_floor'])}" for m, v in out.items())), out


def looks(runs: list[RunData], execution_id: int | None) -> dict[str, Any] | None:
    """A pooled analysis (no execution named) over several executions is a repeated look at growing data
    that no error rate was planned for: it is reported as exploratory. None when it is one look."""
    if execution_id is not None:
        return None
    executions = {r.execution_id for r in runs if r.execution_id is not None}
    imported = any(r.execution_id is None for r in runs)
    sources = len(executions) + (1 if imported else 0)
    if sources <= 1:
        return None
    by_hyp: dict[str, list[int]] = {}
    for e, hid in sorted({(r.execution_id, r.hypothesis_id or "no hypothesis") for r in runs
                          if r.execution_id is not None}):
        by_hyp.setdefault(hid, []).append(e)
    named = "; ".join(f"{_named([str(e) for e in es], shown=8)} of {hid}" for hid, es in by_hyp.items())
    what = f"{display.count(len(executions), 'execution')} ({named})" + (" and imported evidence" if imported else "")
    return check("looks", False, f"pooled over {what}: exploratory. Each stored execution is another look at the "
                 "same question, and pooling them after the fact is not corrected for those looks; the "
                 "confirmatory verdict is the one each execution recorded when it ran", "none")
