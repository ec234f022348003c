"""`wb isolate`: the minimal set of config changes that causes a failure, found by recorded, sequential probes."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, print_json

REGION_HELP = ("Where the metric lies when a config FAILS: '>= 0.05', '<= 0.02', '== 0', '0.05..0.3' "
               "(or at_least / at_most / equals / between).")


def register(app: typer.Typer) -> None:
    @app.command("isolate")
    def isolate_cmd(
            experiment: Annotated[str, typer.Option("--experiment", help="Experiment id (experiments/ID.yaml).")],
            good: Annotated[list[str], typer.Option("--good", help="var=value of the good config (repeatable; "
                                                    "unnamed variables take the experiment's defaults).")],
            bad: Annotated[list[str], typer.Option("--bad", help="var=value of the bad config (repeatable).")],
            metric: Annotated[str, typer.Option("--metric", help="A proportion metric, e.g. corruption_rate.")],
            region: Annotated[str, typer.Option("--region", help=REGION_HELP)],
            target: Annotated[Optional[str], typer.Option("--target", help="Profile to run on.")] = None,
            budget: Annotated[Optional[float], typer.Option(
                "--budget", help="Units for the whole search (default 4000).")] = None,
            alpha: Annotated[float, typer.Option("--alpha", help="Error level of the whole search.")] = 0.05,
            seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the probes' run plans.")] = None,
            parent: Annotated[Optional[str], typer.Option(
                "--parent", help="Hypothesis the search hangs under in the lineage.")] = None,
            write: Annotated[bool, typer.Option(
                "--write", help="Also append the generated hypotheses to hypotheses.yaml.")] = False,
            db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
        """Search the changes from --good to --bad for a minimal subset that reproduces the failure.

        Each probe is a generated hypothesis run on the target (restored after each) and decided by an
        always-valid sequential test; alpha is spent across probes so the whole search errs at most
        --alpha. An inconclusive probe is reported, and the answer then says what stays open.
        """
        from workbench.isolate.app import prepare_spec, run_isolate
        from workbench.isolate.text import text_lines
        from workbench.registry import load_registry

        reg = load_registry(root)
        spec = prepare_spec(reg, experiment=experiment, good=good, bad=bad, metric=metric, region=region,
                            profile=target, budget=budget, alpha=alpha, seed=seed, parent=parent)
        out = run_isolate(spec, reg, db=db, write=write, show_progress=not json_)
        if json_:
            print_json({"format": 1, "kind": "isolate", **out.record, "written": out.written})
        else:
            for line in text_lines(out.record):
                typer.echo(line)
            if out.written:
                typer.echo(f"appended {len(out.result.probes) + 1} generated hypotheses to {out.written}")
