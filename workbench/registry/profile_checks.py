"""Checks of one target profile that the schema alone cannot make: context keys that would be replaced
by wb's built-in names or would shadow a variable, and the profile's timeout options."""

from __future__ import annotations

import re
from typing import Any

from workbench.registry.experiment import RESERVED_TEMPLATE_NAMES, Experiment, Profile
from workbench.registry.yamlio import LocatedYaml


def check_profile(exp: Experiment, pname: str, prof: Profile, doc: LocatedYaml) -> None:
    """ConfigError at the offending line, or nothing."""
    from workbench.registry.timeouts import check_options, unknown_option

    for key in prof.context:
        loc = ("profiles", pname, "context", key)
        if key in RESERVED_TEMPLATE_NAMES:
            raise doc.error(f"context key {key!r} is a name wb sets itself for every run; yours would be "
                            "replaced silently", loc,
                            hint=f"rename it (e.g. {key}_bin or my_{key}); reserved names: "
                                 f"{', '.join(sorted(RESERVED_TEMPLATE_NAMES))}")
        if key in exp.variables:
            raise doc.error(f"context key {key!r} is also a variable of experiment {exp.id!r}: it would "
                            "override the arm's value", loc, hint="remove it from context or rename it")
    _check_config_path(pname, prof, doc)
    unknown = unknown_option(prof.options, prof.target.kind)
    if unknown:
        key, message, hint = unknown
        raise doc.error(message, ("profiles", pname, "options", key), hint=hint)
    problem = check_options(prof.options)
    if problem:
        key = problem.split()[0].removeprefix("options.")
        raise doc.error(problem, ("profiles", pname, "options", key))


_REFERENCE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def _check_config_path(pname: str, prof: Profile, doc: LocatedYaml) -> None:
    """A config.path made only of context values that are all empty (serve_script: "") names no file: refused at
    the context key (at run time the empty path was taken for the current folder)."""
    if prof.config is None:
        return
    path = prof.config.path
    names = _REFERENCE.findall(path)
    if not names or _REFERENCE.sub("", path).strip() or any(n not in prof.context for n in names):
        return
    if "".join(prof.context[n] for n in names).strip():
        return
    key = names[0]
    raise doc.error(f'config.path "{path.strip()}" renders empty: context {key!r} is empty',
                    ("profiles", pname, "context", key),
                    hint=f"set {key} to the file the runner rewrites per arm")


def verify_templates(prof: Profile) -> list[tuple[tuple[Any, ...], str]]:
    """(location, text) of the verify step's templates, for the unknown-name check."""
    if prof.verify is None:
        return []
    out: list[tuple[tuple[Any, ...], str]] = []
    if prof.verify.url is not None:
        out.append((("verify", "url"), prof.verify.url))
    if prof.verify.command is not None:
        out.append((("verify", "command"), prof.verify.command))
    for i, text in enumerate(prof.verify.contains):
        out.append((("verify", "contains", i), text))
    return out
