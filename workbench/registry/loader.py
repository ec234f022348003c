"""Loading a workbench folder: parse each file against its schema, then check files against each other.

Every problem becomes a ConfigError naming the file, the line and the field; nothing runs after one
(`wb hypothesis validate` lists them all: workbench/registry/validate.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from workbench.errors import BadInput, ConfigError
from workbench.registry.common import did_you_mean, hint_of, put_back_words, shown, unshared
from workbench.registry.experiment import BUILTIN_TEMPLATE_NAMES, Experiment, Profile
from workbench.registry.problems import Found
from workbench.registry.profile_checks import check_profile, verify_templates
from workbench.registry.hypothesis import Hypothesis, HypothesesFile, Prediction
from workbench.registry.yamlio import LocatedYaml, load_located

M = TypeVar("M", bound=BaseModel)

HYPOTHESES_FILE = "hypotheses.yaml"
EXPERIMENTS_DIR = "experiments"


def _clean(msg: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def _boolean_for_text(errors: list[Any], doc: LocatedYaml) -> tuple[str, tuple[Any, ...]] | None:
    """A text field, or one taking a few words, given a bare yes/no/on/off/true/false, which YAML 1.1 reads as
    a boolean: pydantic's message ("Input should be a valid string", "Input should be 'abba', 'random' or
    'alternate'") hides both the cause and the cure."""
    for e in errors:
        if e["type"] not in ("string_type", "literal_error") or not isinstance(e.get("input"), bool):
            continue
        loc = tuple(e["loc"])
        while loc and loc not in doc.booleans:  # a union's member name ends pydantic's location
            loc = loc[:-1]
        word = doc.booleans.get(loc, str(e["input"]).lower())
        if loc and loc[-1] == "[key]":  # a mapping key: quoting it is the cure, wherever it stands
            return (f'the key {word} was read as a boolean ({str(e["input"]).lower()}), not as text; quote it: '
                    f'"{word}": (YAML reads a bare yes/no/on/off/true/false as a boolean)', (*loc[:-2], word))
        key = f"{loc[-1]}: " if loc and isinstance(loc[-1], str) else ""
        read = f'{key}{word} was read as a boolean ({str(e["input"]).lower()}), not as '
        why = "(YAML reads a bare yes/no/on/off/true/false as a boolean)"
        expected = (e.get("ctx") or {}).get("expected")
        if expected is None or f"'{word}'" in expected:  # quoting it is the whole cure
            noun = "text" if expected is None else "a word"
            return f'{read}{noun}; quote it: {key}"{word}" {why}', loc or tuple(e["loc"])
        return f"{read}a word {why}; {key.rstrip(': ') or 'it'} takes one of {expected}", loc or tuple(e["loc"])
    return None


def _message(error: Any) -> str:
    """pydantic's message in wb's words where they differ: a wrong word names the words and what was given."""
    if error["type"] == "string_type" and isinstance(error.get("input"), (int, float)):
        return f"must be text, got {shown(error['input'])}: quote it (\"{error['input']}\") if it is a name"
    if error["type"] == "literal_error" and "expected" in (error.get("ctx") or {}):
        given = error["input"]
        return (f"must be one of {error['ctx']['expected']}, "
                f"got {repr(given) if isinstance(given, str) else shown(given)}")
    if error["type"] in _BOUNDS or error["type"] == "finite_number":
        given = error.get("input")
        if error["type"] == "finite_number" or (isinstance(given, float) and given != given):  # nan is in no bound
            return f"must be a finite number, got {shown(given)}"
        word, key = _BOUNDS[error["type"]]
        return f"must be {word} {error['ctx'][key]:g}, got {shown(given)}"
    if error["type"] in ("dict_type", "model_type"):
        example = _MAPPING_EXAMPLES.get((error.get("ctx") or {}).get("class_name"), "name: value")
        return f"must be a mapping ({example}), got {_kind(error.get('input'))}"
    if error["type"] == "list_type":
        return f"must be a list (- item lines, or [a, b]), got {_kind(error.get('input'))}"
    return _clean(error["msg"])


