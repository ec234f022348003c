"""`wb hypothesis list|show|validate|analyze` (and `run`, added by the runner's module)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from workbench.cli._common import (DbOption, FailOnOption, FormatOption, JsonOption, RootOption, echo_wrapped,
                                   emit_rows, exit_on_verdict, fail_on, list_format, new_app, open_workbench,
                                   print_json, telling_left_out, when)
from workbench.plurals import count

if TYPE_CHECKING:
    from workbench.analysis.status import CurrentStatus
    from workbench.app import HypothesisDetail
    from workbench.registry.validate import Checked

app = new_app("Hypotheses: list, show, validate, analyze and run them.")


@app.command("list")
def list_(db: DbOption = None, json_: JsonOption = False, root: RootOption = None, fmt: FormatOption = None) -> None:
    """List the hypotheses with their parent and status.

    The status is the newest verdict of a controlled run under the hypothesis's own config (a smoke run, with fewer
    replicates than planned, only while no run of the planned size has one); the note says when it is exploratory
    (pooled by `analyze`, no controlled run yet) or a smoke run, and lists verdicts under --set.

    An entry with a problem of its own is left out and its problem told on stderr as a warning, as show, lineage
    and report tell it (exit 0; --json: under "broken")."""
    chosen = list_format(fmt, json_)
    wb = open_workbench(db, root)
    with telling_left_out(wb):
        rows = wb.hypotheses_apart()
    if not rows and chosen == "table" and wb.left_out() is None:  # the other formats keep their shape
        typer.echo(f"No hypotheses in {wb.registry.hypotheses_file}.")
        return
    none = "-" if chosen == "table" else None  # CSV and TSV leave the cell empty, as `wb lineage` does
    emit_rows(chosen, ["id", "parent", "kind", "isolates", "status", "note"],
              [[r.hypothesis.id, r.hypothesis.parent or none, r.hypothesis.kind, r.hypothesis.isolates or none,
                r.status, r.current.note()] for r in rows], items=[r.to_dict() for r in rows],
              optional=("parent", "kind", "isolates"))  # on a narrow terminal; `wb lineage` draws the parents


@app.command("show")
def show(hypothesis_id: Annotated[str, typer.Argument(metavar="ID")], db: DbOption = None,
         json_: JsonOption = False, root: RootOption = None) -> None:
    """Show one hypothesis: claim, arms, predictions, guards, assumptions and the latest verdict.

    On a terminal each line wraps between words at its width; piped, each item is one line (grep)."""
    wb = open_workbench(db, root)
    with telling_left_out(wb, hypothesis_id):
        d = wb.hypothesis(hypothesis_id)
    if json_:
        print_json(d.to_dict())
        return
    h, v = d.hypothesis, d.verdict
    apart = wb.left_out()
    left_out = set(apart.registry.left_out) if apart is not None else set()  # named here as the tree names them
    gone = "left out: its entry has a problem of its own"
    echo_wrapped(f"{h.id}  [{h.kind}]  status: {d.status}")
    for line in d.current.notes():
        echo_wrapped(f"  ({line})")
    if h.parent:
        echo_wrapped(f"parent: {h.parent}" + (f" ({gone})" if h.parent in left_out else ""))
    echo_wrapped(f"claim: {h.claim}")
    echo_wrapped(f"experiment: {h.experiment}   isolates: {h.isolates or '-'}")
    for arm, values in d.arms.items():
        echo_wrapped(f"  arm {arm}: " + ", ".join(f"{k}={val}" for k, val in values.items()))
    for line in _seed_lines(d) + _design_lines(d):
        echo_wrapped(f"  {line}")
    from workbench.analysis import display

    for p in h.predicts:
        kind = "proportion" if not p.target and p.metric in d.percent else None
        echo_wrapped(f"  predicts: {p.describe()}"
                     + display.beside_region(p.region.bounds(), display.scale(kind, bool(p.difference))))
    for g in h.requires:
        kind = "proportion" if g.metric in d.percent else None
        echo_wrapped(f"  requires: {g.describe()}" + display.beside_region(g.bounds(), display.scale(kind)))
    # The first metric without a description says where one goes; the others just say there is none.
    how = f"(no description: give the metric a `description:` in experiments/{h.experiment}.yaml)"
    for name, m in d.metrics.items():
        said = " ".join(m["description"].split())
        echo_wrapped(f"  metric {name} ({m['kind']}): {said or how}")
        how = how if said else "(no description)"
    for a in h.assumptions:
        echo_wrapped(f"  assumes: {a.text}" + (f"  (tested by {a.tested_by}"
                                                + (f", {gone})" if a.tested_by in left_out else ")")
                                                if a.tested_by else ""))
    if v is None:
        echo_wrapped("verdict: none yet; " + wb.run_advice(h.id))
        return
    from workbench.analysis.results import Analysis
    from workbench.analysis.summary import verdict_lines

    echo_wrapped(f"verdict: {v.verdict} ({when(v.created_at)})")
    # The stored analysis, with the verdict, reasoning and checks stored beside it (an isolate probe's has no more).
    stored = Analysis.from_dict({**(v.details or {}), "hypothesis_id": v.hypothesis_id, "verdict": v.verdict,
                                 "reasoning": v.reasoning or "", "checks": v.checks})
    for line in verdict_lines(h, stored):
        echo_wrapped(line)


def _seed_lines(d: HypothesisDetail) -> list[str]:
    """The seeds its runs will use, as the runner derives them (workbench/runner/plan.py)."""
    lines = [f"per replicate: {name} (a fresh value in each replicate, the same in every arm of it, derived from "
             f"the execution seed and the replicate's number; --set {name}=N holds it fixed)"
             for name in d.per_replicate]
    if d.seed is not None:
        lines.append(f"execution seed: {d.seed} (design.seed of the {d.seed_from}; --seed N overrides it)")
    else:
        lines.append("execution seed: drawn at random for each execution and recorded (--seed N gives it)")
    return lines


def _design_lines(d: HypothesisDetail) -> list[str]:
    """The replicates its runs make and the --sequential budget, as the runner takes them (workbench/runner/plan.py)."""
    if not d.design:
        return []
    g = d.design
    each = f"{count(g['replicates'], 'replicate')} per arm"
    return [f"design: {each} (design.replicates of the {g['replicates_from']}; --replicates N overrides it), "
            f"blocks {g['blocks']}; --sequential: at most {g['max_replicates']} (design.max_replicates of the "
            f"{g['max_replicates_from']})"]


@app.command("validate")
def validate(files: Annotated[Optional[list[Path]], typer.Argument(metavar="FILE")] = None,
             root: RootOption = None, json_: JsonOption = False) -> None:
    """Validate hypotheses.yaml and experiments/*.yaml (or the named files); exit 2 naming every problem found.

    Each problem is its own `Error:` line, in file order, then how many there are. YAML that does not parse, or
    an entry that is not a mapping, stops the checking of its file there; the other files are checked."""
    from workbench.registry import validate_files
    from workbench.settings import given_root

    from workbench.cli import _envelope
    from workbench.errors import BadInput

    passed: list["Checked"] = []

    def lines() -> list[str]:
        return [f"{c.file}: " + ("ok" if c.hypotheses is None else
                                 f"{count(c.hypotheses, 'hypothesis', 'hypotheses')} ok") for c in passed]

    try:
        validate_files(list(files or []), Path(root) if given_root(root) else None, passed=passed)
    except BadInput:
        if json_:  # the same keys as when every file passed: those that did, beside the error
            _envelope.add(files=lines(), checked=[c.to_dict() for c in passed])
        raise
    if json_:  # `files`, the text's lines, stays while `wb` is 1; `checked` gives each file's count as a number
        print_json({"ok": True, "files": lines(), "checked": [c.to_dict() for c in passed]})
        return
    for line in lines():
        typer.echo(line)


@app.command("analyze")
def analyze(hypothesis_id: Annotated[str, typer.Argument(metavar="ID")], db: DbOption = None,
            json_: JsonOption = False, root: RootOption = None,
            record: Annotated[bool, typer.Option(help="Store the verdict.")] = True,
            any_hypothesis: Annotated[bool, typer.Option(
                "--any-hypothesis", help="Also pool other hypotheses' runs whose variables match an arm.")] = False,
            fail_on_: FailOnOption = None) -> None:
    """Decide a verdict from the runs already stored (this hypothesis's, imported evidence included).

    The verdict pools the hypothesis's stored runs after the fact (with --any-hypothesis, every stored run
    whose variables match an arm, whichever hypothesis ran it; the looks check names the executions of each
    hypothesis pooled): it is recorded as exploratory, and it becomes the status only while the hypothesis has
    no verdict of a controlled run (`wb hypothesis run`)."""
    failing = fail_on(fail_on_)
    wb = open_workbench(db, root)
    with telling_left_out(wb, hypothesis_id):
        result = wb.analyze(hypothesis_id, record=record, any_hypothesis=any_hypothesis)
    status = wb.hypothesis(hypothesis_id).current if record else None
    if json_:
        from workbench.analysis.results import marked_checks

        print_json(result.to_dict() | {"checks": marked_checks(result.checks, result.verdict)}
                   | ({"recorded_as": "exploratory", **status.to_dict()} if status else {}))
    else:
        from workbench.analysis.summary import verdict_lines

        echo_wrapped(f"{hypothesis_id}: {result.verdict}")  # `| head -1` reads it; --fail-on still sets the exit
        for line in verdict_lines(wb.registry.hypothesis(hypothesis_id), result):
            echo_wrapped(line)  # on a terminal between words, at its width; piped, a line an item (grep)
        if status is not None:
            echo_wrapped(_exploratory_line(hypothesis_id, status))
    exit_on_verdict(result.verdict, failing)


def _exploratory_line(hypothesis_id: str, status: CurrentStatus) -> str:
    """Where a pooled verdict landed: it is exploratory, and a controlled run's verdict keeps the status."""
    if status.exploratory:
        return (f"Recorded as exploratory: it is the status of {hypothesis_id} until a controlled run decides; to "
                f"run one: wb hypothesis run {hypothesis_id}")
    return (f"Recorded as exploratory: the status stays {status.status} (the verdict of execution "
            f"{status.verdict.execution_id}); a pooled re-analysis never replaces a controlled run's verdict.")
