"""`wb review HYPOTHESIS --approve|--request-changes|--comment -m TEXT` and `wb review list [HYPOTHESIS]`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from workbench.cli import _envelope
from workbench.cli._common import (DbOption, FormatOption, JsonOption, RootOption, echo_wrapped, emit_rows,
                                   list_format, open_workbench, print_json, telling_left_out, when)


def _decision(approve: bool, request_changes: bool, comment: bool, hypothesis_id: str) -> str:
    """The one decision flag given; the hint's example reviews `hypothesis_id`, the hypothesis the user named (a
    seed hypothesis may not be in their workbench)."""
    import shlex

    from workbench.errors import BadInput

    chosen = [name for name, on in (("approve", approve), ("request-changes", request_changes),
                                    ("comment", comment)) if on]
    if len(chosen) != 1:
        raise BadInput("give exactly one of --approve, --request-changes, --comment",
                       hint=f'e.g. wb review {shlex.quote(hypothesis_id)} --approve -m "reproduced on our cluster"')
    return chosen[0]


def _emit_states(states, fmt: str) -> None:
    if fmt == "table":
        _print_states(states)
        return
    rows = [[st.hypothesis_id, st.state, st.parent_changed,
             st.current_verdict.verdict if st.current_verdict else None, len(st.reviews),
             st.deciding_review.author if st.deciding_review else None, st.self_approved(),
             st.status.status if st.status else None, st.status.note() if st.status else None] for st in states]
    emit_rows(fmt, ["hypothesis", "state", "parent_changed", "verdict", "reviews", "decided_by", "self_approved",
                    "status", "note"],
              rows, items=[st.to_dict() for st in states], command="review list")


def _print_states(states) -> None:
    """Each hypothesis's review state, its status notes and its reviews; on a terminal each line wraps between words
    at its width (a later line two further in than its own), piped one line an item."""
    for st in states:
        cur = st.current_verdict
        if cur is None and not st.reviews:
            echo_wrapped(f"{st.hypothesis_id}: {st.label()} (no verdict yet)")
        else:
            seen = f"verdict {cur.verdict} ({(cur.evidence_digest or '')[:10] or 'no digest'})" if cur else "no verdict"
            echo_wrapped(f"{st.hypothesis_id}: {st.label()}  [{seen}]")
        for line in st.status.notes() if st.status else []:  # as `wb hypothesis show` prints them
            echo_wrapped(f"  ({line})")
        for r in st.reviews:
            mark = (" (self-approved)" if st.self_review(r) else "") + \
                (" (stale)" if st.stale(r) else "")
            saw = f" on {r.verdict_seen}" if r.verdict_seen else ""
            echo_wrapped(f"  {when(r.created_at)}  {r.author}: {r.decision}{saw}{mark}")
            for line in r.body.splitlines():  # the reviewer's text: a line wrapped goes on under its own start
                echo_wrapped(f"    {line}", indent="    " + line[:len(line) - len(line.lstrip(" "))])


def register(app: typer.Typer) -> None:
    """Add the top-level `wb review` command to `app`."""

    @app.command("review")
    def review(args: Annotated[Optional[list[str]], typer.Argument(
                   metavar="HYPOTHESIS | list [HYPOTHESIS]",
                   help="The hypothesis to review, or `list` (optionally with a hypothesis) to show reviews.")] = None,
               approve: Annotated[bool, typer.Option("--approve", help="Approve the current verdict.")] = False,
               request_changes: Annotated[bool, typer.Option(
                   "--request-changes", help="Ask for changes before the verdict counts.")] = False,
               comment: Annotated[bool, typer.Option("--comment", help="Comment without deciding.")] = False,
               message: Annotated[Optional[str], typer.Option("-m", "--message", help="The review's text.")] = None,
               as_: Annotated[Optional[str], typer.Option(
                   "--as", help="Reviewer name (default: $WB_USER, git's user.name, the login name).")] = None,
               evidence: Annotated[Optional[str], typer.Option(
                   "--evidence", metavar="DIGEST",
                   help="The evidence digest you reviewed (or its start, as `wb review list` shows it); refused "
                        "when the current verdict rests on other evidence.")] = None,
               db: DbOption = None, json_: JsonOption = False, fmt: FormatOption = None,
               root: RootOption = None) -> None:
        """Review a hypothesis's verdict against the exact evidence it rests on, or list reviews.

        A review binds to the current verdict's evidence (runs, configs, analysis version); a later
        verdict on other evidence makes it stale. States: awaiting review, approved, changes requested,
        stale, nothing to review (no verdict yet). An approval by a person who ran the evidence is recorded and
        marked self-approved."""
        from workbench.errors import BadInput

        args = list(args or [])
        if args and args[0] == "list":
            _envelope.named("review list")  # an error's envelope names the listing, as its result's does
            given = [flag for flag, on in (("--approve", approve), ("--request-changes", request_changes),
                                           ("--comment", comment), ("-m", message is not None),
                                           ("--as", as_ is not None), ("--evidence", evidence is not None)) if on]
            if given:  # a listing records nothing: a reviewer must not think they approved
                raise BadInput(f"{given[0]}: `wb review list` only lists reviews; nothing was recorded",
                               hint=f"to record a review, drop `list`: wb review "
                                    f"{args[1] if len(args) > 1 else 'HYPOTHESIS'} --approve|--request-changes|"
                                    "--comment -m TEXT")
            list_format(fmt, json_)  # before the store is opened: a bad --format or one beside --json
        elif fmt is not None:
            raise BadInput(f"--format {fmt}: a review prints no listing", hint="--format belongs to wb review list")
        wb = open_workbench(db, root)
        if args and args[0] == "list":
            if len(args) > 2:
                raise BadInput("wb review list takes at most one hypothesis", hint="wb review list [HYPOTHESIS]")
            with telling_left_out(wb, args[1] if len(args) == 2 else None):
                states = wb.review_states(args[1] if len(args) == 2 else None)
            _emit_states(states, list_format(fmt, json_))
            return
        if len(args) != 1:
            raise BadInput("name one hypothesis to review", hint='wb review HYPOTHESIS --approve -m "TEXT"')
        if message is None:
            raise BadInput("a review needs a message (-m TEXT)", hint='for example: -m "reproduced; verdict stands"')
        decision = _decision(approve, request_changes, comment, args[0])
        with telling_left_out(wb, args[0]):
            r = wb.review(args[0], decision=decision, body=message, as_name=as_, evidence=evidence)
        if json_:
            print_json(r.to_dict())
            return
        on = f" on verdict {r.verdict_seen} (evidence {(r.evidence_digest or '')[:10]})" if r.verdict_seen else ""
        echo_wrapped(f"{r.decision} by {r.author} (from {r.author_source}){on} recorded for {r.hypothesis_id}")