def _word_meant(error: Any) -> str | None:
    """The hint for a value not among the words a field takes (a mistyped `kind: cuont`, or a variable's value
    checked by a validator): the word likely meant, as a mistyped name is told."""
    ctx = error.get("ctx") or {}
    if error["type"] == "literal_error" and isinstance(error.get("input"), str):
        return did_you_mean(error["input"], re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx.get("expected", ""))))
    return hint_of(ctx["error"]) if isinstance(ctx.get("error"), BaseException) else None


# The shape of an entry, shown where a value of another shape was given: pydantic named the class instead.
_MAPPING_EXAMPLES = {"Prediction": "{metric: ..., arm: ..., at_most: ...}", "Guard": "{metric: ..., equals: ...}"}


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if value is None:
        return "nothing (an empty value)"
    return "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else type(value).__name__


_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("above", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("below", "lt")}


def parse_model(model: type[M], doc: LocatedYaml) -> M:
    """Validate `doc` against `model`; the first error becomes a ConfigError at its line."""
    parsed, errors = validated(model, doc)
    if parsed is not None:
        return parsed
    # An unknown field first: it is usually the typo behind a "missing" one (claims: for claim:). The problems
    # announced after it are those validate lists (`_told`).
    told = sorted(_told(errors), key=lambda e: e["type"] != "extra_forbidden")
    more = ""
    if len(told) == 2:
        more = " (1 more problem after this one: wb hypothesis validate lists them all)"
    elif len(told) > 2:
        more = f" ({len(told) - 1} more problems after this one: wb hypothesis validate lists them all)"
    raise _problem(model, doc, told[0], errors, more) from None


def validated(model: type[M], doc: LocatedYaml) -> tuple[M | None, list[Any]]:
    """`doc` validated as `model`, or None and pydantic's errors."""
    if doc.data is None:
        raise doc.error("the file is empty")
    doc.data = unshared(doc.data)  # an anchor's aliases are one object: the words go back place by place
    put_back_words(model, doc.data, doc.booleans)
    try:
        return model.model_validate(doc.data), []
    except ValidationError as exc:
        return None, exc.errors()


def _problem(model: type[BaseModel], doc: LocatedYaml, error: Any, errors: list[Any], more: str = "") -> ConfigError:
    """One of pydantic's `errors` in wb's words, at its line."""
    loc = tuple(error["loc"])
    if loc[-1:] == ("[key]",):  # pydantic's mark of a mapping key's own error: the key is the place
        loc = loc[:-1]
    msg, hint = _message(error), None
    if error["type"] == "extra_forbidden":
        msg = f"unknown field {loc[-1]!r}"
        # A missing field is the likeliest meant; else one the entry could have and does not give.
        hint = did_you_mean(str(loc[-1]), _missing_beside(error, errors)) or \
            did_you_mean(str(loc[-1]), _unset_fields(model, doc, loc))
    elif error["type"] == "missing":
        msg, loc = f"missing required field {loc[-1]!r}", loc[:-1]
    elif isinstance(error.get("input"), bool):
        msg, loc = _boolean_for_text([error], doc) or (msg, loc)
    else:
        hint = _word_meant(error)
    return doc.error(msg + more, loc, hint=hint)


def _missing_beside(error: Any, errors: list[Any]) -> list[str]:
    """The required fields missing from the mapping where `error` stands."""
    return [e["loc"][-1] for e in errors if e["type"] == "missing" and tuple(e["loc"][:-1]) == tuple(error["loc"][:-1])]


def all_problems(model: type[BaseModel], doc: LocatedYaml, errors: list[Any]) -> list[ConfigError]:
    """Each of pydantic's `errors` as a problem of its own, but a missing field an unknown one beside it was
    likely meant to be (`claims:` for `claim:`): told once, as the unknown field's hint."""
    return [_problem(model, doc, e, errors) for e in _told(errors)]


def _told(errors: list[Any]) -> list[Any]:
    """pydantic's `errors` less each missing field an unknown one beside it was likely meant to be (its hint)."""
    hinted = {(tuple(e["loc"][:-1]), name) for e in errors if e["type"] == "extra_forbidden"
              for name in _missing_beside(e, errors) if did_you_mean(str(e["loc"][-1]), [name])}
    return [e for e in errors if not (e["type"] == "missing" and (tuple(e["loc"][:-1]), e["loc"][-1]) in hinted)]


