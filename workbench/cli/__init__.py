"""The `wb` command line: one typer app per command group, joined in `workbench.cli.main`."""
