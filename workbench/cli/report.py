"""`wb report` (the static site, or Markdown) and `wb lineage` (the hypothesis DAG)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from workbench.cli._common import (DbOption, FormatOption, JsonOption, RootOption, echo_wrapped, emit_rows, is_tty,
                                   list_format, open_workbench, print_json, telling_left_out, terminal_width)
from workbench.plurals import count

if TYPE_CHECKING:
    from workbench.app import LineageNode


def _open_in_browser(page: Path) -> None:
    """Open `page`, or say on stderr that no browser could be started (no display, none on PATH, $BROWSER
    unset) and which file to open: the site was built either way."""
    import webbrowser

    try:
        opened = webbrowser.open(page.as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        typer.echo(f"no browser could be started here; open {page} in one", err=True)


def register(app: typer.Typer) -> None:
    """Add the top-level `report` and `lineage` commands to `app`."""

    @app.command("report")
    def report(
        out: Optional[Path] = typer.Option(None, "--out", help="Site folder (default: reports/ in the workbench)."),
        open_: bool = typer.Option(False, "--open", help="Open the page in a browser when built."),
        fmt: str = typer.Option("html", "--format", help="html (the site) or md (Markdown to stdout)."),
        hypothesis: Optional[str] = typer.Option(None, "--hypothesis", help="The hypothesis to show or summarise."),
        db: DbOption = None,
        root: RootOption = None,
        json_: JsonOption = False,
    ) -> None:
        """Write the offline HTML site (board, hypotheses, runs, confounds, lineage), or a Markdown summary."""
        from workbench.app import report_format

        fmt = report_format(fmt)  # before the workbench is looked for: a bad flag is named as such
        if fmt == "md" and out is not None:  # taken silently, the Markdown file expected there was never made
            from workbench.errors import BadInput

            raise BadInput(f"--out {out}: --format md prints to stdout; --out is the HTML site's folder",
                           hint="write the Markdown to a file with: wb report --format md > FILE")
        if fmt == "md" and open_:  # taken silently, no page was opened and nothing said so
            from workbench.errors import BadInput

            raise BadInput("--open: --format md prints to stdout; --open opens the HTML site",
                           hint="leave out --format md to build the site and open it")
        wb = open_workbench(db, root)
        with telling_left_out(wb, hypothesis):
            result = wb.report(out=out, fmt=fmt, hypothesis_id=hypothesis)
        replaced = (result.site or {}).get("replaced_store")
        if replaced:  # on stderr, with --json too: the site's other readers were looking at another store
            echo_wrapped(f"Warning: {Path(result.site['index']).parent} was built from the store {replaced}; it now "
                         f"shows the store {result.site['store']}", err=True)
        elif (result.site or {}).get("replaced_unnamed"):
            echo_wrapped(f"Warning: {Path(result.site['index']).parent} named no store it was built from (an older wb "
                         f"built it, or its manifest is damaged); it now shows the store {result.site['store']}",
                         err=True)
        if json_:
            print_json({"format": result.format, "markdown": result.markdown, "page": result.page,
                        "site": result.site})
        elif result.format == "md":
            typer.echo(result.markdown, nl=False)
            return
        else:
            hypotheses = count(len(result.site["hypotheses"]), "hypothesis", "hypotheses")
            echo_wrapped(f"site: {result.site['index']} ({hypotheses}, {count(len(result.site['runs']), 'run')}, "
                         f"from the store {result.site['store']})")
            if hypothesis:
                typer.echo(f"hypothesis page: {result.page}")
        if open_ and result.format == "html":
            _open_in_browser(Path(result.page or result.site["index"]))

    @app.command("lineage")
    def lineage(
        as_json: JsonOption = False,
        db: DbOption = None,
        root: RootOption = None,
        fmt: FormatOption = None,
    ) -> None:
        """Print the hypothesis lineage (parent → child) with each hypothesis' status.

        The default is an indented tree; --format table|csv|tsv gives one hypothesis a row; --json (or --format
        json) the hypotheses under "items", as every listing, and the graph's "edges" beside them."""
        chosen = list_format(fmt, as_json) if (fmt or as_json) else "tree"
        wb = open_workbench(db, root)
        with telling_left_out(wb):
            nodes = wb.lineage()
        if chosen == "json":
            rows = [n.to_dict() for n in nodes]
            # "nodes" is the name wb: 1 first shipped these rows under; it stays (the same list) while the
            # envelope's version is 1, so scripts written against it keep working (see JSON_VERSION).
            print_json({"items": rows, "nodes": rows, "edges": wb.lineage_edges()})
        elif chosen == "tree":
            typer.echo(lineage_text(nodes, width=terminal_width() if is_tty() else None))
        else:
            emit_rows(chosen, ["id", "parent", "depth", "status", "claim"],
                      [[n.status.hypothesis.id, n.status.hypothesis.parent or "", n.depth, n.status.status,
                        n.status.hypothesis.claim] for n in nodes])


