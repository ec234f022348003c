"""`wb hypothesis validate`: every problem of the registry files at once, in file order, as a linter lists them
(a command that loads the registry stops at the first)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from workbench.errors import BadInput, ConfigError, ConfigErrors
from workbench.registry.experiment import Experiment
from workbench.registry.experiment_checks import check_experiment
from workbench.registry.folder import EXPERIMENTS_DIR, HYPOTHESES_FILE, Registry, experiment_files
from workbench.registry.hypothesis import HypothesesFile, Hypothesis
from workbench.registry.hypothesis_checks import check_entries
from workbench.registry.loader import as_format_one, check_root, find_root, load_experiment, load_registry
from workbench.registry.problems import Found
from workbench.registry.schema_errors import all_problems, validated
from workbench.registry.yamlio import LocatedYaml, load_located


@dataclass(frozen=True)
class Checked:
    """A file found without a problem: an experiment file, or a hypotheses file with its number of hypotheses."""
    file: Path
    kind: str  # "experiment" or "hypotheses"
    hypotheses: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"file": str(self.file), "kind": self.kind, "hypotheses": self.hypotheses}


def validate_files(paths: list[Path], root: Path | None = None, *, passed: list[Checked] | None = None
                   ) -> list[Checked]:
    """Validate named files (or the whole workbench when none); returns each file checked, in order. Every problem
    found is raised at once (ConfigErrors), in file order; `passed`, where given, is filled with the files found
    without a problem either way (a --json document has the same keys whether it failed or not)."""
    found = Found(collect=True)
    named = bool(paths)  # a file the user named may be a template file; the workbench's own are not
    if not paths:
        root_path = root if root is not None else find_root()
        if root is not None:
            check_root(root_path)
        paths = [*_experiment_paths(root_path), root_path / HYPOTHESES_FILE]
    out: list[Checked] = passed if passed is not None else []
    for p in _each_once(paths):
        if p.resolve() in found.experiments:  # checked, its problems told, for a hypotheses file named before it
            out += [Checked(p, "experiment")] if found.experiments[p.resolve()] is not None else []
            continue
        template = _template_file_problem(p, root) if named else None
        if template is not None:
            found.problems.append(template)
            continue
        doc = _read(p, found)
        if doc is None:  # nothing of it is checked; the files after it are
            if p.resolve().parent.name == EXPERIMENTS_DIR:
                found.experiments[p.resolve()] = None  # told once: its hypotheses wait for it
            continue
        if _is_experiment(p, doc):
            found.experiments[p.resolve()] = exp = _experiment_of(doc, found)
            if exp is not None:
                out.append(Checked(p, "experiment"))
            continue
        base = p.parent  # as named: its experiment files are told by paths beside it
        reg_root = base if (base / EXPERIMENTS_DIR).is_dir() else (root or base)
        count = _validate_hypotheses(doc, reg_root, found)
        if count is not None:
            out.append(Checked(p, "hypotheses", count))
    found.raise_any()
    return out


TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2")


def _template_file_problem(path: Path, root: Path | None) -> ConfigError | None:
    """A template file named to validate (read as YAML it failed with "did not find expected <document start>"): it
    is checked through the experiment whose profile names it as `config.template_file`; None for any other file."""
    naming = _naming_experiments(path, root)
    if not naming and path.suffix not in TEMPLATE_SUFFIXES:
        return None
    if naming:
        where = "; ".join(f"{exp} (profile {', '.join(profiles)})" for exp, profiles in naming.items())
        return ConfigError(f"a template file, not a hypotheses or experiment file: validate checks it through the "
                           f"experiment that names it: {where}", file=str(path),
                           hint="wb hypothesis validate " + " ".join(str(exp) for exp in naming))
    return ConfigError("a template file, not a hypotheses or experiment file, and no experiment names it as a "
                       "profile's config.template_file", file=str(path),
                       hint="name it in an experiment's profile (config: {template_file: templates/NAME}) and "
                            "validate that experiment")


def _naming_experiments(path: Path, root: Path | None) -> dict[Path, list[str]]:
    """Each experiment file (of the experiments/ folder above `path`, else of `root`) whose profiles name `path` as
    their config.template_file -> those profiles."""
    import yaml

    exp_dir = next((d for d in path.resolve().parents if d.name == EXPERIMENTS_DIR), None)
    exp_dir = exp_dir or (root / EXPERIMENTS_DIR if root is not None else None)
    out: dict[Path, list[str]] = {}
    for exp in _experiment_paths(exp_dir.parent.resolve()) if exp_dir is not None else []:
        try:
            data = yaml.safe_load(exp.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        profiles = data.get("profiles") if isinstance(data, dict) else None
        for name, prof in (profiles or {}).items() if isinstance(profiles, dict) else ():
            config = prof.get("config") if isinstance(prof, dict) else None
            named = config.get("template_file") if isinstance(config, dict) else None
            if isinstance(named, str) and (exp.parent / named).resolve() == path.resolve():
                # As the user's own path reads: relative to the current folder where it lies in it.
                shown = exp.relative_to(Path.cwd()) if exp.is_relative_to(Path.cwd()) else exp
                out.setdefault(shown, []).append(str(name))
    return out


def _each_once(paths: list[Path]) -> list[Path]:
    """The files named, one named twice (or by two spellings of its path) once, where first named."""
    seen: dict[Path, Path] = {}
    for p in paths:
        seen.setdefault(p.resolve(), p)
    return list(seen.values())


def _is_experiment(path: Path, doc: LocatedYaml) -> bool:
    """Whether `path` is an experiment file: one in an experiments/ folder (whatever it holds: empty, or with
    `profiles:` mistyped, it is still told as the experiment it is), else a mapping without `hypotheses:` that gives
    an experiment's `id:` or `profiles:` (a hypotheses file is a list or has `hypotheses:`)."""
    if path.resolve().parent.name == EXPERIMENTS_DIR:
        return True
    data = doc.data
    return isinstance(data, dict) and "hypotheses" not in data and ("profiles" in data or "id" in data)


