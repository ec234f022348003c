"""The repro harness: concurrent multi-round tool-calling sessions through the decode server, printing the
seed's summary lines, plus the throughput check (tok/s at C=1 and C=32).

A session (deterministic in the deployment's `seed` and its index):
  round 1 prompt = ctx tokens: filler, the cue blocks for rounds 1 and 2, a tail, a turn marker.
  Each answer is parsed as a DSML tool call; the "tool" returns a result holding the cue block
  for two rounds ahead (a plan) and a body of variable length, so the cue the next-but-one
  round needs sits near the end of a prompt that HiCache will have cached: in its last, partial
  page when the body is short.
Outcome per session: leak (DSML that does not parse), no_tool (round 1 called no tool), done
(the model answered), maxrounds (a valid call in every round), error (HTTP error or timeout).

The harness joins the deployment's simulated clock (see `clock`): its requests carry their send
time and deadline, the client timeout fires on simulated time, and `wall=` is the run's simulated
duration, so the same serve file and seed give the same outcomes on any host.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.errors import BadInput, SimError
from workbench.sim import datapath as dp
from workbench.sim.clock import HOP_S, Clock
from workbench.sim.control import running_config, state_dir
from workbench.sim.indexer import parse_tool_call

__all__ = ["SessionResult", "ReproResult", "run_repro", "run_bench", "BenchResult",
           "summary_lines", "RESULT_BODY_MAX"]

RESULT_BODY_MAX = 500      # tool-result body length is uniform in [0, this)
CTX_TAIL_MAX = 400         # tokens after the cue blocks of the first prompt: uniform in [0, this)
RESULT_HEADER = 24
FINISH_SHARE = 12          # percent of sessions whose plan ends with an answer


@dataclass
class SessionResult:
    session: int
    outcome: str
    rounds: int
    timings: dict
    tag: str
    error: str | None = None
    timeouts: int = 0
    leak_round: int | None = None
    leak_text: str | None = None

    def to_json(self) -> dict:
        d = {"session": self.session, "outcome": self.outcome, "rounds": self.rounds,
             "timings": self.timings, "tag": self.tag, "timeouts": self.timeouts}
        if self.error:
            d["error"] = self.error
        if self.leak_round is not None:
            d["leak_round"] = self.leak_round
        return d


@dataclass
class ReproResult:
    wall_s: float                  # simulated seconds, as the deployment's clock measured them
    sessions: list[SessionResult]
    counts: dict[str, int]
    started_at: str
    params: dict = field(default_factory=dict)
    host_s: float = 0.0            # wall seconds this host took to simulate it

    @property
    def corrupted(self) -> int:
        return self.counts.get("leak", 0) + self.counts.get("no_tool", 0)

    @property
    def timeouts(self) -> int:
        return sum(s.timeouts for s in self.sessions)

    def to_dict(self) -> dict:
        return {"wall_s": self.wall_s, "host_s": self.host_s, "counts": self.counts,
                "corrupted": self.corrupted, "sessions": len(self.sessions),
                "timeouts": self.timeouts,
                "started_at": self.started_at, "params": self.params}


_M64 = (1 << 64) - 1


def _h(*xs: int) -> int:
    """splitmix64 over a tuple of ints: the workload's deterministic randomness."""
    v = 0x12345
    for x in xs:
        v = (v * 1_000_003 + x + 0x9E3779B97F4A7C15) & _M64
        v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & _M64
        v ^= v >> 31
    return v


class _Session:
    def __init__(self, idx: int, seed: int, rounds: int, ctx: int) -> None:
        self.idx = idx
        self.seed = seed
        self.tag = (idx + seed * 131) % 4096
        h = _h(seed, idx, 7)
        self.finish_round = (2 + h % max(1, rounds - 1)) if (h >> 20) % 100 < FINISH_SHARE else None
        tail = _h(seed, idx, 0) % CTX_TAIL_MAX
        tail = min(tail, max(0, ctx - 2 * dp.CUE_PARTS - 2))
        head = max(0, ctx - 2 * dp.CUE_PARTS - tail - 1)
        self.prompt = np.concatenate([
            dp.filler_tokens(_h(seed, idx, 1), head), self._cue(1), self._cue(2),
            dp.filler_tokens(_h(seed, idx, 2), tail), [dp.turn_token(1, self.tag)]]).astype(np.int64)

    def _cue(self, rnd: int) -> np.ndarray:
        final = self.finish_round is not None and rnd == self.finish_round
        return np.array([dp.cue_token(self.tag, rnd, p, final=final) for p in range(dp.CUE_PARTS)],
                        dtype=np.int64)

    def extend(self, rnd: int, output_ids: list[int]) -> None:
        """Append the answer of round rnd, the tool's result and the next turn marker."""
        body = _h(self.seed, self.idx, 100 + rnd) % RESULT_BODY_MAX
        result = np.concatenate([dp.filler_tokens(_h(self.seed, self.idx, 200 + rnd), RESULT_HEADER),
                                 self._cue(rnd + 2),
                                 dp.filler_tokens(_h(self.seed, self.idx, 300 + rnd), body)])
        self.prompt = np.concatenate([self.prompt, np.asarray(output_ids, dtype=np.int64), result,
                                      [dp.turn_token(rnd + 1, self.tag)]]).astype(np.int64)


