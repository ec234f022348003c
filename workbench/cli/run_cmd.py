"""`wb hypothesis run ID`: run the hypothesis's controlled experiment and print what it found."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from workbench.analysis import display
from workbench.cli._common import (DbOption, FailOnOption, JsonOption, RootOption, echo_wrapped,
                                   exit_on_verdict, fail_on, open_workbench, parse_sets, print_json,
                                   stderr_beside_stdout)

if TYPE_CHECKING:
    from workbench.app import RunReport
    from workbench.registry.hypothesis import Hypothesis
    from workbench.runner.summary import ArmTotals, ExecutionResult
    from workbench.runner.execute import RunInterrupted


def _total(v: float, proportion: bool) -> str:
    """An arm's total, the value of a name=value pair: a proportion in percent, as the verdict below reads it; a
    count or a value with the report's digits and no thousands separator (1234567; 12.3)."""
    if proportion and math.isfinite(v):
        return display.rate(v)
    return display.keyed(v)


def _arm_runs(a: "ArmTotals", *, sequential: bool) -> str:
    """An arm's runs, in one shape: "runs ok 3/4" (ok of those made); a stopped execution adds how many of the arm's
    planned runs began ("runs ok 0/0 (0 of 1 planned began)"), a run deleted since counted as begun. A sequential
    plan is a budget, often not all spent: not said there ("runs ok 0/0 (none began)")."""
    began = a.runs + a.deleted
    text = f"runs ok {a.runs_ok}/{a.runs}"
    if began == 0 and a.planned and sequential:
        return text + " (none began)"
    return text + (f" ({began} of {a.planned} planned began)" if began < a.planned and not sequential else "")


def _order_line(e: "ExecutionResult") -> str:
    """The planned runs made, in plan order: a sequential execution that stopped early lists fewer than planned (its
    plan a budget: "2 of at most 6 planned", "at most 6 planned" where none began). A run interrupted and redone by
    --resume is one planned run (its attempts are noted apart). Where none is listed it says whether none began or
    all ended and were deleted since, never "0 of 6" for runs that were made."""
    slots: dict[object, object] = {}
    for run in sorted(e.runs, key=lambda run: run.id):
        slots[run.order_index if run.order_index is not None else ("id", run.id)] = run
    ran = sorted(slots.values(), key=lambda run: (run.block or 0, run.order_index or 0, run.id))
    made, planned = len(ran) + e.runs_deleted, len(e.order)
    budget = f"at most {planned}" if e.mode == "sequential" else str(planned)
    if ran:
        notes = [f"{len(ran)} of {budget} planned"] if len(ran) != planned else []
    elif made:  # every run made ended and was deleted since
        notes = [f"{made} of {budget} planned ended"]
    else:
        notes = [f"{budget} planned" if e.mode == "sequential" else f"0 of {planned} planned"]
    if e.runs_deleted:  # ended, then deleted by `wb runs delete` while the execution ran
        notes.append(f"{e.runs_deleted} deleted after it ended" if e.runs_deleted == 1 else
                     f"{e.runs_deleted} deleted after they ended")
    if len(e.runs) > len(ran):
        notes.append(f"{display.count(len(e.runs) - len(ran), 'interrupted attempt')} redone by --resume")
    order = " ".join(f"{run.arm}@{run.where or run.host}" for run in ran) or ("no run kept" if made else
                                                                            "no run began")
    return f"order: {order}" + (f"  ({'; '.join(notes)})" if notes else "")


def summary_lines(r: "RunReport", h: "Hypothesis | None" = None) -> list[str]:
    """The human summary of an execution and its verdict: a headline with `h`'s claim, then a line per prediction
    and check (verdict_lines). `h` is needed only where `r` has a verdict (an interrupted execution has none)."""
    e = r.execution
    lines = [f"{e.hypothesis} on {e.target} (profile {e.profile}), execution {e.execution_id}, mode {e.mode}, "
             f"seed {e.seed}"]
    if e.overrides:
        lines.append("overrides: " + ", ".join(f"{k}={v}" for k, v in e.overrides.items()))
    lines.append(_order_line(e))
    for pair, diff in e.config_diff.items():
        changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        lines.append(f"config diff {pair}: " + (" | ".join(changed) if changed else "none"))
    for arm, a in e.arms.items():
        parts = [_arm_runs(a, sequential=e.mode == "sequential")]
        for name, v in a.totals.items():
            if v is not None:
                parts.append(f"{name}={_total(v, name in e.proportions)}")
        lines.append(f"  {arm:<12} " + "  ".join(parts))
    # A failed run whose ending stderr's progress gave is not named again where that line is read with this
    # summary; where stdout is read apart (`> summary.txt`), the summary names each.
    told = set(e.told) if stderr_beside_stdout() else set()
    for run in e.failed_runs:
        if run.id not in told:
            lines.append(f"  run {run.id} ({run.arm} {display.replicate(run.replicate)}) {run.ending()}")
    if e.stopped_early:
        lines.append(e.stopped_early)
    if r.analysis is None:
        lines.append(f"verdict: none ({r.analysis_error})")
    else:
        from workbench.analysis.summary import verdict_lines

        assert h is not None, "a verdict is shown with its hypothesis's claim"
        lines += [f"verdict: {r.analysis.verdict} (claim: {h.claim})", *verdict_lines(h, r.analysis)]
    if r.timing:
        lines.append(_time_line(r.timing))
    if r.report_note and not r.report:
        lines.append(f"report: {r.report_note}")
    elif r.report:
        lines.append(f"report: {r.report}" + (f" ({r.report_note})" if r.report_note else ""))
    else:
        lines.append("report: not rebuilt; to build the site: wb report")
    return lines


