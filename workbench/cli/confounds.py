"""`wb confounds`: which recorded variables and guard metrics move with each predicted outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from workbench.analysis import display
from workbench.cli import _common
from workbench.cli._common import (DbOption, FormatOption, JsonOption, RootOption, echo_wrapped, emit_rows, list_format,
                                   open_workbench, telling_left_out)

if TYPE_CHECKING:
    from workbench.analysis.confounds import Finding


def register(app: typer.Typer) -> None:
    """Add the top-level `wb confounds` command to `app`."""

    @app.command("confounds")
    def confounds(hypothesis: Annotated[Optional[str], typer.Option(
                      "--hypothesis", help="Only the outcomes this hypothesis predicts.")] = None,
                  write: Annotated[bool, typer.Option(
                      "--write",
                      help="Append each proposed separating experiment to hypotheses.yaml as a draft.")] = False,
                  db: DbOption = None, json_: JsonOption = False, root: RootOption = None,
                  fmt: FormatOption = None) -> None:
        """Scan stored runs for confounds: variables and guard metrics associated with the outcome, and
        variables that never varied independently (aliasing), with the experiment that would separate them.

        FLAG marks an association seen within executions (or a guard that always went with the outcome in an
        execution); DIFF a variable that moved with the outcome, or two variables that moved together, only
        across executions, which anything else that changed between them could explain.

        The default text is one finding a paragraph; --format table|csv|tsv gives one a row."""
        chosen = list_format(fmt, json_) if (fmt or json_) else "text"
        wb = open_workbench(db, root)
        with telling_left_out(wb, hypothesis):
            findings = sorted(wb.confounds(hypothesis, write=write),
                              key=lambda f: (not f.flagged, not f.across_executions, f.kind, f.factor))
        if chosen != "text":
            # csv and tsv carry the proposed experiment as their last column; the table keeps to the findings
            proposal = ["proposal"] if chosen in ("csv", "tsv") else []
            emit_rows(chosen, ["flag", "experiment", "outcome", "kind", "factor", "p", "comparisons", "p_adjusted",
                               "message", *proposal],
                      [_row(f, chosen) for f in findings],
                      items=[f.to_dict() for f in findings], below="message",
                      # On a narrow terminal the factor reads under its row first: nothing is lost by it, and a
                      # column it made room for stays at every wider width (it held the row's room at 80 columns,
                      # leaving out the experiment and p that 70 showed). Then the least needed are left out.
                      optional=("factor", "comparisons", "experiment", "p"), under=("factor",))
            if chosen == "table" and findings and _common.is_tty():  # piped, the table is data alone
                echo_wrapped(LEGEND + (P_LEGEND if any(f.p is not None for f in findings) else ""))
            return
        if not findings:
            typer.echo("No runs with a recorded outcome to scan.")
        for f in findings:
            _echo_finding(f)
        if write and not any(f.proposal and f.proposal.get("entry_yaml") for f in findings):
            typer.echo("--write: no finding proposes a hypothesis entry; hypotheses.yaml is unchanged.")


# The marks, under a table on a terminal (the text output words each finding whole; --help says the same).
LEGEND = ("FLAG: moved with the outcome within executions (a guard: always went with it in one); DIFF: only across "
          "executions, not a controlled confound")
# p_adjusted is never left out for width (p may be): the legend names no column the table does not show.
P_LEGEND = ("; p_adjusted: the test's p times its comparisons, at most 1 (Bonferroni), on which the mark is judged "
            "(over runs or units)")

INDENT = " " * 5  # a finding's lines after its first, under its `[experiment]`


def _row(f: Finding, fmt: str) -> list[str]:
    row = [_mark(f), f.experiment, f.outcome, f.kind, f.factor, _p(f.p, fmt),
           "" if f.p is None else str(f.comparisons), _p(f.p_adjusted, fmt), f.message]
    if fmt in ("csv", "tsv"):  # the text's "Proposed experiment", JSON's proposal text
        row.append(str((f.proposal or {}).get("text") or ""))
    return row


def _mark(f: Finding) -> str:
    """FLAG: an association within executions (or a guard always with the outcome in one); DIFF: one seen only across
    executions; nothing otherwise."""
    return "FLAG" if f.flagged else "DIFF" if f.across_executions else ""


def _p(p: float | None, fmt: str) -> str:
    """A p-value in a row. One that underflowed a float (Fisher's p over thousands of units or runs) is never 0:
    the table reads "< 1e-300" as the text does; csv and tsv give the bound 1e-300, a number a script parses (as
    JSON does: `display.p_number`)."""
    if p is None:
        return ""
    if fmt == "table" and 0 <= p < display.P_FLOOR:
        return display.p_value(p)
    return f"{display.p_number(p):.3g}"


def _p_text(f: Finding) -> str:
    """The test's p-value, and the Bonferroni-adjusted one the flag is judged on when there were several. A variable
    is flagged on its p over runs or over units: both are named, or a flag over units read as one on "p = 1"."""
    from workbench.analysis.conditioning import p_values

    if f.p is None:
        return ""
    runs = f.effect.get("runs_p", f.p) if f.p_counts == "units" else f.p  # `p` is the one the flag is judged on
    said, adjusted = p_values(runs, f.comparisons, f.effect, runs_named=False)
    return f" ({f.test or 'Fisher exact'} {said}" + (f"; {adjusted}" if adjusted else "") + ")"


def _echo_finding(f: Finding) -> None:
    """A finding's paragraph: on a terminal each line wraps between words, indented under the finding; piped, each is
    one line (`echo_wrapped`). The hypothesis entry is YAML, printed as it is."""
    mark = _mark(f) or "    "
    p = _p_text(f)
    echo_wrapped(f"{mark} [{f.experiment}] {f.outcome} vs {f.kind} {f.factor}{p}", INDENT)
    echo_wrapped(f"{INDENT}{f.message}", INDENT)
    used = f.table.get("runs") if f.kind in ("alias", "variable") else None
    if used:
        echo_wrapped(f"{INDENT}runs used: {', '.join(used[:12])}" + (f" (+{len(used) - 12} more)" if len(used) > 12
                                                                       else ""), INDENT)
    if f.proposal:
        echo_wrapped(f"{INDENT}Proposed experiment: {f.proposal['text']}", INDENT)
        if f.proposal.get("entry_yaml"):
            state = f.proposal.get("written")
            typer.echo(INDENT + ("Appended to hypotheses.yaml as a draft:" if state else
                                 "Already in hypotheses.yaml:" if state is False else "Hypothesis entry:"))
            typer.echo(f.proposal["entry_yaml"].rstrip("\n"))