def lineage_text(nodes: list["LineageNode"], *, width: int | None = None) -> str:
    """The DAG as a tree, one hypothesis a line: `id  [status]  claim`, a child under its parent with `├─` (more
    siblings below it, `│` carrying the parent's line past it) or `└─` (the last). `width`: a terminal's, at which
    each claim wraps between words, as every line of the CLI does on a terminal, its later lines indented under the
    tree's lines carried down (an id and a status are never broken: where they alone do not fit, the line runs on);
    None, in a pipe: one hypothesis a line, whatever its length. A child whose parent is not among `nodes` (its entry
    left out for a problem of its own) stands as a root, its parent named."""
    ids = {n.status.hypothesis.id for n in nodes}
    children: dict[str | None, list["LineageNode"]] = {}
    for n in nodes:
        parent = n.status.hypothesis.parent
        children.setdefault(parent if parent in ids else None, []).append(n)
    lines: list[str] = []
    # (node, what the lines above it carry down, its own branch); a root has no branch.
    stack: list[tuple["LineageNode", str, str]] = [(n, "", "") for n in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        n, lead, branch = stack.pop()
        h = n.status.hypothesis
        if h.id in seen:
            continue
        seen.add(h.id)
        below = lead + {"": "", "├─ ": "│  ", "└─ ": "   "}[branch]
        kids = [c for c in children.get(h.id, []) if c.status.hypothesis.id not in seen]
        head = f"{lead}{branch}{h.id}  [{n.status.status}]"
        claim = " ".join(h.claim.replace("\t", " ").splitlines())  # one hypothesis a line, as in a piped listing
        if h.parent is not None and h.parent not in ids:  # its parent's entry has a problem of its own
            claim = f"(its parent {h.parent} is left out)  {claim}"  # prose: it wraps with the claim
        lines += _node_lines(head, claim, width, below + ("│  " if kids else "   ") + "  ")
        branches = ["├─ "] * (len(kids) - 1) + ["└─ "]
        stack.extend((c, below, b) for c, b in reversed(list(zip(kids, branches))))
    return "\n".join(lines)


_KEEP = "\x00"  # stands for a space of the head while its line is wrapped: `wrap` never breaks there


def _node_lines(head: str, claim: str, width: int | None, indent: str) -> list[str]:
    """A hypothesis' line (`head  claim`): whole in a pipe; on a terminal wrapped between the claim's words at
    `width`, each later line starting with `indent`, the head kept whole on the first."""
    from workbench.wrapping import wrap

    if width is None:
        return [f"{head}  {claim}".rstrip()]
    first, rest = head[:len(head) - len(head.lstrip())], head.lstrip()  # a tree's guides are not its words
    kept = first + rest.replace(" ", _KEEP)
    return [line.replace(_KEEP, " ") for line in wrap(f"{kept}  {claim}".rstrip(), width, indent)]
