"""`wb isolate`: the minimal set of config changes that causes a failure, found by recorded, sequential probes."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from workbench.analysis import display
from workbench.cli._common import (DbOption, JsonOption, RootOption, echo_wrapped, open_workbench,
                                   print_json)
from workbench.errors import RunFailure

MARK = {"fails": "FAILS", "passes": "passes", "inconclusive": "INCONCLUSIVE"}
REGION_HELP = ("Where the metric lies when a config FAILS: '>= 0.05', '<= 0.02', '== 0', '0.05..0.3' "
               "(or at_least / at_most / equals / between).")


def register(app: typer.Typer) -> None:
    @app.command("isolate")
    def isolate_cmd(
            experiment: Annotated[Optional[str], typer.Option(
                "--experiment", help="Experiment id (experiments/ID.yaml).")] = None,
            good: Annotated[Optional[list[str]], typer.Option(
                "--good", help="var=value of the good config (repeatable; unnamed variables take the "
                "experiment's defaults).")] = None,
            bad: Annotated[Optional[list[str]], typer.Option(
                "--bad", help="var=value of the bad config (repeatable).")] = None,
            metric: Annotated[Optional[str], typer.Option(
                "--metric", help="A proportion metric, e.g. corruption_rate.")] = None,
            region: Annotated[Optional[str], typer.Option("--region", help=REGION_HELP)] = None,
            pair: Annotated[Optional[str], typer.Option(
                "--pair", help="YAML file declaring experiment, good, bad, metric, region (and optionally "
                "target, budget, alpha); flags given here replace its values.")] = None,
            target: Annotated[Optional[str], typer.Option("--target", help="Profile to run on.")] = None,
            budget: Annotated[Optional[float], typer.Option(
                "--budget", help="Units for the whole search (default 4000).")] = None,
            alpha: Annotated[Optional[float], typer.Option(
                "--alpha", help="Error level of the whole search (default 0.05).")] = None,
            seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the probes' run plans.")] = None,
            parent: Annotated[Optional[str], typer.Option(
                "--parent", help="Hypothesis the search hangs under in the lineage.")] = None,
            write: Annotated[bool, typer.Option(
                "--write", help="Also append the generated hypotheses to hypotheses.yaml.")] = False,
            resume: Annotated[bool, typer.Option(
                "--resume", help="Continue the stopped earlier attempt of this same search (same flags): its "
                "decided probes are read back from the store, not run again.")] = False,
            db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
        """Search the changes from --good to --bad for a minimal subset that reproduces the failure.

        Each probe is a generated hypothesis run on the target (restored after each) and decided by an
        always-valid sequential test; alpha is spent across probes so the whole search errs at most
        --alpha. An inconclusive probe is reported, and the answer then says what stays open.
        """
        wb = open_workbench(db, root)
        flags = {"experiment": experiment, "good": good, "bad": bad, "metric": metric, "region": region,
                 "profile": target, "budget": budget, "alpha": alpha}
        out = wb.isolate(**request(flags, pair, wb.registry), seed=seed, parent=parent, write=write,
                         show_progress=not json_, resume=resume)
        refused = out.write_refused
        if json_:
            print_json({"format": 1, "kind": "isolate", **out.record, "written": out.written,
                        "unwritten": refused.yaml if refused else None})
        else:
            for line in search_lines(out.record):
                echo_wrapped(line)  # on a terminal between words, at its width; piped, a line an item (grep)
            if out.written:
                typer.echo(f"appended {len(out.result.probes) + 1} generated hypotheses to {out.written}")
            if refused:
                typer.echo("not appended (see the error below); the generated hypotheses to add at the end of "
                           "hypotheses.yaml once it is fixed:")
                typer.echo(refused.yaml, nl=False)
        _fail_if_failed(out)


def _fail_if_failed(out: Any) -> None:
    """The search is recorded and printed; runs that measured nothing, or a --write refused after the search,
    are a failure while running (exit 1), reported by the error boundary as `wb hypothesis run` reports its
    failed runs (the Error line, the --json error)."""
    problems, where, hints = [], None, []
    failed = out.failed_runs
    if failed:
        probes = "probes" if len(failed) > 1 else "probe"
        problems.append(f"{display.count(sum(failed.values()), 'run')} did not finish ok, in {probes} "
                        + ", ".join(f"p{i} ({n})" for i, n in failed.items())
                        + " (see the run errors above or `wb runs show ID`)")
    refused = out.write_refused
    if refused:
        problems.append(f"--write: the search's hypotheses were not appended to hypotheses.yaml: {refused.reason}")
        where = refused.where
        hints.append("the search is recorded; fix hypotheses.yaml, then add the generated hypotheses printed above "
                     "(with --json: \"unwritten\") at its end")
    if problems:
        raise RunFailure("; ".join(problems), hint="; ".join(hints) or None, where=where)


def request(flags: dict[str, Any], pair: str | None, registry: Any) -> dict[str, Any]:
    """The search's request: the --pair file's values (if any), each replaced by a flag given."""
    from workbench.errors import BadInput

    given = {("target" if k == "profile" else k): v for k, v in flags.items()}  # by the file's keys
    base = _pair_file(pair, registry, given) if pair else {}
    req = {**base, **{k: v for k, v in flags.items() if v is not None}}
    missing = [f"--{'target' if k == 'profile' else k}" for k in ("experiment", "good", "bad", "metric", "region")
               if not req.get(k)]
    if missing:
        raise BadInput(f"missing {', '.join(missing)}", hint="give the flags, or a --pair file that declares them")
    return {k: v for k, v in req.items() if v is not None}


def _pair_file(pair: str, registry: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The --pair file's request; a problem with the file as a whole (not found, a folder, unreadable) names the
    flag, as "/missing.yaml: file not found" alone did not say where the path came from. One at a line of the file
    is told at its file:line."""
    from workbench.errors import BadInput, ConfigError
    from workbench.isolate.pair import load_pair

    try:
        return load_pair(pair, registry, given)
    except ConfigError as exc:
        if exc.line is not None or exc.file != str(pair):
            raise
        raise BadInput(f"--pair {exc.message}", hint=exc.hint, where="--pair") from None