def _time_line(t: dict[str, float]) -> str:
    """The command's wall time and its parts, each to the hundredth and rounded to add up to it (the only time
    printed: the progress line on stderr gives counts)."""
    names = {"target_s": "target commands and waits", "runner_s": "runner", "analysis_s": "analysis",
             "report_s": "report"}
    total, parts = display.adding_up(t["wall_s"], [t[k] for k in names])
    return (f"time: {total} s, the wall time of the whole command = "
            + " + ".join(f"{what} {part} s" for what, part in zip(names.values(), parts)))


def show_interrupted(exc: "RunInterrupted", json_: bool) -> None:
    """What an interrupted execution recorded, before the boundary writes its `Error:` line: the summary on
    stdout (execution id, seed, order, per-arm counts so far), or the envelope's result with "status":
    "interrupted" and the command that resumes it (the boundary adds "ok": false and the error)."""
    from workbench.app import RunReport

    if exc.partial is None:  # stopped before the first run: what the envelope of a later stop says, no runs
        if json_:
            print_json({"status": "interrupted", "resume": exc.resume})
        return
    if json_:
        print_json({**RunReport(exc.partial, None, "interrupted").to_dict(), "status": "interrupted",
                    "resume": exc.resume})
        return
    for line in summary_lines(RunReport(exc.partial, None, "interrupted before the planned runs were made")):
        if not line.startswith("report: "):
            echo_wrapped(line)


def _failed_runs_named(ids: list[int]) -> str:
    """The runs that did not finish ok by their ids, and the command that shows one whole, to paste (at the end: a
    command written out ends its text)."""
    if len(ids) == 1:
        return f"run {ids[0]} (see its error above); its whole record: wb runs show {ids[0]}"
    shown = [str(i) for i in ids[:5]] + ([f"{len(ids) - 5} more"] if len(ids) > 6 else [str(i) for i in ids[5:]])
    return (f"runs {', '.join(shown[:-1])} and {shown[-1]} (see their errors above); the first's whole record: "
            f"wb runs show {ids[0]}")


def register(hypothesis_app: typer.Typer) -> None:
    @hypothesis_app.command("run")
    def run(hypothesis_id: Annotated[str, typer.Argument(metavar="ID")],
            target: Annotated[Optional[str], typer.Option(
                "--target", help="Profile of the experiment to run on (default: the hypothesis's, else the "
                                 "experiment's default_profile).")] = None,
            replicates: Annotated[Optional[int], typer.Option(
                "--replicates", help="Blocks of arms to run (default: the design's).")] = None,
            sequential: Annotated[bool, typer.Option(
                "--sequential", help="Stop as soon as an always-valid test decides, or when no verdict can be "
                "reached within the budget (design.max_replicates).")] = False,
            aa: Annotated[bool, typer.Option(
                "--aa", help="Run the control arm against itself (checks the harness).")] = False,
            set_: Annotated[Optional[list[str]], typer.Option(
                "--set", help="var=value: override a held variable in every arm (repeatable).")] = None,
            resume: Annotated[bool, typer.Option("--resume", help="Continue the last interrupted execution.")] = False,
            seed: Annotated[Optional[int], typer.Option("--seed", help=(
                "Execution seed, 0-2147483647: the arm order and each replicate's per-replicate values "
                "(drawn when absent; recorded)."))] = None,
            report: Annotated[Optional[bool], typer.Option(
                "--report/--no-report",
                help="Rebuild the site afterwards (default: when reports/ holds one as the runs end).")] = None,
            db: DbOption = None, json_: JsonOption = False, root: RootOption = None,
            fail_on_: FailOnOption = None) -> None:
        """Run ID's experiment: arms in randomized blocks, every run recorded, the target always restored.

        Exit 0 done, 1 some run failed, 2 bad input, 3 the verdict is in --fail-on, 130 interrupted by
        Ctrl-C (SIGINT), 143 by SIGTERM, 129 by SIGHUP (128 + the signal, the target restored either way)."""
        from workbench.runner.execute import RunInterrupted, RunOptions

        failing = fail_on(fail_on_)
        options = RunOptions(target=target, replicates=replicates, sets=parse_sets(set_), sequential=sequential,
                             aa=aa, resume=resume, seed=seed)
        wb = open_workbench(db, root)
        try:
            result = wb.run(hypothesis_id, options, report=report)
        except RunInterrupted as exc:
            show_interrupted(exc, json_)
            raise
        if json_:
            print_json(result.to_dict())
        else:
            for line in summary_lines(result, wb.registry.hypothesis(hypothesis_id)):
                echo_wrapped(line)  # on a terminal between words, at its width; piped, a line an item
        from workbench.errors import RunFailure

        # Raised after the result is printed: the boundary writes the `Error:` line, and with --json the one
        # envelope carries the result, "ok": false and this error.
        if result.report_error:
            raise RunFailure(f"the site was not rebuilt: {result.report_error} (the runs and the verdict are recorded)",
                             hint="build it: wb report --out DIR")
        bad = result.execution.failed_runs
        if bad:
            # Recorded and restored, but some runs measured nothing: a failure while running (exit 1).
            planned = display.count(result.execution.planned_runs, "planned run")
            raise RunFailure(f"{len(bad)} of {planned} did not finish ok, {_failed_runs_named([r.id for r in bad])}")
        exit_on_verdict(result.analysis.verdict if result.analysis else None, failing)