def _unset_fields(model: type[BaseModel], doc: LocatedYaml, loc: tuple[Any, ...]) -> list[str]:
    """The fields of the model an unknown field at `loc` stands in, less those the entry gives: found by walking
    `model`'s annotations along `loc` (a list's index, a mapping's key, a model's field)."""
    tp: Any = model
    for key in loc[:-1]:
        tp = _step(tp, key)
        if tp is None:
            return []
    entry = doc.data
    for key in loc[:-1]:
        entry = entry[key] if isinstance(entry, (dict, list)) else None
    given = set(entry) if isinstance(entry, dict) else set()
    models = [m for m in _union_members(tp) if isinstance(m, type) and issubclass(m, BaseModel)]
    return [f for m in models for f in m.model_fields if f not in given]


def _union_members(tp: Any) -> tuple[Any, ...]:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, UnionType):
        return tuple(m for member in get_args(tp) for m in _union_members(member))
    return (tp,)


def _step(tp: Any, key: Any) -> Any:
    """The annotation one step inside `tp` at `key`, or None where `key` leads nowhere known."""
    for member in _union_members(tp):
        if isinstance(member, type) and issubclass(member, BaseModel) and key in member.model_fields:
            return member.model_fields[key].annotation
        if get_origin(member) is list and isinstance(key, int):
            return get_args(member)[0]
        if get_origin(member) is dict:
            return get_args(member)[1]
    return None


@dataclass
class Registry:
    """A loaded, cross-checked workbench folder."""

    root: Path
    hypotheses: list[Hypothesis]
    experiments: dict[str, Experiment]
    hypotheses_doc: LocatedYaml | None = None
    experiment_docs: dict[str, LocatedYaml] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from workbench.secrets import register_registry

        # A secret variable's values are masked wherever wb shows or stores them from here on: a check's error,
        # `hypothesis show`, a report page, a bundle. Before the checks, whose errors quote a value.
        register_registry(self)

    @property
    def hypotheses_file(self) -> Path:
        return self.root / HYPOTHESES_FILE

    def hypothesis(self, hid: str) -> Hypothesis:
        for h in self.hypotheses:
            if h.id == hid:
                return h
        known = ", ".join(h.id for h in self.hypotheses) or "none"
        raise BadInput(f"no hypothesis {hid!r} in {self.hypotheses_file}",
                       hint=did_you_mean(hid, (h.id for h in self.hypotheses), f"known ids: {known}"),
                       where=str(self.hypotheses_file))

    def experiment_for(self, h: Hypothesis) -> Experiment:
        return self.experiments[h.experiment]

    def experiment_path(self, eid: str) -> Path:
        return self.root / EXPERIMENTS_DIR / f"{eid}.yaml"

    def children(self, hid: str) -> list[Hypothesis]:
        return [h for h in self.hypotheses if h.parent == hid]

    def arm_assignment(self, h: Hypothesis, arm: str, overrides: dict[str, str] | None = None) -> dict[str, str]:
        """The full variable assignment of `arm`: experiment defaults, then hold, then overrides, then the arm."""
        exp = self.experiment_for(h)
        values = dict(exp.defaults())
        values.update(h.hold)
        for name, value in (overrides or {}).items():
            if name not in exp.variables:
                raise BadInput(f"--set {name}: experiment {exp.id!r} has no variable {name!r}",
                               hint=did_you_mean(name, exp.variables, f"variables: {', '.join(exp.variables)}"))
            if name == h.isolates:
                raise BadInput(f"--set {name}: {name!r} is the variable {h.id!r} isolates; it differs by arm",
                               hint="--set overrides held variables for every arm")
            try:
                values[name] = exp.variables[name].check(value)
            except ValueError as exc:
                raise BadInput(f"--set {name}: {exc}", hint=hint_of(exc)) from None
        values.update(h.arms.get(arm, {}))
        return values


