"""`wb --help` start-up time: the median of N runs against `python -c pass` measured in the same run.

    .venv/bin/python benchmarks/help_bench.py [N]

Prints both medians, the difference (what wb itself costs) and the ratio. stdout is a pipe here, as in
`wb --help | less`; `--tty` runs it under a pseudo-terminal, where the rich help is rendered.
"""

from __future__ import annotations

import os
import pty
import statistics
import subprocess
import sys
import time
from pathlib import Path


def once(cmd: list[str], tty: bool) -> float:
    t0 = time.perf_counter()
    if tty:
        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        while True:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break
        proc.wait()
        os.close(master)
    else:
        subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 21
    tty = "--tty" in sys.argv
    wb = str(Path(sys.executable).with_name("wb"))
    base, helps = [], []
    for _ in range(n):  # interleaved, so a change in the machine's load hits both alike
        base.append(once([sys.executable, "-c", "pass"], tty))
        helps.append(once([wb, "--help"], tty))
    b, h = statistics.median(base), statistics.median(helps)
    print(f"wb --help ({'terminal' if tty else 'pipe'}): median {h:.3f} s over {n} runs; python -c pass: "
          f"median {b:.3f} s; wb's own cost {h - b:.3f} s; ratio {h / b:.1f}x")


if __name__ == "__main__":
    main()
