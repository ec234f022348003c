"""Values quoted for the syntax of the config file they land in (`config.format`), so a value can never add a
line, a key or a command to it: bash and env (shell words), yaml, json, ini, or raw (as written).

Free text with control characters is refused before anything is written; in `json` and `yaml` a
value is a quoted string with escapes, in `bash` a shell word, in `env`/`ini` a bare word or refused.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import lru_cache
from typing import Any

from workbench.errors import BadInput
from workbench.registry.common import control_char

FORMATS = ("bash", "env", "yaml", "json", "ini", "raw")
_BARE = re.compile(r"^[A-Za-z0-9_./:@%+,=-]*$")


class _Unsafe(ValueError):
    pass


def _text(value: Any) -> str:
    text = str(value)
    bad = control_char(text)
    if bad:
        raise _Unsafe(bad)
    return text


def _finalize(fmt: str):
    from workbench.runner.render import Raw

    def bash(v: Any) -> Any:
        return v if isinstance(v, Raw) or v is None else shlex.quote(_text(v))

    def env(v: Any) -> Any:
        return v if isinstance(v, Raw) or v is None else shlex.quote(_text(v))

    def yaml(v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float)):
            return v
        t = str(v)
        return t if _BARE.match(t) and t and t[0] not in "-:@%,=" else json.dumps(t)

    def json_(v: Any) -> Any:
        return v if isinstance(v, Raw) else json.dumps(v)

    def ini(v: Any) -> Any:
        t = _text(v)
        if t != t.strip() or any(c in t for c in ";#[]"):
            raise _Unsafe("leading/trailing spaces or one of ; # [ ] (not expressible in an ini value)")
        return t

    def raw(v: Any) -> Any:
        return v

    return {"bash": bash, "env": env, "yaml": yaml, "json": json_, "ini": ini, "raw": raw}[fmt]


@lru_cache(maxsize=8)
def _env(fmt: str):
    import jinja2

    from workbench.runner.render import Raw, quote

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
                             finalize=_finalize(fmt))
    env.filters["q"] = quote
    env.filters["raw"] = Raw
    return env


def render_config(text: str, values: dict[str, Any], fmt: str, *, where: str = "config template") -> str:
    """Render a config template with every value quoted for `fmt`; an unquotable value is bad input."""
    import jinja2

    from workbench.runner.render import template_syntax_error

    try:
        return _env(fmt).from_string(text).render(**values)
    except jinja2.TemplateSyntaxError:
        raise template_syntax_error(text, where) from None
    except _Unsafe as exc:
        raise BadInput(f"{where}: a value cannot be written into a {fmt} file: {exc}",
                       hint="values may not contain newlines or other control characters") from None
    except jinja2.UndefinedError as exc:
        raise BadInput(f"{where}: {exc.message}",
                       hint="use a declared variable, a profile context key or a built-in name") from None
    except (jinja2.TemplateError, ArithmeticError, TypeError, ValueError) as exc:
        raise BadInput(f"{where}: template error: {type(exc).__name__}: {exc}") from None
