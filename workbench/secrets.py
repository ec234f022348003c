"""Secrets never stored or shown: values of variables declared `secret: true`, the values of profile `env`
entries named like a secret (…TOKEN, …KEY, …PASSWORD, …SECRET, …CREDENTIAL), credentials inside URLs
(`scheme://user:PASSWORD@host`), and what no file declares but has a secret's shape (`workbench.secret_shapes`:
`HF_TOKEN=…`, `Authorization: Bearer …`, `hf_…`, `AKIA…`).

The registry registers the values its files declare as it is made, the runner those it is given (--set);
every text column is redacted as a session flushes (one hook at the store boundary, `workbench.store.redaction`,
so a new column or a new writer cannot forget it), and everything the CLI prints goes through `RedactedStream`
(stdout and stderr, swapped in by the command group), so a new command cannot forget it either. Redaction
replaces the value itself, in each form wb writes it in (JSON, HTML, a shell word), not only entries whose key
looks secret: a value reaches the store inside rendered configs, commands, errors and JSON blobs.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable

MASK = "<redacted>"
MIN_LEN = 4  # a shorter value is masked where it is a named entry, not everywhere it occurs as text
_URL_CREDS = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'\"]*):(?P<pw>[^@\s/'\"]+)@")

# A name's `_`/`-`/`.` parts (case-blind) that mark its value as a secret; a part may also end with one of the
# longer markers (`APITOKEN`, `DBPASSWORD`, `APIKEY`), not with `KEY` alone (`MONKEY`). A plain env entry (a log
# level) is not secret: masking its value everywhere also masked every variable value and word equal to it.
SECRET_MARKERS = ("TOKEN", "KEY", "PASSWORD", "SECRET", "PASSWD", "CREDENTIAL", "CREDENTIALS", "PAT")
_SECRET_ENDS = ("TOKEN", "PASSWORD", "SECRET", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY", "ACCESSKEY")

# The mask as HTML, Markdown or JSON escape it ('&lt;redacted&gt;', '&lt;redacted>', '\u003credacted\u003e'): a value
# masked already, which masking again would only eat the text after.
_MASKED = r"(?:&lt;|\\u003c)redacted(?:>|&gt;|\\u003e)"

# The libpq connection parameters whose value is a secret, in a URL's query (`?sslpassword=…`) or a conninfo string
# (`host=h password=…`): masked whatever the value's length (a named entry elsewhere needs six characters), and
# what makes a store URL count as carrying a password (`workbench.store.engine.url_has_password`, its `_redact`).
# The other parameters name files (`passfile`, `sslkey`) or are no secret.
LIBPQ_SECRETS = ("password", "sslpassword", "oauth_client_secret")
_LIBPQ_HEAD = r"(?i)(?P<head>(?:^|(?<=[?&\s;'\">]))(?:" + "|".join(LIBPQ_SECRETS) + r")=)(?P<v>'(?:[^'\\]|\\.)*'|"
_LIBPQ_ENTRY = {False: re.compile(_LIBPQ_HEAD + r"[^&#\s'\"]+)"), True: re.compile(_LIBPQ_HEAD + r"[^&#\s'\"<]+)")}
_LIBPQ_NEEDLE = re.compile(r"(?i)password=|oauth_client_secret=")


def mask_libpq(text: str, mask: str = MASK, *, html: bool = False) -> str:
    """`text` with the value of each libpq secret parameter (`LIBPQ_SECRETS`) masked, its quotes kept; `html`: a
    page's text, where a bare value ends at a tag."""
    if not text or _LIBPQ_NEEDLE.search(text) is None:
        return text

    def masked(m: re.Match[str]) -> str:
        v = m.group("v")
        if v.startswith((mask, "<redacted>", "'<redacted>'", "$")) or re.match(_MASKED, v) or "{{" in v:
            return m.group(0)
        return m.group("head") + ("'" + mask + "'" if len(v) > 1 and v[0] == v[-1] == "'" else mask)

    return _LIBPQ_ENTRY[html].sub(masked, text)


_lock = threading.Lock()
_values: set[str] = set()
_names: set[str] = set()


