"""Server logs of the embedded deployment (the journal analogue) and a reader filtering by time.

Every line starts with an ISO-8601 UTC timestamp on the deployment's simulated clock (see
`clock`), so "count WaitingForInput since T" is
`wb sim journal --unit decode --since "$T" | grep -ic WaitingForInput`, where T is a wall time
(as `date` prints it, or as a runner records a run's start): the reader translates it into the
simulated timeline with the clock's checkpoints.
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


class _UtcFormatter(logging.Formatter):
    def __init__(self, fmt: str, now=None) -> None:
        super().__init__(fmt)
        self._now = now

    def formatTime(self, record, datefmt=None):  # noqa: N802 (logging's name)
        t = self._now() if self._now is not None else record.created
        return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(
            timespec="microseconds").replace("+00:00", "Z")


def setup_server_logging(state_dir: Path, unit: str, now=None) -> logging.Logger:
    """The unit's journal; `now` gives the stamp (the simulated clock), else the wall clock."""
    path = log_path(state_dir, unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_UtcFormatter(f"%(asctime)s {unit}[%(process)d] %(levelname)s %(message)s",
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


def read_journal(state_dir: Path, unit: str, since: datetime | None = None) -> Iterator[str]:
    """Log lines of a unit at or after the wall time `since` (translated into the simulated
    timeline; lines without a stamp follow the previous one)."""
    from workbench.sim.clock import sim_time_at

    if unit not in UNITS:
        raise BadInput(f"unknown unit {unit!r}", hint="one of: " + ", ".join(UNITS))
    path = log_path(state_dir, unit)
    if not path.exists():
        return
    if since is not None:
        since = datetime.fromtimestamp(sim_time_at(Path(state_dir), since.timestamp()),
                                       tz=timezone.utc)
    keep = since is None
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            t = _stamp(line)
            if t is not None and since is not None:
                keep = t >= since
            if keep:
                yield line.rstrip("\n")
