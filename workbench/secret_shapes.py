"""Secrets no file declared, known by their shape: a well-known token (`hf_…`, `ghp_…`, `sk-…`, `xoxb-…`,
`AKIA…`, a JWT), an HTTP `Authorization: Bearer|Basic …` credential, and the value of an entry whose name ends
like a secret (`HF_TOKEN=…`, `"db_password": …`, `--api-key …`). `secrets.redact_text` applies them, so
every text wb stores or prints (a review, a run's output, a config diff, an error) is masked by them too.

Ordinary content stays: a hash, a UUID, a digest, a byte count, a switch or a number, a reference to a shell
variable (`$HF_TOKEN`), a template, a tokenizer's special token (`eos_token: "</s>"`) and code (`self.api_token =
api_token`, `tok.pad_token = tok.eos_token`).
"""

from __future__ import annotations

import re

# Tokens by their issuer's prefix, each long enough that an identifier or a word cannot take its shape. Each
# pattern starts with its literal prefix, which the regex engine searches for faster than `in` would (an
# alternation of them all is tried at every position); the character before must not be part of a word
# (`task-…`, `my_hf_…`).
_TOKENS = tuple(re.compile(p) for p in (
    r"hf_[A-Za-z0-9]{30,}",                                  # Hugging Face
    r"gh[pousr]_[A-Za-z0-9]{30,}", r"github_pat_\w{22,}",    # GitHub
    r"sk-[A-Za-z0-9_-]{20,}",                                # OpenAI, Anthropic (sk-proj-…, sk-ant-…)
    r"xox[abposr]-[A-Za-z0-9-]{10,}",                        # Slack
    r"AKIA[0-9A-Z]{16}(?![0-9A-Za-z])", r"ASIA[0-9A-Z]{16}(?![0-9A-Za-z])",  # an AWS access key id
    r"eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*"))                 # a JWT (a bearer token, a session)

# An Authorization header's credential (any scheme's, but for a shell reference or the mask), and a bearer
# token written without its header, which must hold a digit ("bearer authentication" is a phrase).
_AUTH = re.compile(r"(?i)(?P<head>\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?[ \t]*"
                   r"(?:bearer|basic|token|digest|apikey)[ \t]+)(?P<v>[\w.~+/=-]{6,})")
_BEARER = re.compile(r"(?i)(?P<head>\bbearer[ \t]+)(?P<v>(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,})")

# An entry whose name ends like a secret: `NAME=value`, `NAME: value`, `"NAME": "value"` (JSON, or JSON inside a
# JSON string), `--name value`, a URL's `?access_token=…`; the value a quoted string or a bare word. A name that
# only holds a marker (`token_ids`, `bytes_per_token_fix`) is no secret's: it must end with one. The marker and
# its separator are searched for in the lowercased text, and the name is read backwards from there: a pattern
# starting at the name, case-blind, is tried at every position (about a second for each 10 MB of a run's output).
_KEY_WORD = re.compile(r"(?:api|access|private|auth)[_-]?$")  # a `…key` marker is one of these only
_SEP = r"""(?P<q>\\?["']?)(?P<sep>[ \t]*[=:][ \t]*|[ \t]+(?=[^\s-]))"""  # alike in either case
# One pattern per marker, each starting with its literal, which the regex engine searches for fast (one
# alternation of them all is tried at every position: 8 times slower on a log that holds none).
_MARKERS = tuple(re.compile(m + _SEP) for m in ("token", "secret", "passw(?:or)?d", "credentials?", "(?P<key>key)"))
_VALUE = r"""\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"'\\,;&#}\]]+"""
_VALUES = {False: re.compile(_VALUE), True: re.compile(_VALUE.replace("&#}", "&#}<"))}  # in a page: up to a tag
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

