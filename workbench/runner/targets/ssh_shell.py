"""A command as the host's shell gets it over SSH: its environment as quoted `export` lines on its input,
and the wrapper that runs it in a process group of its own, stopped when its channel closes."""

from __future__ import annotations

import shlex

KILL_GRACE_S = 3.0


ENV_FROM_INPUT = 'eval "$(cat)"; '  # the command's prefix when its environment comes on its input


# A restore by hand's export line for NAME, made by whichever shell the command is pasted into (dash has no
# printf %q): the pasting shell expands the word (a quoted value, or a "$NAME" reference to a secret), and sed
# quotes the result in '...' for the host's shell, whatever that is (bash's %q wrote $'...', which dash cannot
# read); a newline in the value stays inside the quotes. The name is printed apart from the quoted value: what wb
# prints is masked, and `NAME='...` with a NAME like KV_API_TOKEN has a secret's shape (the sed program was masked).
EXPORT_SED = r'''sed "s/'/'\\\\''/g;1s/^/'/;\$s/\$/'/"'''


def _env_script(env: dict[str, str]) -> bytes:
    return ("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + "\n").encode()


def env_input(env: dict[str, str]) -> bytes:
    """What a command's input starts with when it has an environment: the export lines' length, then them."""
    script = _env_script(env)
    return f"{len(script)}\n".encode() + script


# A command as the host's shell gets it. OpenSSH without a terminal ends no command when its channel closes, and
# refuses a signal to a root session ("session signalling requires privilege separation"): a workload past its
# timeout, or stopped by Ctrl-C, ran on and loaded the service through the next arm's run. So the command runs in a
# process group of its own (setsid, under the login shell that would have run it) with /dev/null as its input,
# while a watcher reads the channel's input, which wb never ends: the channel closing (wb stops the command, wb
# dies, the link drops) ends the input, and the watcher stops the group, TERM then KILL. A command that ends by
# itself stops the watcher first, so what it started in the background (a restart's `nohup server &`) runs on.
# The environment, when there is one, comes first on the input: its byte count on a line, then the export lines.
_READ_ENV = 'IFS= read -r wb_n && wb_env=$(head -c "$wb_n") && eval "$wb_env" || exit 125; '
_IN_GROUP = (
    'if command -v setsid >/dev/null 2>&1; then exec 3<&0; '
    'setsid "${SHELL:-/bin/sh}" -c "$wb_cmd" </dev/null 3<&- & wb_pid=$!; '
    '( while IFS= read -r wb_l; do :; done; trap "" TERM; kill -TERM -- "-$wb_pid" 2>/dev/null; '
    f'sleep {KILL_GRACE_S:g}; kill -KILL -- "-$wb_pid" 2>/dev/null ) <&3 >/dev/null 2>&1 & wb_watch=$!; exec 3<&-; '
    """trap 'kill -TERM -- "-$wb_pid" 2>/dev/null' HUP INT TERM; """
    'wait "$wb_pid"; wb_rc=$?; while kill -0 "$wb_pid" 2>/dev/null; do wait "$wb_pid"; wb_rc=$?; done; '
    'kill "$wb_watch" 2>/dev/null; exit "$wb_rc"; '
    'else exec "${SHELL:-/bin/sh}" -c "$wb_cmd" </dev/null; fi')


def in_own_group(command: str, with_env: bool) -> str:
    """`command` wrapped to run in a process group of its own that the channel's closing stops (see above)."""
    return (_READ_ENV if with_env else "") + f"wb_cmd={shlex.quote(command)}; " + _IN_GROUP
