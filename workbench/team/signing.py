"""Bundle signatures: OpenSSH signatures (`ssh-keygen -Y`, OpenSSH 8.2 or newer) over a bundle file's bytes.

A bundle names who made it (`created_by`), but anyone can write a name, and a bundle edited after export
imports like any other. `wb bundle export --sign KEY` signs the file with an SSH key the team already has,
in the namespace `wb-bundle` (a signature made for git commits or a login cannot be passed off as one of a
bundle), into `FILE.sig` beside it. `wb bundle import FILE --signers ALLOWED` imports it only when `FILE.sig`
verifies against an allowed-signers file (ssh-keygen(1), "ALLOWED SIGNERS": one `principal key` line per
teammate), and says whose key it was. The bytes verified are the bytes imported: the file is read once.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import BadInput

NAMESPACE = "wb-bundle"
VERIFY_TIMEOUT_S = 60.0  # verification asks nothing of the user; signing may ask a key's passphrase (no limit)
MAX_SIGNATURE_BYTES = 64 * 1024  # an armored signature: a few hundred bytes (an RSA key's, a certificate's: a few KB)
MAX_ALLOWED_SIGNERS_BYTES = 16 * 1024 ** 2  # one line per key: about 100 bytes (an RSA key's: 600)
MAX_LOOKUPS = 16  # find-principals runs for one signature: each sets aside the lines of the principals it named
MAX_LINES_SAID = 5  # lines of the allowed-signers file an error names


@dataclass(frozen=True)
class Signer:
    """Whose key signed a bundle: the principal of the allowed-signers line that holds it, and the key as
    ssh-keygen names it (`ED25519 key SHA256:...`)."""

    principal: str
    key: str

    def __str__(self) -> str:
        return f"{self.principal} with {self.key}" if self.key else self.principal

    def to_dict(self) -> dict[str, str]:
        return {"principal": self.principal, "key": self.key}


def signature_path(bundle: Path) -> Path:
    """Where a bundle's signature lies: `FILE.sig` beside `FILE`, as `ssh-keygen -Y sign FILE` writes it."""
    return bundle.with_name(bundle.name + ".sig")


def _keygen(args: list[str], *, data: bytes | None, flag: str, timeout: float | None,
            stdin_inherited: bool = False) -> "subprocess.CompletedProcess":
    """ssh-keygen run with `args`, `data` on its stdin (none: /dev/null, or wb's own stdin if `stdin_inherited`)."""
    exe = shutil.which("ssh-keygen")
    if exe is None:
        raise BadInput(f"{flag}: signatures need ssh-keygen (OpenSSH 8.2 or newer), which is not on PATH",
                       where=flag, hint="install the OpenSSH client")
    try:
        stdin = {} if data is not None or stdin_inherited else {"stdin": subprocess.DEVNULL}
        return subprocess.run([exe, *args], input=data, capture_output=True, timeout=timeout, check=False, **stdin)
    except subprocess.TimeoutExpired as exc:
        raise BadInput(f"{flag}: ssh-keygen ({exe}) did not finish in {timeout:g} s", where=flag,
                       hint="is it OpenSSH's ssh-keygen (8.2 or newer)?") from exc
    except OSError as exc:
        raise BadInput(f"{flag}: cannot run ssh-keygen ({exe}): {exc.strerror or exc}", where=flag,
                       hint="install the OpenSSH client") from exc


