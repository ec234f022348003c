"""Reading a file the user named (a hypotheses or experiment file, an evidence CSV): whatever keeps it from
being read is said in words at its file (and line), not as Python's errno or codec text."""

from __future__ import annotations

from pathlib import Path

from workbench.errors import ConfigError


MAX_USER_FILE_BYTES = 64 * 1024 * 1024  # an evidence CSV's limit too (registry/evidence.py)


def read_user_text(path: str | Path, *, encoding: str = "utf-8") -> str:
    """The text of `path`. FileNotFoundError propagates (each caller says what to do about a missing file);
    a folder, a file it may not read, one over MAX_USER_FILE_BYTES (read no further: /dev/zero has no end), or
    bytes that are not UTF-8 text is a ConfigError."""
    file = str(path)
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(MAX_USER_FILE_BYTES + 1)
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise ConfigError("is a folder, not a file", file=file) from None
    except PermissionError:
        raise ConfigError("cannot read it: permission denied", file=file,
                          hint="check the file's permissions (ls -l)") from None
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror or exc}", file=file) from None
    if len(data) > MAX_USER_FILE_BYTES:
        raise ConfigError(f"the file is too large (more than {MAX_USER_FILE_BYTES / 1e6:.0f} MB)", file=file,
                          hint="is it the file you meant?")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        # Decoded whole, so the error's offset is into the file's own bytes (less a BOM, which holds no newline).
        line = exc.object.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} on this line)", file=file, line=line,
                          hint="save it as UTF-8 (a spreadsheet: CSV UTF-8); "
                               "a binary file is not one wb reads") from None
