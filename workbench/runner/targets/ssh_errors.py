"""Why the ssh target cannot connect, in words: the known_hosts and key files checked before any connection, and
asyncssh's error from a connection told with the host, the file and what to do (a missing or changed host key, a
refused login, a closed port, a timeout)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from workbench.errors import TargetError
from workbench.runner.targets.ssh_dial import port_closed
from workbench.runner.targets.ssh_known_hosts import key_host, port_exact


class SshErrors:
    """Part of SshTarget (its `spec`, `hosts`, `describe` and `known_hosts_file`)."""

    spec: Any
    hosts: list[str]

    def check_local(self) -> None:
        """The known_hosts file and the key file, before any connection: a missing, unreadable or undecodable
        one is named as such (a known_hosts file that is no text ended in a UnicodeDecodeError traceback)."""
        self._check_known_hosts()
        self._check_identity()

    def _check_known_hosts(self) -> None:
        import asyncssh

        kh = self.known_hosts_file()
        port = self.spec.port or 22
        hint = (f"fetch the key on a trusted path (`ssh-keyscan -p {port} HOST`), compare its fingerprint with "
                f"the host's own, then add it to {kh} (or set known_hosts: in the profile's target)")
        if not Path(kh).exists():
            raise TargetError(
                f"the known_hosts file {kh} does not exist: wb verifies every SSH host key and has none to check "
                f"{', '.join(self.describe(h) for h in self.hosts)} against", hint=hint, setting="known_hosts")
        if not Path(kh).is_file():
            raise TargetError(f"the known_hosts file {kh} is not a file", hint=hint, setting="known_hosts")
        try:
            asyncssh.read_known_hosts(kh)
        except (OSError, ValueError) as exc:  # unreadable, or no text (UnicodeDecodeError)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise TargetError(f"cannot read the known_hosts file {kh}: {reason}", hint=hint,
                              setting="known_hosts") from None

    def _check_identity(self) -> None:
        """The profile's key file, loaded once before any connection: a missing file, or one that is no key or
        needs a passphrase, is named as such (asyncssh's error named neither the file nor the key)."""
        import asyncssh

        if not self.spec.identity_file:
            return
        path = Path(self.spec.identity_file).expanduser()
        if not path.is_file():
            raise TargetError(f"the identity_file {path} does not exist", setting="identity_file",
                              hint="set identity_file: in the profile's target to your private key, or leave it "
                                   "out to use the agent and ~/.ssh's default keys")
        try:
            asyncssh.read_private_key(str(path))
        except (asyncssh.KeyImportError, OSError) as exc:
            raise TargetError(f"cannot use the identity_file {path}: {exc}", setting="identity_file",
                              hint="wb asks for no passphrase: load the key into the agent (ssh-add) and leave "
                                   "identity_file out, or name an unencrypted private key") from None

    def _translate(self, host: str, exc: BaseException, *, port: int | None, jump: str | None = None) -> TargetError:
        """`exc` from connecting to `host` on `port`, the port dialled as given (None: ~/.ssh/config's, else 22);
        `jump`: the hop of a jump chain that `host` is, as written there."""
        import asyncssh

        where = f"jump host {jump}" if jump else self.describe(host)
        if isinstance(exc, asyncssh.HostKeyNotVerifiable):
            kh = self.known_hosts_file()  # as read: `~` is the runner's home, which sudo or $HOME may have moved
            real, name, port = key_host(host, port)
            entry = name if port == 22 else f"[{name}]:{port}"  # as ssh writes a known_hosts line
            scan = f"ssh-keyscan -p {port} {real}"
            compare = "compare with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host"
            if not self._known(name, port):
                return TargetError(
                    f"refusing {where}: {kh} holds no host key for {entry}",
                    hint=(f"fetch its key on a trusted path (`{scan} > key.txt`), {compare} against "
                          f"`ssh-keygen -lf key.txt`, then append key.txt to {kh}"))
            return TargetError(
                f"refusing {where}: its host key does not match {kh} ({exc.reason})",
                hint=(f"verify the key out of band: `{scan} | ssh-keygen -lf -` on a trusted path and {compare}; "
                      f"only if it legitimately changed, run `ssh-keygen -R '{entry}' -f {kh}` and add the "
                      f"verified key"))
        if isinstance(exc, asyncssh.PermissionDenied):
            return TargetError(f"{where} refused the login: {exc.reason}",
                               hint="check user, identity_file or the agent (ssh-add -l)")
        if port_closed(exc):
            real, _, port = key_host(host, port)
            setting = ("the profile's jump: as host:port, or ProxyJump or Port in ~/.ssh/config" if jump
                       else "the profile's port:, or Port in ~/.ssh/config")
            return TargetError(f"cannot reach {where}: {real} refused the connection on port {port}",
                               hint=f"check the port ({setting}) and that sshd runs there")
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return TargetError(f"{where} did not answer within {self.spec.connect_timeout_s:g} s",
                               hint="check the host name, port and network (ssh -v)")
        if isinstance(exc, OSError):
            return TargetError(f"cannot reach {where}: {exc.strerror or exc}",
                               hint="check the host name, port, ~/.ssh/config and that sshd runs there")
        if isinstance(exc, asyncssh.Error):
            return TargetError(f"SSH to {where} failed: {exc.reason}")
        return TargetError(f"SSH to {where} failed: {exc}")

    def _known(self, name: str, port: int) -> bool:
        """Whether the known_hosts file holds any host key (or CA) for `name` on `port`."""
        try:
            found = port_exact(self.known_hosts_file())(name, "", port)
        except (OSError, ValueError):
            return True  # unreadable here: say no more than that the key does not match
        return bool(found[0] or found[1])