def _said(proc: "subprocess.CompletedProcess") -> str:
    """ssh-keygen's own reason, its last line (earlier ones say what it was doing)."""
    lines = [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else f"ssh-keygen exited {proc.returncode}"


def check_key(key: Path) -> None:
    """A signing key that is not a readable file is bad input at `--sign`, before anything is exported."""
    if not key.is_file():
        raise BadInput(f"--sign {key}: no key file there", where="--sign",
                       hint="give a private SSH key (e.g. ~/.ssh/id_ed25519), or a public key whose private half "
                            "ssh-agent holds")


def sign(data: bytes, key: Path) -> bytes:
    """The armored SSH signature of `data` by `key` (a private key, or a public key whose private half an agent
    holds; a passphrase is asked on the terminal, as ssh-keygen asks it)."""
    check_key(key)
    # ssh-keygen signs a private copy of the bytes, not its stdin: stdin stays the user's, where ssh-keygen reads a
    # key's passphrase when there is no terminal (it would read the bundle's bytes as one)
    with tempfile.TemporaryDirectory(prefix="wb-sign-") as private:
        copy = Path(private) / "bundle"
        copy.write_bytes(data)
        proc = _keygen(["-Y", "sign", "-n", NAMESPACE, "-f", str(key), str(copy)], data=None, flag="--sign",
                       timeout=None, stdin_inherited=True)
        armored = copy.with_name("bundle.sig")
        signature = armored.read_bytes() if proc.returncode == 0 and armored.is_file() else b""
    if not signature.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        raise BadInput(f"--sign {key}: ssh-keygen could not sign with it ({_said(proc)}); nothing was exported",
                       where="--sign", hint="is it a private SSH key (or its public key, with the key in "
                                            "ssh-agent: ssh-add KEY)? A key's passphrase is asked on the terminal, "
                                            "or read from standard input")
    return signature


def verify(data: bytes, bundle: Path, signers: Path) -> Signer:
    """Whose key in the allowed-signers file `signers` signed `data` (the bytes of `bundle`), by `bundle`'s
    `.sig` in the namespace `wb-bundle`; bad input (naming what failed) when it is not one of them."""
    if not signers.is_file():
        raise BadInput(f"--signers {signers}: no allowed-signers file there", where="--signers",
                       hint="one line per teammate: 'ada@example.com ssh-ed25519 AAAA...' (ssh-keygen(1), "
                            "ALLOWED SIGNERS)")
    sig = signature_path(bundle)
    armored = _signature_bytes(sig, bundle)
    lines = _allowed_lines(signers)
    # ssh-keygen reads wb's private copies of the signature and of the allowed signers: each of its runs sees the
    # bytes wb read, whatever happens to the files meanwhile, and a line can be set aside in the copy
    with tempfile.TemporaryDirectory(prefix="wb-sig-") as private:
        copy, allowed = Path(private) / "bundle.sig", Path(private) / "allowed_signers"
        copy.write_bytes(armored)
        aside: dict[int, str] = {}  # line number -> why ssh-keygen refused that line for this signature
        for _ in range(MAX_LOOKUPS):
            # a line set aside becomes a comment: ssh-keygen (9.2) says "missing key" of an empty line
            allowed.write_bytes(b"\n".join(b"#" if n in aside else ln for n, ln in enumerate(lines, 1)))
            find = _keygen(["-Y", "find-principals", "-s", str(copy), "-f", str(allowed)], data=None,
                           flag="--signers", timeout=VERIFY_TIMEOUT_S)
            unreadable = _lines_said(find, allowed, lines)
            if find.returncode != 0:
                raise _not_allowed(sig, signers, aside, unreadable, _said(find))
            signer, reasons, refused = _verify_found(find, data, copy, allowed, lines)
            if signer is not None:
                _refuse_unreadable(signers, signer, unreadable)
                return signer
            # find-principals names only the first line holding the key: a line that allows it for git only hides
            # a later one that allows it for bundles, so the refused lines are set aside and the key looked up again
            refused = {n: why for n, why in refused.items() if n not in unreadable and n not in aside}
            if not refused:
                said = "; ".join(dict.fromkeys(r.replace(str(allowed), str(signers)) for r in reasons))
                raise BadInput(f"{sig} does not verify {bundle}: the file changed after it was signed, or the "
                               f"signature is another file's or not a bundle's ({said}); nothing was imported",
                               where=str(bundle), hint="ask the sender to export and sign it again")
            aside.update(refused)
    # a file can hold the key under any number of principals: each lookup runs ssh-keygen over the whole file
    raise _not_allowed(sig, signers, aside, {}, "", stopped=True)


def _allowed_lines(signers: Path) -> list[bytes]:
    """The lines of the allowed-signers file, read once and bounded (as ssh-keygen splits them: at newlines)."""
    try:
        with open(signers, "rb") as f:
            text = f.read(MAX_ALLOWED_SIGNERS_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"--signers {signers}: cannot read it: {exc.strerror or exc}", where="--signers") from exc
    if len(text) > MAX_ALLOWED_SIGNERS_BYTES:
        raise BadInput(f"--signers {signers} is larger than {MAX_ALLOWED_SIGNERS_BYTES} bytes, so not an "
                       "allowed-signers file", where="--signers")
    return text.split(b"\n")


def _lines_said(proc: "subprocess.CompletedProcess", allowed: Path, lines: list[bytes]) -> dict[int, str]:
    """What ssh-keygen said of a line of the allowed-signers file `allowed` ('FILE:LINE: why'), by line number; not
    of a blank line or a comment (`lines`, the file's), which it skips but for its "missing key" of an empty one."""
    prefix = f"{allowed}:"
    out: dict[int, str] = {}
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        number, sep, why = line.removeprefix(prefix).partition(": ")
        if line.startswith(prefix) and sep and number.isdigit() and 0 < int(number) <= len(lines):
            text = lines[int(number) - 1].strip()
            if text and not text.startswith(b"#"):
                out.setdefault(int(number), why.strip()[:200])
    return out


# What ssh-keygen says of a line it read but that does not allow the key now (expired, not yet valid, another
# namespace); anything else it says of a line means it could not read it.
READ_BUT_REFUSED = ("key has expired", "key is not yet valid", "key is not permitted")


def _refuse_unreadable(signers: Path, signer: Signer, said: dict[int, str]) -> None:
    """Refuse an import whose allowed-signers file has lines ssh-keygen could not read (and skipped), though
    another line allowed the key: the file does not say what its author meant (a key, a restriction, lost)."""
    unreadable = {n: why for n, why in said.items() if not why.startswith(READ_BUT_REFUSED)}
    if not unreadable:
        return
    named = [f"{signers}:{n}: {why}" for n, why in sorted(unreadable.items())]
    more = f"; and {len(named) - MAX_LINES_SAID} more lines" if len(named) > MAX_LINES_SAID else ""
    raise BadInput(f"--signers {signers}: ssh-keygen cannot read {'; '.join(named[:MAX_LINES_SAID])}{more}; the "
                   f"signature verified by {signer}, but a file with lines ssh-keygen skips may not trust what its "
                   "author meant it to; nothing was imported", where=f"{signers}:{min(unreadable)}",
                   hint="fix or remove the lines named (or comment them out with #). Each line: PRINCIPALS "
                        "[OPTIONS] KEY-TYPE BASE64-KEY, as the key's .pub file gives it (ssh-keygen(1), ALLOWED "
                        "SIGNERS)")


def _verify_found(find: "subprocess.CompletedProcess", data: bytes, copy: Path, allowed: Path,
                  lines: list[bytes]) -> tuple[Signer | None, list[str], dict[int, str]]:
    """The signer among the principals find-principals named, or (None, ssh-keygen's reasons, what it said of
    each line it refused)."""
    reasons, refused = [], {}
    # one principal a line, as the allowed-signers file spells it (a quoted one may hold a space)
    for principal in dict.fromkeys(filter(None, find.stdout.decode("utf-8", "replace").splitlines())):
        proc = _keygen(["-Y", "verify", "-f", str(allowed), "-I", principal, "-n", NAMESPACE, "-s", str(copy)],
                       data=data, flag="--signers", timeout=VERIFY_TIMEOUT_S)
        if proc.returncode == 0:
            return Signer(principal, _key_named(proc.stdout.decode("utf-8", "replace"))), [], {}
        reasons.append(_said(proc))
        refused.update(_lines_said(proc, allowed, lines))
    return None, reasons, refused


def _not_allowed(sig: Path, signers: Path, aside: dict[int, str], unreadable: dict[int, str], said: str,
                 stopped: bool = False) -> BadInput:
    """Why no line of `signers` allows the key that signed `sig`: each line that holds it was refused for a bundle
    (`aside`: for git only, expired), ssh-keygen refused other lines (`unreadable`: unreadable, or expired ones
    holding the key: its messages alone tell them apart), or the key is not there. `stopped`: wb stopped looking
    after MAX_LOOKUPS lookups."""
    def lines(found: dict[int, str]) -> str:
        named = [f"{signers}:{n}: {why}" for n, why in sorted(found.items())]
        more = f"; and {len(named) - MAX_LINES_SAID} more lines" if len(named) > MAX_LINES_SAID else ""
        return "; ".join(named[:MAX_LINES_SAID]) + more

    if aside:
        others = f"; ssh-keygen also refused {lines(unreadable)}" if unreadable else ""
        where = (f"; wb stopped after {MAX_LOOKUPS} lookups of the key, each finding it under other principals"
                 if stopped else "")
        return BadInput(f"{sig}: the key that signed it is in {signers}, but not for wb-bundle signatures: "
                        f"ssh-keygen refused {lines(aside)}{others}{where}; nothing was imported",
                        where=f"{signers}:{min(aside)}",
                        hint='allow it for bundles: add wb-bundle to that line\'s namespaces="..." list, or add a '
                             'line for the key with namespaces="wb-bundle", near the top of the file; a line past '
                             'its valid-before allows its key no longer (ssh-keygen(1), ALLOWED SIGNERS)')
    if unreadable:
        return BadInput(f"--signers {signers}: ssh-keygen refused {lines(unreadable)}, and no other line of the "
                        f"allowed-signers file holds the key that signed {sig}; nothing was imported",
                        where=f"{signers}:{min(unreadable)}",
                        hint="fix or remove the lines named. Each line: PRINCIPALS [OPTIONS] KEY-TYPE BASE64-KEY, "
                             "e.g. 'ada@example.com ssh-ed25519 AAAA...' as the key's .pub file gives it; a line "
                             "past its valid-before allows its key no longer (ssh-keygen(1), ALLOWED SIGNERS)")
    return BadInput(f"{sig}: not a signature by a key of {signers} ({said}); nothing was imported", where=str(sig),
                    hint="add the sender's public key to the allowed-signers file, if you trust it")


def _signature_bytes(sig: Path, bundle: Path) -> bytes:
    """The bytes of `sig`, read once and bounded: missing, not a regular file (a folder, a FIFO, a device), too
    large or unreadable is bad input, before ssh-keygen reads anything."""
    try:
        fd = os.open(sig, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO does not block the open
    except FileNotFoundError:
        raise BadInput(f"{bundle} is not signed (no {sig}); nothing was imported", where=str(bundle),
                       hint="ask for a bundle exported with --sign KEY, or import without --signers to take it "
                            "unsigned") from None
    except OSError as exc:
        raise BadInput(f"cannot read {sig}: {exc.strerror or exc}; nothing was imported", where=str(sig)) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadInput(f"{sig} is not a regular file, so not a signature; nothing was imported", where=str(sig),
                           hint="ask the sender for the FILE.sig that `wb bundle export --sign` wrote")
        with os.fdopen(fd, "rb", closefd=False) as f:
            armored = f.read(MAX_SIGNATURE_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {sig}: {exc.strerror or exc}; nothing was imported", where=str(sig)) from exc
    finally:
        os.close(fd)
    if len(armored) > MAX_SIGNATURE_BYTES:
        raise BadInput(f"{sig} is larger than {MAX_SIGNATURE_BYTES} bytes, so not a signature; nothing was imported",
                       where=str(sig), hint="ask the sender for the FILE.sig that `wb bundle export --sign` wrote")
    return armored


def _key_named(said: str) -> str:
    """`ED25519 key SHA256:...` out of ssh-keygen's 'Good "wb-bundle" signature for P with ED25519 key SHA256:...'."""
    _, sep, key = said.strip().rpartition(" with ")
    return key.strip() if sep else ""
