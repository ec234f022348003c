"""`wb report` (the static site, or Markdown) and `wb lineage` (the hypothesis DAG)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from workbench.cli._common import DbOption, RootOption


def register(app: typer.Typer) -> None:
    """Add the top-level `report` and `lineage` commands to `app`."""

    @app.command("report")
    def report(
        out: Optional[Path] = typer.Option(None, "--out", help="site folder (default: reports/ in the workbench)"),
        open_: bool = typer.Option(False, "--open", help="open the page in a browser when built"),
        fmt: str = typer.Option("html", "--format", help="html (the site) or md (Markdown to stdout)"),
        hypothesis: Optional[str] = typer.Option(None, "--hypothesis", help="the hypothesis to show or summarise"),
        db: DbOption = None,
        root: RootOption = None,
    ) -> None:
        """Write the offline HTML site (board, hypotheses, runs, confounds, lineage), or a Markdown summary."""
        from workbench.report.api import report as build

        result = build(db=db, root=root, out=out, fmt=fmt, hypothesis_id=hypothesis)
        if result.format == "md":
            typer.echo(result.markdown, nl=False)
            return
        typer.echo(f"site: {result.site['index']} ({len(result.site['hypotheses'])} hypotheses, "
                   f"{len(result.site['runs'])} runs)")
        if hypothesis:
            typer.echo(f"hypothesis page: {result.page}")
        if open_:
            import webbrowser

            webbrowser.open(Path(result.page or result.site["index"]).as_uri())

    @app.command("lineage")
    def lineage(
        as_json: bool = typer.Option(False, "--json", help="print nodes and edges as JSON"),
        db: DbOption = None,
        root: RootOption = None,
    ) -> None:
        """Print the hypothesis lineage (parent → child) with each hypothesis' status."""
        from workbench.cli._common import print_json
        from workbench.report.api import lineage as lineage_graph
        from workbench.report.api import lineage_text

        graph = lineage_graph(db=db, root=root)
        if as_json:
            print_json(graph)
        else:
            typer.echo(lineage_text(graph))