def find_root(start: str | Path | None = None, root_from: str = "--root") -> Path:
    """The nearest folder upward holding hypotheses.yaml (`--root` / $WB_ROOT reach `load_registry` as `root`).
    `root_from` is how the caller names the folder (`root=` in the Python API), for the hint."""
    from workbench.settings import giving_root

    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / HYPOTHESES_FILE).is_file():
            return d
    raise BadInput(f"no {HYPOTHESES_FILE} in {here} or any folder above it",
                   hint=f"run wb from a workbench folder, or name one with {giving_root(root_from)}")


def load_experiment(path: str | Path) -> tuple[Experiment, LocatedYaml]:
    doc = load_located(path)
    exp = parse_model(Experiment, doc)
    check_experiment(exp, doc, Path(path))
    return exp, doc


def load_hypotheses(path: str | Path, *, text: str | None = None) -> tuple[list[Hypothesis], LocatedYaml]:
    """The hypotheses of `path` (or of `text`, reported as `path`)."""
    doc = as_format_one(load_located(path, text=text))
    parsed = parse_model(HypothesesFile, doc)
    return parsed.hypotheses, doc


def as_format_one(doc: LocatedYaml) -> LocatedYaml:
    if isinstance(doc.data, list):  # a bare list is accepted as format 1
        doc.data = {"hypotheses": doc.data}
        doc.lines = {(("hypotheses",) + k): v for k, v in doc.lines.items()}
        doc.booleans = {(("hypotheses",) + k): v for k, v in doc.booleans.items()}
    return doc


def check_root(root: Path, root_from: str = "--root") -> None:
    """BadInput unless the workbench folder `root_from` (`--root`, `$WB_ROOT`, `root=`) names holds hypotheses.yaml."""
    from workbench.settings import giving_root

    if not (root / HYPOTHESES_FILE).exists():
        raise BadInput(f"no {HYPOTHESES_FILE} in {root} (the workbench folder {root_from} names)",
                       where=root_from, hint=f"name a folder that holds hypotheses.yaml with {giving_root(root_from)},"
                                             " or run wb from inside one")


def load_registry(root: str | Path | None = None, root_from: str = "--root") -> Registry:
    """The workbench in `root` (else found upward); `root_from` says where `root` came from (`--root`, `$WB_ROOT`,
    `root=` in the Python API), as an error about it names it."""
    root_path = Path(root) if root is not None else find_root(root_from=root_from)
    if root is not None:
        check_root(root_path, root_from)
    experiments: dict[str, Experiment] = {}
    docs: dict[str, LocatedYaml] = {}
    exp_dir = root_path / EXPERIMENTS_DIR
    for path in sorted(exp_dir.glob("*.yaml")) if exp_dir.is_dir() else []:
        exp, doc = load_experiment(path)
        experiments[exp.id] = exp
        docs[exp.id] = doc
    hyps, hdoc = load_hypotheses(root_path / HYPOTHESES_FILE)
    reg = Registry(root_path, hyps, experiments, hdoc, docs)
    check_hypotheses(reg)
    return reg


# ----------------------------------------------------------------------------- cross-file checks

def _check_aliases(exp: Experiment, doc: LocatedYaml) -> None:
    """Every same_as chain ends at a metric that carries values: a loop of aliases names none."""
    for name in exp.metrics:
        chain = [name]
        while (ref := exp.metrics[chain[-1]].same_as) is not None and ref in exp.metrics:
            chain.append(ref)
            if ref == name:
                raise doc.error(f"same_as loop: {' -> '.join(chain)} (each another name for the next)",
                                ("metrics", name, "same_as"))
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
    with found.apart():
        _check_aliases(exp, doc)
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
                                    hint=_metric_hint(ref, exp))
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
                                hint=_metric_hint(mname, exp))
            if exp.metrics[mname].derived:
                raise doc.error(f"metric {mname!r} is derived; it cannot also be collected",
                                ("profiles", pname, "collect", mname))
    with found.apart():
        check_profile(exp, pname, prof, doc)
    allowed = set(exp.variables) | set(prof.context) | BUILTIN_TEMPLATE_NAMES
    templates: list[tuple[tuple[Any, ...], str]] = []
    with found.apart():
        try:
            templates = _templates(prof, path.parent)
        except _TemplateFileError as exc:
            raise doc.error(str(exc), ("profiles", pname, "config", "template_file")) from None
    for loc, text in templates:
        with found.apart():
            _check_template(text, allowed, doc, ("profiles", pname, *loc))


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