def _set(xs: Any) -> str:
    return "{" + ", ".join(xs) + "}"


def search_lines(record: dict[str, Any]) -> list[str]:
    """The search as text: the tree of probes, the answer and the units spent."""
    from workbench.isolate.assignments import shown_set
    from workbench.isolate.records import resume_line, tree_rows
    from workbench.isolate.region import stored_text

    r = record["result"]
    bad = record["bad"]
    lines = [f"search {record['search_id']} ({record['root_id']}): {record['metric']} failure region "
             f"{stored_text(record['region'])}, changes {shown_set(bad, record['changes'])}"]
    resumed = resume_line(record)
    if resumed:
        lines.append(resumed)
    for depth, p in tree_rows(record):
        applied = _set(p["applied"]) if p["applied"] else "{} (the good config)"
        how = " (reused)" if p.get("ref", {}).get("how") == "reused" else ""
        lines.append(f"{'  ' * (depth + 1)}p{p['index']} [{p['phase']}] good + {applied}: "
                     f"{MARK.get(p['outcome'], p['outcome'])}  {p['result_k']:g}/{p['result_n']:g} "
                     f"(alpha {p['alpha']:.2g}, {p['units']:g} units)  {p['hypothesis_id']}{how}")
        if p["outcome"] == "inconclusive" and p.get("reasoning"):  # undecided: the count alone does not say why
            lines.append(f"{'  ' * (depth + 2)}why: {p['reasoning']}")
    if r["status"] == "decided":
        lines.append(f"minimal set: {shown_set(bad, r['minimal'])} (decided)")
    elif r["status"] == "no-failure":
        lines.append("no failure to isolate: the bad config does not fail")
    else:
        lines.append(f"no decided minimal set ({r['status']}): surely needed {_set(r['lower'])}, "
                     f"possibly needed {_set(r['upper'])}")
    lines.append(f"why: {r['explanation']}")
    budget = f" of {r['budget']:g}" if r.get("budget") else ""
    lines.append(f"units: {r['units']:g}{budget}; alpha spent {r['alpha_spent']:.3g} of {r['alpha']:g}; "
                 + display.count(len(r["probes"]), "probe"))
    return lines
