"""Entry point of the `wb` console script: joins one typer app per command group.

Command modules import nothing heavy at module level, so `wb --help` stays fast.
"""

from __future__ import annotations

from workbench.cli._common import new_app

app = new_app("wb: hypothesis-driven debugging of ML inference deployments.")


def _register() -> None:
    from workbench.cli import kernel, sim

    app.add_typer(sim.app, name="sim")
    app.add_typer(kernel.app, name="kernel")


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
