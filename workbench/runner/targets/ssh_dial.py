"""How the ssh target dials a host: directly (`_Dialer`, keeping every address's error as `Unreachable`) or
through a jump chain, and what a failed connection says (a closed port, a refusal)."""

from __future__ import annotations

import asyncio
import errno
import os
import re
from typing import Any, Callable

MAX_JUMP_DEPTH = 8  # jump hosts reached through jump hosts ~/.ssh/config names, at most this deep


def config_jump(host: str, opts: dict[str, Any]) -> str | None:
    """The ProxyJump ~/.ssh/config gives `host` (None: none, or `ProxyJump none`)."""
    import asyncssh

    found = asyncssh.SSHClientConnectionOptions(host=host, config=(), **opts).tunnel
    return found if isinstance(found, str) and found else None


def refusal(exc: BaseException | None) -> bool:
    """Whether a connection failed because the host refused wb (or wb the host), not for a cause that may pass."""
    import asyncssh

    return isinstance(exc, (asyncssh.HostKeyNotVerifiable, asyncssh.PermissionDenied)) or port_closed(exc)


# What an asyncssh jump host answers a forward every address of whose name failed with: asyncio's text, all it has.
_MANY_FAILED = "Multiple exceptions: "
_ONE_ATTEMPT = re.compile(r", (?=\[Errno -?\d+\] )")
_REFUSED = re.compile(rf"\[Errno {errno.ECONNREFUSED}\] [^,()]*(\([^()]*\))?")  # "... Connect call failed (addr)"


class Unreachable(OSError):
    """Every address of a name failed to connect, each with its own error (`attempts`)."""

    def __init__(self, attempts: list[OSError]) -> None:
        super().__init__("; ".join(str(a) for a in attempts))
        self.attempts = tuple(attempts)


class _Dialer:
    """asyncssh's tunnel interface over plain TCP, for a host wb reaches directly: each address of the name is
    dialled in turn, as asyncio's create_connection does, but a failure keeps every attempt's error (`Unreachable`),
    where asyncio (3.11) joins errors whose texts differ into one OSError that keeps only their words."""

    def __init__(self, family: int = 0) -> None:
        self.family = family

    async def create_connection(self, session_factory: Callable[[], Any], host: str, port: int) -> tuple[Any, Any]:
        import socket

        if not 1 <= port <= 65535:  # getaddrinfo would take it modulo 65536: Port 70000 dialled port 4464
            raise OSError(errno.EINVAL, f"port {port} is not 1-65535")
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, family=self.family, type=socket.SOCK_STREAM)
        attempts: list[OSError] = []
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                await loop.sock_connect(sock, address)
            except OSError as exc:
                sock.close()
                attempts.append(exc)
                continue
            except BaseException:
                sock.close()
                raise
            return await loop.create_connection(session_factory, sock=sock)
        if not attempts:
            raise OSError(f"no address found for {host}")
        raise attempts[0] if len(attempts) == 1 else Unreachable(attempts)


def direct(host: str, opts: dict[str, Any]) -> _Dialer | None:
    """How wb dials `host` itself (`_Dialer`, in the AddressFamily ~/.ssh/config gives it); None where the config
    reaches it through a ProxyCommand or from a BindAddress, left to asyncssh."""
    import asyncssh

    o = asyncssh.SSHClientConnectionOptions(host=host, config=(), **opts)
    return None if o.proxy_command or o.local_addr else _Dialer(o.family)


def port_closed(exc: BaseException | None) -> bool:
    """Whether every address dialled refused the connection, from the errors themselves: a ConnectionRefusedError,
    or an `Unreachable` each of whose attempts is one. Behind a jump host, the jump (reached) dials the port itself
    and answers the forward with a ChannelOpenError in its own words, all that crosses the wire."""
    import asyncssh

    if isinstance(exc, ConnectionRefusedError):
        return True
    if isinstance(exc, Unreachable):
        return all(isinstance(a, ConnectionRefusedError) for a in exc.attempts)
    if isinstance(exc, asyncssh.ChannelOpenError):
        # OpenSSH's sshd says strerror(ECONNREFUSED); an asyncssh server passes on asyncio's text
        return exc.code == asyncssh.OPEN_CONNECT_FAILED and (
            exc.reason == os.strerror(errno.ECONNREFUSED) or _every_attempt_refused(exc.reason))
    return False


def _every_attempt_refused(text: str) -> bool:
    """Whether asyncio's text for a failed connect (a jump host's answer) says every address refused it: one
    attempt's, or several."""
    if text.startswith(_MANY_FAILED):
        return all(_REFUSED.fullmatch(a) for a in _ONE_ATTEMPT.split(text[len(_MANY_FAILED):]))
    return bool(_REFUSED.fullmatch(text))


def parse_jump(jump: str) -> tuple[str, dict[str, Any]]:
    """`[user@]host[:port]` (as in ssh -J); a bare alias is resolved through ~/.ssh/config by asyncssh."""
    opts: dict[str, Any] = {}
    user, sep, rest = jump.rpartition("@")
    if sep:
        opts["username"] = user
    host, sep, port = rest.rpartition(":")
    if sep and port.isdigit():
        opts["port"] = int(port)
    else:
        host = rest
    return host, opts
