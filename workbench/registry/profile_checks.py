"""Checks of one target profile that the schema alone cannot make: context keys that would be replaced
by wb's built-in names or would shadow a variable, and the profile's timeout options."""

from __future__ import annotations

import re
from typing import Any

from workbench.registry.experiment import RESERVED_TEMPLATE_NAMES, Experiment, Profile
from workbench.registry.problems import Found
from workbench.registry.yamlio import LocatedYaml


def check_profile(exp: Experiment, pname: str, prof: Profile, doc: LocatedYaml, found: Found) -> None:
    """Each field apart (each context key, each option): `found` collecting (validate) gets every problem; strict,
    the first is raised."""
    from workbench.registry.timeouts import option_problems, unknown_options

    for key in prof.context:
        with found.apart():
            _check_context_key(exp, key, ("profiles", pname, "context", key), doc)
    with found.apart():
        _check_config_path(pname, prof, doc)
    for key, message, hint in unknown_options(prof.options, prof.target.kind):
        with found.apart():
            raise doc.error(message, ("profiles", pname, "options", key), hint=hint)
    for problem in option_problems(prof.options):
        key = problem.split()[0].removeprefix("options.")
        with found.apart():
            raise doc.error(problem, ("profiles", pname, "options", key))


def _check_context_key(exp: Experiment, key: str, loc: tuple[Any, ...], doc: LocatedYaml) -> None:
    if key in RESERVED_TEMPLATE_NAMES:
        raise doc.error(f"context key {key!r} is a name wb sets itself for every run; yours would be "
                        "replaced silently", loc,
                        hint=f"rename it (e.g. {key}_bin or my_{key}); reserved names: "
                             f"{', '.join(sorted(RESERVED_TEMPLATE_NAMES))}")
    if key in exp.variables:
        raise doc.error(f"context key {key!r} is also a variable of experiment {exp.id!r}: it would "
                        "override the arm's value", loc, hint="remove it from context or rename it")


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
