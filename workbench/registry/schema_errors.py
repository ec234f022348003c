"""pydantic's errors in wb's words: a file parsed against its schema, the first problem (parse_model) or every
one (validated, all_problems) at its line, with the field meant or the word likely meant as hint."""

from __future__ import annotations

import re
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from workbench.errors import ConfigError
from workbench.registry.common import did_you_mean, hint_of, put_back_words, shown, unshared
from workbench.registry.yamlio import LocatedYaml

M = TypeVar("M", bound=BaseModel)


def _clean(msg: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def _boolean_for_text(errors: list[Any], doc: LocatedYaml) -> tuple[str, tuple[Any, ...]] | None:
    """A text field, or one taking a few words, given a bare yes/no/on/off/true/false, which YAML 1.1 reads as
    a boolean: pydantic's message ("Input should be a valid string", "Input should be 'abba', 'random' or
    'alternate'") hides both the cause and the cure."""
    for e in errors:
        if e["type"] not in ("string_type", "literal_error") or not isinstance(e.get("input"), bool):
            continue
        loc = tuple(e["loc"])
        while loc and loc not in doc.booleans:  # a union's member name ends pydantic's location
            loc = loc[:-1]
        word = doc.booleans.get(loc, str(e["input"]).lower())
        if loc and loc[-1] == "[key]":  # a mapping key: quoting it is the cure, wherever it stands
            return (f'the key {word} was read as a boolean ({str(e["input"]).lower()}), not as text; quote it: '
                    f'"{word}": (YAML reads a bare yes/no/on/off/true/false as a boolean)', (*loc[:-2], word))
        key = f"{loc[-1]}: " if loc and isinstance(loc[-1], str) else ""
        read = f'{key}{word} was read as a boolean ({str(e["input"]).lower()}), not as '
        why = "(YAML reads a bare yes/no/on/off/true/false as a boolean)"
        expected = (e.get("ctx") or {}).get("expected")
        if expected is None or f"'{word}'" in expected:  # quoting it is the whole cure
            noun = "text" if expected is None else "a word"
            return f'{read}{noun}; quote it: {key}"{word}" {why}', loc or tuple(e["loc"])
        return f"{read}a word {why}; {key.rstrip(': ') or 'it'} takes one of {expected}", loc or tuple(e["loc"])
    return None


def _message(error: Any) -> str:
    """pydantic's message in wb's words where they differ: a wrong word names the words and what was given."""
    if error["type"] == "string_type" and isinstance(error.get("input"), (int, float)):
        return f"must be text, got {shown(error['input'])}: quote it (\"{error['input']}\") if it is a name"
    if error["type"] == "literal_error" and "expected" in (error.get("ctx") or {}):
        given = error["input"]
        return (f"must be one of {error['ctx']['expected']}, "
                f"got {repr(given) if isinstance(given, str) else shown(given)}")
    if error["type"] in _BOUNDS or error["type"] == "finite_number":
        given = error.get("input")
        if error["type"] == "finite_number" or (isinstance(given, float) and given != given):  # nan is in no bound
            return f"must be a finite number, got {shown(given)}"
        word, key = _BOUNDS[error["type"]]
        return f"must be {word} {error['ctx'][key]:g}, got {shown(given)}"
    if error["type"] in ("dict_type", "model_type"):
        example = _MAPPING_EXAMPLES.get((error.get("ctx") or {}).get("class_name"), "name: value")
        return f"must be a mapping ({example}), got {_kind(error.get('input'))}"
    if error["type"] == "list_type":
        return f"must be a list (- item lines, or [a, b]), got {_kind(error.get('input'))}"
    return _clean(error["msg"])


def _word_meant(error: Any) -> str | None:
    """The hint for a value not among the words a field takes (a mistyped `kind: cuont`, or a variable's value
    checked by a validator): the word likely meant, as a mistyped name is told."""
    ctx = error.get("ctx") or {}
    if error["type"] == "literal_error" and isinstance(error.get("input"), str):
        return did_you_mean(error["input"], re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx.get("expected", ""))))
    return hint_of(ctx["error"]) if isinstance(ctx.get("error"), BaseException) else None


# The shape of an entry, shown where a value of another shape was given: pydantic named the class instead.
_MAPPING_EXAMPLES = {"Prediction": "{metric: ..., arm: ..., at_most: ...}", "Guard": "{metric: ..., equals: ...}"}


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if value is None:
        return "nothing (an empty value)"
    return "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else type(value).__name__


_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("above", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("below", "lt")}


