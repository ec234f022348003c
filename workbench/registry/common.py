"""Pieces shared by the hypothesis and experiment schemas: ids, variable values, regions."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from workbench.plurals import count

ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,79}$")

# The range of a plan's seed: what `new_seed` draws (workbench/runner/plan.py) and what the per-replicate
# workload seeds derived from it span (31 bits), so a seed given by hand (a flag, or `design.seed` in a
# file) is one wb could have drawn itself.
SEED_MIN, SEED_MAX = 0, 2**31 - 1


def var_value(value: Any) -> str:
    """Canonical text of a variable value. A boolean YAML read is given back as its word before this runs
    (`put_back_words`), so one here lost its word: refuse it rather than guess one."""
    if isinstance(value, bool):
        raise ValueError("a variable value is a word, not a boolean: write it in quotes")
    if value is None:
        raise ValueError("a variable value cannot be empty")
    if isinstance(value, (dict, list)):
        raise ValueError("a variable value must be a scalar (text or number)")
    return str(value)


VarValue = Annotated[str, BeforeValidator(var_value)]


def _members(tp: Any) -> tuple[Any, ...]:
    return get_args(tp) if get_origin(tp) in (Union, UnionType) else (tp,)


def unshared(data: Any) -> Any:
    """`data` with every mapping and list copied once per place it appears: a YAML anchor makes its aliases
    one object, and a word given back at one place (`put_back_words`) must not reach the others. Bounded:
    the loader has counted the values after aliases are followed (yamlio.MAX_NODES)."""
    if isinstance(data, dict):
        return {k: unshared(v) for k, v in data.items()}
    if isinstance(data, list):
        return [unshared(v) for v in data]
    return data


def put_back_words(tp: Any, data: Any, words: dict[tuple[Any, ...], str], loc: tuple[Any, ...] = ()) -> None:
    """Give back, in `data` (parsed YAML about to be validated as `tp`), the word written for each boolean that
    lands where `tp` takes a variable value: YAML 1.1 reads a bare yes/no/true/false/on/off as a boolean, and
    `default: yes` must render as `yes`. `words` maps the location of each such boolean to its word; flags and
    numbers keep their booleans (a flag takes one, a number refuses one)."""
    for member in _members(tp):
        args = get_args(member)
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(data, dict):
            items = [(k, member.model_fields[k].rebuild_annotation()) for k in data if k in member.model_fields]
        elif get_origin(member) is dict and isinstance(data, dict):
            items = [(k, args[1]) for k in data]
        elif get_origin(member) is list and isinstance(data, list):
            items = [(i, args[0]) for i in range(len(data))]
        else:
            continue
        for key, item_tp in items:
            at = (*loc, key)
            if not isinstance(data[key], bool):
                put_back_words(item_tp, data[key], words, at)
            elif VarValue in _members(item_tp) and at in words:
                data[key] = words[at]


def shown(value: Any) -> str:
    """A YAML value as the reader wrote it, with what kind of value it is when that is the mistake."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return f"{value!r} (text)"
        return f"{value!r} (text: write it without quotes)"
    return repr(value)


def did_you_mean(word: str, names: Iterable[str], listing: str | None = None) -> str | None:
    """The hint for a name not found among `names`: the closest one ("did you mean 'x'?"), then `listing` (the
    names there are, as `metrics: a, b`) in brackets; None when there is neither."""
    close = difflib.get_close_matches(str(word), [str(n) for n in names], n=1)
    guess = f"did you mean {close[0]!r}?" if close else None
    if guess and listing:
        return f"{guess} ({listing})"
    return guess or listing


def id_meant(word: str, ids: Iterable[str], listing: str | None = None, *,
             left_out: Collection[str] = ()) -> str | None:
    """`did_you_mean` for a hypothesis id, looser: an id is long and made of words, and one typed from memory is
    often its case changed, `_` for `-`, its words swapped, its first word or another word of it, that word
    mistyped ("clam" for an id beginning "claim-"), where the ratio over the whole id falls short. The whole id is
    meant where it fits better than any word of an id does; an id the word begins is meant before one it stands
    inside; several ids that it fits alike are all named (at most three), as "dead-code" begins two ids. An id in
    `left_out` (its entry set apart for a problem of its own) is said so beside it: it is not there to be used."""
    ids = list(dict.fromkeys(str(i) for i in ids))
    typed = _id_form(word)
    whole = {i: _whole_ratio(str(word), typed, i) for i in ids}
    parts = {i: max((difflib.SequenceMatcher(None, typed, part).ratio(), first) for part, first in _id_parts(i))
             for i in ids}
    best_whole = max(whole.values(), default=0.0)
    best_part = max(parts.values(), default=(0.0, False))
    if best_whole >= 0.6 and best_whole >= best_part[0]:
        close = [i for i in ids if whole[i] == best_whole][:3]
    elif len(typed) >= 3 and best_part[0] >= 0.8:
        close = [i for i in ids if parts[i] == best_part][:3]
    else:
        close = []
    gone = " (left out: its entry has a problem of its own)"
    guess = f"did you mean {' or '.join(repr(c) + (gone if c in left_out else '') for c in close)}?" if close \
        else None
    if guess and listing:
        return f"{guess} ({listing})"
    return guess or listing


