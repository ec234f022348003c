"""known_hosts as the ssh target reads it: matched port-exact as OpenSSH matches it, and the name and port
a host's key is filed under there."""

from __future__ import annotations

from typing import Callable


def key_host(host: str, port: int | None) -> tuple[str, str, int]:
    """Where a host's key is read from and filed under in known_hosts: its HostName (as ~/.ssh/config gives
    it), the name its key goes by (the config's HostKeyAlias, else that HostName) and its port (the profile's,
    else the config's, else 22). An alias from ~/.ssh/config is not what ssh-keyscan or ssh-keygen -R take."""
    import asyncssh

    try:
        o = asyncssh.SSHClientConnectionOptions(host=host, port=port or (), config=(), known_hosts=None)
        real = o.host or host
        return real, o.host_key_alias or real, int(o.port or 22)
    except Exception:  # a message is being written: the config's own error comes with the connection
        return host, host, port or 22


def port_exact(known_hosts: str) -> Callable[[str, str, int | None], tuple]:
    """known_hosts matched as OpenSSH matches it: a host on another port than 22 by its `[host]:port` lines
    only. asyncssh falls back to the host's port-22 lines when none names the port, so one machine's key
    would vouch for another's sshd on the same address (a container's on a mapped port). Read at each
    connection, as a file name given to asyncssh would be."""
    def match(host: str, addr: str, port: int | None) -> tuple:
        import asyncssh

        kh = asyncssh.read_known_hosts(known_hosts)
        if not port or port == 22:
            return kh.match(host, addr, None)
        # With no port, asyncssh matches a name as given and tries nothing else; the address (a line filed by
        # the IP the name resolved to) is matched the same way, as a name, and its keys join the host's.
        found = [kh.match(f"[{name}]:{port}", "", None) for name in (host, addr) if name]
        return tuple([x for f in found for x in f[i]] for i in range(7))

    return match
