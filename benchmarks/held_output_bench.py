"""What looking again for a process holding a command's output costs the local target: each kind of restart
run through `LocalTarget.run`, with the grace (the current rule) and without it (a single look, the rule
before), measured in the same run. Prints the median seconds per call, the ratio, and how often each rule
warned that a holder kept the output.

    python benchmarks/held_output_bench.py [--reps 5]
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
KINDS = {
    "clean (no background process)": "true",
    "background, redirected": "{py} {srv} > {d}/log 2>&1 & echo $! > {d}/pid",
    "background, redirected 0.3 s late": "( sleep 0.3; exec {py} {srv} > {d}/log 2>&1 ) & echo $! > {d}/pid",
    "background, not redirected": "{py} {srv} & echo $! > {d}/pid",
}


def _stop(d: Path) -> None:
    pid = d / "pid"
    if pid.is_file():
        try:
            os.kill(int(pid.read_text()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass
        pid.unlink()


async def _measure(cmd: str, d: Path, reps: int, grace: float) -> tuple[float, int]:
    from workbench.runner.targets import local

    local.HELD_GRACE_S = grace
    target = local.LocalTarget()  # one target, as one execution: a command seen holding is not waited for again
    times, held = [], 0
    for _ in range(reps):
        t0 = time.monotonic()
        res = await target.run("local", cmd, timeout=60)
        times.append(time.monotonic() - t0)
        held += res.held_open
        _stop(d)
        await asyncio.sleep(0.4)  # let a late redirect finish before the next call
    return statistics.median(times), held


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import sys

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "srv.py").write_text(SERVER)
        print(f"{'restart':<38} {'single look s':>13} {'with grace s':>12} {'ratio':>6}  warned (single/grace)")
        for name, tmpl in KINDS.items():
            cmd = tmpl.format(py=sys.executable, srv=d / "srv.py", d=d)
            base, held0 = asyncio.run(_measure(cmd, d, args.reps, 0.0))
            new, held1 = asyncio.run(_measure(cmd, d, args.reps, 2.0))
            print(f"{name:<38} {base:>13.3f} {new:>12.3f} {new / base:>6.2f}  {held0}/{args.reps} {held1}/{args.reps}")


if __name__ == "__main__":
    main()
