"""A restart command that leaves its server in the background with its output not redirected
(`svc serve CONF & echo $! > pidfile`): how long the runner's local target takes to return from it,
against waiting for the command's output pipes to close (what asyncio's proc.wait() does on Python
3.11 when stdout/stderr are pipes), bounded here by --limit seconds.

    python benchmarks/daemon_restart_bench.py [--reps 5] [--limit 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

SERVER = "import time\nprint('serving', flush=True)\nwhile True: time.sleep(1)\n"


async def _pipes_wait(cmd: str, limit: float) -> float:
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_shell(cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                 start_new_session=True, executable="/bin/bash")
    try:
        await asyncio.wait_for(asyncio.gather(proc.wait(), proc.stdout.read(), proc.stderr.read()), limit)
    except asyncio.TimeoutError:
        pass
    finally:
        proc._transport.close()  # noqa: SLF001  (the baseline's own pipes; not wb code)
    return time.monotonic() - t0


async def _wb(cmd: str) -> tuple[float, bool]:
    from workbench.runner.targets.local import LocalTarget

    t0 = time.monotonic()
    res = await LocalTarget().run("local", cmd, timeout=300)
    assert res.ok, res.output
    return time.monotonic() - t0, res.held_open


def _stop(pidfile: Path) -> None:
    try:
        os.kill(int(pidfile.read_text()), signal.SIGTERM)
    except (OSError, ValueError):
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--limit", type=float, default=10.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        srv, pidfile = Path(d) / "svc.py", Path(d) / "svc.pid"
        srv.write_text(SERVER)
        import sys

        cmd = f"{sys.executable} {srv} & echo $! > {pidfile}"
        wb_s, base_s, held = [], [], []
        for _ in range(args.reps):
            s, h = asyncio.run(_wb(cmd))
            wb_s.append(s)
            held.append(h)
            _stop(pidfile)
            base_s.append(asyncio.run(_pipes_wait(cmd, args.limit)))
            _stop(pidfile)
    print(f"wb local target: median {statistics.median(wb_s):.3f} s over {args.reps} restarts "
          f"(background process detected: {sum(held)}/{args.reps})")
    print(f"waiting for EOF on the pipes: median {statistics.median(base_s):.3f} s "
          f"(bounded at {args.limit:g} s; unbounded it lasts as long as the server)")
    print(f"ratio: {statistics.median(base_s) / statistics.median(wb_s):.0f}x")


if __name__ == "__main__":
    main()
