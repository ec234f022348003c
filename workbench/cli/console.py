"""The `wb` console script's entry point: a Ctrl-C while the commands are imported is held and told once `main`
runs (`_startup`). Only here: a program importing `workbench.cli.main` (a test, a script) keeps its own Ctrl-C."""

from __future__ import annotations


def main() -> None:
    from workbench.cli import _startup

    _startup.hold()
    try:
        from workbench.cli.main import main as run
    finally:
        _startup.let_go()  # a Ctrl-C held meanwhile is raised by `begin`, inside `run`'s boundary
    run()
