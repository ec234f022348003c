"""Benchmark: loading the shipped workbench folder (hypotheses.yaml and experiments/), as every command does,
against the baseline of what wb did before in the same run: the pure-Python YAML parser and every template
parsed and compiled again at each load.

    python benchmarks/registry_bench.py [--loads 20]

Prints CPU milliseconds per load: the first load in a fresh process (what one short command pays) and the
mean of --loads later loads in the same process (a long-lived caller), both ways, with the ratios.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TIMED = """
import sys, time
import yaml
from workbench.registry import loader, template_scan, yamlio
if sys.argv[1] == "baseline":
    yamlio.yaml = type("PurePython", (), {**vars(yaml), "CSafeLoader": yaml.SafeLoader})
    template_scan.scan = template_scan.scan.__wrapped__  # each template parsed and compiled again at every load
t = time.process_time()
loader.load_registry(sys.argv[2])
first = time.process_time() - t
t = time.process_time()
for _ in range(int(sys.argv[3])):
    loader.load_registry(sys.argv[2])
print(first, (time.process_time() - t) / int(sys.argv[3]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loads", type=int, default=20)
    args = ap.parse_args()
    res = {}
    for way in ("wb", "baseline"):
        out = subprocess.run([sys.executable, "-c", TIMED, way, str(REPO), str(args.loads)], capture_output=True,
                             text=True, check=True, cwd=REPO)
        res[way] = [1000 * float(x) for x in out.stdout.split()]
    print("load_registry of the shipped folder, CPU ms:")
    print(f"  {'':28s} {'first load':>12s} {'later loads':>12s}")
    print(f"  {'libyaml, templates cached':28s} {res['wb'][0]:12.1f} {res['wb'][1]:12.1f}")
    print(f"  {'baseline (before)':28s} {res['baseline'][0]:12.1f} {res['baseline'][1]:12.1f}")
    print(f"  {'ratio':28s} {res['wb'][0] / res['baseline'][0]:12.3f} {res['wb'][1] / res['baseline'][1]:12.3f}")


if __name__ == "__main__":
    main()