def _close(word: str, choices: list[str]) -> str | None:
    guess = did_you_mean(word, choices)
    return f"{guess} (or add {word!r} to unit.outcomes)" if guess else \
        f"add {word!r} to unit.outcomes if units can end that way"


class _TemplateFileError(Exception):
    """A profile's template_file cannot be read; reported at that field's line."""


def _templates(prof: Any, exp_dir: Path) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    if prof.config is not None:
        out.append((("config", "path"), prof.config.path))
        if prof.config.template is not None:
            out.append((("config", "template"), prof.config.template))
        if prof.config.template_file is not None:
            tf = exp_dir / prof.config.template_file
            try:
                out.append((("config", "template_file"), tf.read_text(encoding="utf-8")))
            except OSError as exc:
                raise _TemplateFileError(f"template_file {str(tf)!r} cannot be read: {exc.strerror}") from None
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
    return out


@functools.lru_cache(maxsize=1024)
def _template_names(text: str) -> tuple[frozenset[str], str | None, int | None]:
    """The names a template uses, or its syntax error (message, line): parsed and compiled once per text in a
    process (a registry is loaded again and again by a long-lived caller)."""
    import jinja2
    from jinja2 import meta

    env = jinja2.Environment()
    env.filters.update(q=str, raw=str)  # the renderer's own filters (runner.render)
    try:
        ast = env.parse(text)
        env.compile(ast)  # an unknown filter or test is found when compiling, not when parsing
    except jinja2.TemplateSyntaxError as exc:
        return frozenset(), exc.message, exc.lineno
    return frozenset(meta.find_undeclared_variables(ast)), None, None


def _check_template(text: str, allowed: set[str], doc: LocatedYaml, loc: tuple[Any, ...]) -> None:
    names, syntax_error, error_line = _template_names(text)
    if syntax_error is not None:
        base = doc.line_of(loc) or 0
        line = base + (error_line or 1) if "\n" in text else base
        raise ConfigError(f"template syntax error: {syntax_error}", file=doc.file, line=line,
                          field=".".join(map(str, loc))) from None
    unknown = sorted(names - allowed)
    if unknown:
        line = doc.line_of(loc)
        if "\n" in text and line is not None:
            # A block scalar starts on the line after its key: point at the line using the name.
            for i, tline in enumerate(text.splitlines()):
                if any(name in tline for name in unknown):
                    line += 1 + i
                    break
        names = "names" if len(unknown) > 1 else "name"
        raise ConfigError(f"template uses unknown {names} {', '.join(unknown)}", file=doc.file, line=line,
                          field=".".join(map(str, loc)),
                        hint="use a declared variable, a profile context key, or a built-in "
                             f"({', '.join(sorted(BUILTIN_TEMPLATE_NAMES))})")


def check_hypotheses(reg: Registry) -> None:
    check_entries(reg, list(enumerate(reg.hypotheses)), Found())


def check_entries(reg: Registry, placed: list[tuple[int, Hypothesis]], found: Found,
                   known: list[str] | None = None, unchecked: frozenset[str] = frozenset()) -> None:
    """The hypotheses `placed` (each with its index in the file) against each other and their experiments.
    `known`: every id the file gives (an entry that failed its schema has one too); `unchecked`: experiments
    whose own file failed, which no hypothesis is checked against."""
    doc = reg.hypotheses_doc
    assert doc is not None
    known = list(dict.fromkeys(known if known is not None else [h.id for _, h in placed]))
    ids: dict[str, int] = {}
    for i, h in placed:
        with found.apart():
            if h.id in ids:
                first = doc.line_of(("hypotheses", ids[h.id], "id"))
                raise doc.error(f"duplicate hypothesis id {h.id!r} (also at line {first})", ("hypotheses", i, "id"),
                                hint="give each hypothesis its own id (a child names its parent by id)")
        ids.setdefault(h.id, i)
    for i, h in placed:
        at = ("hypotheses", i)
        with found.apart():
            # After the ids are known unique: an entry copied from its parent, id unchanged, is a duplicate id.
            if h.parent == h.id:
                raise doc.error("a hypothesis cannot be its own parent", (*at, "parent"))
            if h.parent is not None and h.parent not in known:
                raise doc.error(f"parent {h.parent!r} of {h.id!r} is not a hypothesis in this file", (*at, "parent"),
                                hint=_id_hint(h.parent, known))
            if h.experiment not in unchecked:
                _check_against_experiment(reg, doc, i, h, known, found)
    with found.apart():
        _check_lineage(doc, placed)


