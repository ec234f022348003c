"""Settings: the environment and the command-line flags, read once at the edge and handed on.

Nothing below the application object reads the environment for wb's own settings; it gets them
from here (a `Settings` built from flags, with the environment filling what the flags leave unset).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from workbench.errors import BadInput

DEFAULT_LOCK_WAIT_S = 15.0


@dataclass(frozen=True)
class Settings:
    # --db / $WB_DB: a DuckDB file or a SQLAlchemy URL (default wb.duckdb in the workbench folder)
    db: str | None = None
    root: Path | None = None  # --root / $WB_ROOT: the workbench folder (default: found upward from the cwd)
    lock_wait_s: float = DEFAULT_LOCK_WAIT_S  # $WB_DB_LOCK_WAIT: how long a second writer waits for the store
    artifacts: Path | None = None  # $WB_ARTIFACTS: where run artifacts go (default .wb/artifacts)
    sim_dir: Path | None = None  # $WB_SIM_DIR: pdsim's state folder for sim targets (default .wb/sim)
    # Where `db` and `root` came from, as an error about them names them: the flag ("--db", "--root"), the
    # environment ("$WB_DB", "$WB_ROOT"), or the Python API's keyword ("db=", "root=": workbench.api).
    db_from: str = "--db"
    root_from: str = "--root"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, db: str | None = None,
                 root: str | Path | None = None, db_from: str = "--db", root_from: str = "--root") -> "Settings":
        """Settings from the flags, the environment filling what they leave unset. `db_from` and `root_from` say
        where a given `db` and `root` came from ("$WB_DB" where the command line's parser read it from the
        environment; "db=" where the Python API's caller gave it)."""
        env = os.environ if environ is None else environ
        wait = env.get("WB_DB_LOCK_WAIT", "")
        try:
            lock_wait = float(wait) if wait else DEFAULT_LOCK_WAIT_S
        except ValueError:
            lock_wait = math.nan
        if not lock_wait >= 0:  # nan too: it waited not at all, as 0 does
            raise BadInput(f"WB_DB_LOCK_WAIT={wait!r} is not a number of seconds (0 or more)",
                           hint=f"leave it unset to wait up to {DEFAULT_LOCK_WAIT_S:g} s for a store another "
                                "process holds")
        root = given_root(root, root_from)
        if root is None and env.get("WB_ROOT"):
            root, root_from = env["WB_ROOT"], "$WB_ROOT"
        if db is None and env.get("WB_DB"):
            db, db_from = env["WB_DB"], "$WB_DB"
        return cls(db=db, root=Path(root) if root else None, lock_wait_s=lock_wait,
                   artifacts=Path(env["WB_ARTIFACTS"]) if env.get("WB_ARTIFACTS") else None,
                   sim_dir=Path(env["WB_SIM_DIR"]) if env.get("WB_SIM_DIR") else None, db_from=db_from,
                   root_from=root_from)

    def with_flags(self, *, db: str | None = None, root: str | Path | None = None) -> "Settings":
        root = given_root(root)
        return replace(self, db=db if db is not None else self.db, root=Path(root) if root else self.root,
                       db_from="--db" if db is not None else self.db_from,
                       root_from="--root" if root else self.root_from)


def given_root(root: str | Path | None, source: str = "--root") -> str | Path | None:
    """--root as given; an empty one is refused, as an empty --db is: `--root "$UNSET"` must not fall back to the
    workbench found from the current folder (a script would read and write another workbench than it named).
    `source` names it as the caller gave it (`root=` in the Python API)."""
    if isinstance(root, str) and not root.strip():
        raise BadInput(f"{source} is empty", where=source, hint=f"give the workbench folder, or leave {source} out")
    return root or None


def giving_root(source: str) -> str:
    """How a user names the workbench folder, in a hint, where `source` is how this caller names settings."""
    return "root=DIR (or $WB_ROOT)" if source == "root=" else "--root DIR (or $WB_ROOT)"


def colour_system(environ: Mapping[str, str] | None = None) -> str | None:
    """The colour system every rich console of wb is given: "auto" (rich's choice: styles on a terminal only), or
    None, which writes no style at all, under a non-empty NO_COLOR (https://no-color.org). Rich's own reading of
    NO_COLOR drops the colours but still writes bold, dim and italic."""
    env = os.environ if environ is None else environ
    return None if env.get("NO_COLOR") else "auto"
