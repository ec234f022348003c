"""The serve file of the embedded deployment: a shell-compatible script of `name=value` lines.

It is the analogue of the seed's serve script: the runner rewrites it per arm, then restarts.
`VARIABLES` and `DEFAULTS` are the single source of the names the experiment YAML uses.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from workbench.errors import BadInput

__all__ = ["VARIABLES", "DEFAULTS", "ServeConfig", "parse_serve_text", "read_serve_file",
           "render_serve_file", "normalize", "with_overrides"]

_ON = ("on", "off")

#: name -> allowed values (a tuple) or a type (int / float).
VARIABLES: dict[str, tuple[str, ...] | type] = {
    "index_k_dtype": ("fp8", "bf16"),
    "hicache": _ON,
    "nixl_abort_fix": _ON,
    "geometry_fix": _ON,
    "indexer_host_pool_fix": _ON,
    # The seed's confirmed pool_configurator bug: the decode pool's token capacity is budgeted with the fp8
    # index-K row whatever the dtype (over-commit under bf16). "on" budgets the real row size.
    "pool_configurator_fix": _ON,
    "causal_model": ("seed", "wedge"),
    "seed": int,
    # Accepted so older serve files still parse; it has no effect: pdsim runs on simulated time
    # (workbench/sim/clock.py), whose speed depends on nothing but the work to simulate.
    "time_scale": float,
    "prefill_port": int,
    "decode_port": int,
    # Decode KV pool budget; the pool configurator turns it into a token capacity.
    "decode_pool_mb": float,
}

DEFAULTS: dict[str, str] = {
    "index_k_dtype": "bf16",
    "hicache": "on",
    "nixl_abort_fix": "off",
    "geometry_fix": "off",
    "indexer_host_pool_fix": "off",
    "pool_configurator_fix": "off",
    "causal_model": "seed",
    "seed": "0",
    "time_scale": "0.02",
    "prefill_port": "30000",
    "decode_port": "30002",
    "decode_pool_mb": "128",
}

_SYNONYMS = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}
_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def normalize(name: str, value: Any, *, where: str = "") -> str:
    """Check one variable's value and return its canonical text; BadInput names `where`."""
    prefix = f"{where}: " if where else ""
    if name not in VARIABLES:
        from workbench.registry.common import did_you_mean

        raise BadInput(f"{prefix}unknown variable {name!r}",
                       hint=did_you_mean(name, VARIABLES, "known variables: " + ", ".join(VARIABLES)))
    spec = VARIABLES[name]
    text = str(value).strip()
    # `--set hicache: 'maybe' ...` as `hypothesis run` says it: where the flag names the variable, it is not
    # named again; a serve file's line (file:3) is not a name, so there it is.
    said = repr(text) if where == f"--set {name}" else f"{name}={text!r}"
    if isinstance(spec, tuple):
        low = text.lower()
        if spec == _ON:
            low = _SYNONYMS.get(low, low)
        if low not in spec:
            from workbench.registry.common import did_you_mean

            given_as = where if where.startswith("--set ") else name
            raise BadInput(f"{prefix}{said} is not one of {', '.join(spec)}",
                           hint=did_you_mean(low, spec) or f"e.g. {given_as}={spec[0]}")
        return low
    try:
        num = spec(text)
    except ValueError:
        raise BadInput(f"{prefix}{said} is not a{'n int' if spec is int else ' number'}") \
            from None
    if spec is float and not (num > 0 and num < 1e6):
        raise BadInput(f"{prefix}{said} must be a positive number")
    if name == "seed" and num < 0:
        raise BadInput(f"{prefix}{said} must be >= 0")
    if name.endswith("_port") and not 1 <= num <= 65535:
        raise BadInput(f"{prefix}{said} is not a TCP port (1-65535)")
    return str(num)


def parse_serve_text(text: str, *, source: str = "<serve file>") -> dict[str, str]:
    """Parse serve-file text into canonical values over DEFAULTS; errors name `source:line`."""
    values = dict(DEFAULTS)
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{lineno}"
        m = _LINE.match(line)
        if not m:
            raise BadInput(f"{where}: expected `name=value`, got {raw.strip()!r}",
                           hint="one assignment per line, no spaces around '=', '#' for comments")
        name, rhs = m.group(1), m.group(2)
        try:
            words = shlex.split(rhs, comments=True)
        except ValueError as exc:
            raise BadInput(f"{where}: cannot parse the value of {name}: {exc}") from None
        if len(words) != 1:
            raise BadInput(f"{where}: {name} needs exactly one value, got {rhs.strip()!r}")
        if name in seen:
            raise BadInput(f"{where}: {name} is set twice (first on line {seen[name]})")
        seen[name] = lineno
        values[name] = normalize(name, words[0], where=where)
    return values


def read_serve_file(path: str | Path) -> dict[str, str]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise BadInput(f"cannot read serve file {p}: {exc.strerror}",
                       hint="create it with `wb sim up` or point --config at an existing file") \
            from None
    return parse_serve_text(text, source=str(p))


def with_overrides(values: Mapping[str, str], sets: Mapping[str, str] | None) -> dict[str, str]:
    out = dict(values)
    for name, value in (sets or {}).items():
        out[name] = normalize(name, value, where=f"--set {name}")
    return out


def render_serve_file(values: Mapping[str, Any]) -> str:
    """Render variables (missing ones from DEFAULTS) as a serve script that `bash -n` accepts."""
    full = dict(DEFAULTS)
    for name, value in values.items():
        full[name] = normalize(name, value, where=f"value of {name}")
    lines = ["# pdsim serve script (name=value; read by `wb sim up/restart`)"]
    lines += [f"{name}={shlex.quote(full[name])}" for name in VARIABLES]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ServeConfig:
    """Typed view of a serve file's values, as the servers use them."""

    index_k_dtype: str
    hicache: bool
    nixl_abort_fix: bool
    geometry_fix: bool
    indexer_host_pool_fix: bool
    pool_configurator_fix: bool
    causal_model: str
    seed: int
    time_scale: float
    prefill_port: int
    decode_port: int
    decode_pool_mb: float

    @classmethod
    def from_values(cls, values: Mapping[str, str]) -> "ServeConfig":
        v = {**DEFAULTS, **values}
        return cls(
            index_k_dtype=v["index_k_dtype"], hicache=v["hicache"] == "on",
            nixl_abort_fix=v["nixl_abort_fix"] == "on", geometry_fix=v["geometry_fix"] == "on",
            indexer_host_pool_fix=v["indexer_host_pool_fix"] == "on",
            pool_configurator_fix=v["pool_configurator_fix"] == "on",
            causal_model=v["causal_model"], seed=int(v["seed"]),
            time_scale=float(v["time_scale"]), prefill_port=int(v["prefill_port"]),
            decode_port=int(v["decode_port"]), decode_pool_mb=float(v["decode_pool_mb"]))

    @classmethod
    def load(cls, path: str | Path) -> "ServeConfig":
        return cls.from_values(read_serve_file(path))