def _check_lineage(doc: LocatedYaml, placed: list[tuple[int, Hypothesis]]) -> None:
    """Lineage must be a tree: walk each chain of parents, bounded by the number of hypotheses."""
    parent_of = {h.id: h.parent for _, h in placed}
    index = {h.id: i for i, h in placed}
    for _, h in placed:
        path = [h.id]
        cur = h.parent
        while cur is not None:
            if cur in path:  # the loop, named from the hypothesis where it closes
                loop = path[path.index(cur):] + [cur]
                raise doc.error(f"lineage cycle: {' -> '.join(loop)} (each the parent of the one before)",
                                ("hypotheses", index[cur], "parent"))
            path.append(cur)
            cur = parent_of.get(cur)


def _check_against_experiment(reg: Registry, doc: LocatedYaml, i: int, h: Hypothesis, known: list[str],
                              found: Found) -> None:
    """The entry against its experiment: its profile, its variables, its predictions, its guards and what tests
    its assumptions, each part (each held variable, arm, prediction, guard) apart: validate tells each problem."""
    at = ("hypotheses", i)
    exp = reg.experiments.get(h.experiment)
    if exp is None:
        raise doc.error(f"experiment {h.experiment!r} not found (no {EXPERIMENTS_DIR}/{h.experiment}.yaml)",
                        (*at, "experiment"), hint=did_you_mean(h.experiment, reg.experiments,
                                                               f"experiments: {', '.join(sorted(reg.experiments))}"))
    with found.apart():
        if h.profile is not None and h.profile not in exp.profiles:
            raise doc.error(f"profile {h.profile!r} is not a profile of experiment {exp.id!r}", (*at, "profile"),
                            hint=did_you_mean(h.profile, exp.profiles, f"profiles: {', '.join(exp.profiles)}"))
    _check_variables(exp, doc, at, h, found)
    arm_names = set(h.arms) or {"probe"}
    _check_predictions(exp, doc, at, h, arm_names, found)
    _check_guards(exp, doc, at, h, arm_names, found)
    for k, a in enumerate(h.assumptions):
        with found.apart():
            if a.tested_by is not None and a.tested_by not in known:
                raise doc.error(f"assumption tested_by {a.tested_by!r} is not a hypothesis",
                                (*at, "assumptions", k, "tested_by"), hint=_id_hint(a.tested_by, known))


def _check_variables(exp: Experiment, doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis, found: Found) -> None:
    """What the entry holds and what its arms set: declared variables, allowed values, arms that differ in the
    isolated variable alone. Each held variable and each arm's variable is checked apart; an isolated variable the
    experiment lacks is told once, not again in every arm measured against it."""

    def check_value(name: str, value: str, loc: tuple[Any, ...]) -> None:
        spec = exp.variables.get(name)
        if spec is None:
            raise doc.error(f"unknown variable {name!r} (experiment {exp.id!r} declares "
                            f"{', '.join(exp.variables)})", loc, hint=did_you_mean(name, exp.variables))
        try:
            spec.check(value)
        except ValueError as exc:
            raise doc.error(f"variable {name!r}: {exc}", loc, hint=hint_of(exc)) from None

    isolates = h.isolates
    with found.apart():
        if isolates is not None and isolates not in exp.variables:
            isolates = None
            raise doc.error(f"isolated variable {h.isolates!r} is not a variable of experiment {exp.id!r}",
                            (*at, "isolates"),
                            hint=did_you_mean(h.isolates, exp.variables, f"variables: {', '.join(exp.variables)}"))
    for name, value in h.hold.items():
        with found.apart():
            check_value(name, value, (*at, "hold", name))
            if name == h.isolates:
                raise doc.error(f"hold fixes {name!r}, the variable this hypothesis isolates", (*at, "hold", name),
                                hint=f"remove {name} from hold: the arms set it, one value each")
    seen_values: dict[str, str] = {}
    for arm, assignment in h.arms.items():
        for name, value in assignment.items():
            with found.apart():
                _check_arm_value(doc, at, h, isolates, arm, name, value, check_value)
        if isolates is not None:
            with found.apart():
                if isolates not in assignment:
                    raise doc.error(f"arm {arm!r} does not set the isolated variable {isolates!r}", (*at, "arms", arm))
                value = assignment[isolates]
                if value in seen_values:
                    raise doc.error(f"arms {seen_values[value]!r} and {arm!r} both set {isolates}={value}: "
                                    "the arms do not differ", (*at, "arms", arm, isolates))
                seen_values[value] = arm