def _whole_ratio(word: str, typed: str, hid: str) -> float:
    """How well `word` (`typed`: its `_id_form`) fits the whole id: as typed, in the id's form (case, `_`), or with
    its words in another order ("confound-wedge")."""
    form = _id_form(hid)
    ratios = [difflib.SequenceMatcher(None, word, hid).ratio(), difflib.SequenceMatcher(None, typed, form).ratio()]
    if "-" in typed:
        ratios.append(difflib.SequenceMatcher(None, "-".join(sorted(typed.split("-"))),
                                              "-".join(sorted(form.split("-")))).ratio())
    return max(ratios)


def _id_form(word: str) -> str:
    return str(word).casefold().replace("_", "-")


def _id_parts(hid: str) -> list[tuple[str, bool]]:
    """An id's words and the runs of words it begins with (`a-b-c`: a, b, c, a-b), each with whether it begins it."""
    words = _id_form(hid).split("-")
    return [(w, k == 0) for k, w in enumerate(words)] + [("-".join(words[:n]), True) for n in range(2, len(words))]


class Hinted(ValueError):
    """A check's ValueError that says what to write instead (`hint`), told as the error's Hint."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class NotAmong(Hinted):
    """A value that is not among the few a field or a variable takes; `hint` is the one likely meant, `values`
    those it takes where they may be shown."""

    def __init__(self, message: str, *, hint: str | None = None, values: Sequence[str] = ()) -> None:
        super().__init__(message, hint=hint)
        self.values = tuple(values)


def hint_of(exc: BaseException) -> str | None:
    """The hint a ValueError of a check carries (a NotAmong's value meant), or None."""
    return getattr(exc, "hint", None)


def given_value_hint(exc: BaseException, given_as: str) -> str | None:
    """The hint for a value given on the command line as `given_as=VALUE` (`--set hicache`) that a check refused:
    the value meant, else, for a value among none of a few, one of them in the form given (the error lists all)."""
    values = getattr(exc, "values", ())
    return hint_of(exc) or (f"e.g. {given_as}={values[0]}" if values else None)


def _whole(value: Any) -> Any:
    # pydantic's lax mode reads true as 1, "3" as 3 and 12.0 as 12: each a mistake in a hand-written file.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a whole number, got {shown(value)}")
    return value


def _format_one(value: Any) -> Any:
    # A higher number is a file a newer wb wrote (or one written for it), not a mistyped word.
    if _whole(value) != 1:
        newer = "; the file may come from a newer wb: upgrade wb to read it" if value > 1 else ""
        raise ValueError(f"this wb reads format 1 only, got {value}{newer}")
    return value


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Hinted(f"must be a number, got {shown(value)}", hint=_percent_hint(value))
    return value


def _percent_hint(value: Any) -> str | None:
    """`2%` where a number goes: a rate is a fraction (0.02)."""
    text = value.strip() if isinstance(value, str) else ""
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+) ?%", text):
        return None
    return f"write {text} as a fraction: {float(text[:-1]) / 100:g}"


def _flag(value: Any) -> Any:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, got {shown(value)}")
    return value


# The number and flag types of every registry field: a boolean is not a number, and text is neither.
Int = Annotated[int, BeforeValidator(_whole)]
Number = Annotated[float, BeforeValidator(_number)]
Flag = Annotated[bool, BeforeValidator(_flag)]
FormatOne = Annotated[Literal[1], BeforeValidator(_format_one)]


def whole_in(low: int, high: int | None = None) -> Any:
    """A whole number in [low, high]. The bounds sit on the int itself, not on the field: on an optional field
    (`Int | None = Field(ge=...)`) pydantic's JSON Schema gives them as its own "ge"/"le", which editors ignore."""
    return Annotated[int, Field(ge=low, le=high), BeforeValidator(_whole)]


