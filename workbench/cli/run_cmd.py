"""`wb hypothesis run ID`: run the hypothesis's controlled experiment and print what it found."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, parse_sets, print_json


def register(hypothesis_app: typer.Typer) -> None:
    @hypothesis_app.command("run")
    def run(hypothesis_id: Annotated[str, typer.Argument(metavar="ID")],
            target: Annotated[Optional[str], typer.Option(
                "--target", help="Profile of the experiment to run on (default: the hypothesis's, else the "
                                 "experiment's default_profile).")] = None,
            replicates: Annotated[Optional[int], typer.Option(
                "--replicates", help="Blocks of arms to run (default: the design's).")] = None,
            sequential: Annotated[bool, typer.Option(
                "--sequential", help="Stop as soon as an always-valid test decides (budget: design.max_replicates).")] = False,
            aa: Annotated[bool, typer.Option("--aa", help="Run the control arm against itself (checks the harness).")] = False,
            set_: Annotated[Optional[list[str]], typer.Option(
                "--set", help="var=value: override a held variable in every arm (repeatable).")] = None,
            resume: Annotated[bool, typer.Option("--resume", help="Continue the last interrupted execution.")] = False,
            seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the arm order (recorded).")] = None,
            db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
        """Run ID's experiment: arms in randomized blocks, every run recorded, the target always restored."""
        from workbench.runner import run_hypothesis
        from workbench.runner.summary import not_ok, text_lines

        summary = run_hypothesis(hypothesis_id, root=root, db=db, target=target, replicates=replicates,
                                 sets=parse_sets(set_), sequential=sequential, aa=aa, resume=resume, seed=seed)
        if json_:
            print_json(summary)
        else:
            for line in text_lines(summary):
                typer.echo(line)
        bad = not_ok(summary)
        if bad:
            # Recorded and restored, but some runs measured nothing: a failure while running (exit 1).
            typer.echo(f"Error: {len(bad)} of {len({r['order_index'] for r in summary['runs']})} planned run(s) did not finish ok "
                       "(see the run errors above or `wb runs show ID`)", err=True)
            raise typer.Exit(1)