class _Client:
    """The harness's side of the clock: requests with send time, key and deadline; answers
    handled one hop after the server sent them; timeouts on simulated time."""

    def __init__(self, http, url: str, clock: Clock) -> None:
        self.http = http
        self.url = url
        self.clock = clock
        self.peer = clock.peer("decode")
        self.pending: list[asyncio.Task] = []    # requests still open (a timed-out one too)

    async def call(self, payload: dict, key: tuple, timeout_s: float | None) -> tuple:
        """("ok", status, body), ("timeout", None, None) or ("error", None, message)."""
        clock = self.clock
        answer = asyncio.get_running_loop().create_future()
        now = clock.now()
        deadline = now + timeout_s if timeout_s is not None else None
        body = {**payload, "vt": now, "src": clock.src, "key": list(key), "deadline": deadline}

        def settle(value) -> None:
            if not answer.done():
                answer.set_result(value)

        async def send() -> None:
            import aiohttp

            clock.sent(self.peer)
            try:
                async with self.http.post(self.url, json=body) as resp:
                    status, got = resp.status, await resp.json(content_type=None)
            except (aiohttp.ClientError, ValueError, OSError) as exc:
                clock.unsent(self.peer)
                settle(("error", None, f"{type(exc).__name__}: {exc}"[:200]))
                return
            clock.received(self.peer)
            vt = float(got.get("vt", clock.now())) if isinstance(got, dict) else clock.now()
            clock.at(vt + HOP_S, (1, *key), lambda: settle(("ok", status, got)))

        self.pending.append(asyncio.ensure_future(send()))
        timer = None
        if deadline is not None:
            timer = clock.at(deadline, (2, *key), lambda: settle(("timeout", None, None)))
        try:
            return await answer
        finally:
            if timer is not None:
                timer.cancel()


async def _run_session(client: _Client, s: _Session, *, rounds: int, max_tokens: int,
                       timeout_s: float, tag: str) -> SessionResult:
    clock = client.clock
    t0 = clock.now()
    per_round = []
    outcome, err, timeouts, leak_round, leak_text = "maxrounds", None, 0, None, None
    done_rounds = 0
    for rnd in range(1, rounds + 1):
        t = clock.now()
        kind, status, body = await client.call(
            {"rid": f"s{s.idx}r{rnd}", "input_ids": s.prompt.tolist(), "max_tokens": max_tokens},
            (s.idx, rnd), timeout_s)
        per_round.append(round(clock.now() - t, 4))
        if kind == "timeout":
            timeouts += 1
            outcome, err = "error", "timeout"
            break
        if kind == "error":
            outcome, err = "error", body
            break
        if status != 200:
            msg = body.get("error", "") if isinstance(body, dict) else ""
            outcome, err = "error", f"http {status}: {str(msg)[:160]}"
            break
        done_rounds = rnd
        parsed = parse_tool_call(body["text"])
        if parsed.kind == "leak":
            outcome, leak_round, leak_text = "leak", rnd, body["text"]
            break
        if parsed.kind in ("answer", "empty"):
            outcome = "no_tool" if rnd == 1 or parsed.kind == "empty" else "done"
            break
        s.extend(rnd, body["output_ids"])
    return SessionResult(session=s.idx, outcome=outcome, rounds=done_rounds,
                         timings={"wall_s": round(clock.now() - t0, 4), "rounds_s": per_round},
                         tag=tag, error=err, timeouts=timeouts, leak_round=leak_round,
                         leak_text=leak_text)


