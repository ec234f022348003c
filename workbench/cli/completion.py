"""`wb --install-completion [SHELL]` and `wb --show-completion [SHELL]`, read before typer parses.

typer's own flags take no value: `wb --install-completion bash` ignored "bash" and detected the shell
from the process tree, so run from a script under sh it failed ("Shell sh is not supported") and run
from zsh it installed zsh's script. Here the shell named wins; only the bare flag detects one.
"""

from __future__ import annotations

import sys

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
FLAGS = ("--install-completion", "--show-completion")


def handle(argv: list[str]) -> int | None:
    """The exit code when argv is a completion request (`FLAG` or `FLAG SHELL`), else None."""
    if not argv or argv[0] not in FLAGS or len(argv) > 2:
        return None
    from typer._completion_shared import _get_shell_name, get_completion_script, install
    from typer.completion import completion_init

    flag = argv[0]
    shell = argv[1] if len(argv) == 2 else _get_shell_name()
    if shell not in SHELLS:
        named = f"'{shell}'" if len(argv) == 2 else f"the shell detected ({shell or 'none'})"
        sys.stderr.write(f"Error: {flag}: {named} is not one of {', '.join(SHELLS)}; name one, e.g. "
                         f"`wb {flag} bash`\n")
        return 2
    completion_init()
    if flag == "--show-completion":
        sys.stdout.write(get_completion_script(prog_name="wb", complete_var="_WB_COMPLETE", shell=shell) + "\n")
        return 0
    installed, path = install(shell=shell, prog_name="wb", complete_var="_WB_COMPLETE")
    sys.stdout.write(f"{installed} completion installed in {path}; it takes effect in a new terminal\n")
    return 0