def parse_model(model: type[M], doc: LocatedYaml) -> M:
    """Validate `doc` against `model`; the first error becomes a ConfigError at its line."""
    parsed, errors = validated(model, doc)
    if parsed is not None:
        return parsed
    # An unknown field first: it is usually the typo behind a "missing" one (claims: for claim:). The problems
    # announced after it are those validate lists (`_told`).
    told = sorted(_told(errors), key=lambda e: e["type"] != "extra_forbidden")
    more = ""
    if len(told) == 2:
        more = " (1 more problem after this one; `wb hypothesis validate` lists them all)"
    elif len(told) > 2:
        more = f" ({len(told) - 1} more problems after this one; `wb hypothesis validate` lists them all)"
    raise _problem(model, doc, told[0], errors, more) from None


def validated(model: type[M], doc: LocatedYaml) -> tuple[M | None, list[Any]]:
    """`doc` validated as `model`, or None and pydantic's errors."""
    if doc.data is None:
        raise doc.error("the file is empty")
    doc.data = unshared(doc.data)  # an anchor's aliases are one object: the words go back place by place
    put_back_words(model, doc.data, doc.booleans)
    try:
        return model.model_validate(doc.data), []
    except ValidationError as exc:
        return None, exc.errors()


def _problem(model: type[BaseModel], doc: LocatedYaml, error: Any, errors: list[Any], more: str = "") -> ConfigError:
    """One of pydantic's `errors` in wb's words, at its line."""
    loc = tuple(error["loc"])
    if loc[-1:] == ("[key]",):  # pydantic's mark of a mapping key's own error: the key is the place
        loc = loc[:-1]
    msg, hint = _message(error), None
    if error["type"] == "extra_forbidden":
        msg = f"unknown field {loc[-1]!r}"
        # A missing field is the likeliest meant; else one the entry could have and does not give.
        hint = did_you_mean(str(loc[-1]), _missing_beside(error, errors)) or \
            did_you_mean(str(loc[-1]), _unset_fields(model, doc, loc))
    elif error["type"] == "missing":
        msg, loc = f"missing required field {loc[-1]!r}", loc[:-1]
    elif isinstance(error.get("input"), bool):
        msg, loc = _boolean_for_text([error], doc) or (msg, loc)
    else:
        hint = _word_meant(error)
    return doc.error(msg + more, loc, hint=hint)


def _missing_beside(error: Any, errors: list[Any]) -> list[str]:
    """The required fields missing from the mapping where `error` stands."""
    return [e["loc"][-1] for e in errors if e["type"] == "missing" and tuple(e["loc"][:-1]) == tuple(error["loc"][:-1])]


def all_problems(model: type[BaseModel], doc: LocatedYaml, errors: list[Any]) -> list[ConfigError]:
    """Each of pydantic's `errors` as a problem of its own, but a missing field an unknown one beside it was
    likely meant to be (`claims:` for `claim:`): told once, as the unknown field's hint."""
    return [_problem(model, doc, e, errors) for e in _told(errors)]


def _told(errors: list[Any]) -> list[Any]:
    """pydantic's `errors` less each missing field an unknown one beside it was likely meant to be (its hint)."""
    hinted = {(tuple(e["loc"][:-1]), name) for e in errors if e["type"] == "extra_forbidden"
              for name in _missing_beside(e, errors) if did_you_mean(str(e["loc"][-1]), [name])}
    return [e for e in errors if not (e["type"] == "missing" and (tuple(e["loc"][:-1]), e["loc"][-1]) in hinted)]


def _unset_fields(model: type[BaseModel], doc: LocatedYaml, loc: tuple[Any, ...]) -> list[str]:
    """The fields of the model an unknown field at `loc` stands in, less those the entry gives: found by walking
    `model`'s annotations along `loc` (a list's index, a mapping's key, a model's field)."""
    tp: Any = model
    for key in loc[:-1]:
        tp = _step(tp, key)
        if tp is None:
            return []
    entry = doc.data
    for key in loc[:-1]:
        entry = entry[key] if isinstance(entry, (dict, list)) else None
    given = set(entry) if isinstance(entry, dict) else set()
    models = [m for m in _union_members(tp) if isinstance(m, type) and issubclass(m, BaseModel)]
    return [f for m in models for f in m.model_fields if f not in given]


def _union_members(tp: Any) -> tuple[Any, ...]:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, UnionType):
        return tuple(m for member in get_args(tp) for m in _union_members(member))
    return (tp,)


def _step(tp: Any, key: Any) -> Any:
    """The annotation one step inside `tp` at `key`, or None where `key` leads nowhere known."""
    for member in _union_members(tp):
        if isinstance(member, type) and issubclass(member, BaseModel) and key in member.model_fields:
            return member.model_fields[key].annotation
        if get_origin(member) is list and isinstance(key, int):
            return get_args(member)[0]
        if get_origin(member) is dict:
            return get_args(member)[1]
    return None
