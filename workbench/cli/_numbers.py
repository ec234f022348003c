"""The CLI's numeric flags: what each accepts, and one shape for a value it does not, whether the parser could not
read it as a number or it lies outside what the flag takes: `Error: --flag VALUE: what is wrong` and a `Hint:`
saying what is accepted, exit 2, before the command does anything. `WbCommand` applies `not_read` and `check`."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any, Callable

from workbench.errors import BadInput


@dataclass(frozen=True)
class Accepts:
    """What a numeric flag takes: a whole number or any, from `least` (excluded when `above`) up to `most`
    (excluded when `below`); infinity where no `most` bounds it (a timeout that never runs out), nan never.
    `least` may be a function, for a bound a module outside the CLI keeps (imported only when it is needed).
    `means`: what the value is, said after what is accepted, and `left_out`: what leaving the flag out does."""

    whole: bool
    least: float | Callable[[], float] | None = None
    above: bool = False
    most: float | None = None
    below: bool = False
    means: str | None = None
    left_out: str | None = None

    def _least(self) -> float | None:
        return self.least() if callable(self.least) else self.least

    def accepted(self) -> str:
        """"a whole number of 1 or more", "a number between 0 and 1, both excluded", "a whole number from 0 to 9"."""
        kind, lo, hi = ("a whole number" if self.whole else "a number"), self._least(), self.most
        if lo is not None and hi is not None:
            if self.above and self.below:
                return f"{kind} between {_said(lo)} and {_said(hi)}, both excluded"
            return f"{kind} from {_said(lo)} to {_said(hi)}"
        if lo is not None:
            return f"{kind} above {_said(lo)}" if self.above else f"{kind} of {_said(lo)} or more"
        return kind

    def hint(self) -> str:
        """"give a whole number of 1 or more (layers per pool); leave --layers out for 4"."""
        return (f"give {self.accepted()}" + (f" ({self.means})" if self.means else "")
                + (f"; {self.left_out}" if self.left_out else ""))

    def fits(self, value: float) -> bool:
        lo, hi = self._least(), self.most
        if math.isnan(value) or (hi is not None and math.isinf(value)):
            return False
        return ((lo is None or (value > lo if self.above else value >= lo))
                and (hi is None or (value < hi if self.below else value <= hi)))


def _said(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else repr(bound)


def _seed(left_out: str = "leave --seed out to draw one (the seed used is printed and recorded)") -> Accepts:
    """A seed's range: `design.seed`'s in the YAML files."""
    from workbench.registry.common import SEED_MAX, SEED_MIN

    return Accepts(True, SEED_MIN, most=SEED_MAX, left_out=left_out)


def _replicates() -> Accepts:
    from workbench.runner.prepare import MAX_REPLICATES

    return Accepts(True, 1, most=MAX_REPLICATES, means="blocks of runs of every arm",
                   left_out="leave --replicates out for the number the design sets (the "
                             "hypothesis's, else its experiment's)")


def _least_ctx() -> float:
    from workbench.sim.repro import least_ctx

    return least_ctx()


def _health_timeout() -> Accepts:
    from workbench.sim.control import HEALTH_TIMEOUT_S

    return Accepts(False, 0, above=True, means="seconds; inf waits as long as it takes",
                   left_out=f"leave --timeout out to wait up to {HEALTH_TIMEOUT_S:g} s")


# Every numeric flag of the CLI, by command (as typed after `wb`): tests/cli/test_flag_checks.py checks that no
# command has one this table lacks. A function is called when the flag's value is checked (its bound is kept by
# a module the CLI imports only then).
FLAGS: dict[str, dict[str, Accepts | Callable[[], Accepts]]] = {
    "runs list": {"--limit": Accepts(True, 1, means="the last N runs are listed",
                                     left_out="leave --limit out to list every run")},
    "hypothesis run": {"--replicates": _replicates, "--seed": _seed},
    "isolate": {"--budget": Accepts(False, 0, above=True, means="units for the whole search; inf for no limit",
                                    left_out="leave --budget out for 4000"),
                "--alpha": Accepts(False, 0, above=True, most=1, below=True, means="the whole search's error level",
                                   left_out="leave --alpha out for 0.05"),
                "--seed": _seed},
    "kernel check": {"--seed": lambda: _seed("leave --seed out for 0")},
    "kernel bench": {"--layers": Accepts(True, 1, means="layers per pool", left_out="leave --layers out for 4")},
    "sim up": {"--timeout": _health_timeout},
    "sim restart": {"--timeout": _health_timeout},
    "sim repro": {"--sessions": Accepts(True, 1, means="concurrent sessions", left_out="leave --sessions out for 80"),
                  "--rounds": Accepts(True, 1, means="rounds per session", left_out="leave --rounds out for 4"),
                  "--ctx": Accepts(True, _least_ctx, means="tokens of the first prompt",
                                   left_out="leave --ctx out for 300"),
                  "--max-tokens": Accepts(True, 1, means="tokens a request may generate",
                                          left_out="leave --max-tokens out for 2500"),
                  "--timeout": Accepts(False, 0, above=True, means="simulated seconds per request; inf never times out",
                                       left_out="leave --timeout out for 200")},
    "sim bench": {"--concurrency": Accepts(True, 1, means="requests in flight at once; -c may be repeated",
                                           left_out="leave -c out for 1 and 32"),
                  "--tokens": Accepts(True, 1, means="tokens per answer", left_out="leave --tokens out for 512")},
}


def accepts(command: str, param: Any) -> tuple[str, Accepts] | None:
    """The flag's long name and what it accepts, when `param` is one of `command`'s numeric flags."""
    table = FLAGS.get(command, {})
    for flag in getattr(param, "opts", []):
        if flag in table:
            found = table[flag]
            return flag, found if isinstance(found, Accepts) else found()
    return None


def numeric(param: Any) -> type | None:
    """int or float where `param` is an option taking numbers (one, optional, or a list of them), else None."""
    if getattr(param, "param_type_name", None) != "option" or getattr(param, "is_flag", False):
        return None
    annotation = param.type_descriptor.annotation
    while typing.get_origin(annotation) is not None:  # Optional[int], list[int]
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(inner) != 1:
            return None
        annotation = inner[0]
    return annotation if annotation in (int, float) else None


def shown(value: Any) -> str:
    """A value as the user gave it: text as typed (cut past 24 characters), a float read from "2" as 2."""
    if isinstance(value, str):
        text = value if value.isprintable() and value.strip() == value and value else repr(value)
        return text if len(text) <= 24 else text[:20] + "…"
    if isinstance(value, float) and (value.is_integer() or not math.isfinite(value)):
        return str(int(value)) if math.isfinite(value) else str(value)
    return shown(str(value)) if isinstance(value, int) else repr(value)


def not_read(command: str, param: Any, given: Any) -> BadInput | None:
    """The error for a value the parser could not read as the flag's number (`--limit abc`), or None where the
    flag is not in the table."""
    found = accepts(command, param) if given is not None else None
    if found is None:
        return None
    flag, what = found
    kind = "a whole number" if what.whole else "a number"
    return BadInput(f"{flag} {shown(given)}: not {kind}", hint=what.hint(), where=flag)


def typed(params: list[Any], args: list[str]) -> dict[str, list[str]]:
    """Each numeric option's values as the command line gives them (`--alpha 1e-400`, `--limit=5`), by the
    parameter's name, in their order: a value read (1e-400 as 0) is said as typed."""
    out: dict[str, list[str]] = {}
    for param in params:
        if numeric(param) is None:
            continue
        for i, arg in enumerate(args):
            if arg == "--":
                break
            if arg in param.opts and i + 1 < len(args):
                out.setdefault(param.name, []).append(args[i + 1])
            elif arg.startswith("--") and arg.partition("=")[0] in param.opts and "=" in arg:
                out.setdefault(param.name, []).append(arg.partition("=")[2])
    return out


def check(command: str, params: list[Any], values: dict[str, Any],
          given: dict[str, list[str]] | None = None) -> None:
    """Each numeric flag's value read, against what it accepts (a list's each item): the first that does not fit
    raises BadInput, showing the value as `given` has it typed (`typed`) where it does."""
    for param in params:
        value = values.get(param.name)
        found = accepts(command, param) if value is not None else None
        if found is None:
            continue
        flag, what = found
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        texts = (given or {}).get(param.name, [])
        for i, v in enumerate(items):
            if not what.fits(v):
                problem = "not a number" if isinstance(v, float) and math.isnan(v) else "out of range"
                as_typed = shown(texts[i]) if len(texts) == len(items) else shown(v)
                raise BadInput(f"{flag} {as_typed}: {problem}", hint=what.hint(), where=flag)