def _check_arm_value(doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis, isolates: str | None, arm: str,
                     name: str, value: str, check_value: Any) -> None:
    """One variable an arm sets: a declared one with an allowed value, not held, and the isolated one."""
    loc = (*at, "arms", arm, name)
    check_value(name, value, loc)
    if name in h.hold:
        raise doc.error(f"arm {arm!r} sets {name!r}, which hold also fixes", loc,
                        hint="a variable is either held or varied, not both")
    if isolates is not None and name != isolates:
        raise doc.error(f"arm {arm!r} sets {name!r} besides the isolated variable {isolates!r}: "
                        "arms may differ only in the isolated variable", loc,
                        hint=f"move {name} to hold, or isolate it in a hypothesis of its own")


def _check_guards(exp: Experiment, doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis, arm_names: set[str],
                  found: Found) -> None:
    """Each guard, apart: a metric the experiment produces, a bound it can break, an arm the hypothesis has."""
    for j, g in enumerate(h.requires):
        loc = (*at, "requires", j)
        with found.apart():
            if g.metric not in exp.metrics:
                raise doc.error(f"guard on metric {g.metric!r}, which experiment {exp.id!r} does not produce",
                                (*loc, "metric"), hint=_metric_hint(g.metric, exp))
            _check_scale(exp.metrics[g.metric].kind, f"metric {g.metric!r}", g, False, doc, loc, guard=True)
        with found.apart():
            if g.arm is not None and g.arm not in arm_names:
                raise doc.error(f"guard names arm {g.arm!r}; arms are {', '.join(sorted(arm_names))}", (*loc, "arm"),
                                hint=did_you_mean(g.arm, arm_names))


def _metric_hint(name: str, exp: Experiment) -> str | None:
    return did_you_mean(name, exp.metrics, f"metrics: {', '.join(exp.metrics)}")


def _id_hint(hid: str, ids: list[str]) -> str | None:
    """The id meant, or the ids there are when they are few enough to read."""
    return did_you_mean(hid, ids) or (f"hypotheses: {', '.join(ids)}" if len(ids) <= 12 else None)


def _check_predictions(exp: Experiment, doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis,
                       arm_names: set[str], found: Found) -> None:
    """Each prediction against the experiment, apart: a metric it produces on a scale it can reach (or, for a
    reachability hypothesis, a probed target), and arms the hypothesis has."""
    for j, p in enumerate(h.predicts):
        loc = (*at, "predicts", j)
        with found.apart():
            _check_prediction_metric(exp, doc, loc, h, p)
        for a in ([p.arm] if p.arm else []) + list(p.difference or ()):
            with found.apart():
                if a not in arm_names:
                    raise doc.error(f"prediction names arm {a!r}; arms are {', '.join(sorted(arm_names))}",
                                    (*loc, "arm" if p.arm else "difference"), hint=did_you_mean(a, arm_names))


