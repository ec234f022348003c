"""The ssh and scp command lines the ssh target prints for a person to run by hand: host keys checked as wb
checks them, whatever the operator's ssh config says, through the same jump chain, the environment on the input."""

from __future__ import annotations

import shlex
from typing import Any, Mapping

from workbench.runner.targets.ssh_dial import config_jump, parse_jump
from workbench.runner.targets.ssh_shell import ENV_FROM_INPUT, EXPORT_SED


class PrintedSsh:
    """Part of SshTarget (its `spec`, `known_hosts_file` and `_options`)."""

    spec: Any

    def _client_opts(self, port_flag: str, host: str) -> list[str]:
        """Options that ssh and scp spell alike (the port flag differs: -p for ssh, -P for scp)."""
        argv = []
        if self.spec.port:
            argv += [port_flag, str(self.spec.port)]
        argv += self._checks()
        chain = self._printed_jump(host)
        if chain:
            argv += ["-o", "ProxyCommand=" + self._proxy(chain)]
        return argv

    def _checks(self) -> list[str]:
        # The printed commands verify host keys as wb does, whatever the operator's ssh config says.
        argv = ["-i", self.spec.identity_file] if self.spec.identity_file else []
        return argv + ["-o", f"UserKnownHostsFile={self.known_hosts_file()}", "-o", "StrictHostKeyChecking=yes"]

    def _printed_jump(self, host: str) -> str | None:
        if self.spec.jump:
            return self.spec.jump
        try:
            return config_jump(host, {k: v for k, v in self._options().items() if k in ("username", "port")})
        except Exception:  # instructions are printed whatever the config holds; ssh then reads it itself
            return None

    def _proxy(self, chain: str) -> str:
        """OpenSSH's ProxyCommand reaching %h:%p through each hop of a jump chain, every hop checked as the
        printed command itself is (ssh -J checks a jump host as ~/.ssh/config says, against its own known_hosts).
        A hop's own ProxyCommand is inside the next one's, its % tokens doubled so that they reach it unexpanded."""
        proxy = None
        for hop in chain.split(","):
            jhost, jopts = parse_jump(hop.strip())
            argv = ["ssh", *self._checks()]
            if proxy:
                argv += ["-o", "ProxyCommand=" + proxy.replace("%", "%%")]
            if "port" in jopts:
                argv += ["-p", str(jopts["port"])]
            if "username" in jopts:
                argv += ["-l", jopts["username"]]
            proxy = shlex.join([*argv, "-W", "[%h]:%p", jhost])
        return proxy or ""

    def _dest(self, host: str) -> str:
        return f"{self.spec.user}@{host}" if self.spec.user else host

    def _ssh_argv(self, host: str) -> list[str]:
        return ["ssh", *self._client_opts("-p", host), self._dest(host)]

    def manual_command(self, host: str, command: str, env: Mapping[str, str] | None = None) -> str:
        """The ssh command line; `env` goes on the input as export lines, as for wb's own commands (each value
        quoted by the pasting shell, through printf and sed as any POSIX shell has them, so a "$NAME" reference
        is never on the host's command line). It
        is read to its end (`eval "$(cat)"`), not as `in_own_group` reads it: a pasted command's input ends at
        once, which would stop the group a watcher of it guards."""
        ssh = shlex.join(self._ssh_argv(host))
        if not env:
            return ssh + " " + shlex.quote(command)
        exports = " ".join(f"printf 'export %s=' {k}; printf '%s\\n' {w} | {EXPORT_SED};" for k, w in env.items())
        return f"{{ {exports} }} | {ssh} {shlex.quote(ENV_FROM_INPUT + command)}"

    def manual_copy(self, host: str, local_file: str, path: str) -> str:
        return shlex.join(["scp", *self._client_opts("-P", host), local_file, f"{self._dest(host)}:{path}"])
