"""Benchmark: masking secrets in a kept artifact (`workbench.secrets.redact_file`, run on every artifact of
every run), against a baseline measured in the same run: the same file masked a line at a time with
`redact_text`, as the first version of redact_file did.

    .venv/bin/python benchmarks/redaction_bench.py [--mb 10]

Prints CPU seconds and MB/s for a log whose lines hold URLs (the credential check looks at each) and for a
plain log, both ways, with the ratio; and checks both ways give the same bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench import secrets  # noqa: E402

LINES = {
    "urls": "round 3 session 17: tool call ok, 2500 tokens, wall=0.31s https://mirror.example/simple\n",
    "plain": "round 3 session 17: tool call ok, 2500 tokens, wall=0.31s leak=0 done=1 error=0\n",
}
TAIL = "x dbpw=abc y API_TOKEN=zzz hunter2-XYZZY https://bob:pw@host/x\n"


def line_at_a_time(path: Path) -> None:
    with open(path, "rb") as src:
        data = [secrets.redact_text(line.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
                for line in src]
    path.write_bytes(b"".join(data))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10.0, help="size of each generated log")
    args = ap.parse_args()
    secrets.register(values=["hunter2-XYZZY", "tok-SUPERSECRET-123"], names=["dbpw", "API_TOKEN"])
    print(f"{'log':<6} {'MB':>6} {'redact_file s':>14} {'MB/s':>7} {'line-at-a-time s':>17} {'MB/s':>7} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as d:
        for name, line in LINES.items():
            a, b = Path(d) / f"{name}.a", Path(d) / f"{name}.b"
            body = line * int(args.mb * 1e6 / len(line)) + TAIL
            a.write_text(body)
            b.write_text(body)
            mb = os.path.getsize(a) / 1e6
            t = time.process_time()
            secrets.redact_file(a)
            new = time.process_time() - t
            t = time.process_time()
            line_at_a_time(b)
            old = time.process_time() - t
            assert a.read_bytes() == b.read_bytes(), "the two ways masked differently"
            print(f"{name:<6} {mb:>6.1f} {new:>14.3f} {mb / new:>7.0f} {old:>17.3f} {mb / old:>7.0f} {new / old:>6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
