"""`wb report` (the static site, or Markdown) and `wb lineage` (the hypothesis DAG)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from workbench.cli._common import DbOption, RootOption, open_workbench, print_json

if TYPE_CHECKING:
    from workbench.app import LineageNode


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
        result = open_workbench(db, root).report(out=out, fmt=fmt, hypothesis_id=hypothesis)
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
        nodes = open_workbench(db, root).lineage()
        if as_json:
            print_json({"nodes": [n.to_dict() for n in nodes],
                        "edges": [{"parent": n.status.hypothesis.parent, "child": n.status.hypothesis.id}
                                  for n in nodes if n.status.hypothesis.parent]})
        else:
            typer.echo(lineage_text(nodes))


def lineage_text(nodes: list["LineageNode"]) -> str:
    """The DAG as an indented tree, one hypothesis a line: `id  [status]  claim`."""
    ids = {n.status.hypothesis.id for n in nodes}
    children: dict[str | None, list["LineageNode"]] = {}
    for n in nodes:
        parent = n.status.hypothesis.parent
        children.setdefault(parent if parent in ids else None, []).append(n)
    lines: list[str] = []
    stack = [(n, 0) for n in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        n, d = stack.pop()
        h = n.status.hypothesis
        if h.id in seen:
            continue
        seen.add(h.id)
        claim = h.claim if len(h.claim) <= 70 else h.claim[:69] + "…"
        lines.append(f"{'  ' * d}{'└─ ' if d else ''}{h.id}  [{n.status.status}]  {claim}")
        stack.extend((c, d + 1) for c in reversed(children.get(h.id, [])))
    return "\n".join(lines)
