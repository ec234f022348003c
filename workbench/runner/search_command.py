"""The command that resumes a `wb isolate` search, built from the search's key as stored (every flag that determines
the search): here, below the search, so that a probe's lock and the refusals the runner gives can name it too.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from workbench.wrapping import keep_whole

if TYPE_CHECKING:
    from workbench.store.engine import Store


def search_command(key: Mapping[str, Any], where: Sequence[str], *, write: bool = False) -> str:
    """`wb isolate` with every flag of the search `key` explicitly, `where` (its --db and --root), the `--write` the
    stopped search was given (it does not change the search, but leaving it out would drop what was asked for),
    then --resume; each value quoted for the shell."""
    from workbench.registry.common import Region, region_text

    named = [v for v in key["good"] if v in key["changes"] or v in key["hold"]]
    args = ["wb", "isolate", "--experiment", key["experiment"],
            "--good", " ".join(f"{v}={key['good'][v]}" for v in named),
            "--bad", " ".join(f"{v}={key['bad'][v]}" for v in named),
            "--metric", key["metric"], "--region", region_text(Region(**key["region"]))]
    if key.get("profile"):
        args += ["--target", key["profile"]]
    budget = key.get("budget")
    args += ["--budget", "inf" if budget is None else flag_number(budget), "--alpha", flag_number(key["alpha"]),
             "--seed", str(key["seed"])]
    if key.get("parent"):
        args += ["--parent", key["parent"]]
    args += where
    if write:
        args.append("--write")
    return keep_whole(" ".join(shlex.quote(a) for a in [*args, "--resume"]))


def stored_search_command(store: "Store", key: Mapping[str, Any], where: Sequence[str]) -> str | None:
    """`search_command` for the search a probe's record names (`key`), with the flags as the store holds them: in
    `key` itself, else in the store's latest record of that search (a probe of an older wb kept only its id);
    None where the store holds neither."""
    if not key.get("good"):
        records = [v.details for v in store.verdicts(prefix="iso-") if v.details.get("kind") == "isolate-search"
                   and v.details.get("search_id") == key.get("search_id") and v.details.get("good")]
        if not records:
            return None
        result = records[-1].get("result") or {}  # the search's record keeps alpha and budget in its result
        key = {"alpha": result.get("alpha"), "budget": result.get("budget"), **records[-1]}
    return search_command(key, where)


def flag_number(x: float) -> str:
    """`x` as a flag gives it: short (`%g`) where that reads back as `x`, else in full."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))
