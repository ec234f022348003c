"""Loading a workbench folder: parse each file against its schema, then check files against each other.

Every problem becomes a ConfigError naming the file, the line and the field; nothing runs after one
(`wb hypothesis validate` lists them all: workbench/registry/validate.py, whose `load_apart` sets apart a
hypothesis entry with a problem of its own, for `hypothesis list` and the run of a hypothesis outside its lineage).
"""

from __future__ import annotations

from pathlib import Path

from workbench.errors import BadInput, ConfigError, ConfigErrors
from workbench.registry.experiment import Experiment
from workbench.registry.experiment_checks import check_experiment
from workbench.registry.folder import EXPERIMENTS_DIR, HYPOTHESES_FILE, Registry, experiment_files
from workbench.registry.hypothesis import Hypothesis, HypothesesFile
from workbench.registry.hypothesis_checks import check_hypotheses
from workbench.registry.schema_errors import all_problems, parse_model, validated
from workbench.registry.yamlio import LocatedYaml, load_located


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
    try:
        parsed = parse_model(HypothesesFile, doc)
    except ConfigError as exc:
        # An id given twice is told beside the schema's first problem, not once that is fixed (a duplicate entry
        # with a mistyped field: fix one, re-run, meet the other).
        from workbench.registry.hypothesis_checks import duplicate_ids, entry_ids

        duplicates = [p for _, p in duplicate_ids(doc, entry_ids(doc))]
        if not duplicates:
            raise
        # With every schema problem, as validate tells them: the first one's "N more after this one" under a count
        # of the problems told undercounted them.
        _, errors = validated(HypothesesFile, doc)
        told = all_problems(HypothesesFile, doc, errors) or [exc]
        raise ConfigErrors(sorted([*told, *duplicates], key=lambda p: p.line or 0)) from None
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

    check_root_not_file(root, root_from)
    if not (root / HYPOTHESES_FILE).exists():
        raise BadInput(f"no {HYPOTHESES_FILE} in {root} (the workbench folder {root_from} names)",
                       where=root_from, hint=f"name a folder that holds hypotheses.yaml with {giving_root(root_from)},"
                                             " or run wb from inside one")


def check_root_not_file(root: Path, root_from: str = "--root") -> None:
    """BadInput when the workbench folder `root_from` names is a file: never a workbench, whatever the command (one
    given a store by --db reads no hypotheses.yaml, and `wb sim` looks for pdsim's folder in it)."""
    from workbench.settings import giving_root

    if root.is_file():  # "no hypotheses.yaml in FILE" read as if a folder had been searched
        named = f"{root_from} {root}" if root_from.startswith("-") else f"{root} ({root_from})"
        hint = (f"give the folder that holds it: {root.parent}" if root.name == HYPOTHESES_FILE else
                f"name a folder that holds {HYPOTHESES_FILE} with {giving_root(root_from)}")
        raise BadInput(f"{named} is a file, not a folder: {root_from} names the workbench folder, the one that "
                       f"holds {HYPOTHESES_FILE}", where=root_from, hint=hint)


def load_registry(root: str | Path | None = None, root_from: str = "--root") -> Registry:
    """The workbench in `root` (else found upward); `root_from` says where `root` came from (`--root`, `$WB_ROOT`,
    `root=` in the Python API), as an error about it names it."""
    root_path = Path(root) if root is not None else find_root(root_from=root_from)
    if root is not None:
        check_root(root_path, root_from)
    experiments: dict[str, Experiment] = {}
    docs: dict[str, LocatedYaml] = {}
    exp_dir = root_path / EXPERIMENTS_DIR
    for path in experiment_files(exp_dir):
        exp, doc = load_experiment(path)
        experiments[exp.id] = exp
        docs[exp.id] = doc
    hyps, hdoc = load_hypotheses(root_path / HYPOTHESES_FILE)
    reg = Registry(root_path, hyps, experiments, hdoc, docs)
    check_hypotheses(reg)
    return reg