def _on_clock(sdir: Path, coro_fn):
    """Run `coro_fn(clock)` on an event loop that is a participant of the deployment's clock."""
    clock = Clock(sdir, "client")
    try:
        with asyncio.Runner(loop_factory=clock.new_loop) as runner:
            clock.attach(runner.get_loop())
            return runner.run(coro_fn(clock))
    finally:
        clock.close()


def summary_lines(res: ReproResult) -> list[str]:
    """The seed's two lines, in its exact shape."""
    n = len(res.sessions)
    c = res.counts
    k = res.corrupted
    ok = c.get("done", 0) + c.get("maxrounds", 0)
    pct = 100.0 * k / n if n else 0.0
    return [f"wall={res.wall_s:.1f}s counts={json.dumps(c)}",
            f"CORRUPTION sessions: {k}/{n} = {pct:.0f}%  (leak={c.get('leak', 0)} "
            f"no_tool={c.get('no_tool', 0)} error={c.get('error', 0)} ok-ish[done/maxrounds]={ok})"]


def _check_jsonl(path: Path) -> None:
    """--jsonl must be able to become a file (its folders are made): said before the repro runs, not after."""
    if path.is_dir():
        raise BadInput(f"--jsonl {path} is a folder", hint=f"name a file, e.g. --jsonl {path / 'sessions.jsonl'}")
    for d in path.parents:
        if d.exists():
            if not d.is_dir():
                raise BadInput(f"--jsonl {path}: {d} is a file, not a folder", hint="name a file in a folder")
            return


def least_ctx() -> int:
    """The shortest first prompt a session can hold: two blocks of cue tokens and two more."""
    return 2 * dp.CUE_PARTS + 2


def run_repro(dir: str | Path | None = None, *, sessions: int = 80, rounds: int = 4,
              ctx: int = 300, max_tokens: int = 2500, timeout: float = 200.0, tag: str = "",
              jsonl: str | Path | None = None,
              out: Callable[[str], None] | None = None) -> ReproResult:
    """Run the harness against the running deployment; `timeout` is in simulated seconds."""
    least = least_ctx()
    bad = [f"--{flag} {value:g}" if isinstance(value, float) else f"--{flag} {value}" for flag, value, ok in (
        ("sessions", sessions, sessions >= 1), ("rounds", rounds, rounds >= 1), ("ctx", ctx, ctx >= least),
        ("max-tokens", max_tokens, max_tokens >= 1), ("timeout", timeout, timeout > 0)) if not ok]  # nan too
    if bad:  # each flag out of range named first, as bench does
        raise BadInput(f"{', '.join(bad)}: repro needs --sessions >= 1, --rounds >= 1, --ctx >= {least}, "
                       "--max-tokens >= 1 and --timeout > 0")
    if jsonl:
        _check_jsonl(Path(jsonl))
    cfg = running_config(dir)
    t_host = time.monotonic()
    res = _on_clock(state_dir(dir), lambda clock: _repro(
        cfg, clock, sessions=sessions, rounds=rounds, ctx=ctx, max_tokens=max_tokens,
        timeout_s=timeout, tag=tag))
    res.host_s = time.monotonic() - t_host
    res.params = {"sessions": sessions, "rounds": rounds, "ctx": ctx, "max_tokens": max_tokens,
                  "timeout": timeout, "tag": tag, "dir": str(state_dir(dir))}
    if jsonl:
        p = Path(jsonl)
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("w") as fh:
            for s in sorted(res.sessions, key=lambda s: s.session):
                fh.write(json.dumps(s.to_json()) + "\n")
    if out:
        for s in sorted(res.sessions, key=lambda s: s.session):
            if s.outcome == "leak":
                out(f"leak @ session {s.session} round {s.leak_round}: {s.leak_text[:90]!r}")
        # Real time first, named as such: the seed's two lines (last, in its shape) give `wall=` on the
        # deployment's simulated clock.
        out(f"host={res.host_s:.1f}s of real time on this machine (wall= below is pdsim's simulated time)")
        for line in summary_lines(res):
            out(line)
    return res


