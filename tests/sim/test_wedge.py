"""The wedge: an ABORT kills prefill's bootstrap thread (fix off), /health stays 200, later
requests wait in WaitingForInput; with the fix the same ABORT is handled. Requests here come from a
plain HTTP client that is not on the simulated clock: the servers move the clock themselves."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import httpx

from workbench.sim import control, logs
from workbench.sim import datapath as dp

from pdsim_kit import write_serve

# A pool the configurator sizes at 40 pages (fp8 rows) but whose memory holds 34 bf16 pages:
# a 1800-token prompt (38 pages with its output reservation) reaches pages without memory.
SMALL_POOL_MB = 1.84


def _post(port: int, n: int, timeout: float, tag: int = 1):
    toks = dp.filler_tokens(tag, n - 1).tolist() + [dp.turn_token(1, tag)]
    try:
        r = httpx.post(f"http://127.0.0.1:{port}/generate", timeout=timeout,
                       json={"input_ids": toks, "max_tokens": 2500})
        return r.status_code
    except httpx.TimeoutException:
        return "timeout"


def _wait(pred, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _wfi(sim_dir, since) -> int:
    return sum(1 for line in logs.read_journal(sim_dir, "decode", since)
               if "waitingforinput" in line.lower())


def test_abort_without_the_fix_wedges_silently(sim_dir):
    st = control.up(sim_dir, config=write_serve(sim_dir, decode_pool_mb=SMALL_POOL_MB,
                                                nixl_abort_fix="off"))
    port = st.units["decode"].port
    t0 = datetime.now(timezone.utc)
    assert st.units["prefill"].debug["bootstrap_alive"] is True
    # The big request's transfer hits a page without memory: its room fails (the request is
    # retried in a new room), and decode sends prefill an ABORT for the failed room.
    _post(port, 1800, timeout=30)
    assert any("failed: KV page" in line for line in logs.read_journal(sim_dir, "decode", t0))
    assert _wait(lambda: control.status(sim_dir).units["prefill"].state == "wedged")
    assert any("sent ABORT" in line for line in logs.read_journal(sim_dir, "decode", t0))
    st = control.status(sim_dir)
    assert st.units["prefill"].debug["bootstrap_alive"] is False
    for u in st.units.values():                        # the wedge is invisible to /health
        assert httpx.get(f"http://127.0.0.1:{u.port}/health", timeout=2).status_code == 200
    # Every later request waits for KV that never comes: WaitingForInput every simulated minute
    # until decode gives up on the room (the simulated clock gets there in no time).
    assert _post(port, 100, timeout=30, tag=2) == 503
    assert _wfi(sim_dir, t0) >= 10
    # the thread died silently: no traceback, no error line in prefill's journal
    text = "\n".join(logs.read_journal(sim_dir, "prefill", t0))
    assert "Traceback" not in text and "ERROR" not in text


def test_with_the_fix_the_abort_is_handled(sim_dir):
    st = control.up(sim_dir, config=write_serve(sim_dir, decode_pool_mb=SMALL_POOL_MB,
                                                nixl_abort_fix="on"))
    port = st.units["decode"].port
    t0 = datetime.now(timezone.utc)
    assert _post(port, 1800, timeout=30) in (200, 503)
    assert any("failed: KV page" in line for line in logs.read_journal(sim_dir, "decode", t0))
    assert _wait(lambda: any("ABORT room=" in line and "handled" in line
                             for line in logs.read_journal(sim_dir, "prefill", t0)))
    st = control.status(sim_dir)
    assert st.units["prefill"].state == "healthy"
    assert st.units["prefill"].debug["bootstrap_alive"] is True
    assert _post(port, 100, timeout=30, tag=2) == 200
    assert _wfi(sim_dir, t0) == 0


def test_journal_since_filters_by_time_and_a_wall_time_counts_only_the_next_run(sim_dir):
    """--since takes an ISO time or "N min ago" (a time after the start-up lines: none of them; before: all).
    The runner's count: `journal --since RUN_START` (a wall time taken after restart and health)
    holds the run's lines and none of the previous run's, although simulated stamps run far ahead
    of the wall clock (a run covers minutes of simulated time in seconds): lines are stamped with the wall
    time first, their simulated time beside it."""
    from workbench.sim import repro

    cfg = write_serve(sim_dir, causal_model="wedge", nixl_abort_fix="off", decode_pool_mb=30, seed=3)
    control.up(sim_dir, config=cfg)
    lines = list(logs.read_journal(sim_dir, "decode", None))
    assert lines and all(line[:4].isdigit() and "T" in line.split()[0] for line in lines)
    since = logs.parse_since(datetime.now(timezone.utc).isoformat())
    assert list(logs.read_journal(sim_dir, "decode", since)) == []
    since = logs.parse_since("5 min ago")
    assert list(logs.read_journal(sim_dir, "decode", since)) == lines
    t1 = datetime.now(timezone.utc)
    # 16 sessions are enough for this world to time out and wedge (seed 3: 27 WaitingForInput lines; 12 give
    # none), and the count is only asserted non-zero: the 24 test_determinism.py runs cost half as much again.
    repro.run_repro(sim_dir, sessions=16, rounds=4, tag="wedged")
    first = _wfi(sim_dir, t1)
    assert first > 0
    last = list(logs.read_journal(sim_dir, "decode", None))[-1]
    last_stamp = logs._stamp(last)
    sim_stamp = datetime.fromisoformat(last.split()[3].removeprefix("sim=").replace("Z", "+00:00"))
    assert sim_stamp > datetime.now(timezone.utc) >= last_stamp  # simulated time is ahead of the wall
    cfg.write_text(cfg.read_text().replace("nixl_abort_fix=off", "nixl_abort_fix=on"))
    control.restart(sim_dir)
    t2 = datetime.now(timezone.utc)
    assert _wfi(sim_dir, t2) == 0 and list(logs.read_journal(sim_dir, "decode", t2)) == []
    repro.run_repro(sim_dir, sessions=8, rounds=2, tag="fixed")
    run2 = list(logs.read_journal(sim_dir, "decode", t2))
    assert any("admitted" in line for line in run2)
    assert all(logs._stamp(line) > last_stamp for line in run2)   # nothing of the first run
    assert _wfi(sim_dir, t2) == 0
    assert _wfi(sim_dir, t1) == first                        # the first run's lines are all there


def test_the_pool_configurator_fix_sizes_the_pool_by_the_real_rows(sim_dir):
    """The seed's pool_configurator bug, and its fix as a variable: without it the configurator budgets bf16
    index-K rows at the fp8 size (40 pages, 34 backed by memory), so the big prompt is admitted into pages
    without memory, its room fails, and the ABORT that cleans up kills prefill's bootstrap thread (no abort
    fix here). With `pool_configurator_fix=on` the pool holds only backed pages: the same prompt is refused at
    admission (HTTP 413), nothing is written where no memory is, no ABORT is sent and prefill stays healthy."""
    st = control.up(sim_dir, config=write_serve(sim_dir, decode_pool_mb=SMALL_POOL_MB, nixl_abort_fix="off",
                                                pool_configurator_fix="on"))
    pool = st.units["decode"].debug["pool"]
    assert pool["logical_pages"] == pool["physical_pages"] == 34
    port = st.units["decode"].port
    t0 = datetime.now(timezone.utc)
    r = httpx.post(f"http://127.0.0.1:{port}/generate", timeout=30, json={
        "input_ids": dp.filler_tokens(1, 1799).tolist() + [dp.turn_token(1, 1)], "max_tokens": 2500})
    assert (r.status_code, r.json()["error"]) == (413, "request needs 38 pages; the pool has 34")
    decode = "\n".join(logs.read_journal(sim_dir, "decode", t0))
    assert "no memory behind it" not in decode and "sent ABORT" not in decode
    st = control.status(sim_dir)
    assert st.units["prefill"].state == "healthy" and st.units["prefill"].debug["bootstrap_alive"] is True
    assert _post(port, 100, timeout=30, tag=2) == 200
    assert _wfi(sim_dir, t0) == 0