# Values such an entry holds that are no secret.
_PLAIN = re.compile(r"(?i)[-+]?\d+(?:\.\d*)?|true|false|on|off|yes|no|none|null|nil|undefined")
_MASKED = re.compile(r"(?:<|&lt;|\\u003c)redacted(?:>|&gt;|\\u003e)")
# A bare value that is code or prose, not a credential: an attribute (`= tok.eos_token`) anywhere, a lowercase
# name or word after a spaced `=` or a colon (`self.api_token = api_token`, `invalid_token: expired`).
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_WORD = re.compile(r"[a-z]+(?:_[a-z]+)*")
MIN_VALUE = 6


def mask_shapes(text: str, mask: str, *, html: bool = False) -> str:
    """`text` with every secret known by its shape replaced by `mask` (quotes around a value kept); `html`: the
    text is a page's, where a bare value ends at a tag."""
    if not text:
        return text
    low = _lower(text)
    masked = _mask_named(text, low, mask, _VALUES[html])
    if masked is not text:
        text, low = masked, _lower(masked)
    if "authorization" in low:
        text = _AUTH.sub(lambda m: _credential(m, mask), text)
    if "bearer" in low:
        text = _BEARER.sub(lambda m: _credential(m, mask), text)
    for pattern in _TOKENS:
        text = pattern.sub(lambda m: _token(m, mask), text)
    return text


def _lower(text: str) -> str:
    """`text` in lower case, each character in its place (`İ` lowers to two: it is left as it is)."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _token(m: re.Match[str], mask: str) -> str:
    before = m.string[m.start() - 1] if m.start() else ""
    return m.group(0) if before.isalnum() or before in "_-" else mask


def _credential(m: re.Match[str], mask: str) -> str:
    return m.group(0) if _MASKED.fullmatch(m.group("v")) else m.group("head") + mask


def _mask_named(text: str, low: str, mask: str, values: re.Pattern[str]) -> str:
    parts, pos = [], 0
    found = sorted((m for pattern in _MARKERS for m in pattern.finditer(low)), key=lambda m: m.start())
    for m in found:
        i = m.start()
        if i < pos or ("key" in m.re.groupindex and not _KEY_WORD.search(low, max(i - 8, 0), i)):
            continue
        value = values.match(text, m.end())
        masked = _masked_value(value.group(0), m.group("sep"), mask) if value is not None else None
        if masked is not None and _named(text, i, m.group("q"), m.group("sep")):
            parts += [text[pos:value.start()], masked]
            pos = value.end()
    return "".join(parts) + text[pos:] if parts else text


def _named(text: str, at: int, q: str, sep: str) -> bool:
    """Whether the marker at `at` ends an entry's name: the name (read backwards from the marker) starts with a
    letter or `_` after nothing of a word, a `$` or a path; in quotes, the same quote before it; a name separated
    from its value by spaces alone is a flag's (`--api-key VALUE`)."""
    start = at
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    dashes = len(text[start:at]) - len(text[start:at].lstrip("-"))
    first = start + dashes
    if dashes > 2 or not (text[first].isalpha() or text[first] == "_") or (dashes and q):
        return False
    if q and text[max(first - len(q), 0):first] != q:
        return False
    before = text[first - len(q) - 1] if first - len(q) > 0 else ""
    return before not in ("$", "/") and (dashes > 0 or sep.strip(" \t") != "")


def _masked_value(v: str, sep: str, mask: str) -> str | None:
    """The mask in place of an entry's value (its quotes kept), or None for a value that is no secret."""
    q = '\\"' if v.startswith('\\"') and len(v) > 3 else v[0] if len(v) > 1 and v[0] in "\"'" and v[-1] == v[0] else ""
    inner = v[len(q):len(v) - len(q)] if q else v
    code = not q and (_ATTRIBUTE.fullmatch(inner) is not None  # `= tok.eos_token`
                      or (sep != "=" and _WORD.fullmatch(inner) is not None))  # `= api_token`, `: expired`
    if (len(inner) < MIN_VALUE or code or _PLAIN.fullmatch(inner) or inner.startswith(("$", "%(", "<", "["))
            or "{{" in inner or "{%" in inner or _MASKED.search(inner) or mask in inner):
        return None
    return f"{q}{mask}{q}"