async def _repro(cfg, clock: Clock, *, sessions, rounds, ctx, max_tokens, timeout_s,
                 tag) -> ReproResult:
    import aiohttp
    from datetime import datetime, timezone

    url = f"http://127.0.0.1:{cfg.decode_port}/generate"
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    conn = aiohttp.TCPConnector(limit=0, force_close=False)
    t0 = clock.now()
    order: list[SessionResult] = []
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=None)
                                     ) as http:
        client = _Client(http, url, clock)

        async def one(i: int) -> None:
            s = _Session(i, cfg.seed, rounds, ctx)
            r = await _run_session(client, s, rounds=rounds, max_tokens=max_tokens,
                                   timeout_s=timeout_s, tag=tag)
            order.append(r)

        await asyncio.gather(*(one(i) for i in range(sessions)))
        wall = clock.now() - t0
        await asyncio.gather(*client.pending)     # answers to given-up requests still count
    counts = dict(Counter(r.outcome for r in order))      # first-finished order, as the seed's
    return ReproResult(wall_s=wall, sessions=order, counts=counts, started_at=started)


@dataclass
class BenchResult:
    concurrency: int
    tokens: int
    wall_s: float
    tok_per_s: float           # on the simulated clock

    def line(self) -> str:
        return (f"throughput C={self.concurrency}: {self.tok_per_s:.1f} tok/s ({self.tokens} tokens "
                f"in {self.wall_s:.2f}s simulated)")


def run_bench(dir: str | Path | None = None, *, concurrency: tuple[int, ...] = (1, 32),
              tokens: int = 512, out: Callable[[str], None] | None = None) -> list[BenchResult]:
    """Decode throughput at each concurrency (fixed-length answers, fresh short prompts)."""
    bad = [f"--concurrency {c}" for c in concurrency if c < 1] + ([f"--tokens {tokens}"] if tokens < 1 else [])
    if bad:  # refused before any request: the deployment answered them with errors, or measured 0 tok/s
        raise BadInput(f"{', '.join(bad)}: bench needs --concurrency >= 1 and --tokens >= 1")
    cfg = running_config(dir)
    sdir = state_dir(dir)
    results = []
    try:
        _on_clock(sdir, lambda clock: _bench(cfg, clock, 1, 8))     # warm-up, as the seed's check
        for c in concurrency:
            r = _on_clock(sdir, lambda clock, c=c: _bench(cfg, clock, c, tokens))
            results.append(r)
            if out:
                out(r.line())
    except _BenchFailed as exc:
        raise SimError(str(exc), hint=_bench_hint(sdir)) from None
    return results


class _BenchFailed(Exception):
    """A bench request the deployment did not answer with its tokens (turned into a SimError with a hint)."""


def _bench_failure(rid: str, kind: str, status: int | None, body: object) -> _BenchFailed:
    if kind == "timeout":
        why = "no answer in time"
    elif kind == "error":
        why = f"the request to the decode server failed ({body})"
    else:
        detail = body.get("error") if isinstance(body, dict) and body.get("error") else body
        why = f"the decode server answered HTTP {status}: {detail}"
    return _BenchFailed(f"bench request {rid} failed: {why}")


def _bench_hint(sdir: Path) -> str:
    """What to do, from the deployment's state: a wedge lasts until a restart."""
    import shlex

    from workbench.sim.control import status

    st = status(sdir)
    restart = f"wb sim restart --dir {shlex.quote(str(sdir))}"
    if st.state == "wedged":
        why = "; ".join(f"{u.unit}: {u.detail}" for u in st.units.values() if u.state == "wedged")
        return (f"pdsim is wedged ({why}): it stays so until restarted. Run `{restart}`, then bench again "
                "(nixl_abort_fix=on keeps an abort from wedging it)")
    return (f"pdsim is {st.state}: see `wb sim status --dir {shlex.quote(str(sdir))}` and `wb sim journal --unit "
            f"decode`; `{restart}` starts it afresh")


async def _bench(cfg, clock: Clock, c: int, tokens: int) -> BenchResult:
    import aiohttp

    url = f"http://127.0.0.1:{cfg.decode_port}/generate"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        client = _Client(http, url, clock)

        async def one(i: int) -> int:
            prompt = dp.filler_tokens(_h(cfg.seed, 9000 + i), 64).tolist() + [dp.turn_token(1)]
            kind, status, body = await client.call(
                {"rid": f"bench{i}", "input_ids": prompt, "max_tokens": tokens,
                 "ignore_eos": True}, (i, 1), None)
            if kind != "ok" or status != 200:
                raise _bench_failure(f"bench{i}", kind, status, body)
            return len(body["output_ids"])

        t0 = clock.now()
        n = sum(await asyncio.gather(*(one(i) for i in range(c))))
        wall = clock.now() - t0
        await asyncio.gather(*client.pending)
    return BenchResult(concurrency=c, tokens=n, wall_s=wall, tok_per_s=n / wall)
