"""Rendering a profile's templates (jinja2, StrictUndefined): configs as text, commands with every value shell-quoted.

In a command template each `{{ value }}` is passed through shlex.quote unless it is a `Raw` string
(the `wb` and `python` built-ins, or a value piped through `| raw`); `| q` quotes explicitly.
"""

from __future__ import annotations

import difflib
import shlex
from functools import lru_cache
from typing import Any

from workbench.errors import BadInput


class Raw(str):
    """Text already safe for a shell (a command line built with shlex.join); never quoted again."""


def quote(value: Any) -> Raw:
    if isinstance(value, Raw):
        return value
    return Raw(shlex.quote(str(value)))


def _finalize_shell(value: Any) -> Any:
    if isinstance(value, Raw):
        return value
    if value is None:
        return value
    return shlex.quote(str(value))


@lru_cache(maxsize=2)
def _env(shell: bool):
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False, finalize=_finalize_shell if shell else None)
    env.filters["q"] = quote
    env.filters["raw"] = Raw
    return env


@lru_cache(maxsize=512)
def _compile(text: str, shell: bool):
    return _env(shell).from_string(text)


def render(text: str, values: dict[str, Any], *, shell: bool, where: str = "template") -> str:
    """Render `text`; a name the values do not define is bad input naming `where`."""
    import jinja2

    try:
        return _compile(text, shell).render(**values)
    except jinja2.TemplateSyntaxError:
        raise template_syntax_error(text, where) from None
    except jinja2.UndefinedError as exc:
        raise BadInput(f"{where}: {exc.message}",
                       hint="use a declared variable, a profile context key or a built-in name") from None
    except jinja2.TemplateError as exc:
        raise BadInput(f"{where}: template error: {exc}") from None


def template_syntax_error(text: str, where: str) -> BadInput:
    """A template's syntax error at the line `wb hypothesis validate` tells (the broken tag's, not the one Jinja
    noticed it on): the experiment is checked on loading, so this is a template changed since."""
    from workbench.registry import template_scan

    return BadInput(f"{where}: {template_scan.scan(text).where()}",
                    hint="`wb hypothesis validate` tells each problem of the experiment and its template files")


def render_command(text: str, values: dict[str, Any], *, where: str = "command") -> str:
    return render(text, values, shell=True, where=where)


def render_text(text: str, values: dict[str, Any], *, where: str = "template") -> str:
    return render(text, values, shell=False, where=where)


def config_diff(rendered: dict[str, str], base: str | None = None) -> dict[str, str]:
    """Unified diff of each arm's rendered config against the first (control) arm's."""
    if not rendered:
        return {}
    names = list(rendered)
    base = base if base in rendered else names[0]
    out: dict[str, str] = {}
    a = rendered[base].splitlines(keepends=True)
    for name in names:
        if name == base:
            continue
        b = rendered[name].splitlines(keepends=True)
        out[f"{base}..{name}"] = "".join(difflib.unified_diff(a, b, fromfile=base, tofile=name, n=1))
    return out