def looks_secret(name: str) -> bool:
    """Whether a name (an env variable, a JSON key) is one whose value is a secret: HF_TOKEN, db_password."""
    parts = [p for p in re.split(r"[_\-.]", str(name).upper()) if p]
    return any(p in SECRET_MARKERS or p.endswith(_SECRET_ENDS) for p in parts)


def secret_env(env: dict[str, str]) -> dict[str, str]:
    """The entries of a profile's env whose value is a secret (see `looks_secret`)."""
    return {k: v for k, v in env.items() if looks_secret(k)}


# An entry of a config's text: `NAME=value`, `NAME: value`, `"NAME": "value"`, `export NAME=value`, `--name=value` or
# `--name value`, the value a quoted string or a word. Only the name and its separator are taken, so an entry inside
# another's value (`url=https://h/x?token=…`) is found too.
_ENTRY = re.compile(r"""(?<![\w.$])(?P<dash>--?)?(?P<q>["']?)(?P<name>[A-Za-z_][\w.-]*)(?P=q)"""
                    r"""(?:[ \t]*[=:][ \t]*|(?(dash)[ \t]+(?=[^\s-])|(?!)))"""
                    r"""(?=(?P<value>"(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;&#}]+))""")
# Values an entry named like a secret holds that are no secret: a switch or a number (SGLANG_TOKEN_..._FIX=1).
_PLAIN = re.compile(r"(?i)[-+]?\d+(?:\.\d*)?|true|false|on|off|yes|no|none|null")


def mask_entries(text: str | None, keep: Any = ()) -> str | None:
    """A config's text with the value of each entry named like a secret (`looks_secret`) masked: `HF_TOKEN=hf_…`
    in a serve script, `api_key: …` in YAML, `--api-key …` on a command line. The registry knows only the names
    and values its own files declare, so a token written into a config template, or brought by a bundle, was kept
    as it was. Left as they are: the values in `keep` (the run's variables, which the arms must be seen to differ
    in), a switch or a number, a reference to a shell variable (`$HF_TOKEN`), a template and the mask."""
    if not text:
        return text
    kept = {str(v) for v in keep if v is not None}
    return "\n".join(_masked_line(line, kept) for line in text.split("\n"))


def _is_secret_value(value: str, kept: set[str]) -> bool:
    return not (not value or value in kept or _PLAIN.fullmatch(value) or value.startswith("$") or "{{" in value
                or "{%" in value or value == MASK or re.fullmatch(_MASKED, value))


def _masked_line(line: str, kept: set[str]) -> str:
    parts, pos = [], 0
    for m in _ENTRY.finditer(line):
        value = m.group("value")
        if m.start() < pos or not looks_secret(m.group("name")):
            continue
        quoted = len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]
        inner = value[1:-1] if quoted else value
        if not _is_secret_value(inner, kept):
            continue
        parts += [line[pos:m.end()], f"{value[0]}{MASK}{value[0]}" if quoted else MASK]
        pos = m.end() + len(value)
    return "".join(parts) + line[pos:] if parts else line