def _experiment_paths(root: Path) -> list[Path]:
    return experiment_files(root / EXPERIMENTS_DIR)


def _read(path: Path, found: Found) -> LocatedYaml | None:
    """The file's YAML, or None when it cannot be read or parsed: nothing in it is checked."""
    try:
        return load_located(path)
    except BadInput as exc:
        found.stop(exc)
        return None


def _experiment_of(doc: LocatedYaml, found: Found) -> Experiment | None:
    """The experiment of `doc`, or None with its problems found (every schema problem, then every problem of the
    checks across its own fields)."""
    if doc.data is None:
        found.problems.append(doc.error("the file is empty"))
        return None
    parsed, errors = validated(Experiment, doc)
    found.problems += all_problems(Experiment, doc, errors)
    if parsed is None:
        return None
    found.declared[Path(doc.file).resolve()] = parsed
    before = len(found.problems)
    check_experiment(parsed, doc, Path(doc.file), found)
    return parsed if len(found.problems) == before else None


def _validate_hypotheses(doc: LocatedYaml, reg_root: Path, found: Found) -> int | None:
    """The number of hypotheses in `doc`, or None with their problems found: every schema problem of every
    entry, then every problem the checks of the entries that passed it find. An entry that is not a mapping
    stops it there."""
    experiments: dict[str, Experiment] = {}
    failed: set[str] = set()
    declared: dict[str, Experiment] = {}  # a failed experiment's variables, where its schema passed
    for path in _experiment_paths(reg_root):
        if path.resolve() not in found.experiments:
            exp_doc = _read(path, found)
            found.experiments[path.resolve()] = _experiment_of(exp_doc, found) if exp_doc is not None else None
        exp = found.experiments[path.resolve()]
        if exp is None:
            failed.add(path.stem)
            if path.resolve() in found.declared:
                declared[path.stem] = found.declared[path.resolve()]
        else:
            experiments[exp.id] = exp
    before = len(found.problems)
    doc = as_format_one(doc)
    if doc.data is None:
        found.problems.append(doc.error("the file is empty"))
        return None
    parsed, errors = validated(HypothesesFile, doc)
    entries = doc.data.get("hypotheses") if isinstance(doc.data, dict) else None
    entries = entries if isinstance(entries, list) else []
    found.problems += all_problems(HypothesesFile, doc, errors)
    # An entry that is not a mapping (a line indented wrong, most often): what follows it means something else
    # than was meant, and the entries after it are not checked.
    odd = next((i for i, e in enumerate(entries) if not isinstance(e, dict)), len(entries))
    broken = {e["loc"][1] for e in errors if e["loc"][:1] == ("hypotheses",) and len(e["loc"]) > 1}
    placed = [(i, Hypothesis.model_validate(e)) for i, e in enumerate(entries[:odd]) if i not in broken]
    known = [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
    reg = Registry(reg_root, [h for _, h in placed], experiments, doc)
    check_entries(reg, placed, found, known, frozenset(failed), declared)
    found.waiting |= bool(broken) or any(h.experiment in failed for _, h in placed)
    if odd < len(entries):
        cut = doc.line_of(("hypotheses", odd)) or 0
        found.problems[before:] = [p for p in found.problems[before:] if (getattr(p, "line", 0) or 0) <= cut]
        found.stopped = True
    return len(entries) if len(found.problems) == before and parsed is not None else None


@dataclass(frozen=True)
class BrokenEntry:
    """An entry of hypotheses.yaml with problems of its own: its id (None where it gives none) and each problem."""
    id: str | None
    problems: tuple[BadInput, ...]


@dataclass(frozen=True)
class Apart:
    """The workbench with each hypothesis entry that has a problem of its own set apart: `registry` holds the
    others, `parents` each id the file gives to the parent it names (an entry set apart included)."""
    registry: Registry
    broken: tuple[BrokenEntry, ...] = ()
    parents: tuple[tuple[str, str | None], ...] = ()

    def check_own(self, hid: str) -> None:
        """Raise the problems of `hid`'s own entry when it is set apart: asked for by id, it is bad input."""
        own = [p for b in self.broken if b.id == hid for p in b.problems]
        if own:
            raise ConfigErrors(own)

    def left_out(self, asked: str | None = None, told: Sequence[BadInput] = ()) -> "ConfigErrors | None":
        """The problems of the entries set apart, `asked` (told as an error of its own) and an entry whose problems
        the command's error `told` not among them; None when none is left. Its summary says which entries a command
        that goes on without them leaves out."""
        kept = [b for b in self.broken if (asked is None or b.id != asked)
                and not any(p is t for p in b.problems for t in told)]
        found = [p for b in kept for p in b.problems]
        if not found:
            return None
        ids = [repr(b.id) + (f" at line {line}" if (line := self.twin_line(b)) is not None else "")
               for b in kept if b.id is not None]
        nameless = len(kept) - len(ids)
        named = ", ".join(ids + (["an entry without an id"] if nameless == 1 else
                                 [f"{nameless} entries without an id"] if nameless else []))
        which = "the entry" if len(kept) == 1 else "the entries"
        # Not "lists every problem": an entry with a problem in its fields is checked against its experiment only
        # once that is fixed, and validate says so ("more may show once it is fixed").
        return ConfigErrors(found, refused=f"left out: {which} {named}; `wb hypothesis validate` checks every file "
                                           "and lists what it finds")

    def twin_line(self, b: BrokenEntry) -> int | None:
        """The line of `b` where another entry gives its id too, whole (the id is kept) or left out as well: the
        entry left out is named by its line; None for any other entry."""
        if b.id is None:
            return None
        given = sum(x.id == b.id for x in self.broken) + sum(h.id == b.id for h in self.registry.hypotheses)
        return getattr(b.problems[0], "line", None) if given > 1 else None

    def kept(self, b: BrokenEntry) -> bool:
        """Whether a whole entry gives `b`'s id (that hypothesis is read; `b` alone is left out)."""
        return any(h.id == b.id for h in self.registry.hypotheses)

    def to_dicts(self) -> list[dict[str, Any]]:
        """Each entry set apart with its problems, as a --json output carries them."""
        return [{"id": b.id, "problems": [{"message": p.message, "hint": p.hint, "where": p.where}
                                          for p in b.problems]} for b in self.broken]

    def check_lineage(self, hid: str, done: str = "run") -> None:
        """Raise the problems of `hid`'s own entry or of an entry of its lineage (its parent, theirs, ...) set
        apart: a hypothesis runs (or is exported: `done`) only when it and every ancestor were checked."""
        found = self._broken_in_lineage(hid)
        if found is None:
            return
        entry, whose = found
        problems = list(entry.problems)
        if whose is None:
            raise ConfigErrors(problems)
        them = "it is" if len(problems) == 1 else "they are"
        raise ConfigErrors(problems, refused=f"hypothesis {hid!r} is not {done} until {them} fixed: {whose} "
                                             f"has {'it' if len(problems) == 1 else 'them'}")

    def not_run_until(self, hid: str) -> str | None:
        """Why `hid` is not run (`check_lineage` would refuse it), for a hint that would otherwise offer to run it:
        "it is not run until the entry of its parent 'p' is fixed"; None where it runs."""
        found = self._broken_in_lineage(hid)
        if found is None:
            return None
        return f"it is not run until {'its own entry' if found[1] is None else f'the entry of {found[1]}'} is fixed"

    def _broken_in_lineage(self, hid: str) -> "tuple[BrokenEntry, str | None] | None":
        """The nearest entry of `hid`'s lineage set apart, `hid`'s own first, and how it stands to `hid` ("its
        parent 'p'", "'a', an ancestor (parent of 'p'),"; None: its own); None where the lineage is whole."""
        parent_of = dict(reversed(self.parents))  # the first entry of an id, as the registry's lookup finds it
        broken = {b.id: b for b in self.broken if b.id is not None}
        seen: list[str] = []
        cur: str | None = hid
        while cur is not None and cur not in seen:
            if cur in broken:
                if cur == hid:
                    return broken[cur], None
                return broken[cur], (f"its parent {cur!r}" if len(seen) == 1 else
                                     f"{cur!r}, an ancestor (parent of {seen[-1]!r}),")
            seen.append(cur)
            cur = parent_of.get(cur)
        return None


def load_apart(root: str | Path | None = None, root_from: str = "--root") -> Apart:
    """The workbench as `load_registry` reads it, but with each hypothesis entry that has a problem of its own set
    apart, for a command that can go on without it (`hypothesis list`; `hypothesis run` of a hypothesis whose
    lineage has none). A problem that is no one entry's (a file that does not parse, an entry that is not a
    mapping, an experiment file's, a field of the file's own) is raised as every command raises it."""
    try:
        return Apart(load_registry(root, root_from))
    except (ConfigError, ConfigErrors) as exc:  # several: a duplicate id beside a schema problem
        first = exc
    root_path = Path(root) if root is not None else find_root(root_from=root_from)
    hyp_file = root_path / HYPOTHESES_FILE
    files = {Path(getattr(p, "file", "")).resolve() for p in first.parts()}
    if files != {hyp_file.resolve()}:
        raise first
    experiments: dict[str, Experiment] = {}
    docs: dict[str, LocatedYaml] = {}
    for path in _experiment_paths(root_path):  # they passed: the loader reads them before hypotheses.yaml
        exp, exp_doc = load_experiment(path)
        experiments[exp.id], docs[exp.id] = exp, exp_doc
    doc = as_format_one(load_located(hyp_file))
    if doc.data is None:
        raise first
    _, errors = validated(HypothesesFile, doc)
    entries = doc.data.get("hypotheses") if isinstance(doc.data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise first
    found = Found(collect=True)
    found.problems += all_problems(HypothesesFile, doc, errors)
    failed = {e["loc"][1] for e in errors if e["loc"][:1] == ("hypotheses",) and len(e["loc"]) > 1}
    placed = [(i, Hypothesis.model_validate(e)) for i, e in enumerate(entries) if i not in failed]
    ids = [e.get("id") if isinstance(e.get("id"), str) else None for e in entries]
    check_entries(Registry(root_path, [h for _, h in placed], experiments, doc, docs), placed, found,
                  [i for i in ids if i is not None])
    # Each problem to the entry whose lines hold it; one that stands in no entry is the whole file's.
    starts = [doc.line_of(("hypotheses", i)) or 0 for i in range(len(entries))]
    by_entry: dict[int, list[BadInput]] = {}
    for p in found.problems:
        line = getattr(p, "line", None)
        held = [i for i, s in enumerate(starts) if line is not None and 0 < s <= line]
        if not held or not (getattr(p, "field", None) or "").startswith("hypothesis"):
            raise first
        by_entry.setdefault(held[-1], []).append(p)
    if not by_entry:
        raise first
    good = [h for i, h in placed if i not in by_entry]
    parents = tuple((i, e.get("parent") if isinstance(e.get("parent"), str) else None)
                    for i, e in zip(ids, entries) if i is not None)
    kept = {h.id for h in good}  # an id given twice, its first entry whole, is not left out
    left_out = tuple(dict.fromkeys(ids[i] for i in sorted(by_entry) if ids[i] is not None and ids[i] not in kept))
    return Apart(Registry(root_path, good, experiments, doc, docs, left_out),
                 tuple(BrokenEntry(ids[i], tuple(sorted(ps, key=lambda p: getattr(p, "line", 0) or 0)))
                       for i, ps in sorted(by_entry.items())), parents)
