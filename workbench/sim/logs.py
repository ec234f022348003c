"""Server logs of the embedded deployment (the journal analogue) and a reader filtering by time.

Every line starts with the wall-clock UTC time it was written (as `date` and journalctl show time), then the
unit, the level and `sim=` the deployment's simulated time (see `clock`), which runs ahead of the wall clock (a
run covers minutes of simulated time in seconds) and is what pdsim's timeouts follow:

    2026-12-04T19:06:02.104233Z decode[4121] INFO sim=2026-12-04T20:45:13.001000Z room=3 ... WaitingForInput

`--since T` is a wall time, compared with the first stamp, so "count WaitingForInput since T" is
`wb sim journal --unit decode --since "$T" | grep -ic WaitingForInput` with T from `date -u +%FT%T`, a runner's
run start, or a line's own first stamp. Lines written before wall stamps (no `sim=`) are stamped on the simulated
clock: for them T is translated into the simulated timeline with the clock's checkpoints, as before.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from workbench.errors import BadInput

__all__ = ["UNITS", "log_path", "setup_server_logging", "parse_since", "read_journal"]

UNITS = ("prefill", "decode")


def log_path(state_dir: Path, unit: str) -> Path:
    return Path(state_dir) / "logs" / f"{unit}.log"


SIM_FIELD = "sim="


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class _UtcFormatter(logging.Formatter):
    """The wall time the line was written first, then (with `now`, the simulated clock) `sim=` its time."""

    def __init__(self, fmt: str, now=None) -> None:
        super().__init__(fmt)
        self._now = now

    def formatTime(self, record, datefmt=None):  # noqa: N802 (logging's name)
        return _iso(record.created)

    def formatMessage(self, record):  # noqa: N802 (logging's name)
        record.sim = f"{SIM_FIELD}{_iso(self._now())} " if self._now is not None else ""
        return super().formatMessage(record)


def setup_server_logging(state_dir: Path, unit: str, now=None) -> logging.Logger:
    """The unit's journal, stamped with the wall clock; `now` (the simulated clock) adds `sim=` its time."""
    path = log_path(state_dir, unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_UtcFormatter(f"%(asctime)s {unit}[%(process)d] %(levelname)s %(sim)s%(message)s",
                                       now))
    log = logging.getLogger("pdsim")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    # aiohttp's access log would add a line per request; the seed's journal had none either.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    return log


_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|"
                  r"h|hour|hours)\s+ago\s*$", re.I)


def parse_since(text: str | None, *, now: datetime | None = None) -> datetime | None:
    """An ISO-8601 time (naive = UTC) or the journalctl-style `12 min ago`."""
    if text is None or not str(text).strip():
        return None
    now = now or datetime.now(timezone.utc)
    m = _AGO.match(str(text))
    if m:
        unit = m.group(2).lower()[0]
        secs = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[unit]
        try:
            return now - timedelta(seconds=secs)
        except OverflowError:
            raise _out_of_range(text) from None
    try:
        t = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"--since {text!r} is neither an ISO-8601 time nor 'N min ago'",
                       hint='e.g. --since "$(date -u +%Y-%m-%dT%H:%M:%S)" or --since "12 min ago"') \
            from None
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    try:
        t.astimezone(timezone.utc)  # the journal is read in UTC: a time outside years 1-9999 there is none
    except (OverflowError, ValueError):
        raise _out_of_range(text) from None
    return t


def _out_of_range(text: str) -> BadInput:
    return BadInput(f"--since {text!r} is out of range (years 1 to 9999 in UTC)",
                    hint="leave --since out to read the whole journal")


def _stamp(line: str) -> datetime | None:
    """The time a line starts with, UTC when it names no zone (as --since reads one: a line wb did not write
    may have such a time, and comparing it with an aware one raised TypeError)."""
    head = line.split(" ", 1)[0]
    try:
        t = datetime.fromisoformat(head.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _wall_stamped(line: str) -> bool:
    """A line written with a wall stamp first (its fourth word is the simulated time)."""
    words = line.split(" ", 4)
    return len(words) > 3 and words[3].startswith(SIM_FIELD)


def read_journal(state_dir: Path, unit: str, since: datetime | None = None) -> Iterator[str]:
    """Log lines of a unit at or after the wall time `since` (lines without a stamp follow the previous one; a
    line of an older pdsim, stamped on the simulated clock, is compared with `since` translated into it)."""
    from workbench.sim.clock import sim_time_at

    if unit not in UNITS:
        from workbench.registry.common import did_you_mean

        raise BadInput(f"--unit {unit}: unknown unit {unit!r}",
                       hint=did_you_mean(unit, UNITS, "one of: " + ", ".join(UNITS)), where="--unit")
    path = log_path(state_dir, unit)
    if not path.exists():
        return
    on_sim = None
    keep = since is None
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            t = _stamp(line)
            if t is not None and since is not None:
                if _wall_stamped(line):
                    keep = t >= since
                else:
                    if on_sim is None:
                        on_sim = datetime.fromtimestamp(sim_time_at(Path(state_dir), since.timestamp()),
                                                        tz=timezone.utc)
                    keep = t >= on_sim
            if keep:
                yield line.rstrip("\n")