def _check_prediction_metric(exp: Experiment, doc: LocatedYaml, loc: tuple[Any, ...], h: Hypothesis,
                             p: Prediction) -> None:
    """What one prediction judges: a metric of the experiment on a scale it can reach, or a probed target."""
    if h.kind == "reachability":
        if p.target is None:
            raise doc.error("a reachability prediction names the probed target (target:)", loc)
        if h.probe and p.target not in h.probe.targets:
            raise doc.error(f"target {p.target!r} is not among probe.targets", (*loc, "target"),
                            hint=did_you_mean(p.target, h.probe.targets))
        _check_scale("count", f"calls to {p.target}", p, p.difference is not None, doc, loc)
    elif p.target is not None:
        # Without metric: (it defaults to a probe's "calls"), removing target: would leave a prediction on no
        # metric of the experiment's: metric: was likely meant.
        hint = "remove target: (the metric is what is judged)" if "metric" in p.model_fields_set else \
            f"replace target: with metric: naming one of the experiment's metrics ({', '.join(exp.metrics)})"
        raise doc.error(f"target: names a probed code object, for a reachability hypothesis; {h.id!r} is of "
                        f"kind {h.kind}", (*loc, "target"), hint=hint)
    elif "metric" not in p.model_fields_set:
        # metric: defaults to a probe's "calls", which no experiment produces: it was left out, not chosen.
        raise doc.error("a prediction names the metric it judges (metric:)", loc,
                        hint=f"metrics: {', '.join(exp.metrics)}")
    elif p.metric not in exp.metrics:
        raise doc.error(f"prediction on metric {p.metric!r}, which experiment {exp.id!r} does not produce",
                        (*loc, "metric"), hint=_metric_hint(p.metric, exp))
    else:
        kind = exp.metrics[p.metric].kind
        _check_scale(kind, f"metric {p.metric!r}", p, p.difference is not None, doc, loc)


def _check_scale(kind: str, what_on: str, region: Any, difference: bool, doc: LocatedYaml, loc: tuple[Any, ...],
                 guard: bool = False) -> None:
    """A bound a metric can never reach is a mistake (`at_least: 30` on a rate meant 30%): a proportion lies in
    [0, 1] (a difference of two in [-1, 1]) and a count is never below 0 (a difference of counts may be). A region
    holding every value the metric can take (`at_least: 0` on a count) could never be falsified, nor a guard
    violated. A continuous metric, or a difference of counts, has no natural range: nothing is checked."""
    if kind == "proportion":
        lo, hi, what = (-1.0, 1.0, "a difference of proportions") if difference else (0.0, 1.0, "a proportion")
    elif kind == "count" and not difference:
        lo, hi, what = 0.0, float("inf"), "a count"
    else:
        return
    for key in ("at_least", "at_most", "equals", "between"):
        value = getattr(region, key)
        for bound in value if isinstance(value, tuple) else [value]:
            if bound is not None and not lo <= bound <= hi:
                scale = f"[{lo:g}, {hi:g}]" if hi != float("inf") else f">= {lo:g}"
                raise doc.error(f"{key} {bound:g} on {what_on}: {what} lies in {scale}", (*loc, key),
                                hint="write a rate as a fraction (0.3 for 30%)" if kind == "proportion" else None)
    low, high = region.bounds()
    if low <= lo and high >= hi:
        given = [k for k in ("at_least", "at_most", "between") if getattr(region, k) is not None]
        written = " and ".join(f"{k}: {_written(getattr(region, k))}" for k in given)
        verb = "hold" if len(given) > 1 else "holds"
        never = "this guard can never be violated" if guard else "this prediction can never be falsified"
        raise doc.error(f"{written} on {what_on} {verb} every {what.removeprefix('a ')}: {never}",
                        (*loc, given[0]), hint=_BOUNDED_AWAY[what])


# What to write instead of a region that holds every value, by what the metric is.
_BOUNDED_AWAY = {
    "a proportion": "bound it away from 0 or from 1, e.g. at_least: 0.05 (a rate of 5% or more) or at_most: 0.02",
    "a difference of proportions": "bound it away from -1 or from 1, e.g. at_least: 0.05 (the first arm's rate at "
                                   "least 5 points above the second's) or at_most: 0",
    "a count": "bound it away from 0, e.g. at_least: 1 (one or more) or equals: 0 (none)",
}


def _written(value: Any) -> str:
    """A bound as written in the file: 0, 0.05, [0, 1]."""
    if isinstance(value, tuple):
        return f"[{', '.join(_written(v) for v in value)}]"
    return f"{value:g}"