Seed = whole_in(SEED_MIN, SEED_MAX)
Replicates = whole_in(1, 1000)
ReplicateBudget = whole_in(1, 10000)  # design.max_replicates, the budget for --sequential
Port = whole_in(1, 65535)
Index = whole_in(0)

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a tab is text; a newline or CR starts another line


def control_char(value: str) -> str | None:
    """A description of the first control character in `value`, or None."""
    m = _CONTROL.search(value)
    return None if m is None else f"control character {m.group()!r} at offset {m.start()}"


def _check_id(value: Any) -> Any:
    if isinstance(value, str) and not ID_RE.match(value):
        raise ValueError(f"{value!r} is not a valid id (lowercase letters, digits, '-', '_', '.'; "
                         "starting with a letter or digit)")
    return value


Ident = Annotated[str, BeforeValidator(_check_id)]


class Strict(BaseModel):
    """Unknown fields are errors: a typo in a registry file must not be silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _two_numbers(text: str) -> bool:
    """Whether `text` is a flow list of two numbers, as `[0.01, 0.05]` reads once its quotes are gone."""
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return False
    try:
        return len([float(part) for part in inner[1:-1].split(",")]) == 2
    except ValueError:
        return False


class Region(Strict):
    """An interval of allowed values for a metric: at_least / at_most / equals / between."""

    # Finite only: a bound of nan or inf would make every comparison vacuous.
    at_least: Number | None = Field(default=None, allow_inf_nan=False)
    at_most: Number | None = Field(default=None, allow_inf_nan=False)
    equals: Number | None = Field(default=None, allow_inf_nan=False)
    between: tuple[Annotated[Number, Field(allow_inf_nan=False)],
                   Annotated[Number, Field(allow_inf_nan=False)]] | None = None

    @field_validator("between", mode="before")
    @classmethod
    def _low_and_high(cls, value: Any) -> Any:
        # pydantic tells a wrong shape in its own words ("Tuple should have at most 2 items after validation").
        if value is None or (isinstance(value, (list, tuple)) and len(value) == 2):
            return value
        if isinstance(value, (list, tuple)):
            got = count(len(value), 'value')
        elif isinstance(value, str):  # unquoted, one number would still not be two: only a quoted list is told so
            got = f"{value!r} (text{': write it without quotes' if _two_numbers(value) else ''})"
        else:
            got = shown(value)
        raise ValueError(f"must be two numbers [low, high], got {got}")

    @model_validator(mode="after")
    def _one_bound(self) -> "Region":
        given = [k for k in ("at_least", "at_most", "equals", "between") if getattr(self, k) is not None]
        if not given:
            raise ValueError("give a region: at_least, at_most, equals or between")
        if "equals" in given and len(given) > 1:
            raise ValueError("equals cannot be combined with another bound")
        if "between" in given and len(given) > 1:
            raise ValueError("between cannot be combined with another bound")
        lo, hi = self.bounds()
        if lo > hi:
            raise ValueError(f"empty region: lower bound {lo} is above upper bound {hi}")
        return self

    def bounds(self) -> tuple[float, float]:
        """(lo, hi), closed; infinite where unbounded."""
        if self.equals is not None:
            return (self.equals, self.equals)
        if self.between is not None:
            return (float(self.between[0]), float(self.between[1]))
        lo = self.at_least if self.at_least is not None else float("-inf")
        hi = self.at_most if self.at_most is not None else float("inf")
        return (lo, hi)

    def contains(self, value: float) -> bool:
        lo, hi = self.bounds()
        return lo <= value <= hi

    def describe(self) -> str:
        if self.equals is not None:
            return f"== {self.equals:g}"
        if self.between is not None:
            return f"in [{self.between[0]:g}, {self.between[1]:g}]"
        parts = []
        if self.at_least is not None:
            parts.append(f">= {self.at_least:g}")
        if self.at_most is not None:
            parts.append(f"<= {self.at_most:g}")
        return " and ".join(parts)


def region_text(region: Region) -> str:
    """`region` as `wb isolate --region` takes it, e.g. ">= 0.05"."""
    lo, hi = region.bounds()
    if region.equals is not None:
        return f"== {region.equals:g}"
    if region.between is not None:
        return f"{lo:g}..{hi:g}"
    return f">= {lo:g}" if region.at_least is not None else f"<= {hi:g}"
