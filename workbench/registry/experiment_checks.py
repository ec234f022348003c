"""An experiment file's fields checked against each other: metric references and aliases, unit outcomes, the
default profile, each profile's collected metrics, fields and config templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.registry import template_scan
from workbench.registry.common import did_you_mean
from workbench.registry.experiment import BUILTIN_TEMPLATE_NAMES, Experiment, Profile
from workbench.registry.problems import Found, SharedFileError
from workbench.registry.profile_checks import check_profile, verify_templates
from workbench.registry.yamlio import LocatedYaml, field_name


def _check_aliases(exp: Experiment, doc: LocatedYaml, found: Found) -> None:
    """Every same_as chain ends at a metric that carries values: a loop of aliases names none. Each loop is told
    once, at the first of its metrics."""
    told: set[frozenset[str]] = set()
    for name in exp.metrics:
        chain = [name]
        while (ref := exp.metrics[chain[-1]].same_as) is not None and ref in exp.metrics:
            chain.append(ref)
            if ref == name:
                if frozenset(chain) not in told:
                    told.add(frozenset(chain))
                    with found.apart():
                        raise doc.error(f"same_as loop: {' -> '.join(chain)} (each another name for the next)",
                                        ("metrics", name, "same_as"))
                break
            if chain.count(ref) > 1:
                break  # a loop further down the chain, reported at a metric of its own


def check_experiment(exp: Experiment, doc: LocatedYaml, path: Path, found: Found | None = None) -> None:
    """The experiment's fields against each other: each check apart, so `found` collecting (validate) gets every
    problem; strict (the default), the first is raised."""
    found = found if found is not None else Found()
    with found.apart():
        if exp.id != path.stem:
            raise doc.error(f"id {exp.id!r} does not match the file name {path.name!r}", ("id",),
                            hint=f"name the file {exp.id}.yaml or change the id")
    _check_metric_references(exp, doc, found)
    _check_aliases(exp, doc, found)
    _check_outcomes(exp, doc, found)
    with found.apart():
        if exp.default_profile not in exp.profiles:
            raise doc.error(f"default_profile {exp.default_profile!r} is not among the profiles "
                            f"{', '.join(exp.profiles)}", ("default_profile",),
                            hint=did_you_mean(exp.default_profile, exp.profiles))
    for pname, prof in exp.profiles.items():
        _check_experiment_profile(exp, pname, prof, doc, path, found)


def _check_metric_references(exp: Experiment, doc: LocatedYaml, found: Found) -> None:
    """Each metric's numerator, denominator and alias name a metric (a count for a proportion's parts)."""
    for name, m in exp.metrics.items():
        for attr in ("numerator", "denominator", "same_as"):
            ref = getattr(m, attr)
            if ref is None:
                continue
            with found.apart():
                if ref not in exp.metrics:
                    raise doc.error(f"metric {name!r} refers to unknown metric {ref!r}", ("metrics", name, attr),
                                    hint=metric_hint(ref, exp))
                if attr != "same_as" and exp.metrics[ref].kind != "count":
                    raise doc.error(f"{attr} {ref!r} of proportion {name!r} must be a count", ("metrics", name, attr))
        with found.apart():
            if m.units is not None and exp.unit is None:
                raise doc.error(f"metric {name!r} counts units but the experiment declares no unit",
                                ("metrics", name, "units"))


def _check_experiment_profile(exp: Experiment, pname: str, prof: Profile, doc: LocatedYaml, path: Path,
                              found: Found) -> None:
    """One profile: what it collects, its own fields (profile_checks), its config templates."""
    for mname in prof.collect:
        with found.apart():
            if mname not in exp.metrics:
                raise doc.error(f"profile {pname!r} collects {mname!r}, which is not a declared metric",
                                ("profiles", pname, "collect", mname),
                                hint=metric_hint(mname, exp))
            if exp.metrics[mname].derived:
                raise doc.error(f"metric {mname!r} is derived; it cannot also be collected",
                                ("profiles", pname, "collect", mname))
    check_profile(exp, pname, prof, doc, found)
    allowed = set(exp.variables) | set(prof.context) | BUILTIN_TEMPLATE_NAMES
    templates: list[tuple[tuple[Any, ...], str]] = []
    with found.apart():
        try:
            templates = _templates(prof, path.parent)
        except _TemplateFileError as exc:
            raise doc.error(str(exc), ("profiles", pname, "config", "template_file")) from None
    template_file = path.parent / prof.config.template_file if prof.config and prof.config.template_file else None
    for loc, text in templates:
        source = template_file if loc == ("config", "template_file") else None
        if loc[0] == "options":  # a kernel call's arguments are filled with the run's variables alone
            hint = f"a kernel option is filled with the experiment's variables ({', '.join(exp.variables)})"
            _check_template(text, set(exp.variables), doc, ("profiles", pname, *loc), found, hint=hint)
            continue
        if loc[0] == "env":  # filled before the target is open: no built-in, no context the target adds
            names = [*exp.variables, *prof.context]
            hint = f"an env value is filled with the experiment's variables and the profile's context " \
                   f"({', '.join(names)})"
            _check_template(text, set(names), doc, ("profiles", pname, *loc), found, hint=hint)
            continue
        _check_template(text, allowed, doc, ("profiles", pname, *loc), found, source)


def _check_outcomes(exp: Experiment, doc: LocatedYaml, found: Found) -> None:
    """Outcome names used by `unit.completed` and by metrics' unit filters must be declared outcomes: a typo
    (`stael` for `stale`) would otherwise count nothing, silently, and turn the verdict around."""
    unit = exp.unit
    if unit is None or not unit.outcomes:
        return  # no declared list to check against: any outcome a units file holds is counted as written
    declared = ", ".join(unit.outcomes)
    for i, outcome in enumerate(unit.completed):
        with found.apart():
            if outcome not in unit.outcomes:
                raise doc.error(f"unit.completed names {outcome!r}, which is not among unit.outcomes ({declared})",
                                ("unit", "completed", i), hint=_close(outcome, unit.outcomes))
    for name, m in exp.metrics.items():
        if not m.units or unit.outcome_field not in m.units:
            continue
        wanted = m.units[unit.outcome_field]
        for outcome in wanted if isinstance(wanted, list) else [wanted]:
            with found.apart():
                if outcome not in unit.outcomes:
                    raise doc.error(f"metric {name!r} counts units with {unit.outcome_field}={outcome!r}, which is "
                                    f"not among unit.outcomes ({declared})",
                                    ("metrics", name, "units", unit.outcome_field), hint=_close(outcome, unit.outcomes))


def metric_hint(name: str, exp: Experiment) -> str | None:
    return did_you_mean(name, exp.metrics, f"metrics: {', '.join(exp.metrics)}")


def _close(word: str, choices: list[str]) -> str | None:
    guess = did_you_mean(word, choices)
    return f"{guess} (or add {word!r} to unit.outcomes)" if guess else \
        f"add {word!r} to unit.outcomes if units can end that way"


class _TemplateFileError(Exception):
    """A profile's template_file cannot be read; reported at that field's line."""


def read_template_file(path: Path) -> tuple[str | None, str | None]:
    """(a template_file's text, None), or (None, why it cannot be read): a file saved in another encoding too."""
    try:
        return path.read_text(encoding="utf-8"), None
    except OSError as exc:
        return None, exc.strerror or str(exc)
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"


def _templates(prof: Any, exp_dir: Path) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    if prof.config is not None:
        out.append((("config", "path"), prof.config.path))
        if prof.config.template is not None:
            out.append((("config", "template"), prof.config.template))
        if prof.config.template_file is not None:
            tf = exp_dir / prof.config.template_file
            text, why = read_template_file(tf)
            if text is None:
                raise _TemplateFileError(f"template_file {str(tf)!r} cannot be read: {why}")
            out.append((("config", "template_file"), text))
        if prof.config.check:
            out.append((("config", "check"), prof.config.check))
    for i, cmd in enumerate(prof.restart):
        out.append((("restart", i), cmd))
    if prof.health is not None:
        for i, url in enumerate(prof.health.urls):
            out.append((("health", "urls", i), url))
    if prof.workload is not None:
        out.append((("workload", "command"), prof.workload.command))
    if prof.units is not None:
        out.append((("units", "path"), prof.units.path))
    for name, ex in prof.collect.items():
        if ex.command:
            out.append((("collect", name, "command"), ex.command))
    out.extend(verify_templates(prof))
    for name, cmd in prof.fingerprint.items():
        out.append((("fingerprint", name), cmd))
    for name, p in prof.artifacts.items():
        out.append((("artifacts", name), p))
    for name, value in prof.env.items():  # rendered as a run starts, with the variables and the context alone
        out.append((("env", name), value))
    for name, value in prof.options.items():  # a kernel call's keyword arguments are templates, filled per run
        if isinstance(value, str):
            out.append((("options", name), value))
    return out


def _check_template(text: str, allowed: set[str], doc: LocatedYaml, loc: tuple[Any, ...], found: Found,
                    source: Path | None = None, hint: str | None = None) -> None:
    """The template's first syntax error, at the line its broken tag starts, and each unknown name it uses apart
    (those of the rest of a template with a syntax error too), at the line using it: in `source`, the file the text
    was read from, else in the experiment file."""
    scanned = template_scan.scan(text)
    file, field = (str(source) if source is not None else doc.file), field_name(loc, doc.data)
    error = ConfigError if source is None else SharedFileError  # a template_file: each profile using it finds it
    if scanned.problem is not None:
        line = _line_in(doc, loc, source, (scanned.error_line or 1) - 1)
        if source is None:  # a folded value: the line its broken tag opens on
            line = _folded_line(text, doc, loc, scanned.error_at) or line
        with found.apart():
            raise error(scanned.problem, file=file, field=field, line=line or 0)
    for name in sorted(set(scanned.names) - allowed):
        line = _line_in(doc, loc, source, scanned.names[name] - 1)  # where the template uses it
        if source is None:  # a folded value: the line the first tag using it opens on
            line = _folded_line(text, doc, loc, template_scan.first_tag_using(text, name)) or line
        with found.apart():
            close = did_you_mean(name, sorted(allowed))
            raise error(f"template uses unknown name {name}", file=file, line=line, field=field,
                        hint=(f"{close} " if close else "") + (
                            hint or "use a declared variable, a profile context key, or a built-in "
                                    f"({', '.join(sorted(BUILTIN_TEMPLATE_NAMES))})"))


def _folded_line(text: str, doc: LocatedYaml, loc: tuple[Any, ...], at: int | None) -> int | None:
    """The source line of a value folded from several lines (which reads as one) holding the tag opening at `at`:
    found by counting that tag's opener, which folding leaves as it was. None where `loc` is not folded."""
    if at is None:
        return None
    opener = text[at:at + 2]
    return doc.folded_nth_line(loc, opener, text.count(opener, 0, at))


def _line_in(doc: LocatedYaml, loc: tuple[Any, ...], source: Path | None, at: int | None) -> int | None:
    """The line of the template's line `at` (0-based; None: the template's own): in its file, or in the experiment
    file, where a block scalar's text starts on the line after its key and any other value on its key's line (a
    quoted value's `\\n` breaks no line of the file)."""
    if source is not None:
        return 1 + (at or 0)
    return doc.line_of(loc) if at is None else doc.text_line(loc, at)