def mask_named(obj: Any) -> Any:
    """A copy of a JSON-like value (a profile as an experiment declares it) with each text's secret-named entries
    masked (`mask_entries`: a token written into a config template) and the value of each mapping entry named like
    a secret (a context key `hf_token: hf_…`), but for a switch, a number, a template or a shell reference."""
    if isinstance(obj, str):
        return mask_entries(obj)
    if isinstance(obj, dict):
        return {k: (MASK if isinstance(v, str) and looks_secret(k) and _is_secret_value(v, set()) else mask_named(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(mask_named(v) for v in obj)
    return obj


def mask_profiles(body: dict[str, Any]) -> dict[str, Any]:
    """An experiment as declared (a dict) with its profiles' secret-named entries masked (`mask_named`): a token
    written into a config template or a context value, as a store's snapshot and a bundle's definition keep it."""
    if isinstance(body.get("profiles"), dict):
        return {**body, "profiles": mask_named(body["profiles"])}
    return body


def register(*, values: Any = (), names: Any = ()) -> None:
    """Remember secret values (and the names they go by) for the rest of this process."""
    forms = {form for v in values if v is not None and str(v) != "" for form in _forms(str(v))}
    with _lock:
        _values.update(forms)
        _names.update(str(n) for n in names)


def register_stored(variables: Any) -> None:
    """A stored run's variables as they are read: a value under a name declared secret now (a variable made
    `secret: true` after runs recorded it in clear, its old values known to no file) is masked from here on
    wherever this process shows it (a run page's variables, the confound report), as a declared value is. The
    value itself stays in what is read: an analysis must still see that two arms differ in it."""
    values = stored_secret_values(variables)
    if values:
        register(values=values)


def stored_secret_values(variables: Any) -> list[str]:
    """The values of a stored run's variables under a name registered as secret (see `register_stored`)."""
    if not isinstance(variables, dict) or not _names:
        return []
    with _lock:
        names = set(_names)
    return [str(v) for n, v in variables.items()
            if n in names and v is not None and str(v) != MASK and not isinstance(v, (dict, list))]


def _forms(value: str) -> set[str]:
    """A value as wb may write it: as given, in a JSON string (non-ASCII escaped or not), in HTML as the report's
    templates escape it, and as a shell word (a failed command quoted in an error). A value too short to be
    masked as text keeps no other form: `&` would otherwise mask every `&amp;`."""
    if len(value) < MIN_LEN:
        return {value}
    import json
    import shlex

    from markupsafe import escape

    return {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], str(escape(value)),
            shlex.quote(value)}


def clear() -> None:
    """Forget every registered secret (tests)."""
    with _lock:
        _values.clear()
        _names.clear()


def redact_text(text: str, mask: str = MASK) -> str:
    """`text` with every secret masked: the values and named entries registered, credentials in URLs, and the
    secrets no file declared but known by their shape (`secret_shapes`: `HF_TOKEN=…`, `Bearer …`, `hf_…`)."""
    if not text:
        return text
    from workbench.secret_shapes import mask_shapes

    html = mask.startswith("&lt;")  # a page's text: a bare value ends at a tag (`HF_TOKEN=…</span>`)
    out = _on_lines_with(text, "://", lambda line: _URL_CREDS.sub(lambda m: f"{m.group('head')}:{mask}@", line)
                         if "@" in line else line)
    with _lock:
        values = sorted((v for v in _values if len(v) >= MIN_LEN), key=len, reverse=True)
        names = list(_names)
    for v in values:
        if v in out:
            out = out.replace(v, mask)
    for n in names:
        # A named entry in JSON or in key=value text, whatever the value's length. The value ends where the
        # text around it goes on: at a space, a quote or a backslash (a JSON string's end, or an escaped newline
        # inside one, so the JSON stays JSON), and it follows a line start, a separator, a tag's end or an escaped
        # newline, so a JSON text and the object it encodes are masked alike; a diff's `-`/`+` (a config diff an
        # execution stored before the name was declared secret) or a flag's dashes may come between. A template
        # (`{{ name }}`) is not a value, nor is a reference to a shell variable (`NAME="$NAME"` in a command
        # printed for a restore by hand).
        if f'"{n}"' in out:
            out = re.sub(rf'("{re.escape(n)}"\s*:\s*)"(?:[^"\\]|\\.)*"', lambda m: f'{m.group(1)}"{mask}"', out)
        entry = re.compile(rf"(?m)((?:^|[\s,;>]|\\[nrt])[+-]{{0,2}}){re.escape(n)}="
                           rf"(?!{_QUOTE}?(?:{re.escape(mask)}|{_MASKED}))"
                           rf"(?!{_QUOTE}?\{{[{{%])(?!{_QUOTE}?\$[{{A-Za-z_]){_VALUE_HTML if html else _VALUE}")
        out = _on_lines_with(out, f"{n}=", lambda line: entry.sub(lambda m: _masked_entry(m, n, mask), line))
    return mask_shapes(mask_libpq(out, mask, html=html), mask, html=html)


# A named entry's value in key=value text: quoted as a JSON string holds it (\"...\"), in double or single
# quotes (a serve script's export), or bare up to a space, a quote or a backslash. A quoted value is masked
# whole, its quotes kept; the rule took a value up to its first quote, which left `NAME=<mask>"the secret"`.
_QUOTE = r"""(?:\\"|["'])"""
_VALUE = r"""(?P<v>\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|["']?[^\s"\\]*)"""
_VALUE_HTML = _VALUE.replace('[^\\s"\\\\]*)', '[^\\s"\\\\<]*)')  # in a page: up to a tag


def _masked_entry(m: re.Match[str], name: str, mask: str) -> str:
    v = m.group("v")  # a quote never closed (the line ends first) is masked with what follows it
    q = '\\"' if v.startswith('\\"') else v[0] if len(v) > 1 and v[0] in "\"'" and v[-1] == v[0] else ""
    return f"{m.group(1)}{name}={q}{mask}{q}"


def _on_lines_with(text: str, needle: str, fn: Callable[[str], str]) -> str:
    """`text` with `fn` applied to each line holding `needle` (for a pattern that cannot span lines and needs
    the needle: a large log is searched for it, not matched against at every position)."""
    i = text.find(needle)
    if i < 0:
        return text
    parts, pos = [], 0
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        parts += [text[pos:start], fn(text[start:end])]
        pos = end
        i = text.find(needle, end)
    parts.append(text[pos:])
    return "".join(parts)


_BLOCK = 1 << 20


def redact_file(path: Any) -> bool:
    """Mask the secrets in a file wb keeps (a run's output, a fetched log), in place, in blocks of whole lines
    (bytes that are not UTF-8 pass through as they are); True when it changed. A later process, a report or a teammate's
    copy of the store knows only the secrets its own registry declares, so what is kept must be masked when
    it is written, by the process that knows them all."""
    import os
    import tempfile
    from pathlib import Path

    path = Path(path)
    changed = replaced = False
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
            while True:  # blocks of whole lines: a block at a time costs a fraction of a line at a time
                block = src.read(_BLOCK) + src.readline()
                if not block:
                    break
                text = block.decode("utf-8", "surrogateescape")
                clean = redact_text(text)
                if clean != text:
                    changed = True
                    block = clean.encode("utf-8", "surrogateescape")
                dst.write(block)
        if changed:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            os.replace(tmp, path)
            replaced = True
    finally:
        if not replaced:
            os.unlink(tmp)
    return changed


def redact(obj: Any) -> Any:
    """A copy of a JSON-like value with every string redacted and every secret-named entry masked. A mapping
    under a secret's name (a secret variable's spec) keeps its shape with its values redacted, as the store's
    text of it does: an object and the stored text of it compare alike."""
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        with _lock:
            names = set(_names)
        return {k: (MASK if k in names and v is not None and not isinstance(v, dict) else redact(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v) for v in obj)
    return obj


def register_registry(registry: Any) -> None:
    """What a registry declares secret: a secret variable's values wherever the files write them (the experiment's
    default and listed values, a hypothesis's hold and arms) and secret-named env values. The registry registers
    them as it is made, so a command that runs nothing masks them too."""
    values: list[Any] = []
    names: list[str] = []
    for exp in registry.experiments.values():
        for name, spec in exp.variables.items():
            if getattr(spec, "secret", False):
                names.append(name)
                values += [spec.default, *(spec.values or [])]
        for prof in exp.profiles.values():
            env = secret_env(prof.env)
            names += list(env)
            values += [v for v in env.values() if "{{" not in v]
    for h in registry.hypotheses:
        exp = registry.experiments.get(h.experiment)  # a hypothesis not yet checked may name none
        secret = {n for n, spec in exp.variables.items() if getattr(spec, "secret", False)} if exp else set()
        values += [v for assigned in (h.hold, *h.arms.values()) for n, v in assigned.items() if n in secret]
    register(values=values, names=names)


class RedactedStream:
    """A text stream writing through to `stream` with every secret masked: the CLI's stdout and stderr, so that
    whatever a command prints (typer.echo, print, rich, csv) is redacted without the command asking."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact_text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # click writes to a text stream's buffer when it distrusts its encoding: unredacted
            raise AttributeError(name)
        return getattr(self._stream, name)
